"""The dtype of an evaluation (EvalOptions.precision), applied as KernelBench applies its
--precision: floating-point inputs and init inputs are cast to it and both models (the
reference and ModelNew) are moved to it. Two differences, both on purpose: integer and bool
inputs (labels, indices) stay as they are (KernelBench casts every tensor, which breaks
them), and in FP32 nothing is cast (a task's own float64 stays float64)."""
import torch

DTYPES = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}


def dtype_of(name) -> torch.dtype:
    """The dtype of a Precision name from the request ("FP32" when absent, proto3's default)."""
    if name in (None, "", 0):
        return torch.float32
    if name not in DTYPES:
        raise ValueError(f"unknown precision {name!r}: FP32, FP16 or BF16")
    return DTYPES[name]


def name_of(dtype: torch.dtype) -> str:
    """The Precision name of a dtype of DTYPES (what the runner's build request carries)."""
    return next(name for name, known in DTYPES.items() if known == dtype)


def cast(values: list, dtype: torch.dtype) -> list:
    if dtype == torch.float32:
        return values
    return [v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]


def move(model, dtype: torch.dtype):
    return model if dtype == torch.float32 else model.to(dtype)
