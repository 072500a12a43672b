"""PyTorch's global numerics flags: what a float32 matmul or convolution computes (TF32 or
not, reduced-precision reductions, cuDNN's choice of algorithm). Every process of an
evaluation pins them to PINNED (PyTorch's own defaults, which KernelBench's harness runs
under) before any task or candidate code runs, so the reference computes alike in the judge
and in the reference runner whatever the host or an import set. The result records the
judge's flags; the candidate's process reports its own at the end (its word, recorded only:
its kernels may use TF32 on their own, as Triton's dot does by default)."""
import torch

PINNED = {
    "float32_matmul_precision": "highest",
    "matmul_allow_tf32": False,
    "cudnn_allow_tf32": True,
    "matmul_allow_fp16_reduced_precision_reduction": True,
    "matmul_allow_bf16_reduced_precision_reduction": True,
    "cudnn_benchmark": False,
    "cudnn_deterministic": False,
}


def pin() -> None:
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    torch.set_float32_matmul_precision(PINNED["float32_matmul_precision"])  # first: it sets allow_tf32 too
    matmul.allow_tf32 = PINNED["matmul_allow_tf32"]
    cudnn.allow_tf32 = PINNED["cudnn_allow_tf32"]
    matmul.allow_fp16_reduced_precision_reduction = PINNED["matmul_allow_fp16_reduced_precision_reduction"]
    matmul.allow_bf16_reduced_precision_reduction = PINNED["matmul_allow_bf16_reduced_precision_reduction"]
    cudnn.benchmark = PINNED["cudnn_benchmark"]
    cudnn.deterministic = PINNED["cudnn_deterministic"]


def current() -> dict:
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    return {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "matmul_allow_tf32": bool(matmul.allow_tf32),
        "cudnn_allow_tf32": bool(cudnn.allow_tf32),
        "matmul_allow_fp16_reduced_precision_reduction": bool(matmul.allow_fp16_reduced_precision_reduction),
        "matmul_allow_bf16_reduced_precision_reduction": bool(matmul.allow_bf16_reduced_precision_reduction),
        "cudnn_benchmark": bool(cudnn.benchmark),
        "cudnn_deterministic": bool(cudnn.deterministic),
    }


def as_text(flags: dict) -> dict:
    """The flags as the result's string map."""
    return {name: str(value).lower() if isinstance(value, bool) else str(value) for name, value in flags.items()}


def changed(reported) -> list:
    """"name: pinned -> reported" for each flag a process reports other than PINNED (a
    malformed report is one entry)."""
    if not isinstance(reported, dict):
        return ["numerics: no report"]
    return [f"{name}: {PINNED[name]} -> {str(reported.get(name))[:40]}" for name in PINNED
            if reported.get(name) != PINNED[name]]
