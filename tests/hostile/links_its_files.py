# At import: puts a symbolic link to a host file where its log is (an executor that follows it
# puts that file, e.g. kgym's own /proc/self/environ, into the result's log) and a FIFO where its
# trace is (an executor that opens it waits for a writer for good); then behaves. Contained:
# both are read as regular files only: nothing of the host file in the result, an answer in
# time, HACKED (its trace is gone).
import os

_target = "@LINK_TARGET@"
if _target.startswith("@"):
    _target = "/proc/self/environ"
_dir = os.path.dirname(os.environ.get("KGYM_TRACE_FILE", "/tmp/trace.jsonl"))
for _name, _make in (("sandbox.log", lambda path: os.symlink(_target, path)), ("trace.jsonl", os.mkfifo)):
    try:
        os.remove(os.path.join(_dir, _name))  # their writers keep the files they opened
        _make(os.path.join(_dir, _name))
    except OSError:
        pass
