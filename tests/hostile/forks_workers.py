# At import: 256 MiB of its own, every page written, then eight forked children that write
# nothing and wait for their parent to go. Each child's resident size shows the parent's 256
# MiB (shared, copy on write): summed per process they read as over 2 GiB, what the candidate
# holds is about 256 MiB. Then it answers correctly: under memory_limit_mb 1024 it is OK, each
# page counted once (by its cgroup, or by proportional set sizes where there is none).
import os
import time

_held = bytearray(b"w" * (256 << 20))
_parent = os.getpid()
for _ in range(8):
    if os.fork() == 0:
        while os.getppid() == _parent:
            time.sleep(0.05)
        os._exit(0)
time.sleep(1)  # long enough for the executor's watchdog to look
