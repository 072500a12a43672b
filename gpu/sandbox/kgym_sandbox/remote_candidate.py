"""The candidate as the judge sees it: a process at the other end of a channel.

Every answer is checked against the request it answers (a fresh nonce each), and every
output the judge uses is copied into the judge's own memory before it is looked at. The
candidate's time is the judge's clock around a request, less what a request costs beyond
the call (timing.calibrate, before any candidate code existed).
"""
import os
import time

import torch

from . import channel as channel_mod
from . import failures, packing, shared_tensors

class RemoteCandidate:
    def __init__(self, chan: channel_mod.Channel, device: str, source: str, traced: bool, memory_limit_mb: int = 0):
        self.channel, self.device, self.source, self.traced = chan, device, source, traced
        self.memory_limit_mb = memory_limit_mb
        self.isolation = []  # what the candidate process said confinement granted it
        self.driver = shared_tensors.CudaDriver() if device == "cuda" else None
        self.overhead_s = 0.0  # timing.calibrate sets it
        self.input_buffers, self.input_specs = [], None
        self.slot = []

    def request(self, phase: str, message: dict, fds: list = (), internal_ok: bool = False) -> dict:
        """Sends one request and returns its answer; a failure for a dead or lying candidate.
        `internal_ok`: the answer comes before any candidate code exists, so a failure of
        kgym's own (confinement) is believed."""
        message = dict(message, nonce=channel_mod.nonce())
        try:
            self.channel.send(message, fds)
            answer, extra = self.channel.receive()
        except channel_mod.ChannelClosed:
            raise failures.Failure("CRASHED", phase, f"the candidate process exited during {message['op']}")
        except channel_mod.Malformed as exc:
            raise self.forged(phase, str(exc))
        for fd in extra:
            os.close(fd)
        if answer.get("nonce") != message["nonce"]:
            raise self.forged(phase, "an answer to a request that was not made")
        error = answer.get("error")
        if error is not None:
            allowed = ("COMPILE_ERROR", "RUNTIME_ERROR", "CUDA_ERROR", "RESOURCE_LIMIT") + \
                (("INTERNAL_ERROR",) if internal_ok else ())
            if not isinstance(error, dict) or error.get("verdict") not in allowed:
                raise self.forged(phase, "an error the runner does not report")
            raise failures.Failure(error["verdict"], phase, str(error.get("message", "")))
        return answer

    def forged(self, phase: str, detail: str) -> failures.Failure:
        return failures.Failure("HACKED", phase, "the candidate process sent what its runner never sends",
                                [{"kind": "forged_frame", "detail": detail[:200], "source": "judge"}])

    # -- set-up ----------------------------------------------------------------------------

    def hello(self) -> None:
        """The first request, answered before any candidate code exists: what confinement
        granted the candidate process, or why it failed (then believed: INTERNAL_ERROR)."""
        answer = self.request("load", {"op": "ping"}, internal_ok=True)
        if isinstance(answer.get("isolation"), list):
            self.isolation = [str(g)[:100] for g in answer["isolation"][:30]]

    def build(self, init_inputs: list, seed: int) -> list:
        """Loads the candidate and builds ModelNew; returns what it patched, if anything."""
        buffers = []
        items = packing.pack(init_inputs, buffers, self.share)
        answer = self.request("load", {"op": "build", "source": self.source, "init_inputs": items, "seed": seed,
                                       "memory_limit_mb": self.memory_limit_mb,
                                       "buffers": packing.specs_of(buffers)}, self.fds(buffers))
        if isinstance(answer.get("limits"), list):
            self.isolation = [str(g)[:100] for g in answer["limits"][:30]]
        return self.patched(answer)

    def share(self, tensor: torch.Tensor):
        spec = shared_tensors.spec_of(tensor)
        buffer = shared_tensors.DeviceBuffer(self.driver, spec) if self.device == "cuda" else shared_tensors.HostBuffer(spec)
        buffer.tensor.copy_(tensor)
        return buffer

    def fds(self, buffers: list) -> list:
        return [b.fd for b in buffers] if self.device == "cpu" else []

    # -- inputs and outputs ------------------------------------------------------------------

    def fill(self, inputs: list, phase: str) -> None:
        """Gives the candidate its own copy of `inputs` (it may write into it; the reference
        never sees that copy): new buffers when the layout changes, else written in place."""
        items = packing.pack(inputs, [], lambda t: None)
        specs = (items, [shared_tensors.spec_of(x) for x in inputs if isinstance(x, torch.Tensor)])
        if specs != self.input_specs:
            buffers = []
            items = packing.pack(inputs, buffers, self.share)
            self.request(phase, {"op": "inputs", "items": items, "buffers": packing.specs_of(buffers)},
                         self.fds(buffers))
            self.input_buffers, self.input_specs = buffers, specs
            return
        for buffer, x in zip(self.input_buffers, [x for x in inputs if isinstance(x, torch.Tensor)]):
            buffer.tensor.copy_(x)
        if self.device == "cuda":
            torch.cuda.synchronize()

    def expect(self, expected: list, phase: str) -> None:
        """Output buffers shaped like the reference's outputs, for the candidate to copy into."""
        specs = packing.flat_specs(expected)
        if specs != packing.flat_specs([b.tensor for b in self.slot]):
            self.slot = [self.share(torch.zeros_like(t)) for t in expected]
            self.request(phase, {"op": "outputs", "buffers": packing.specs_of(self.slot)}, self.fds(self.slot))

    def slot_copy(self) -> list:
        """The judge's own copy of what the candidate left in the output buffers."""
        return [b.tensor.clone() for b in self.slot]

    # -- calls ---------------------------------------------------------------------------

    def call(self, mode: str, seed: int, phase: str, expected: list) -> tuple:
        """A correctness call: (outputs or None, message when their layout is wrong, aliases, patched)."""
        self.expect(expected, phase)
        answer = self.request(phase, {"op": "call", "mode": mode, "seed": seed, "phase": mode, "after": "checks",
                                      "copy": True, "count": True})
        if "wrong" in answer:
            return None, str(answer["wrong"])[:failures.MAX_MESSAGE_CHARS], False, self.patched(answer)
        return self.slot_copy(), "", answer.get("aliases") is True, self.patched(answer)

    def timed_call(self, expected: list, phase: str = None, null: bool = False) -> tuple:
        """(seconds by the judge's clock, the answer) for one eval-mode call; `null`: of the
        runner's own null model (calibration), with nothing taken off."""
        cuda = self.device == "cuda"
        if not cuda and not null:
            self.expect(expected, "timing")
        message = {"op": "call", "mode": "eval", "phase": phase or ("untraced" if not null else None),
                   "after": "checks" if phase else None, "export": cuda, "copy": not cuda and not null, "null": null}
        t0 = time.perf_counter()
        answer = self.request("timing" if not null else "load", message)
        return max(time.perf_counter() - t0 - (0.0 if null else self.overhead_s), 0.0), answer

    def readout(self, answer: dict, expected: list) -> tuple:
        """(outputs, message when their layout is wrong) of a timed call's answer."""
        if "wrong" in answer:
            return None, str(answer["wrong"])[:failures.MAX_MESSAGE_CHARS]
        if self.device != "cuda":
            return self.slot_copy(), ""
        described = answer.get("outputs")
        if not isinstance(described, list) or len(described) != len(expected):
            return None, f"returned {len(described) if isinstance(described, list) else 'no'} tensors, " \
                         f"expected {len(expected)}"
        try:
            return [shared_tensors.import_output(self.driver, d) for d in described], ""
        except (ValueError, RuntimeError, TypeError) as exc:
            raise self.forged("timing", f"timed output: {exc}")

    def profile(self, mode: str, expected: list) -> tuple:
        """CPU mode: (PyTorch work left, modeled seconds, outputs or None, message)."""
        self.expect(expected, "correctness")
        answer = self.request("correctness", {"op": "profile", "mode": mode})
        work, seconds = answer.get("work"), answer.get("seconds")
        if not all(isinstance(v, (int, float)) and v >= 0 for v in (work, seconds)):
            raise self.forged("correctness", "a malformed profile")
        if "wrong" in answer:
            return float(work), float(seconds), None, str(answer["wrong"])[:failures.MAX_MESSAGE_CHARS]
        return float(work), float(seconds), self.slot_copy(), ""

    def launches(self) -> list:
        """The candidate process's launch record, rebuilt from what it says (its word: the
        CUPTI trace, read by the executor, is the evidence on the GPU)."""
        records = self.request("correctness", {"op": "launches"}).get("records")
        try:
            records = [{"mode": {"train": "train", "eval": "eval"}[r["mode"]], "generated_launches": int(r["generated_launches"]),
                     "kernel_names": [str(n)[:200] for n in r["kernel_names"][:50]], "source": str(r["source"])[:40]}
                    for r in records[:2]]
        except (KeyError, TypeError, ValueError) as exc:
            raise self.forged("correctness", f"a malformed launch record: {exc!r}")
        if sorted(r["mode"] for r in records) != ["eval", "train"]:
            raise self.forged("correctness", "a launch record without both modes")
        return records

    def finish(self) -> None:
        self.request("timing", {"op": "finish"})

    def patched(self, answer: dict) -> list:
        names = answer.get("patched", [])
        if not isinstance(names, list):
            raise self.forged("load", "a malformed integrity report")
        return [str(n)[:200] for n in names[:20]]
