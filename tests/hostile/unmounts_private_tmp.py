# At import: undoes what it can of its own mount namespace (unprivileged, kgym's candidate is
# root of a user namespace: with capabilities there it could unmount the private /tmp bound
# over the host's and the read-only remounts of the host), then leaves a file named
# kgym-host-canary in every world-writable directory it can reach, /tmp included; then
# behaves. Contained: the host has no such file afterwards and the verdict is OK.
import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)
_points = []
with open("/proc/self/mountinfo") as _f:
    for _line in _f:
        _points.append(_line.split()[4])
for _point in reversed(_points):  # the deepest, and the latest, first
    _libc.umount2(_point.encode(), 2)  # MNT_DETACH
for _point in ("/", "/tmp", "/var/tmp", "/run", "/run/lock", "/dev/shm", "/var/lock"):
    _libc.mount(b"none", _point.encode(), None, 0x20 | 0x1000, None)  # MS_REMOUNT | MS_BIND, read-write
_written = []
for _root, _dirs, _files in os.walk("/", topdown=True):
    _dirs[:] = [d for d in _dirs if os.path.join(_root, d) not in ("/proc", "/sys") and _root.count("/") < 5]
    try:
        if os.stat(_root).st_mode & 0o002 and os.access(_root, os.W_OK):
            with open(os.path.join(_root, "kgym-host-canary"), "w") as _f:
                _f.write("left by a candidate\n")
            _written.append(_root)
    except OSError:
        pass
