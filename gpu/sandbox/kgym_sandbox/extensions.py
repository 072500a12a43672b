"""CUDA extensions a candidate builds with torch.utils.cpp_extension.load_inline (KernelBench's
default answer format): what one call asks for (its spec), the flags kgym lets through, the key
of its cache entry, and the candidate process's side, which only loads what was built.

Nothing is compiled in the candidate's process. Ahead of the evaluation a trusted step
(extension_build) runs the module with load_inline recording its calls, compiles each spec in
a confined builder of its own (no candidate code in it) and files the result under the spec's
key in a cache only kgym writes. The zygote then copies the entries into the candidate's own
directory, where the candidate's load_inline finds them by the same key: a candidate can only
ever change its own copy, and its kernels launch from a library under its directory (CUPTI
counts them as its own).
"""
import hashlib
import importlib.abc
import importlib.util
import json
import os
import re
import sys
import types

# load_inline's parameters (torch 2.11) and what kgym does with them.
SPEC_FIELDS = ("cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags", "extra_ldflags",
               "with_cuda", "with_pytorch_error_handling")
IGNORED = ("verbose", "build_directory", "keep_intermediates", "use_pch")  # kgym builds where and how it builds
REFUSED_IF_SET = ("sycl_sources", "extra_sycl_cflags", "with_sycl", "extra_include_paths", "no_implicit_headers")
POSITIONAL = ("name", "cpp_sources", "cuda_sources", "sycl_sources", "functions", "extra_cflags", "extra_cuda_cflags",
              "extra_sycl_cflags", "extra_ldflags", "extra_include_paths", "build_directory", "verbose", "with_cuda",
              "with_sycl", "is_python_module", "with_pytorch_error_handling", "keep_intermediates", "use_pch",
              "no_implicit_headers")

# Compiler flags that change how the code is compiled, never where files are read or written,
# which programs run or what gets loaded into the compiler.
_HOST_FLAGS = [r"-O[0-3s]?", r"-std=(c|gnu)\+\+(14|17|20)", r"-[DU][A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?",
               r"-w", r"-W[A-Za-z0-9=-]*", r"-g[0-3]?", r"-ffast-math", r"-funroll-loops", r"-fopenmp",
               r"-fPIC", r"-march=native", r"-mavx2?", r"-mfma", r"-fno-strict-aliasing"]
_CUDA_FLAGS = _HOST_FLAGS + [
    r"--?use_fast_math", r"-lineinfo", r"--expt-relaxed-constexpr", r"--expt-extended-lambda", r"--extended-lambda",
    r"-Xptxas=?[A-Za-z0-9=,.-]*", r"--ptxas-options=[A-Za-z0-9=,.-]+", r"-Xptxas", r"--?maxrregcount=?[0-9]+",
    r"-arch=(sm|compute)_[0-9]+a?", r"-gencode=?arch=compute_[0-9]+a?,code=(sm|compute)_[0-9]+a?",
    r"--gpu-architecture=(sm|compute)_[0-9]+a?", r"-res-usage", r"--resource-usage", r"--restrict",
    r"-v", r"--ftz=(true|false)", r"--prec-div=(true|false)", r"--prec-sqrt=(true|false)", r"--fmad=(true|false)",
    r"-Xcompiler=?[A-Za-z0-9=,.+-]*", r"-Xcompiler", r"-t[0-9]+", r"--threads=?[0-9]+"]
_LD_FLAGS = [r"-l(cuda|cudart|cublas|cublasLt|curand|cufft|cusparse|cusolver|cudnn|nvrtc|gomp)",
             r"-L/usr/local/cuda[A-Za-z0-9_./-]*", r"-fopenmp"]


class ExtensionError(Exception):
    """A load_inline call kgym does not build: the candidate's COMPILE_ERROR says why."""


def spec_of(args: tuple, kwargs: dict) -> dict:
    """The canonical spec of one load_inline(*args, **kwargs) call: sources as lists, flags
    without empty strings, ignored parameters dropped. Raises ExtensionError for a parameter
    kgym does not build with."""
    if len(args) > len(POSITIONAL):
        raise ExtensionError("load_inline got more positional arguments than it takes")
    given = dict(zip(POSITIONAL, args))
    for name, value in kwargs.items():
        if name not in POSITIONAL:
            raise ExtensionError(f"load_inline got an unexpected argument {name!r}")
        if name in given:
            raise ExtensionError(f"load_inline got {name!r} twice")
        given[name] = value
    if "name" not in given or "cpp_sources" not in given:
        raise ExtensionError("load_inline needs a name and cpp_sources")
    for name in REFUSED_IF_SET:
        if given.get(name):
            raise ExtensionError(f"kgym does not build extensions with {name}")
    if given.get("is_python_module", True) is not True:
        raise ExtensionError("kgym builds load_inline extensions as Python modules only (is_python_module=True)")
    name = given["name"]
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,99}", name):
        raise ExtensionError(f"extension name {name!r} is not a Python identifier")
    spec = {"name": name}
    for field in ("cpp_sources", "cuda_sources"):
        spec[field] = _strings(given.get(field), field)
    functions = given.get("functions")
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, dict):
        spec["functions"] = {str(k): str(v) for k, v in functions.items()}
    else:
        spec["functions"] = [str(f) for f in functions] if functions else []
    for field in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags"):
        spec[field] = [f for f in _strings(given.get(field), field) if f.strip()]
    with_cuda = given.get("with_cuda")
    spec["with_cuda"] = None if with_cuda is None else bool(with_cuda)
    spec["with_pytorch_error_handling"] = bool(given.get("with_pytorch_error_handling", True))
    return spec


