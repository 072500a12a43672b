"""Newline-delimited JSON frames that follow the proto3 JSON mapping of kgym.proto."""
import json
import os


def write_frame(fd: int, message: dict) -> None:
    data = (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Reads whole lines from a file descriptor, keeping partial lines between reads."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""

    def read_available(self) -> list:
        """One os.read; returns the complete lines it finished, or None at end of file."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            return None
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [line for line in lines if line]
