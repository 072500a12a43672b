"""The candidate as the judge sees it: a process at the other end of a channel.

Every answer is checked against the request it answers (a fresh nonce each), and every
output the judge uses lies in the judge's own buffers (the candidate's calls copy into them). The
candidate's time is the judge's clock around a request, less what a request costs beyond
the calls (timing.plan measures that on the reference runner before any candidate code
existed). The reference runner is the same kind of process serving the task's Model
(`trusted`): what goes wrong there is kgym's or the task's, never the candidate's.
"""
import os
import time

import torch

from . import channel as channel_mod
from . import device_memory, failures, in_place_inputs, numerics, packing, precision, shared_tensors, timing

# A side's output buffers for delivered outputs: as many as the calls of a batch while they take
# at most this much, at least one. KernelBench's harness holds one output a side; the calls'
# own outputs stay in the processes that made them until the judge has named those it compares.
DELIVERY_BYTES = 256 << 20


def delivery_slots(k: int, output_bytes: int) -> int:
    """Output buffers a side needs for a batch of k calls whose outputs it keeps until delivery."""
    return max(1, min(k, DELIVERY_BYTES // max(output_bytes, 1)))


class RemoteCandidate:
    def __init__(self, chan: channel_mod.Channel, device: str, source: str, traced: bool, memory_limit_mb: int = 0,
                 trusted: bool = False):
        self.channel, self.device, self.source, self.traced = chan, device, source, traced
        self.trusted = trusted
        self.memory_limit_mb = memory_limit_mb
        self.isolation = []  # what the candidate process said confinement granted it
        # What confining itself (ping) and building (build) cost the process, by its own report:
        # the reference runner's are kgym's, the candidate process's are informative only.
        self.reported_seconds = {}
        self.driver = shared_tensors.CudaDriver() if device == "cuda" else None
        self.overhead_s = 0.0  # timing.plan sets it
        self.forget_inputs()  # the process's copies of the input sets
        self.forget_outputs()  # per call of a batch: its output buffers
        self.batch_ms = []  # the judge's clock around each timed batch request, in order
        self.delivery_ms = []  # ... and around each delivery of a batch's outputs (cuda)
        self.keep_outputs = True  # the process keeps its outputs for the delivery (else copies them timed)
        self.batch_kept = False  # whether the last timed batch's outputs wait for `deliver`

    def request(self, phase: str, message: dict, fds: list = (), internal_ok: bool = False) -> dict:
        """Sends one request and returns its answer; a failure for a dead or lying candidate.
        `internal_ok`: the answer comes before any candidate code exists, so a failure of
        kgym's own (confinement) is believed."""
        return self.collect(self.post(phase, message, fds), internal_ok)

    def post(self, phase: str, message: dict, fds: list = ()) -> tuple:
        """Sends a request without waiting for its answer (`collect` takes it)."""
        message = dict(message, nonce=channel_mod.nonce())
        try:
            self.channel.send(message, fds)
        except channel_mod.ChannelClosed:
            raise self.blamed(failures.Failure("CRASHED", phase, f"the candidate process exited before {message['op']}"))
        return phase, message

    def collect(self, pending: tuple, internal_ok: bool = False) -> dict:
        phase, message = pending
        try:
            answer, extra = self.channel.receive()
        except channel_mod.ChannelClosed:
            raise self.blamed(failures.Failure("CRASHED", phase, f"the candidate process exited during {message['op']}"))
        except channel_mod.Malformed as exc:
            raise self.blamed(self.forged(phase, str(exc)))
        for fd in extra:
            os.close(fd)
        if answer.get("nonce") != message["nonce"]:
            raise self.blamed(self.forged(phase, "an answer to a request that was not made"))
        error = answer.get("error")
        if error is not None:
            allowed = ("COMPILE_ERROR", "RUNTIME_ERROR", "CUDA_ERROR", "RESOURCE_LIMIT") + \
                (("INTERNAL_ERROR",) if internal_ok or self.trusted else ())
            if not isinstance(error, dict) or error.get("verdict") not in allowed:
                raise self.blamed(self.forged(phase, "an error the runner does not report"))
            raise self.blamed(failures.Failure(error["verdict"], phase, str(error.get("message", ""))))
        return answer

    def blamed(self, failure: failures.Failure) -> failures.Failure:
        """The failure as the verdict has it: the reference runner's are kgym's or the task's,
        and so is the candidate's failed GPU allocation unless its process held more than its
        share of the GPU (device_memory.candidate_exhausted); kgym's own out of GPU memory
        says so (the executor tries again)."""
        device_oom = self.device == "cuda" and failure.verdict in ("RESOURCE_LIMIT", "INTERNAL_ERROR") and \
            (failures.out_of_device_memory(failure.message) or
             (failure.verdict == "INTERNAL_ERROR" and failures.harmed_warm_up(failure.message)))
        if self.trusted:
            return failures.Failure("INTERNAL_ERROR", failure.phase, f"the reference runner failed ({failure.verdict}): "
                                    f"{failure.message}", own_memory=device_oom)
        if failure.verdict == "INTERNAL_ERROR":  # believed only before candidate code exists
            failure.own_memory = device_oom
            return failure
        if device_oom:
            exhausted, held = device_memory.candidate_exhausted()
            if not exhausted:
                # Believed for a retry, not for good: the executor charges the candidate with a
                # shortage its process meets in every attempt (a fake error meets it every time).
                return failures.Failure("INTERNAL_ERROR", failure.phase, "the candidate's process, holding less than "
                                        f"its share ({held}), failed ({failure.verdict}): {failure.message}",
                                        [{"kind": "CANDIDATE_OUT_OF_DEVICE_MEMORY", "detail": failure.message[:200],
                                          "source": "judge"}], own_memory=True)
            # Its own allocation failed first (kgym's: zygote.sample_failed_device).
            message, evidence = device_memory.exhausted_account(held, failure.message)
            return failures.Failure(failure.verdict, failure.phase, message, [evidence])
        return failure

    def forged(self, phase: str, detail: str) -> failures.Failure:
        return failures.Failure("HACKED", phase, "the candidate process sent what its runner never sends",
                                [{"kind": "FORGED_FRAME", "detail": detail[:200], "source": "judge"}])

    # -- set-up ----------------------------------------------------------------------------

    def hello(self) -> None:
        """The first request, answered before any candidate code exists: what confinement
        granted the candidate process, or why it failed (then believed: INTERNAL_ERROR)."""
        answer = self.request("load", {"op": "ping"}, internal_ok=True)
        if isinstance(answer.get("isolation"), list):
            self.isolation = [str(g)[:100] for g in answer["isolation"][:30]]
        self.note_seconds(answer, "confine")

    def build(self, init_inputs: list, seed: int, overrides: dict = None, dtype=torch.float32) -> list:
        """Loads the candidate and builds ModelNew; returns what it patched, if anything."""
        return self.built(self.start_build(init_inputs, seed, overrides, dtype))

    def start_build(self, init_inputs: list, seed: int, overrides: dict = None, dtype=torch.float32) -> tuple:
        """The build request, sent: the process builds while the judge goes on (`built` waits)."""
        tensors = []
        items = packing.pack(init_inputs, tensors)
        arena = self.share(tensors)
        pending = self.post("load", {"op": "build", "source": self.source, "init_inputs": items, "seed": seed,
                                     "memory_limit_mb": self.memory_limit_mb, "arena": arena.describe(),
                                     "overrides": overrides or {},
                                     "precision": precision.name_of(dtype)},
                                arena.fds())
        return pending, arena  # the arena lives until the answer: the process maps it first

    def note_seconds(self, answer: dict, prefix: str) -> None:
        """Keeps the answer's "seconds" whose names start with `prefix` (at most 10)."""
        seconds = answer.get("seconds")
        if isinstance(seconds, dict):
            self.reported_seconds.update({k: float(v) for k, v in list(seconds.items())[:10]
                                          if isinstance(k, str) and k.startswith(prefix) and
                                          isinstance(v, (int, float))})

    def built(self, started: tuple) -> list:
        answer = self.collect(started[0])
        self.note_seconds(answer, "build_")
        if isinstance(answer.get("limits"), list):
            self.isolation = [str(g)[:100] for g in answer["limits"][:30]]
        return self.patched(answer)

    def load_state(self, model) -> None:
        """Gives the served model the parameters and buffers of `model` (the judge's reference,
        after the trials: BatchNorm's running statistics as the candidate's evolved)."""
        state = model.state_dict()
        if not state:
            return
        names, tensors = zip(*state.items())
        arena = self.share(list(tensors))
        self.request("timing", {"op": "state", "names": list(names), "arena": arena.describe()}, arena.fds())

    def share(self, tensors: list) -> shared_tensors.Arena:
        """A new arena holding copies of `tensors` (of those on the meta device: nothing yet)."""
        arena = shared_tensors.Arena(self.device, packing.flat_specs(tensors), self.driver)
        for dst, src in zip(arena.tensors, tensors):
            if not src.is_meta:
                dst.copy_(src)
        return arena

    # -- inputs and outputs ------------------------------------------------------------------

    def fill_sets(self, sets: list, phase: str) -> None:
        """Gives the candidate its own copy of each input set (it may write into it; the
        reference never sees that copy), written in place in the sets shared before; more sets
        than are shared: an arena for those beyond, added (the process keeps its earlier sets);
        another layout: the old sets let go first (`drop_inputs`), then one arena for all. Sets
        are only let go when their layout changes, which a task's fixed shapes never do, so a
        process that keeps every tensor it is handed holds no more than one that does not."""
        tensors = []
        items = [packing.pack(inputs, tensors) for inputs in sets]
        per_set = len(tensors) // len(sets)
        layout = items[0], packing.flat_specs(tensors[:per_set])
        if layout != self.input_layout:
            self.drop_inputs(phase)
            self.input_layout, self.input_pattern = layout, packing.meta(sets[0])
        shared = self.input_sets
        if len(sets) > shared:
            added = []
            added_items = [packing.pack(inputs, added) for inputs in sets[shared:]]  # indices into the new arena
            arena = self.share(added)
            self.request(phase, {"op": "inputs", "sets": added_items, "arena": arena.describe(), "append": shared > 0},
                         arena.fds())
            self.input_arenas.append(arena)
            self.input_sets = len(sets)
        kept = tensors[:min(shared, len(sets)) * per_set]
        if any(not t.is_meta for t in kept):  # a pattern (reserve_sets) has no values to write
            targets = self.input_tensors()[:len(kept)]
            kept, placed = in_place_inputs.settled(kept, targets)
            for dst, src, done in zip(targets, kept, placed):
                if not done:
                    dst.copy_(src)
        if self.device == "cuda":
            torch.cuda.synchronize()

    def input_tensors(self) -> list:
        """Every shared input tensor, set after set (packing's order within a set)."""
        return [t for arena in self.input_arenas for t in arena.tensors]

    def input_targets(self, k: int) -> list:
        """The buffers of input sets 0..k-1 (a list of tensors per set, in packing's order) for
        the next sets to be made in (in_place_inputs): [] until k sets are shared."""
        if not self.input_arenas or k > self.input_sets:
            return []
        shared = self.input_tensors()
        n = len(shared) // self.input_sets
        return [shared[i * n:(i + 1) * n] for i in range(k)]

    def drop_inputs(self, phase: str) -> None:
        """Both sides let go of the input sets before sets of another layout are made: the old
        arenas are freed first (shared_tensors._Mapping), not beside the new one (8 GiB a set at
        KernelBench's level-1 sizes)."""
        if self.input_arenas:
            self.forget_inputs()
            self.request(phase, {"op": "inputs", "sets": [], "arena": {"tensors": []}})

    def drop_outputs(self, phase: str) -> None:
        """The same for the output buffers."""
        if self.slots:
            per_call = len(self.slot_specs)
            self.forget_outputs()
            self.request(phase, {"op": "outputs", "per_call": per_call, "arena": {"tensors": []}})

    def let_go(self) -> None:
        """The judge's buffers for a process that is done (the reference runner after its
        last batch): freed once the process's own mappings go with it."""
        self.forget_inputs()
        self.forget_outputs()

    def forget_inputs(self) -> None:
        self.input_arenas, self.input_layout, self.input_sets, self.input_pattern = [], None, 0, None

    def forget_outputs(self) -> None:
        self.slots, self.slot_specs = [], None

    def reserve_sets(self, k: int, pattern: list = None) -> list:
        """An arena for k sets laid out as `pattern` (packing.meta of a set; by default the sets
        shared now), written by no one yet: the next sets are made in it (input_targets), so the
        judge holds no set of its own beside the arenas (8 GiB each at KernelBench's level-1 sizes)."""
        pattern = self.input_pattern if pattern is None else pattern
        if pattern is None:
            return []
        self.fill_sets([pattern] * k, "timing")
        return self.input_targets(k)

    def fill(self, inputs: list, phase: str) -> None:
        self.fill_sets([inputs], phase)

    def expect(self, expected: list, phase: str, k: int = 1) -> None:
        """Output buffers shaped like the reference's outputs, for the calls of a batch of k to
        copy into (the judge's memory: nothing is read from the candidate's): one a call where
        calls copy inside their request (the CPU, or after `reused`), else `delivery_slots`."""
        specs = packing.flat_specs(expected)
        copied = self.device != "cuda" or not self.keep_outputs
        n = k if copied else delivery_slots(k, timing.tensor_bytes(expected))
        if specs != self.slot_specs:  # other outputs: the old buffers go first
            self.drop_outputs(phase)
            self.slot_specs = specs
        if n > len(self.slots):  # more: buffers for those beyond, added as input sets are
            arena = shared_tensors.Arena(self.device, specs * (n - len(self.slots)), self.driver)
            self.request(phase, {"op": "outputs", "per_call": len(expected), "arena": arena.describe(),
                                 "append": bool(self.slots)}, arena.fds())
            self.slots += [arena.tensors[i:i + len(expected)] for i in range(0, len(arena.tensors), len(expected))]

    def slot_output(self, i: int) -> list:
        """What slot i holds, compared where it lies (no copy: at KernelBench's sizes one output
        is up to 8 GiB). The buffers are the judge's, though the candidate's process keeps them
        mapped: values it writes after answering are work outside the time the judge saw, which
        the trace shows on the GPU (deferred work)."""
        return list(self.slots[i])

    def delivered_output(self, call: int, j: int) -> list:
        """Call `call` of the last timed batch: the j-th delivered by its `deliver`, or where the
        calls copied inside the request, its own slot."""
        return self.slot_output(j if self.batch_kept else call)

    # -- calls ---------------------------------------------------------------------------

    def start_warm(self, inputs: list) -> tuple:
        """An eval-mode call on `inputs` whose outputs nobody reads, sent: the process's first
        call (kernels loaded, Triton's compiles) runs while the judge makes its own first."""
        self.fill(inputs, "correctness")
        return self.post("correctness", {"op": "warm"})

    def finish_warm(self, pending: tuple) -> None:
        self.collect(pending)

    def call(self, mode: str, seed: int, phase: str, expected: list) -> tuple:
        """A correctness call: (outputs or None, message when their layout is wrong, aliases, patched)."""
        return self.finish_call(self.start_call(mode, seed, phase, expected))

    def start_call(self, mode: str, seed: int, phase: str, pattern: list) -> tuple:
        """A correctness call, sent (`pattern`: tensors shaped like the outputs, for the buffers
        they are copied into); `finish_call` takes its answer."""
        self.expect(pattern, phase)
        return self.post(phase, {"op": "call", "mode": mode, "seed": seed})

    def finish_call(self, pending: tuple) -> tuple:
        answer = self.collect(pending)
        if "wrong" in answer:
            return None, str(answer["wrong"])[:failures.MAX_MESSAGE_CHARS], False, []
        return self.slot_output(0), "", answer.get("aliases") is True, self.patched(answer)

    def start_batch(self, k: int, passes: int = 1) -> tuple:
        """An untimed batch (a warm-up), sent: the process runs it while the judge goes on."""
        return self.post("load", {"op": "batch", "k": k, "passes": passes})

    def finish_batch(self, pending: tuple) -> None:
        answer = self.collect(pending)
        if "wrong" in answer:
            raise self.blamed(failures.Failure("RUNTIME_ERROR", "load", "a warm-up batch: " +
                                               str(answer["wrong"])[:failures.MAX_MESSAGE_CHARS]))

    def timed_batch(self, k: int, rep: int = None, raw: bool = False, passes: int = 1) -> tuple:
        """(seconds by the judge's clock, the answer) for `passes` passes of k eval-mode calls
        back to back, less the cost of a request (`raw`: with nothing taken off); with `rep`, a
        traced timing rep instead of a batch. The clock around every batch request is kept
        (`batch_ms`): the executor matches each to the window the candidate's trace shows for it.
        On the GPU the process keeps the outputs for `deliver`."""
        t0 = time.perf_counter()
        self.batch_kept = self.device == "cuda" and self.keep_outputs and rep is None
        pending = self.post("timing", {"op": "batch", "k": k, "passes": passes, "keep": self.keep_outputs,
                                       **({} if rep is None else {"rep": rep})})
        try:
            answer = self.collect(pending)
        finally:
            if rep is None:
                self.batch_ms.append((time.perf_counter() - t0) * 1e3)
        seconds = max(time.perf_counter() - t0 - (0.0 if raw else self.overhead_s), 0.0)
        if "wrong" in answer:
            raise failures.Failure("HACKED", "timing", "wrong output while being timed: " + str(answer["wrong"])[:500],
                                   [{"kind": "WRONG_OUTPUT_WHEN_TIMED", "detail": str(answer["wrong"])[:500],
                                     "source": "judge"}])
        return seconds, answer

    def delivery_size(self) -> int:
        """Calls one `deliver` may name (where the calls copied inside their request, any)."""
        return len(self.slots) if self.batch_kept else 1 << 30

    def deliver(self, calls: list, done: bool = True) -> None:
        """On the GPU, the outputs of the last timed batch's `calls` (the judge's choice, made
        after the batch; at most delivery_size) into its buffers, off the clock; `done`: the
        batch's last delivery. The judge's clock around the request is kept (`delivery_ms`):
        the executor matches each to the delivery window the trace shows."""
        if not self.batch_kept or not calls:
            return
        t0 = time.perf_counter()
        try:
            self.request("timing", {"op": "deliver", "calls": list(calls), "done": done})
        finally:
            self.delivery_ms.append((time.perf_counter() - t0) * 1e3)

    def profile(self, mode: str, seed: int, expected: list) -> tuple:
        """CPU mode: (PyTorch work left, modeled seconds, outputs or None, message)."""
        self.expect(expected, "correctness")
        answer = self.request("correctness", {"op": "profile", "mode": mode, "seed": seed})
        work, seconds = answer.get("work"), answer.get("seconds")
        if not all(isinstance(v, (int, float)) and v >= 0 for v in (work, seconds)):
            raise self.forged("correctness", "a malformed profile")
        if "wrong" in answer:
            return float(work), float(seconds), None, str(answer["wrong"])[:failures.MAX_MESSAGE_CHARS]
        return float(work), float(seconds), self.slot_output(0), ""

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

    def release(self, phase: str) -> None:
        """Asks the process to give back what its allocator caches (device_memory.release)."""
        self.request(phase, {"op": "release"})

    def move(self, pad_bytes: int, phase: str) -> None:
        """Asks the process to move its intermediates (Runner.move): its cache given back, a pad
        of `pad_bytes` held. The candidate may ignore it; that only keeps its own placement."""
        self.request(phase, {"op": "move", "pad_bytes": int(pad_bytes)})

    def finish(self) -> list:
        """Ends the process's trace; the numerics flags it reports other than pinned (its word)."""
        return numerics.changed(self.request("timing", {"op": "finish"}).get("numerics"))

    def patched(self, answer: dict) -> list:
        names = answer.get("patched", [])
        if not isinstance(names, list):
            raise self.forged("load", "a malformed integrity report")
        return [str(n)[:200] for n in names[:20]]
