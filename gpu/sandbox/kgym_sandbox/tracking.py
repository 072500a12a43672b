"""Whether a candidate's outputs follow the reference's, judged on the whole of the
correctness calls rather than value by value.

Element-wise `allclose` forgives anything within atol, so where the reference's values are
small or barely move (a softmax over 16,384 columns: every value near 1/16384; a mean
squared error over 67M elements: 2.0 give or take 3e-4), an output that ignores its input
(the uniform 1/n, the expected loss) passes it. Here the error of all the calls together,
sqrt(sum of (candidate - reference)^2), is held against the reference's own spread over the
same calls, sqrt(sum of (reference - its mean)^2): an output that ignores its input has an
error about as large as that spread. The rule: the error may not exceed MAX_SHARE_OF_SPREAD
of the spread, unless it is within what the precision resolves anyway,
RESOLUTION[dtype] x sqrt(sum of reference^2) (so an honest fp16 or bf16 kernel on an output
that barely moves is not failed for its rounding, and an output that is constant by the
task's design, spread 0, may differ by rounding only). Sums stream per output tensor (from
compare's one pass): no output is kept.
"""
import math

import torch

from . import compare

MAX_SHARE_OF_SPREAD = 0.1
# Relative error (to the reference's norm) any honest kernel of that precision may have:
# fp32 leaves room for TF32 accumulation orders, fp16 and bf16 for a few roundings.
RESOLUTION = {torch.float32: 2.0 ** -16, torch.float64: 2.0 ** -16, torch.float16: 2.0 ** -9,
              torch.bfloat16: 2.0 ** -6}


def follows(n: int, sum_ref: float, sum_ref_sq: float, sum_err_sq: float, resolution: float) -> dict:
    """The rule on one output's sums over the calls: n values, the sum and the sum of squares
    of the reference's, the sum of squared differences. Returns correct, error, spread, floor."""
    spread = math.sqrt(max(sum_ref_sq - sum_ref * sum_ref / n, 0.0)) if n else 0.0
    error = math.sqrt(sum_err_sq)
    floor = resolution * math.sqrt(sum_ref_sq)
    return {"correct": error <= max(MAX_SHARE_OF_SPREAD * spread, floor), "error": error, "spread": spread,
            "floor": floor}


class Tracker:
    """Adds up each call's outputs (after they passed `compare`), then rules once."""

    def __init__(self):
        self.sums = {}  # output index -> [n, sum ref, sum ref^2, sum err^2, resolution]

    def add(self, expected: list, actual: list) -> None:
        self.add_measured(expected, [compare.measure(e, a, 0.0, 0.0) for e, a in zip(expected, actual)])

    def add_measured(self, expected: list, measured: list) -> None:
        """One call's outputs, from their `compare.Measured` (the sums compare made anyway)."""
        for i, (e, m) in enumerate(zip(expected, measured)):
            if not e.is_floating_point() or e.numel() == 0:
                continue
            sums = self.sums.setdefault(i, [0, 0.0, 0.0, 0.0, RESOLUTION.get(e.dtype, 2.0 ** -16)])
            sums[0] += e.numel()
            sums[1] += m.sum_expected
            sums[2] += m.squares_expected
            sums[3] += m.squared_error

    def verdict(self) -> dict:
        """correct, and a message for the first output that does not follow."""
        for i, (n, sum_ref, sum_ref_sq, sum_err_sq, resolution) in sorted(self.sums.items()):
            rule = follows(n, sum_ref, sum_ref_sq, sum_err_sq, resolution)
            if not rule["correct"]:
                where = f"output {i}: " if len(self.sums) > 1 else ""
                share = rule["error"] / rule["spread"] if rule["spread"] > 0 else math.inf
                return {"correct": False,
                        "message": f"{where}does not follow the reference: over the correctness calls its "
                                   f"error ({rule['error']:.3g}) is {share:.2f} of the reference's own spread "
                                   f"({rule['spread']:.3g}); at most {MAX_SHARE_OF_SPREAD} is allowed above "
                                   f"the precision's floor ({rule['floor']:.3g})"}
        return {"correct": True, "message": ""}
