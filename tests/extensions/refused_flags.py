# Appended to gelu_fused.py: asks nvcc to load a compiler plugin (code run inside the
# compiler, where the build's output could be swapped): flags outside kgym's allowlist are a
# COMPILE_ERROR that names them, and nothing is built.
gelu_ext = load_inline(name="gelu_plugin_ext", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["gelu_scale_residual"], extra_cuda_cflags=["-O3", "-Xcompiler", "-fplugin=/tmp/plugin.so"])
