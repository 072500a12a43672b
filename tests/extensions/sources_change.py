# Appended to gelu_fused.py: an extension whose name (so its sources) differs at every import:
# what kgym built ahead is not what the evaluation asks for, a COMPILE_ERROR that says so; a
# candidate cannot get a library compiled outside the trusted build.
import os

gelu_ext = load_inline(name="gelu_" + os.urandom(4).hex(), cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["gelu_scale_residual"])
