"""Where a piece of work's time went, part by part (ExecResult.harness_seconds)."""
import time


class Laps:
    """Parts of a phase in `seconds` (phase frames stay per phase: they set the executor's
    deadlines)."""

    def __init__(self, seconds: dict):
        self.seconds, self.since = seconds, time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.since
        self.since = now

    def skip(self) -> None:
        """What ran since the last lap counted itself."""
        self.since = time.perf_counter()
