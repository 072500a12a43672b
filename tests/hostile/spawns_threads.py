# At import: starts threads that wait (small stacks, so memory is not what stops them) until
# starting one fails or 4000 run, holds them 5 s, then fails saying how many it started.
# Contained: its tasks stop at the pids cgroup's limit for its whole tree where one is
# granted; else the executor, counting its pid namespace every tick, stops it past the same
# limit (RESOURCE_LIMIT), while RLIMIT_NPROC's count for its uid bounds what one tick lets it start.
import threading
import time

threading.stack_size(64 * 1024)
_stop, _started = threading.Event(), 0
while _started < 4000:
    try:
        threading.Thread(target=_stop.wait, daemon=True).start()
    except RuntimeError:
        break
    _started += 1
time.sleep(5)
_stop.set()
raise RuntimeError(f"threads {_started}")
