"""Pure checks on outputs: closeness, aliasing, staleness. No candidate code runs here."""
from typing import NamedTuple

import torch

from . import output_kernel

# Bound before any candidate code is imported: a candidate that patches torch later does not
# change what these names refer to (and evaluate.py reports the patch as evidence).
_isclose = torch.isclose
_abs = torch.abs
_isfinite = torch.isfinite


def flatten(out) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in flatten(item)]
    raise TypeError(f"output is a {type(out).__name__}, expected a tensor or a tuple of tensors")


# Values compared per piece: the checks' temporaries (float64 copies, masks) stay a few
# hundred MiB whatever the output's size (KernelBench's level-1 outputs are up to 8 GiB).
PIECE = 1 << 25


def pieces(expected: torch.Tensor, actual: torch.Tensor):
    """Matching flat slices of two same-shaped tensors, PIECE values each (views; a
    non-contiguous tensor is made contiguous once)."""
    e, a = expected.detach().reshape(-1), actual.detach().reshape(-1)
    for start in range(0, e.numel(), PIECE):
        yield e[start:start + PIECE], a[start:start + PIECE]


class Measured(NamedTuple):
    """One output tensor against the reference's, from one pass over both (`measure`): what
    `compare` rules on, and the sums and samples that fingerprints and the tracker need."""
    outside: int             # values not within tolerance (torch.isclose, NaN where NaN)
    max_abs_error: float     # NaN counted as 0, infinity as the largest finite value
    max_abs_expected: float
    sum_expected: float
    squares_expected: float  # sum of squares
    sum_actual: float
    squares_actual: float
    squared_error: float     # sum of (actual - expected)^2, NaN counted as 0
    sample_expected: tuple   # SAMPLES values at even strides
    sample_actual: tuple


SAMPLES = 64
COLUMNS = 8  # totals before the samples: Measured's first eight fields' sources, in the kernel's order


def wide_dtype(t: torch.Tensor) -> torch.dtype:
    """What a tensor is compared in: float32, or float64 for float64, integer and boolean values."""
    return torch.float32 if t.is_floating_point() and t.element_size() <= 4 else torch.float64


def measure(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float) -> Measured:
    """`Measured` for two same-shaped tensors: torch.allclose's rule as KernelBench applies it,
    in float32 (float64 for float64, integer and boolean values), sums in float64. On the GPU
    in one pass (output_kernel: at KernelBench's sizes these checks were most of the
    correctness trials' time), else with PyTorch's operators piece by piece (`pieces`); one
    device synchronisation either way."""
    wide = wide_dtype(expected)
    found = output_kernel.totals(expected, actual, atol, rtol)
    if found is None:
        found = operator_totals(expected, actual, atol, rtol, wide)
    if found is None:  # no values
        return Measured(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, (), ())
    values = torch.cat([found, sample(expected, wide), sample(actual, wide)]).tolist()
    summed, largest, samples = values[:COLUMNS], values[COLUMNS:2 * COLUMNS], values[2 * COLUMNS:]
    half = len(samples) // 2  # the two tensors have as many values, so as many samples
    return Measured(int(summed[0]), largest[1], largest[2], *summed[3:8], tuple(samples[:half]),
                    tuple(samples[half:]))


def operator_totals(expected: torch.Tensor, actual: torch.Tensor, atol: float, rtol: float, wide: torch.dtype):
    """output_kernel.totals with PyTorch's operators: the COLUMNS totals summed, then as maxima."""
    totals = []
    for e_part, a_part in pieces(expected, actual):
        e, a = e_part.to(wide), a_part.to(wide)
        error = (a - e).abs_().nan_to_num_(0.0)
        totals.append(torch.stack([
            (~_isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)).sum().to(torch.float64),
            error.max().to(torch.float64),
            _abs(e).nan_to_num_(0.0).max().to(torch.float64),
            torch.sum(e, dtype=torch.float64),
            torch.linalg.vector_norm(e, dtype=torch.float64) ** 2,
            torch.sum(a, dtype=torch.float64),
            torch.linalg.vector_norm(a, dtype=torch.float64) ** 2,
            torch.linalg.vector_norm(error, dtype=torch.float64) ** 2]))
        e = a = error = None
    if not totals:
        return None
    per_piece = torch.stack(totals)
    return torch.cat([per_piece.sum(0), per_piece.amax(0)])


