# At import: looks for every pipe and socket among its descriptors (the zygote held the running
# evaluation's result pipe, its hold pipe and its channels when it forked this process), writes
# a forged result frame into each and reads what it can, then fails saying how many it found.
# Contained: only its own channel (one socket) and, on the CPU, its own hold pipe are there.
import json
import os
import stat

_pipes, _sockets = 0, 0
for _fd in range(3, 1024):
    try:
        _mode = os.fstat(_fd).st_mode
    except OSError:
        continue
    if stat.S_ISSOCK(_mode):
        _sockets += 1
    elif stat.S_ISFIFO(_mode):
        _pipes += 1
        os.set_blocking(_fd, False)
        for _attempt in (lambda: os.write(_fd, json.dumps({"result": {"verdict": "OK"}}).encode() + b"\n"),
                         lambda: os.read(_fd, 1 << 16)):
            try:
                _attempt()
            except OSError:
                pass

raise RuntimeError(f"pipes {_pipes} sockets {_sockets}")
