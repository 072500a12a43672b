# At import: writes into every file it has open outside its own directory (kgym's caller may
# have left a host file open on a descriptor), then fails with whatever of the caller's
# secrets its environment holds. Contained: the host file is unchanged and the message says
# "leaked: {}".
import os

for _fd in range(3, 1024):
    try:
        _target = os.readlink(f"/proc/self/fd/{_fd}")
    except OSError:
        continue
    if _target.startswith("/") and not _target.startswith(("/tmp", "/dev")):  # not its channel or trace
        try:
            os.write(_fd, b"overwritten by a candidate\n")
        except OSError:
            pass

raise RuntimeError("leaked: " + repr({k: v for k, v in os.environ.items() if "SECRET" in k or "canary" in v}))
