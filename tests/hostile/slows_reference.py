# Correct, and tries to make the reference look slow: a profile hook that sleeps whenever a
# forward of the task's Model runs, and every class named Model found in memory patched to
# sleep. Its speedup must stay its own.
import gc
import sys
import threading
import time


def _slow(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "forward" and "reference" in frame.f_code.co_filename:
        time.sleep(0.002)


sys.setprofile(_slow)
threading.setprofile(_slow)
for _cls in [o for o in gc.get_objects() if isinstance(o, type) and o.__name__ == "Model"]:
    _forward = _cls.forward
    _cls.forward = lambda self, *a, _f=_forward: (time.sleep(0.002), _f(self, *a))[1]
