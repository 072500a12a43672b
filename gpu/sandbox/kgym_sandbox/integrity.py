"""What the candidate process checks of itself after the candidate's code ran: torch
functions a judge would rely on, and the runner's own functions and classes.

This is evidence, not protection: the judge no longer lives in this process, so a patch
here changes no verdict by itself; but a candidate that swaps comparators or clocks shows
its intent, and is ruled HACKED for it. Bindings are taken in the zygote, before any
candidate exists."""
import sys
import time

import torch

GUARDED = {"torch.isclose": (torch, "isclose"), "torch.equal": (torch, "equal"),
           "torch.allclose": (torch, "allclose"),
           "torch.cuda.synchronize": (torch.cuda, "synchronize"),
           "torch.cuda.Event": (torch.cuda, "Event"),
           "torch.Tensor.__eq__": (torch.Tensor, "__eq__"),
           "time.perf_counter": (time, "perf_counter")}
ORIGINALS = {name: getattr(owner, attr) for name, (owner, attr) in GUARDED.items()}


def bindings(modules: list) -> dict:
    """Every function and class of `modules`, and every attribute of those classes, by name."""
    found = {}
    for module in modules:
        for name, value in vars(module).items():
            if name.startswith("__") or not callable(value):
                continue
            found[(module, name)] = value  # its own, and what it imported (compare._isclose)
            if isinstance(value, type) and value.__module__ == module.__name__:
                found.update(((value, attr), member) for attr, member in vars(value).items()
                             if not attr.startswith("__") or attr in ("__init__", "__call__"))
    return found


def patched(taken: dict) -> list:
    """Names of guarded functions and bindings that no longer are what they were."""
    names = [name for name, (owner, attr) in GUARDED.items() if getattr(owner, attr) is not ORIGINALS[name]]
    names += [f"{getattr(owner, '__name__', owner)}.{attr}" for (owner, attr), value in taken.items()
              if vars(owner).get(attr) is not value]
    return names


def harness_modules() -> list:
    return [m for name, m in sorted(sys.modules.items()) if name.startswith("kgym_sandbox.") and m is not None]
