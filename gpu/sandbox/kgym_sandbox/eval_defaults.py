"""The evaluation defaults, read from messages/eval_defaults.json, the file the executor compiles
in (gpu/executor/eval_defaults.cpp): for callers that are not the executor (which sends every
option filled in), and the tolerances for a precision."""
import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "messages", "eval_defaults.json")

with open(PATH) as _file:
    _DEFAULTS = json.load(_file)


def options(device: str) -> dict:
    """EvalOptions' defaults for `device` ("cuda", "cpu"), field name -> value; atol and rtol
    come from `tolerance`, an unset max_timed_s is min_timed_s."""
    found = {**_DEFAULTS["all"], **_DEFAULTS[device]}
    found.setdefault("max_timed_s", found["min_timed_s"])
    return found


def tolerance(precision, tolerances) -> float:
    """atol = rtol for a Precision and a ToleranceSet, by their schema names (None: the first)."""
    precision, tolerances = precision or "FP32", tolerances or "KERNELBENCH_TOLERANCES"
    for t in _DEFAULTS["tolerances"]:
        if t["set"] == tolerances and t["precision"] == precision:
            return t["tolerance"]
    raise ValueError(f"messages/eval_defaults.json has no tolerance for {tolerances} {precision}")
