"""Loads a program (a task's reference, or a candidate) as a module of its own file."""
import importlib.util
import sys


def load_program(path: str, name: str, source: str, overrides: dict):
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Triton's JIT looks functions' globals up through here
    spec.loader.exec_module(module)
    for key, value in overrides.items():
        setattr(module, key, int(value))
    return module
