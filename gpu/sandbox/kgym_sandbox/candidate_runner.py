"""The candidate process's side of an evaluation: it loads the candidate, builds ModelNew and
runs forward on the buffers the judge hands it, one request at a time, and answers each.

Nothing here is trusted: the candidate's code shares this process and may rewrite any of it.
What it answers is data for the judge, which owns the reference, the inputs, the clocks and
the verdict in a process of its own. Inputs arrive, and outputs leave, through buffers the
judge owns; the judge checks them itself.
"""
import os

import torch

from . import channel as channel_mod
from . import compare, cost_model, device_memory, extensions, failures, integrity, isolation, numerics, packing, precision, program, shared_tensors, tracing
from .laps import Laps


class Runner:
    def __init__(self, chan: channel_mod.Channel, workdir: str, device: str, recorder, tracer, bindings: dict,
                 limited: bool = True):
        """`limited`: the candidate's resource limits apply (not to the reference runner)."""
        self.channel, self.workdir, self.device, self.limited = chan, workdir, device, limited
        self.recorder, self.tracer, self.bindings = recorder, tracer, bindings
        self.driver = shared_tensors.CudaDriver() if device == "cuda" else None
        self.model = None
        self.granted, self.confine_error, self.confine_seconds = [], None, {}  # zygote.runner_main
        self.input_sets, self.slots = [[]], [[]]  # per call of a batch: its inputs, its output buffers
        self.kept = {}  # call -> outputs of the last timed batch, for `deliver`
        self.phase = None
        self.pad = None  # held by `move`
        self.core = None  # the timing core, taken at the first request (zygote.timing_cores)
        numerics.pin()  # before any code of the task's or the candidate's

    # -- the requests --------------------------------------------------------------------

    def ping(self, message, fds):
        """Answers before any candidate code exists (the judge measures the round trip),
        with what confinement granted, or why it failed."""
        if self.confine_error is not None:
            return self.refusal("INTERNAL_ERROR", f"candidate confinement failed: {self.confine_error!r}")
        isolation.pin_to_core(self.core)
        return {"isolation": self.granted, "seconds": self.confine_seconds}

    def release(self, message, fds):
        """Gives the device what this process's caching allocator keeps but no tensor uses (the
        judge asks before timing: its own buffers for timing come next)."""
        device_memory.release(self.device)
        return {}

    def move(self, message, fds):
        """Moves where this process's next intermediates lie (timing.time_interleaved's redraw):
        gives back what the allocator caches, the last batch's kept outputs with it, and holds a
        pad of the judge's drawn size in place of the last one, so the next calls allocate
        elsewhere in the device's memory. Runs no kernel (the executor's windows see none)."""
        self.kept, self.pad = {}, None
        device_memory.release(self.device)
        size = min(max(int(message.get("pad_bytes") or 0), 0), device_memory.MAX_PAD_BYTES)
        if self.device == "cuda" and size:
            self.pad = torch.empty(size, dtype=torch.uint8, device="cuda")
        return {}

    def build(self, message, fds):
        """Loads the candidate's module and builds ModelNew(*init_inputs) under the judge's seed
        (`overrides`: the task's CPU sizes, for the reference runner). Says where the time went
        (`seconds`: build_*)."""
        if self.confine_error is not None:  # no code of the candidate's where confinement failed
            return self.refusal("INTERNAL_ERROR", f"candidate confinement failed: {self.confine_error!r}")
        seconds = {}
        lap = Laps(seconds)
        if self.limited:
            limits = isolation.evaluation_limits(self.device, int(message.get("memory_limit_mb") or 4096), self.granted)
            self.granted += isolation.set_limits(limits)
            if self.core is not None:  # it shares its timing core with the reference runner
                self.granted += isolation.lower_priority()
        lap("build_limits")
        self.recorder.candidate_file = os.path.join(self.workdir, "kgym_candidate.py")
        extensions.install_loader(os.path.join(self.workdir, "extensions"), self.device,  # built ahead, by kgym
                                  self.recorder.note_call)
        lap("build_loader")
        try:
            module = program.load_program(self.recorder.candidate_file, "kgym_candidate", str(message["source"]),
                                          dict(message.get("overrides") or {}))
        except BaseException as exc:
            return self.refusal("COMPILE_ERROR", "candidate does not load: " + failures.last_line(exc))
        if not isinstance(getattr(module, "ModelNew", None), type):
            return self.refusal("COMPILE_ERROR", "candidate defines no class ModelNew")
        lap("build_program")
        init_inputs = packing.unpack(message["init_inputs"], self.map_arena(message["arena"], fds))
        lap("build_inputs")
        torch.manual_seed(int(message["seed"]))
        try:
            with torch.device(self.device):
                self.model = precision.move(module.ModelNew(*init_inputs), precision.dtype_of(message.get("precision")))
        except BaseException as exc:
            return self.refusal("COMPILE_ERROR", "ModelNew(*get_init_inputs()) failed: " + failures.last_line(exc))
        lap("build_model")
        patched = integrity.patched(self.bindings)
        lap("build_integrity")
        return {"patched": patched, "limits": self.granted, "seconds": seconds}

    def state(self, message, fds):
        """Parameters and buffers for the model, by name (the reference runner's, from the judge)."""
        tensors = self.map_arena(message["arena"], fds)
        self.model.load_state_dict(dict(zip(message["names"], tensors)))
        return {}

    def inputs_(self, message, fds):
        tensors = self.map_arena(message["arena"], fds)
        sets = [packing.unpack(items, tensors) for items in message["sets"]]
        self.input_sets = self.input_sets + sets if message.get("append") else sets  # added, or all anew
        return {}

    def outputs(self, message, fds):
        tensors = self.map_arena(message["arena"], fds)
        per_call = int(message["per_call"])
        slots = [tensors[i:i + per_call] for i in range(0, len(tensors), per_call)]
        self.slots = self.slots + slots if message.get("append") else slots
        return {}

    def call(self, message, fds):
        """One correctness call (set 0, slot 0), its generated launches recorded in its mode."""
        self.enter(tracing.mode_phase(message.get("mode")))
        self.model.train(message.get("mode") == "train")
        torch.manual_seed(int(message["seed"]))
        self.recorder.mode = message.get("mode")
        try:
            answer = self.run(self.model, 1)
        finally:
            self.recorder.mode = None
            self.enter(tracing.CHECKS)
        if "wrong" not in answer and "error" not in answer:
            answer["patched"] = integrity.patched(self.bindings)
        return answer

    def warm(self, message, fds):
        """An eval-mode call on input set 0 whose outputs are dropped, before the trials: this
        process's first call (kernels loaded, library heuristics, Triton's compiles) while the
        judge makes its own. Untraced: no phase is entered yet."""
        self.model.train(False)
        try:
            with torch.no_grad():
                self.model(*self.input_sets[0])
            if self.device == "cuda":
                torch.cuda.synchronize()
        except BaseException as exc:
            return self.refusal(failures.classify(exc), "forward (eval mode): " + failures.last_line(exc))
        return {}

    def batch(self, message, fds):
        """A timed batch: k eval-mode calls back to back on input sets 0..k-1, their outputs
        kept or copied into their slots (`run`), then one device-wide synchronisation; `passes`
        times over (the judge's measure of what a request costs). A batch opens a window in the
        trace (phase TRACE_BATCH) that TRACE_IDLE closes once the answer is ready; with "rep", a
        traced call (TRACE_TIMED, that rep) closed by TRACE_CHECKS."""
        traced_rep = message.get("rep")
        self.enter(tracing.BATCH if traced_rep is None else tracing.timed_phase(int(traced_rep)))
        try:
            self.model.train(False)
            waited = isolation.run_delay_s()
            answer = self.run(self.model, int(message["k"]), int(message.get("passes") or 1),
                              keep=self.device == "cuda" and traced_rep is None and message.get("keep", True))
            answer.setdefault("waited_s", isolation.run_delay_s() - waited)
            return answer
        finally:
            self.enter(tracing.IDLE if traced_rep is None else tracing.CHECKS)

    def deliver(self, message, fds):
        """The outputs `run` kept of the last timed batch's calls the judge names, into the
        judge's buffers (the j-th named into slot j), after the judge's clock stopped:
        device-to-device copies, and nothing else of this process's may run on the GPU here
        (TRACE_DELIVER; the executor counts the copies). The judge names them a few at a time
        when its slots are fewer than the calls it compares; "done" ends the batch's deliveries
        (the kept outputs are let go)."""
        calls = [int(call) for call in message.get("calls", [])]
        if len(calls) > len(self.slots):
            return self.refusal("RUNTIME_ERROR", f"{len(calls)} outputs to deliver into {len(self.slots)} slots")
        self.enter(tracing.DELIVER)
        try:
            for slot, call in zip(self.slots, calls):
                copy_into(slot, self.kept.get(call, ()))
            if self.device == "cuda":
                torch.cuda.synchronize()
        except BaseException as exc:
            self.kept = {}
            return self.refusal(failures.classify(exc), failures.last_line(exc))
        finally:
            self.enter(tracing.IDLE)
        if message.get("done", True):
            self.kept = {}
        return {}

    def run(self, model, k: int, passes: int = 1, keep: bool = False) -> dict:
        """k calls (`passes` times over), then one synchronisation. With `keep`, every call's
        outputs are kept for `deliver`, so the judge's clock around this request times the calls
        alone, as KernelBench's events do, and the judge needs buffers only for the calls it
        compares: as they are where a plain copy moves them (compare.deliverable) out of plain
        device memory (device_resident), else as a plain copy made here, inside the request.
        Without it each call's outputs are copied into its slot, inside the request."""
        if not 1 <= k <= len(self.input_sets) or not self.slots or (not keep and k > len(self.slots)):
            return self.refusal("RUNTIME_ERROR", f"a batch of {k} calls without {k} input sets and slots")
        aliases, kept = False, {}
        self.kept = {}
        try:
            with torch.no_grad():
                for i, inputs in enumerate(self.input_sets[:k] * max(passes, 1)):
                    out = model(*inputs)
                    try:
                        flat = compare.flatten(out)
                    except TypeError as exc:
                        return {"wrong": str(exc)}
                    if keep:
                        wrong = self.layout_error(self.slots[0], flat)
                        if not wrong:  # a later pass's replaces it
                            kept[i % k] = [t.detach() for t in flat] \
                                if compare.deliverable(flat) and self.device_resident(flat) else plain_copies(flat)
                    else:
                        wrong = self.copy_to(self.slots[i % k], flat)
                    if wrong:
                        return {"wrong": wrong}
                    aliases = aliases or compare.aliases(flat, [x for x in inputs if isinstance(x, torch.Tensor)])
            if self.device == "cuda":
                torch.cuda.synchronize()
        except BaseException as exc:
            return self.refusal(failures.classify(exc), failures.last_line(exc))
        self.kept = kept
        if compare.calls_share_storage(list(kept.values())):
            # One buffer returned by several calls: the earlier calls' outputs are gone. The last
            # call's may be delivered, and the judge copies inside the timing from now on.
            self.kept = {i: v for i, v in kept.items() if i == k - 1}
            return {"aliases": aliases, "reused": True}
        return {"aliases": aliases}

    def profile(self, message, fds):
        """The CPU mode's profiled pass of one mode (cost_model): work left in PyTorch, and
        modeled seconds; the output goes to the slot for the judge to check."""
        self.model.train(message.get("mode") == "train")
        torch.manual_seed(int(message["seed"]))
        given = []
        try:
            work, seconds = cost_model.pytorch_work(self.model, [x.clone() if isinstance(x, torch.Tensor) else x
                                                                 for x in self.input_sets[0]], self.recorder, given)
            wrong = self.copy_to(self.slots[0], compare.flatten(given[0]))
        except BaseException as exc:
            return self.refusal(failures.classify(exc), failures.last_line(exc))
        return {"work": work, "seconds": seconds, **({"wrong": wrong} if wrong else {})}

    def launches(self, message, fds):
        return {"records": self.recorder.records()}

    def finish(self, message, fds):
        self.tracer.phase(tracing.UNTRACED)  # always: the protocol's last call
        self.tracer.finish()
        return {"numerics": numerics.current()}

    # -- helpers ---------------------------------------------------------------------------

    def enter(self, phase: tuple) -> None:
        if phase != self.phase:
            self.tracer.phase(phase)
            self.phase = phase

    def refusal(self, verdict: str, text: str) -> dict:
        return {"error": {"verdict": verdict, "message": text[:failures.MAX_MESSAGE_CHARS]}}

    def map_arena(self, described: dict, fds: list) -> list:
        if shared_tensors.Arena.described_empty(described):
            return []
        if not fds:
            raise ValueError("a shared arena without its descriptor")
        return shared_tensors.Arena(self.device, described["tensors"], self.driver, fd=os.dup(fds[0])).tensors

    def device_resident(self, flat: list) -> bool:
        """Outputs in plain device memory (shared_tensors.CudaDriver.device_resident): final once
        the batch synchronised, so they may be delivered after it. One mapped from host or managed
        memory could still be written by a CPU thread after the answer, unseen by any trace."""
        return all(self.driver.device_resident(t.data_ptr()) for t in flat if t.numel())

    def copy_to(self, slot: list, flat: list) -> str:
        """Copies the outputs into the judge's buffers; what differs in their layout, if anything."""
        wrong = self.layout_error(slot, flat)
        if not wrong:
            copy_into(slot, flat)
        return wrong

    def layout_error(self, slot: list, flat: list) -> str:
        """What differs between the outputs and the judge's buffers for them (shape, dtype, device), if anything."""
        wanted = packing.flat_specs(slot)
        given = packing.flat_specs(flat)
        if len(given) != len(wanted):
            return f"returned {len(given)} tensors, expected {len(wanted)}"
        for i, (g, w) in enumerate(zip(given, wanted)):
            where = f"output {i}: " if len(wanted) > 1 else ""
            if g["shape"] != w["shape"]:
                return f"{where}shape {tuple(g['shape'])}, expected {tuple(w['shape'])}"
            if g["dtype"] != w["dtype"]:
                return f"{where}dtype torch.{g['dtype']}, expected torch.{w['dtype']}"
        for i, (dst, src) in enumerate(zip(slot, flat)):
            if src.device != dst.device:
                return f"{'output %d: ' % i if len(wanted) > 1 else ''}on {src.device}, expected {dst.device}"
        return ""


def copy_into(slot: list, flat: list) -> None:
    """Each output into its buffer of the judge's (layouts already checked: Runner.layout_error)."""
    for dst, src in zip(slot, flat):
        dst.copy_(src.detach())


def plain_copies(flat: list) -> list:
    """Contiguous tensors in this process's device memory holding the outputs' values now
    (layouts already checked): what `deliver` may copy for outputs it could not move as they are."""
    return [torch.empty(tuple(t.shape), dtype=t.dtype, device=t.device).copy_(t.detach()) for t in flat]


OPS = {"ping": Runner.ping, "build": Runner.build, "inputs": Runner.inputs_, "outputs": Runner.outputs,
       "call": Runner.call, "warm": Runner.warm, "batch": Runner.batch, "deliver": Runner.deliver,
       "state": Runner.state, "profile": Runner.profile, "launches": Runner.launches, "release": Runner.release,
       "move": Runner.move, "finish": Runner.finish}


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
