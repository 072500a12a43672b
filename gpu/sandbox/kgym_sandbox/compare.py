"""Pure checks on outputs: closeness, aliasing, staleness. No candidate code runs here."""
import torch

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


def compare(expected, actual, atol: float, rtol: float, exact: bool = True) -> dict:
    """Returns correct, max_abs_error, max_rel_error and a message saying what differs.
    `exact`: in float64; else in float32 (the timed checks: many large outputs; rounding at
    1e-7 of the value, far below any tolerance used). Piece by piece (`pieces`)."""
    exp, act = flatten(expected), flatten(actual)
    if len(exp) != len(act):
        return _wrong(f"returned {len(act)} tensors, expected {len(exp)}")
    max_abs = max_rel = 0.0
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
        wide = torch.float64 if exact or a.dtype == torch.float64 else torch.float32
        nonfinite = outside = 0
        abs_err = scale = 0.0
        for e_part, a_part in pieces(e, a):
            a64, e64 = a_part.to(wide), e_part.to(wide)
            nonfinite += int((~_isfinite(a64) & _isfinite(e64)).sum())
            abs_err = max(abs_err, float(_abs(a64 - e64).nan_to_num(0.0).max()))
            scale = max(scale, float(_abs(e64).nan_to_num(0.0).max()))
            outside += int((~_isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)).sum())
        if nonfinite:
            return _wrong(f"{where}{nonfinite} NaN/Inf values where the reference is finite")
        max_abs = max(max_abs, abs_err)
        max_rel = max(max_rel, abs_err / scale if scale > 0 else abs_err)
        if outside:
            return {"correct": False, "max_abs_error": max_abs, "max_rel_error": max_rel,
                    "message": f"{where}{outside} of {e.numel()} values outside atol={atol}, rtol={rtol}"
                               f" (max abs error {abs_err:.3g})"}
    return {"correct": True, "max_abs_error": max_abs, "max_rel_error": max_rel, "message": ""}


def all_close(expected: list, actual: list, atol: float, rtol: float) -> bool:
    """The timed checks' fast path: every value within tolerance (NaN where NaN), shapes equal;
    `compare` says what differs when it is not."""
    if len(expected) != len(actual):
        return False
    for e, a in zip(expected, actual):
        if tuple(a.shape) != tuple(e.shape) or a.dtype != e.dtype:
            return False
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


def aliases(output, inputs: list) -> bool:
    """True when some output tensor shares memory with some input tensor."""
    outs = [t for t in flatten(output) if t.numel()]
    ins = [t for t in inputs if isinstance(t, torch.Tensor) and t.numel()]
    for o in outs:
        o_lo, o_hi = _storage_range(o)
        for i in ins:
            i_lo, i_hi = _storage_range(i)
            if o_lo < i_hi and i_lo < o_hi:
                return True
    return False


def fingerprint(output) -> tuple:
    """A cheap summary that equal outputs share and different ones almost never do: shape,
    dtype, sum, sum of squares and 64 sampled values of each tensor."""
    try:
        tensors = flatten(output)
    except TypeError:
        return ("not-a-tensor", id(output))
    parts = []
    for t in tensors:
        flat = t.detach().reshape(-1)
        total = squares = 0.0
        for part, _ in pieces(flat, flat):
            part = part.double()
            total, squares = total + float(part.sum()), squares + float((part * part).sum())
        sample = flat[:: max(1, flat.numel() // 64)][:64].double()
        parts.append((tuple(t.shape), str(t.dtype), total, squares, tuple(sample.tolist())))
    return tuple(parts)
