# At import: writes 16 MiB files into its private /tmp, /var/tmp and /dev/shm in turn, up to
# 256 MiB in all (it stops there, so that where no private disk exists it leaves the host's
# disk alone), and lets the first error through. Contained (as root): the three share one
# tmpfs of the request's disk_limit_mb, the write fails with "No space left", and the verdict
# is RESOURCE_LIMIT; nothing is left once the evaluation is over.
import os

_chunk = b"d" * (16 << 20)
for _i in range(16):
    with open(os.path.join(("/tmp", "/var/tmp", "/dev/shm")[_i % 3], f"fill-{_i}"), "wb") as _f:
        _f.write(_chunk)
