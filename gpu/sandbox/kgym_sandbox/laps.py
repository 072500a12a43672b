"""Where a piece of work's time went, part by part (ExecResult.harness_seconds)."""
import time


class Laps:
    """Parts of a phase in `seconds` (phase frames stay per phase: they set the executor's
    deadlines)."""

    def __init__(self, seconds: dict, on_lap=lambda name: None):
        self.seconds, self.since, self.on_lap = seconds, time.perf_counter(), on_lap

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.since
        self.on_lap(name)  # e.g. device_memory.Peak.sample: the memory at the end of each part
        self.since = time.perf_counter()

    def skip(self) -> None:
        """What ran since the last lap counted itself."""
        self.since = time.perf_counter()
