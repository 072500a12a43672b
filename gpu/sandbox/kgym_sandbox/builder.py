"""The executor's extension builder: a process of its own, beside the zygote, that answers
Build commands (SandboxCommand.Build -> SandboxEvent.Built) on CPU cores while the GPU
evaluates other candidates. Each build runs in confined children (extension_build).

stdin: SandboxCommand frames; stdout: SandboxEvent frames (kgym.proto, JSON mapping).
"""
import argparse
import ctypes
import os
import platform
import sys
import tempfile
import time

from . import frames

PR_SET_CHILD_SUBREAPER = 36


def main() -> None:
    parser = argparse.ArgumentParser(description="kgym extension builder (started by gpu_executor)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.parse_args()
    # Unprivileged, a user namespace of our own lets every build have a pid namespace of its own
    # (a candidate's import, run while its extensions are recorded, could otherwise signal every
    # process of kgym's uid: the executor's included); first, while this process has one thread.
    from . import isolation
    isolation.own_user_namespace()
    out_fd = os.dup(1)  # frames go here; whatever else prints goes to stderr
    os.dup2(2, 1)
    started = time.perf_counter()
    import torch
    import triton

    from . import extension_build
    from .zygote import sweep
    os.nice(10)  # compiles yield the CPU to the evaluation being timed
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # what a build leaves is ours to sweep
    frames.write_event(out_fd, ready={"python": platform.python_version(), "torch": torch.__version__,
                                      "triton": triton.__version__, "import_s": time.perf_counter() - started})
    # A uid of its own while it lives (not another executor's builder's); the locks live where
    # every kgym on this machine looks, kgym's own (root) directory under /tmp.
    uid, _held = isolation.claim_uid(isolation.BUILD_UIDS, os.path.join(tempfile.gettempdir(), "kgym-build-uids"),
                                     isolation.BUILD_UID)
    print(f"kgym builder: builds run as uid {uid}", file=sys.stderr)
    arch = None  # the GPU's, asked once
    for line in sys.stdin:
        command = frames.command(line)
        if "shutdown" in command:
            break
        build = command["build"]
        try:
            arch = arch or extension_build.device_arch()
            built = extension_build.build(build["source"], build["workdir"], build["cache_dir"], arch,
                                          float(build.get("timeout_s") or 600), uid)
        except Exception as exc:  # kgym's own failure: said as such
            built = {"extensions": [], "error": f"kgym could not build the extensions: {exc!r}", "internal": True}
        sweep(set())  # whatever the recorder or a compiler left running
        frames.write_event(out_fd, built=built)


if __name__ == "__main__":
    main()
