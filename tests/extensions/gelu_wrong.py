# Appended to gelu_fused.py: the same kernel with a wrong GELU (tanh(x) for erf(x/sqrt 2)),
# built as an extension of its own and used instead: INCORRECT on the GPU.
gelu_ext = load_inline(name="gelu_wrong_ext", cpp_sources=cpp_source,
                       cuda_sources=cuda_source.replace("erff(v * 0.70710678118654752f)", "tanhf(v)"),
                       functions=["gelu_scale_residual"], extra_cuda_cflags=["-O3"])
