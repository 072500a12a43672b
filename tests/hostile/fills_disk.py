# At import: writes 16 MiB files, 256 MiB in all: the first 14 into a directory of its private
# /tmp that it locks (mode 000) before it writes them, through descriptors opened before that
# (where a count that walks its disk would not look and a removal would stop), the rest into
# its private /tmp, /var/tmp and /dev/shm in turn (32 MiB: what shows outside the locked
# directory is well within a 64 MiB limit). It stops at 256 MiB, so that where its disk is not
# bounded it leaves the host's alone, and lets the first error through. Contained: as root
# the three share one tmpfs of the request's disk_limit_mb and the write fails with "No space
# left"; unprivileged the executor's count finds the locked files; either way RESOURCE_LIMIT,
# and nothing is left once the evaluation is over.
import os

_chunk = b"d" * (16 << 20)
os.makedirs("/tmp/locked", exist_ok=True)
_hidden = [open(f"/tmp/locked/fill-{_i}", "wb") for _i in range(14)]
os.chmod("/tmp/locked", 0)
for _f in _hidden:
    _f.write(_chunk)
    _f.flush()
for _i in range(14, 16):
    with open(os.path.join(("/tmp", "/var/tmp", "/dev/shm")[_i % 3], f"fill-{_i}"), "wb") as _f:
        _f.write(_chunk)
