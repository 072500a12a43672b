# Correct, and turns on TF32 for float32 matmuls and convolutions in its own process (PyTorch
# ops there run faster and less precisely). The judge's and the reference runner's flags stay
# pinned; the change is recorded as evidence, not ruled on (Triton's dot uses TF32 on its own).
torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision("high")
