"""KernelBench problems as kgym task directories, each with the identity answer (the
problem's own Model renamed ModelNew: correct by definition, exactly as fast as the
reference) as candidates/identity.py. Shared by the benchmarks that judge the reference
against itself."""
import json
import os
import re


def number(problem: str) -> int:
    """A problem file's number in its level (`77_ConvTranspose3d_....py` -> 77)."""
    return int(os.path.basename(problem).split("_")[0])


def problems(kernelbench: str, level: int, only=None) -> list:
    """The problem files of a level, in KernelBench's numbering order; with `only` (numbers),
    just those."""
    folder = os.path.join(kernelbench, "KernelBench", f"level{level}")
    found = sorted((os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py")), key=number)
    return [p for p in found if only is None or number(p) in only]


def identity_source(source: str) -> str:
    """The problem's own Model renamed ModelNew."""
    return re.sub(r"\bModel\b", "ModelNew", source)


def identity_task(problem: str, level: int, workdir: str) -> str:
    """A task directory under `workdir` for one problem file, named l<level>_<file stem>."""
    source = open(problem).read()
    task = os.path.join(workdir, f"l{level}_{os.path.basename(problem)[:-3]}")
    os.makedirs(os.path.join(task, "candidates"), exist_ok=True)
    with open(os.path.join(task, "task.py"), "w") as f:
        f.write(source)
    with open(os.path.join(task, "task.json"), "w") as f:
        json.dump({"level": level}, f)
    with open(os.path.join(task, "candidates", "identity.py"), "w") as f:
        f.write(identity_source(source))
    return task