def sample(t: torch.Tensor, wide: torch.dtype) -> torch.Tensor:
    """SAMPLES values of `t` at even strides, as float64."""
    flat = t.detach().reshape(-1)
    return flat[:: max(1, flat.numel() // SAMPLES)][:SAMPLES].to(wide).to(torch.float64)


def nonfinite_where_finite(expected: torch.Tensor, actual: torch.Tensor) -> int:
    """How many values are NaN or infinite where the reference's are finite."""
    return sum(int((~_isfinite(a) & _isfinite(e)).sum()) for e, a in pieces(expected, actual))


def compare(expected, actual, atol: float, rtol: float) -> dict:
    """Returns correct, max_abs_error, max_rel_error, a message saying what differs, and
    `measured`: a `Measured` per output tensor whenever the shapes and dtypes match (a wrong
    output too: the judge's cached-output check fingerprints it)."""
    exp, act = flatten(expected), flatten(actual)
    if len(exp) != len(act):
        return _wrong(f"returned {len(act)} tensors, expected {len(exp)}")
    for i, (e, a) in enumerate(zip(exp, act)):
        where = f"output {i}: " if len(exp) > 1 else ""
        if not isinstance(a, torch.Tensor):
            return _wrong(f"{where}not a tensor")
        if tuple(a.shape) != tuple(e.shape):
            return _wrong(f"{where}shape {tuple(a.shape)}, expected {tuple(e.shape)}")
        if a.dtype != e.dtype:
            return _wrong(f"{where}dtype {a.dtype}, expected {e.dtype}")
        if a.device != e.device:
            return _wrong(f"{where}on {a.device}, expected {e.device}")
    measured = [measure(e, a, atol, rtol) for e, a in zip(exp, act)]
    max_abs = max((m.max_abs_error for m in measured), default=0.0)
    max_rel = max((m.max_abs_error / m.max_abs_expected if m.max_abs_expected > 0 else m.max_abs_error
                   for m in measured), default=0.0)
    verdict = {"correct": True, "max_abs_error": max_abs, "max_rel_error": max_rel, "message": "",
               "measured": measured}
    for i, (e, a, m) in enumerate(zip(exp, act, measured)):
        if m.outside:
            where = f"output {i}: " if len(exp) > 1 else ""
            nonfinite = nonfinite_where_finite(e, a)
            verdict.update(correct=False, message=f"{where}{nonfinite} NaN/Inf values where the reference is finite"
                           if nonfinite else f"{where}{m.outside} of {e.numel()} values outside atol={atol}, "
                           f"rtol={rtol} (max abs error {m.max_abs_error:.3g})")
            break
    return verdict


def all_close(expected: list, actual: list, atol: float, rtol: float) -> bool:
    """The timed checks' fast path: every value within tolerance (NaN where NaN), shapes equal;
    `compare` says what differs when it is not."""
    if len(expected) != len(actual):
        return False
    for e, a in zip(expected, actual):
        if tuple(a.shape) != tuple(e.shape) or a.dtype != e.dtype:
            return False
        found = output_kernel.totals(e, a, atol, rtol)
        if found is not None:
            if found[0].item() != 0:
                return False
            continue
        for e_part, a_part in pieces(e, a):
            if e.dtype in (torch.float16, torch.bfloat16):
                e_part, a_part = e_part.float(), a_part.float()
            if not bool(_isclose(a_part, e_part, rtol=rtol, atol=atol, equal_nan=True).all()):
                return False
    return True


def _wrong(message: str) -> dict:
    return {"correct": False, "max_abs_error": 0.0, "max_rel_error": 0.0, "message": message}


def _storage_range(t: torch.Tensor):
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the storages of two tensors overlap (views of one buffer, slices of one storage)."""
    a_lo, a_hi = _storage_range(a)
    b_lo, b_hi = _storage_range(b)
    return a_lo < b_hi and b_lo < a_hi


def aliases(output, inputs: list) -> bool:
    """True when some output tensor shares memory with some input tensor."""
    outs = [t for t in flatten(output) if t.numel()]
    ins = [t for t in inputs if isinstance(t, torch.Tensor) and t.numel()]
    return any(shares_memory(o, i) for o in outs for i in ins)


def deliverable(outputs: list) -> bool:
    """Whether a plain device-to-device copy moves each of these outputs into a buffer of their
    shape and dtype (PyTorch's copy_ then calls cudaMemcpyAsync, no kernel): plain tensors,
    contiguous, without a pending negation or conjugation. Only those may be copied outside the
    timed request (TRACE_DELIVER admits copies, no kernels)."""
    return all(type(t) is torch.Tensor and t.is_contiguous() and not t.is_neg() and not t.is_conj()
               for t in outputs)


def calls_share_storage(outputs_by_call: list) -> bool:
    """True when an output of one call shares a storage with an output of another (a buffer a
    model returns again and again: kept outputs would then all hold the last call's values;
    two slices of one storage count too, the safe side)."""
    calls = [[t for t in outputs if t.numel()] for outputs in outputs_by_call]
    return any(shares_memory(a, b) for i, mine in enumerate(calls) for others in calls[i + 1:]
               for a in mine for b in others)


def fingerprints(expected: list, measured: list) -> tuple:
    """Cheap summaries of a call's output and of the reference's (from `compare`'s `measured`)
    that equal outputs share and different ones almost never do: shape, dtype, sum, sum of
    squares and SAMPLES sampled values of each tensor."""
    actual = tuple((tuple(e.shape), str(e.dtype), m.sum_actual, m.squares_actual, m.sample_actual)
                   for e, m in zip(expected, measured))
    reference = tuple((tuple(e.shape), str(e.dtype), m.sum_expected, m.squares_expected, m.sample_expected)
                      for e, m in zip(expected, measured))
    return actual, reference
