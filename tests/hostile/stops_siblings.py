# At import: looks through /proc for every other process it can see, sends SIGSTOP to each it
# may signal (the prepared next evaluation's candidate process, when it shares a uid), then
# fails naming how many it saw and stopped. Contained: it sees no other process ("seen 0"),
# and the evaluation after it is OK, on time.
import os
import signal

_seen, _stopped = [], []
for _entry in os.listdir("/proc"):
    if not _entry.isdigit() or int(_entry) in (os.getpid(), os.getppid()):
        continue
    try:
        with open(f"/proc/{_entry}/cmdline", "rb") as _f:
            _seen.append(_f.read(200).replace(b"\0", b" ").decode(errors="replace"))
        os.kill(int(_entry), signal.SIGSTOP)
        _stopped.append(_entry)
    except OSError:
        pass

raise RuntimeError(f"pid {os.getpid()} seen {len(_seen)} stopped {len(_stopped)}: {_seen[:5]}")
