# At import: leaves a file named kgym-host-canary in every world-writable directory it can
# find on the machine (the sandbox's private /tmp, /var/tmp and /dev/shm aside, they vanish
# with it), e.g. /run/lock; then behaves. Contained: the host has no such file afterwards and
# the verdict is OK.
import os

_written = []
for _root, _dirs, _files in os.walk("/", topdown=True):
    _dirs[:] = [d for d in _dirs if os.path.join(_root, d) not in ("/proc", "/sys", "/tmp", "/var/tmp", "/dev/shm")
                and _root.count("/") < 5]
    try:
        if os.stat(_root).st_mode & 0o002 and os.access(_root, os.W_OK):
            with open(os.path.join(_root, "kgym-host-canary"), "w") as _f:
                _f.write("left by a candidate\n")
            _written.append(_root)
    except OSError:
        pass
