# At import: holds memory where a process's resident size does not show it, 1.5 GiB in all
# (it stops there, so that where no cgroup exists it leaves the host alone): 512 MiB in a memfd
# file of its own, and 1 GiB in two children that left its session (setsid) and wait. Then it
# answers correctly. Contained (root, a memory cgroup): under memory_limit_mb 1024 it is
# RESOURCE_LIMIT.
import os
import select
import time

_chunk = b"m" * (64 << 20)
_memfd = os.memfd_create("kgym-hidden")
for _ in range(8):
    os.write(_memfd, _chunk)

_ready_r, _ready_w = os.pipe()
for _ in range(2):
    if os.fork() == 0:
        os.setsid()
        _held = [bytearray(_chunk) for _ in range(8)]  # 512 MiB, every page written
        os.write(_ready_w, b"1")
        time.sleep(60)
        os._exit(0)
for _ in range(2):  # a child the kernel stopped never says so
    if select.select([_ready_r], [], [], 5)[0]:
        os.read(_ready_r, 1)
time.sleep(1)  # long enough for the executor's watchdog to look
