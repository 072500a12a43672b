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


def compare(expected, actual, atol: float, rtol: float, exact: bool = True) -> dict:
    """Returns correct, max_abs_error, max_rel_error and a message saying what differs.
    `exact`: in float64; else in float32 (the timed checks: many large outputs; rounding at
    1e-7 of the value, far below any tolerance used)."""
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
        a64, e64 = a.detach().to(wide), e.detach().to(wide)
        bad = ~_isfinite(a64) & _isfinite(e64)
        if bool(bad.any()):
            return _wrong(f"{where}{int(bad.sum())} NaN/Inf values where the reference is finite")
        diff = _abs(a64 - e64).nan_to_num(0.0)
        abs_err = float(diff.max()) if diff.numel() else 0.0
        scale = float(_abs(e64).nan_to_num(0.0).max()) if e64.numel() else 0.0
        max_abs = max(max_abs, abs_err)
        max_rel = max(max_rel, abs_err / scale if scale > 0 else abs_err)
        close = _isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
        if not bool(close.all()):
            n = int((~close).sum())
            return {"correct": False, "max_abs_error": max_abs, "max_rel_error": max_rel,
                    "message": f"{where}{n} of {close.numel()} values outside atol={atol}, rtol={rtol}"
                               f" (max abs error {abs_err:.3g})"}
    return {"correct": True, "max_abs_error": max_abs, "max_rel_error": max_rel, "message": ""}


def all_close(expected: list, actual: list, atol: float, rtol: float) -> bool:
    """The timed checks' fast path: every value within tolerance (NaN where NaN), shapes equal;
    `compare` says what differs when it is not."""
    for e, a in zip(expected, actual):
        if tuple(a.shape) != tuple(e.shape) or a.dtype != e.dtype:
            return False
        if e.dtype in (torch.float16, torch.bfloat16):
            e, a = e.float(), a.float()
        if not bool(_isclose(a, e, rtol=rtol, atol=atol, equal_nan=True).all()):
            return False
    return len(expected) == len(actual)


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
        x = t.detach().reshape(-1).double()
        sample = x[:: max(1, x.numel() // 64)][:64]
        parts.append((tuple(t.shape), str(t.dtype), float(x.sum()), float((x * x).sum()),
                      tuple(sample.tolist())))
    return tuple(parts)
