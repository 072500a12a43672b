"""The candidate process's side of an evaluation: it loads the candidate, builds ModelNew and
runs forward on the buffers the judge hands it, one request at a time, and answers each.

Nothing here is trusted: the candidate's code shares this process and may rewrite any of it.
What it answers is data for the judge, which owns the reference, the inputs, the clocks and
the verdict in a process of its own. The judge reads outputs from buffers it owns (or, for
timed calls on the GPU, from the allocation the output lies in) and checks them itself.
"""
import os

import torch

from . import channel as channel_mod
from . import compare, cost_model, failures, integrity, isolation, packing, program, shared_tensors, timing


class Runner:
    def __init__(self, chan: channel_mod.Channel, workdir: str, device: str, recorder, tracer, bindings: dict):
        self.channel, self.workdir, self.device = chan, workdir, device
        self.recorder, self.tracer, self.bindings = recorder, tracer, bindings
        self.driver = shared_tensors.CudaDriver() if device == "cuda" else None
        self.model, self.null_model = None, timing.NullModel()
        self.granted, self.confine_error = [], None
        self.inputs, self.slot, self.last = [], [], None
        self.phase = None

    # -- the requests --------------------------------------------------------------------

    def ping(self, message, fds):
        """Answers before any candidate code exists (the judge measures the round trip),
        with what confinement granted, or why it failed."""
        if self.confine_error is not None:
            return self.refusal("INTERNAL_ERROR", f"candidate confinement failed: {self.confine_error!r}")
        return {"isolation": self.granted}

    def build(self, message, fds):
        """Loads the candidate's module and builds ModelNew(*init_inputs) under the judge's seed."""
        limits = isolation.evaluation_limits(self.device, int(message.get("memory_limit_mb") or 4096))
        self.granted += isolation.set_limits(limits)
        self.recorder.candidate_file = os.path.join(self.workdir, "kgym_candidate.py")
        try:
            module = program.load_program(self.recorder.candidate_file, "kgym_candidate", str(message["source"]), {})
        except BaseException as exc:
            return self.refusal("COMPILE_ERROR", "candidate does not load: " + failures.last_line(exc))
        if not isinstance(getattr(module, "ModelNew", None), type):
            return self.refusal("COMPILE_ERROR", "candidate defines no class ModelNew")
        init_inputs = packing.unpack(message["init_inputs"], [b.tensor for b in self.map_buffers(message["buffers"], fds)])
        torch.manual_seed(int(message["seed"]))
        try:
            with torch.device(self.device):
                self.model = module.ModelNew(*init_inputs)
        except BaseException as exc:
            return self.refusal("COMPILE_ERROR", "ModelNew(*get_init_inputs()) failed: " + failures.last_line(exc))
        return {"patched": integrity.patched(self.bindings), "limits": self.granted}

    def inputs_(self, message, fds):
        buffers = self.map_buffers(message["buffers"], fds)
        self.inputs = packing.unpack(message["items"], [b.tensor for b in buffers])
        return {}

    def outputs(self, message, fds):
        self.slot = [b.tensor for b in self.map_buffers(message["buffers"], fds)]
        return {}

    def call(self, message, fds):
        """One forward. `copy`: into the judge's output slot; `export` (GPU timing): say where
        the output lies; `count`: a correctness call whose generated launches are recorded."""
        self.enter(message.get("phase"))
        model = self.null_model if message.get("null") else self.model
        model.train(message.get("mode") == "train")
        if message.get("seed"):
            torch.manual_seed(int(message["seed"]))
        self.recorder.mode = message.get("mode") if message.get("count") else None
        try:
            with torch.no_grad():
                out = model(*self.inputs)
            if self.device == "cuda":
                torch.cuda.synchronize()
        except BaseException as exc:
            return self.refusal(failures.classify(exc), failures.last_line(exc))
        finally:
            self.recorder.mode = None
            self.enter(message.get("after"))
        try:
            flat = compare.flatten(out)
        except TypeError as exc:
            return {"wrong": str(exc)}
        answer = {"aliases": compare.aliases(out, [x for x in self.inputs if isinstance(x, torch.Tensor)]),
                  "specs": packing.flat_specs(flat)}
        if message.get("export"):
            self.last = flat  # kept alive until the next call, while the judge reads it
            answer["outputs"] = [shared_tensors.export_output(self.driver, t) for t in flat]
        if message.get("copy"):
            wrong = self.copy_to_slot(flat)
            if wrong:
                return {"wrong": wrong}
        if message.get("count"):
            answer["patched"] = integrity.patched(self.bindings)
        return answer

    def profile(self, message, fds):
        """The CPU mode's profiled pass of one mode (cost_model): work left in PyTorch, and
        modeled seconds; the output goes to the slot for the judge to check."""
        self.model.train(message.get("mode") == "train")
        given = []
        try:
            work, seconds = cost_model.pytorch_work(self.model, [x.clone() if isinstance(x, torch.Tensor) else x
                                                                 for x in self.inputs], self.recorder, given)
            wrong = self.copy_to_slot(compare.flatten(given[0]))
        except BaseException as exc:
            return self.refusal(failures.classify(exc), failures.last_line(exc))
        return {"work": work, "seconds": seconds, **({"wrong": wrong} if wrong else {})}

    def launches(self, message, fds):
        return {"records": self.recorder.records()}

    def finish(self, message, fds):
        self.tracer.phase("untraced")  # always: the protocol's last call
        self.tracer.finish()
        return {}

    # -- helpers ---------------------------------------------------------------------------

    def enter(self, phase) -> None:
        if phase and phase != self.phase:
            self.tracer.phase(phase)
            self.phase = phase

    def refusal(self, verdict: str, text: str) -> dict:
        return {"error": {"verdict": verdict, "message": text[:failures.MAX_MESSAGE_CHARS]}}

    def map_buffers(self, specs: list, fds: list) -> list:
        if self.device == "cuda":
            return [shared_tensors.DeviceBuffer(self.driver, shared_tensors.checked_spec(s), s["handle"]) for s in specs]
        return [shared_tensors.HostBuffer(shared_tensors.checked_spec(s), fd) for s, fd in zip(specs, fds)]

    def copy_to_slot(self, flat: list) -> str:
        """Copies the outputs into the judge's buffers; what differs in their layout, if anything."""
        wanted = packing.flat_specs(self.slot)
        given = packing.flat_specs(flat)
        if len(given) != len(wanted):
            return f"returned {len(given)} tensors, expected {len(wanted)}"
        for i, (g, w) in enumerate(zip(given, wanted)):
            where = f"output {i}: " if len(wanted) > 1 else ""
            if g["shape"] != w["shape"]:
                return f"{where}shape {tuple(g['shape'])}, expected {tuple(w['shape'])}"
            if g["dtype"] != w["dtype"]:
                return f"{where}dtype torch.{g['dtype']}, expected torch.{w['dtype']}"
        for dst, src in zip(self.slot, flat):
            dst.copy_(src.detach().to(dst.device))
        if self.device == "cuda":
            torch.cuda.synchronize()
        return ""


OPS = {"ping": Runner.ping, "build": Runner.build, "inputs": Runner.inputs_, "outputs": Runner.outputs,
       "call": Runner.call, "profile": Runner.profile, "launches": Runner.launches, "finish": Runner.finish}


def serve(runner: Runner) -> None:
    """Answers requests until the judge says finish or goes away."""
    while True:
        try:
            message, fds = runner.channel.receive()
        except (channel_mod.ChannelClosed, channel_mod.Malformed):
            return
        op = OPS.get(message.get("op"))
        try:
            answer = op(runner, message, fds) if op else runner.refusal("INTERNAL_ERROR", "unknown request")
        except BaseException as exc:  # a request the runner could not carry out
            answer = runner.refusal(failures.classify(exc), failures.last_line(exc))
        for fd in fds:
            os.close(fd)  # the mappings stay
        runner.channel.send({"nonce": message.get("nonce"), **answer})
        if message.get("op") == "finish":
            return