def _strings(value, field: str) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ExtensionError(f"load_inline's {field} must be a string or a list of strings")


def refused_flags(spec: dict) -> list:
    """The flags of `spec` outside kgym's allowlist (empty: it may be built)."""
    refused = []
    for field, allowed in (("extra_cflags", _HOST_FLAGS), ("extra_cuda_cflags", _CUDA_FLAGS),
                           ("extra_ldflags", _LD_FLAGS)):
        for flag in spec.get(field, []):
            for word in flag.split():
                if not any(re.fullmatch(pattern, word) for pattern in allowed):
                    refused.append(f"{field}: {word}")
    return refused


def toolchain(arch: str) -> dict:
    """What else decides the built library: PyTorch (headers, ABI), CUDA, the GPU's arch."""
    import torch
    return {"torch": torch.__version__, "cuda": torch.version.cuda or "", "arch": arch}


def key_of(spec: dict, tools: dict) -> str:
    """The cache entry of a spec built with a toolchain: a hash of both, canonically encoded."""
    encoded = json.dumps({"spec": spec, "toolchain": tools}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()[:40]


def library_name(spec: dict) -> str:
    """The file a build of `spec` leaves (PyTorch names it <name>.so on Linux)."""
    return spec["name"] + ".so"


def current_arch() -> str:
    """This process's GPU as TORCH_CUDA_ARCH_LIST spells it ("9.0" on an H100)."""
    import torch
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


# -- the candidate process's side --------------------------------------------------------

CPP_EXTENSION = "torch.utils.cpp_extension"


def install_loader(built_dir: str, device: str, on_call=None) -> None:
    """Replaces load_inline (and load, which kgym does not build) in this process before the
    candidate's module loads: a call finds its library under `built_dir/<key>/`, where the
    zygote put what the trusted build made, and imports it; each call of one of its
    functions is reported to `on_call(name)` (the launch record). The replacement is made when
    torch.utils.cpp_extension is first imported (importing it took 16-20 ms of a process's 25 ms
    build on the CPU, on every evaluation's path, and most candidates never use it), or now if
    it already was."""

    def load_inline(*args, **kwargs):
        if device != "cuda":
            raise ExtensionError("this program builds a CUDA extension (load_inline); "
                                 "run it with --device cuda")
        spec = spec_of(args, kwargs)
        path = os.path.join(built_dir, key_of(spec, toolchain(current_arch())), library_name(spec))
        if not os.path.exists(path):
            raise ExtensionError(f"extension {spec['name']!r} was not built ahead of the evaluation: kgym builds "
                                 "the load_inline calls a module makes when it is imported, with the same "
                                 "sources and flags")
        return counted(import_library(spec["name"], path), on_call)

    def load(*args, **kwargs):
        raise ExtensionError("kgym builds CUDA extensions from load_inline only, not from source files "
                             "(torch.utils.cpp_extension.load)")

    def patch(cpp_extension) -> None:
        cpp_extension.load_inline = load_inline
        cpp_extension.load = load

    if CPP_EXTENSION in sys.modules:
        patch(sys.modules[CPP_EXTENSION])
    else:
        sys.meta_path.insert(0, _PatchedOnImport(CPP_EXTENSION, patch))


class _PatchedOnImport(importlib.abc.MetaPathFinder):
    """Finds module `name` where Python would, and has `patch(module)` run once it is loaded."""

    def __init__(self, name: str, patch):
        self.name, self.patch = name, patch

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # once; and the search below must not find this finder
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader, self.patch)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, patch):
        self.loader, self.patch = loader, patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.patch(module)


def counted(module, on_call):
    """A module like `module` whose built functions report each call to on_call(name)."""
    if on_call is None:
        return module
    proxy = types.ModuleType(module.__name__, module.__doc__)
    for name in dir(module):
        value = getattr(module, name)
        if isinstance(value, types.BuiltinFunctionType) and not name.startswith("__"):
            value = _reporting(value, name, on_call)
        setattr(proxy, name, value)
    return proxy


def _reporting(function, name: str, on_call):
    def call(*args, **kwargs):
        on_call(name)
        return function(*args, **kwargs)
    call.__name__ = name
    return call


def import_library(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module
