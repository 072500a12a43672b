"""The trusted build of a candidate's load_inline extensions, ahead of its evaluation (run by
the zygote; extensions.py says why it is split this way).

1. A recorder process (confined like a candidate, no GPU) imports the candidate's module with
   load_inline replaced by one that only writes down its spec. Only specs come out of it.
2. Each spec not yet in the cache is compiled by a builder process of its own, confined the
   same way, that runs PyTorch's load_inline on the spec and nothing of the candidate's:
   nvcc and ninja see its sources and allowed flags only, and the library is not loaded
   there (a library's constructors are the candidate's code).
3. This process (the zygote: kgym's) files the library under the spec's key, atomically.
"""
import json
import os
import select
import shutil
import sys
import time

from . import extensions, failures, isolation, program

RECORD_LIMIT_S = 60.0  # importing the module to see its load_inline calls
ERROR_TAIL = 4000  # characters of a compiler's output kept for the feedback


_pid_namespaces = None  # the builder's, made at its first build


def _fork_own_pids() -> int:
    """os.fork(), the child in a pid namespace of its own where the OS grants one: there it can
    signal no process but its own (kill(-1) included), whatever uid it shares with kgym."""
    global _pid_namespaces
    if _pid_namespaces is None:
        _pid_namespaces = isolation.PidNamespaces()
    return _pid_namespaces.fork()[0]


def run_confined(workdir: str, uid: int, limit_s: float, work) -> dict:
    """Runs work() in a forked, confined process (own session, namespaces, private /tmp, uid,
    limits); returns the dict it returns, or {"error": ...} when it raised, died or ran past
    `limit_s` (then its whole process group is killed)."""
    os.makedirs(workdir, exist_ok=True)
    read_end, write_end = os.pipe()
    pid = _fork_own_pids()
    if pid == 0:
        # Only its answer pipe: the builder's own channel (stdin, stdout) is not the candidate's.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        isolation.close_fds_except({write_end})
        try:
            granted, inside = isolation.confine(workdir, uid)
            isolation.set_limits({"RLIMIT_CORE": 0, "RLIMIT_NPROC": isolation.tasks_limit(granted),
                                  "RLIMIT_FSIZE": 1 << 30,
                                  "RLIMIT_CPU": int(limit_s * 8) + 10})
            answer = work(inside)
        except BaseException as exc:
            answer = {"error": failures.last_line(exc) if not isinstance(exc, RuntimeError) else str(exc)}
        try:
            os.write(write_end, json.dumps(answer).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data, deadline, status = b"", time.monotonic() + limit_s, None
    while True:
        ready, _, _ = select.select([read_end], [], [], max(0.0, min(0.2, deadline - time.monotonic())))
        if ready:
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                break
            data += chunk
        elif time.monotonic() > deadline:
            from .zygote import reap
            os.close(read_end)
            reap(pid, 0.0)  # its process group killed, then collected
            return {"error": f"ran past its limit of {limit_s:.0f} s", "timeout": True}
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        return {"error": f"the process ended without an answer (wait status {status})"}


def record(source: str, workdir: str, uid: int) -> dict:
    """{"specs": [...], "error": str}: the load_inline calls the module makes when imported
    (a module that fails later, e.g. without a GPU, still yields the calls made before)."""

    def work(inside: str) -> dict:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # no GPU here: only the calls are wanted
        import torch.utils.cpp_extension as cpp_extension
        specs, refused = [], []

        def recording(*args, **kwargs):
            try:
                specs.append(extensions.spec_of(args, kwargs))
            except extensions.ExtensionError as exc:
                refused.append(str(exc))
            return Unbuilt()

        cpp_extension.load_inline = recording
        error = ""
        try:
            program.load_program(os.path.join(inside, "kgym_candidate.py"), "kgym_candidate", source, {})
        except BaseException as exc:  # its own import error comes again in the evaluation
            error = failures.last_line(exc)
        return {"specs": specs, "refused": refused, "error": error}

    return run_confined(workdir, uid, RECORD_LIMIT_S, work)


class Unbuilt:
    """What load_inline returns while recording: any function of it fails if called."""

    def __getattr__(self, name):
        def unbuilt(*args, **kwargs):
            raise RuntimeError("extension not built while recording")
        return unbuilt


def compile_spec(spec: dict, arch: str, workdir: str, uid: int, limit_s: float, jobs: int) -> dict:
    """Builds one spec in a confined builder; {"library": host path} or {"error": ...}."""

    def work(inside: str) -> dict:
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch
        os.environ["MAX_JOBS"] = str(jobs)
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        # ninja from PyPI lives beside the interpreter, which need not be on PATH
        os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
        import torch.utils.cpp_extension as cpp_extension
        cpp_extension._import_module_from_library = lambda *args, **kwargs: None  # build, never load
        build_dir = os.path.join(inside, "build")
        os.makedirs(build_dir, exist_ok=True)
        arguments = {field: spec[field] for field in extensions.SPEC_FIELDS}
        cpp_extension.load_inline(spec["name"], build_directory=build_dir, verbose=False, **arguments)
        return {"library": extensions.library_name(spec)}

    answer = run_confined(workdir, uid, limit_s, work)
    if "library" in answer:
        answer["library"] = os.path.join(workdir, "build", answer["library"])
        if not os.path.isfile(answer["library"]):
            return {"error": "the build left no library"}
    return answer


def file_in_cache(library: str, cache_dir: str, key: str) -> None:
    """Into cache_dir/<key>/ under a temporary name, then renamed: an entry is whole or absent."""
    os.makedirs(cache_dir, mode=0o755, exist_ok=True)
    staging = os.path.join(cache_dir, f".{key}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging, mode=0o755)
    target = os.path.join(staging, os.path.basename(library))
    shutil.copyfile(library, target)
    os.chmod(target, 0o644)
    try:
        os.rename(staging, os.path.join(cache_dir, key))
    except OSError:  # filed meanwhile by another build of the same spec
        shutil.rmtree(staging, ignore_errors=True)


def build(source: str, workdir: str, cache_dir: str, arch: str, limit_s: float, uid: int, jobs: int = 4) -> dict:
    """SandboxEvent.Built: every extension the module asks for, built or found in the cache,
    or the error that makes the candidate's COMPILE_ERROR."""
    started = time.perf_counter()
    tools = extensions.toolchain(arch)
    recorded = record(source, os.path.join(workdir, "record"), uid)
    built = {"extensions": [], "error": "", "seconds": 0.0}
    if recorded.get("refused"):
        built["error"] = recorded["refused"][0]
    for i, spec in enumerate(recorded.get("specs", [])):
        if built["error"]:
            break
        refused = extensions.refused_flags(spec)
        if refused:
            built["error"] = f"extension {spec['name']!r}: flags kgym does not build with: {', '.join(refused)}"
            break
        key = extensions.key_of(spec, tools)
        entry = {"name": spec["name"], "key": key, "cached": True, "seconds": 0.0}
        if not os.path.isfile(os.path.join(cache_dir, key, extensions.library_name(spec))):
            t0 = time.perf_counter()
            left = max(1.0, limit_s - (t0 - started))
            answer = compile_spec(spec, arch, os.path.join(workdir, f"build-{i}"), uid, left, jobs)
            entry.update(cached=False, seconds=time.perf_counter() - t0)
            if "error" in answer:
                what = "timed out" if answer.get("timeout") else "does not build"
                built["error"] = f"extension {spec['name']!r} {what}: {answer['error'][-ERROR_TAIL:]}"
                break
            file_in_cache(answer["library"], cache_dir, key)
        built["extensions"].append(entry)
    built["seconds"] = time.perf_counter() - started
    return built


def copy_built(cache_dir: str, keys: list, candidate_dir: str) -> None:
    """The cache entries a candidate asked for, into its own directory (extensions/<key>/):
    what it loads is its own copy, under the directory CUPTI counts as the candidate's."""
    root = os.path.join(candidate_dir, "extensions")
    os.makedirs(root, mode=0o755, exist_ok=True)
    os.chmod(root, 0o755)
    for key in keys:
        if os.path.isdir(os.path.join(cache_dir, key)) and not os.path.exists(os.path.join(root, key)):
            shutil.copytree(os.path.join(cache_dir, key), os.path.join(root, key))


def device_arch() -> str:
    """The GPU's compute capability ("9.0"), asked in a child process: the zygote itself never
    initialises CUDA (its forks could not use it)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            os.write(write_end, extensions.current_arch().encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        arch = f.read().decode()
    os.waitpid(pid, 0)
    if not arch:
        raise RuntimeError("could not read the GPU's compute capability")
    return arch
