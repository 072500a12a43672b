"""How fast one model runs, process by process, in kgym's sandbox and outside it.

On an H200 KernelBench's `l2_77` ran 4.8 or 6.3 ms a call, the same kernels either way, by where
a process's intermediates lie (bench/RESULTS.md, "Where the intermediates lie"). Three ways to look:

  sandbox: `kgym check` of a candidate that is the task's own Model and, at its --at-th call (by
    default in the timing), times the model (the clock around 8 calls, synchronised) on the inputs it was handed, on its
    own copy of them, with its weights copied too, and after a 2 GiB pad (its intermediates stay
    where the allocator's cache keeps them throughout), then --moves times more, each after a
    move of its intermediates (the cache given back, a pad of a random size up to --move-pad-mib held:
    as the judge's placement search on branch experiment/placement-tries), then raises with the
    figures: each verdict's message carries one candidate process's speeds.
  alone: processes forked one after another from a parent that imported torch (as the sandbox's
    zygote does; --exec: started fresh), each timing the model on inputs of its own; --holders K
    keeps K idle processes with a CUDA context and 1 GiB each beside them; --arena puts each
    process's inputs in a cuMemCreate allocation another process made and exported, mapped as
    the sandbox's processes map the judge's arenas (shared_tensors.Arena); --pad-gib N has each
    process hold N GiB before its model and inputs exist (as kernel_choice.py's pads, which moved
    some placements to the slow time outside the sandbox); --moves N times each process N times
    more, each after its intermediates moved.
  handoff: two live processes take turns, one moving its intermediates, timing and giving its
    cache back, the other allocating and timing right after: whether the follower takes over the
    leader's memory, and its mode with it.

A process counts as slow when its time is more than 10% above the fastest process's.

    python3 bench/process_speed.py sandbox --kernelbench KB --level 2 --only 77 --processes 14 --moves 8
    python3 bench/process_speed.py alone --kernelbench KB --level 2 --only 77 --processes 12 --holders 5
    python3 bench/process_speed.py handoff --kernelbench KB --level 2 --only 77 --rounds 12
    python3 bench/process_speed.py sandbox --task tasks/row_sum --device cpu --processes 3   (the plumbing)
"""
import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import kernelbench_tasks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "gpu", "sandbox"))  # kgym_sandbox, imported where a process needs it
SLOW = 1.10  # above the fastest process's time by this factor: slow

PROBE = '''

import random as _random
import time as _time
import torch as _torch
_calls = [0]


class ModelNew(Model):
    def forward(self, *args):
        _calls[0] += 1
        if _calls[0] < PROBE_AT:
            return Model.forward(self, *args)

        def timed(xs, n=8):
            Model.forward(self, *xs)
            cuda = any(isinstance(x, _torch.Tensor) and x.is_cuda for x in xs)
            if cuda:
                _torch.cuda.synchronize()
            started = _time.perf_counter()
            for _ in range(n):
                Model.forward(self, *xs)
            if cuda:
                _torch.cuda.synchronize()
            return (_time.perf_counter() - started) * 1e3 / n

        def copied(xs):
            return [x.clone() if isinstance(x, _torch.Tensor) else x for x in xs]

        def weights_copied():
            for t in list(self.parameters()) + list(self.buffers()):
                t.data = t.data.clone()

        def moved(rng, held):
            if cuda:
                _torch.cuda.synchronize()
            held.clear()  # the last pad goes back with the cache
            if cuda:
                _torch.cuda.empty_cache()
            held.append(_torch.empty(rng.randrange(PROBE_PAD_STEPS) * (2 << 20) + rng.randrange(1, 4096) * 512 if cuda else 1,
                                     dtype=_torch.uint8, device=args[0].device))

        cuda = args[0].is_cuda
        given = timed(args)
        fresh = copied(args)
        fresh_ms = timed(fresh)
        weights_copied()
        weights_ms = timed(fresh)
        pad = _torch.empty(2 << 30 if cuda else 1, dtype=_torch.uint8, device=args[0].device)  # noqa: F841  (held)
        padded = copied(args)
        weights_copied()
        padded_ms = timed(padded)
        rng, held, moves = _random.Random(), [], []
        for _ in range(PROBE_MOVES):
            moved(rng, held)
            moves.append(timed(args))
        raise RuntimeError(f"PROBE call {_calls[0]} given {given:.3f} fresh {fresh_ms:.3f} "
                           f"weights {weights_ms:.3f} padded {padded_ms:.3f} moves " + ",".join(f"{m:.3f}" for m in moves))
'''
PROBED = re.compile(r"PROBE call (\d+) given ([\d.]+) fresh ([\d.]+) weights ([\d.]+) padded ([\d.]+) moves ([\d.,]*)")


def task_dir(args, workdir: str) -> str:
    """The task under `workdir`: a KernelBench problem (--kernelbench, --level, --only) or a copy of --task."""
    if args.task:
        return shutil.copytree(args.task, os.path.join(workdir, os.path.basename(os.path.abspath(args.task))))
    found = kernelbench_tasks.problems(args.kernelbench, args.level, {args.only})
    if not found:
        sys.exit(f"no problem {args.only} in level {args.level} of {args.kernelbench}")
    return kernelbench_tasks.identity_task(found[0], args.level, workdir)


def slow_count(times: list) -> int:
    fastest = min(times)
    return sum(t > SLOW * fastest for t in times)


def sandbox(args) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        task = task_dir(args, workdir)
        with open(os.path.join(task, "task.py")) as f:
            source = f.read()
        os.makedirs(os.path.join(task, "candidates"), exist_ok=True)
        with open(os.path.join(task, "candidates", "probe.py"), "w") as f:
            f.write(source + PROBE.replace("PROBE_AT", str(args.at)).replace("PROBE_MOVES", str(args.moves))
                    .replace("PROBE_PAD_STEPS", str(max(args.move_pad_mib // 2, 1))))
        command = [args.kgym, "check", "--device", args.device, "--json", "--no-hacking-check", *args.kgym_arg,
                   *["--candidate", "probe"] * args.processes, "--task", task]
        out = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    rows = []
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            found = PROBED.search(result.get("message") or "")
            if not found:
                print(f"{result.get('request_id')}: {result.get('verdict')} {(result.get('message') or '')[:300]}")
                continue
            moves = [float(x) for x in found[6].split(",") if x]
            rows.append((result.get("request_id"), int(found[1]), *(float(x) for x in found.groups()[1:5]), moves))
    if not rows:
        sys.exit(f"no probe answered: {out.stderr[-2000:]}")
    print(f"{os.path.basename(task)}: the candidate's process, ms a call (probe at call {args.at}, {args.device})")
    print("| request | given inputs | own copy | weights copied too | after a 2 GiB pad | after each move |")
    print("|---|---|---|---|---|---|")
    for request, _, *ms, moves in rows:
        print(f"| {request} | " + " | ".join(f"{m:.3f}" for m in ms) + " | " + (" ".join(f"{m:.2f}" for m in moves) or "-")
              + " |")
    for name, column in (("given inputs", 2), ("own copy", 3), ("weights copied too", 4), ("after a pad", 5)):
        times = [row[column] for row in rows]
        print(f"slow on {name}: {slow_count(times)} of {len(times)}")
    if args.moves:
        print_moves([row[6] for row in rows], min(min(row[2:6]) for row in rows))


def print_moves(per_process: list, fastest: float) -> None:
    """Each process's times after its moves: how many slow (against `fastest`, any process's
    best before moving), and its slowest over its fastest (modes closer than the slow line,
    l2_61's 3.26 and 3.47 ms on an H200, show there)."""
    fastest = min([fastest] + [t for moves in per_process for t in moves])
    slow = [sum(t > SLOW * fastest for t in moves) for moves in per_process]
    print(f"slow after a move: {sum(slow)} of {sum(len(m) for m in per_process)}; per process "
          + ", ".join(f"{n}/{len(m)}" for n, m in zip(slow, per_process)))
    print("slowest over fastest move, per process: " + ", ".join(f"{max(m) / min(m):.3f}" for m in per_process if m))


def load_task(path: str):
    spec = importlib.util.spec_from_file_location("task", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def give_back(torch, held: list, drop: bool) -> None:
    """What the allocator's cache keeps, given back to the device; with `drop`, the pads in
    `held` first."""
    torch.cuda.synchronize()
    if drop:
        held.clear()
    torch.cuda.empty_cache()


def move_intermediates(torch, rng, held: list, pad_mib: int) -> None:
    """What the allocator's cache keeps given back and a pad of a random size (up to `pad_mib`)
    held in `held` instead: the next calls' intermediates come from other device memory."""
    give_back(torch, held, drop=True)
    held.append(torch.empty(rng.randrange(max(pad_mib // 2, 1)) * (2 << 20) + rng.randrange(1, 4096) * 512,
                            dtype=torch.uint8, device="cuda"))


def timed_calls(torch, model, inputs: list, calls: int) -> float:
    """ms a call of `calls` eval-mode calls by CUDA events, after one that settles allocations."""
    with torch.no_grad():
        model(*inputs)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            model(*inputs)
        end.record()
        torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def built_model(torch, task_path: str):
    """The task's Model (eval mode) and inputs on the GPU, seeded as every process here."""
    from kgym_sandbox import numerics
    numerics.pin()
    task = load_task(task_path)
    torch.manual_seed(0)
    with torch.device("cuda"):
        return task.Model(*task.get_init_inputs()).eval(), task.get_inputs()


def time_model(task_path: str, calls: int, arena_fd: int = -1, pad_gib: float = 0.0, moves: int = 0,
               move_pad_mib: int = 512) -> list:
    """ms a call of the task's Model on inputs of this process's own (in the arena `arena_fd`
    opens, if given; after a pad of `pad_gib` held), eval mode, the sandbox's numerics; then
    once more after each of `moves` moves of its intermediates (move_intermediates)."""
    import torch
    from kgym_sandbox import shared_tensors
    pad = torch.empty(int(pad_gib * (1 << 30)), dtype=torch.uint8, device="cuda") if pad_gib > 0 else None  # noqa: F841
    model, inputs = built_model(torch, task_path)
    arena = None
    if arena_fd >= 0:
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        arena = shared_tensors.Arena("cuda", [shared_tensors.spec_of(x) for x in tensors], shared_tensors.CudaDriver(),
                                     arena_fd)
        for mapped, x in zip(arena.tensors, tensors):
            mapped.copy_(x)
        placed = iter(arena.tensors)
        inputs = [next(placed) if isinstance(x, torch.Tensor) else x for x in inputs]
    times, rng, held = [timed_calls(torch, model, inputs, calls)], random.Random(), []
    for _ in range(moves):
        move_intermediates(torch, rng, held, move_pad_mib)
        times.append(timed_calls(torch, model, inputs, calls))
    return times


def hold(memory_bytes: int, exporter=None, task_path: str = "") -> None:
    """An idle process with a CUDA context and `memory_bytes`; as the exporter, an arena for the
    task's inputs whose descriptor it sends down `exporter` for every byte read from it."""
    import torch
    from kgym_sandbox import shared_tensors
    kept = torch.empty(memory_bytes, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    if exporter is None:
        time.sleep(3600)
        return
    task = load_task(task_path)
    with torch.device("meta"):
        specs = [shared_tensors.spec_of(x) for x in task.get_inputs() if isinstance(x, torch.Tensor)]
    arena = shared_tensors.Arena("cuda", specs, shared_tensors.CudaDriver())
    while exporter.recv(1):
        socket.send_fds(exporter, [b"f"], [arena.fd])
    del kept


def forked(target, *args) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            target(*args)
        except BaseException:  # its error on stderr; the parent sees no time
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    return pid


def alone(args) -> None:
    import torch  # noqa: F401  imported before any fork, as in the sandbox's zygote
    with tempfile.TemporaryDirectory() as workdir:
        task_path = os.path.join(task_dir(args, workdir), "task.py")
        holders = [forked(hold, 1 << 30) for _ in range(args.holders)]
        exporter = None
        if args.arena:
            exporter, theirs = socket.socketpair()
            holders.append(forked(hold, 1 << 20, theirs, task_path))
            theirs.close()
        time.sleep(5 if holders else 0)  # their contexts up
        times = []
        try:
            for _ in range(args.processes):
                fd = -1
                if exporter is not None:
                    exporter.send(b"?")
                    _, fds, _, _ = socket.recv_fds(exporter, 1, 1)
                    fd = fds[0]
                if args.exec:
                    command = [sys.executable, os.path.abspath(__file__), "child", task_path, str(args.calls), str(fd),
                               str(args.pad_gib), str(args.moves), str(args.move_pad_mib)]
                    out = subprocess.run(command, capture_output=True, text=True, pass_fds=[fd] if fd >= 0 else [],
                                         timeout=120)
                    if out.returncode != 0:
                        sys.exit(f"a process failed: {out.stderr[-2000:]}")
                    times.append([float(t) for t in out.stdout.split()[-1].split(",")])
                else:
                    r, w = os.pipe()
                    pid = forked(lambda: os.write(w, ",".join(
                        f"{t:.4f}" for t in time_model(task_path, args.calls, fd, args.pad_gib, args.moves,
                                                       args.move_pad_mib)).encode()))
                    os.close(w)
                    data = b""
                    while chunk := os.read(r, 100):
                        data += chunk
                    os.waitpid(pid, 0)
                    os.close(r)
                    if not data:
                        sys.exit("a process failed (its error is above)")
                    times.append([float(t) for t in data.decode().split(",")])
                if fd >= 0:
                    os.close(fd)
                print(f"  process {len(times)}: {times[-1][0]:.3f} ms" +
                      (" (after each move: " + " ".join(f"{t:.2f}" for t in times[-1][1:]) + ")" if args.moves else ""),
                      flush=True)
        finally:
            for pid in holders:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
    how = "exec'd" if args.exec else "forked"
    first = [t[0] for t in times]
    print(f"{os.path.basename(os.path.dirname(task_path))}: {len(times)} processes {how} one after another, "
          f"{args.holders} idle beside them{', inputs in an imported arena' if args.arena else ''}"
          f"{f', a {args.pad_gib:g} GiB pad first' if args.pad_gib else ''}: "
          f"{min(first):.3f}-{max(first):.3f} ms a call, slow {slow_count(first)} of {len(first)}")
    if args.moves:
        print_moves([t[1:] for t in times], min(first))


def serve_turns(task_path: str, commands, answers, calls: int, pad_mib: int) -> None:
    """A handoff process: its model built, it answers "time" (ms a call), "move" (its
    intermediates moved, the pad held), "release" (its cache given back, the pad kept), "drop"
    (the pad given back too) and "quit", one line each."""
    import torch
    model, inputs = built_model(torch, task_path)
    rng, held = random.Random(), []
    for line in commands:
        op = line.strip()
        if op == "time":
            answers.write(f"{timed_calls(torch, model, inputs, calls):.4f}\n")
        elif op == "move":
            move_intermediates(torch, rng, held, pad_mib)
        elif op in ("release", "drop"):
            give_back(torch, held, drop=op == "drop")
        if op != "time":
            answers.write("done\n")
        answers.flush()
        if op == "quit":
            return


def handoff(args) -> None:
    """Two live processes, A and B: each round one moves its intermediates and times the model,
    gives its cache back keeping its pad, then the other times (allocating right after) and
    gives its cache back, and the first drops its pad; A leads `--rounds` rounds, then B. If
    the second takes over the first's memory, both run in the same mode every round."""
    import torch  # noqa: F401  imported before any fork, as in the sandbox's zygote
    with tempfile.TemporaryDirectory() as workdir:
        task_path = os.path.join(task_dir(args, workdir), "task.py")
        sides = {}
        for name in "AB":
            to_r, to_w = os.pipe()
            from_r, from_w = os.pipe()
            pid = forked(lambda: serve_turns(task_path, os.fdopen(to_r), os.fdopen(from_w, "w"), args.calls,
                                             args.move_pad_mib))
            os.close(to_r)
            os.close(from_w)
            sides[name] = (pid, os.fdopen(to_w, "w"), os.fdopen(from_r))

        def ask(name: str, op: str) -> str:
            _, commands, answers = sides[name]
            commands.write(op + "\n")
            commands.flush()
            answer = answers.readline().strip()
            if not answer:
                sys.exit(f"process {name} failed (its error is above)")
            return answer

        pairs = []
        try:
            for lead, other in [("A", "B")] * args.rounds + [("B", "A")] * args.rounds:
                ask(lead, "move")
                led = float(ask(lead, "time"))
                ask(lead, "release")
                followed = float(ask(other, "time"))
                ask(other, "release")
                ask(lead, "drop")
                pairs.append((led, followed))
                print(f"  round {len(pairs)}: {lead} {led:.3f} ms, then {other} {followed:.3f} ms", flush=True)
        finally:
            for name, (pid, commands, _) in sides.items():
                try:
                    commands.write("quit\n")
                    commands.flush()
                except BrokenPipeError:  # it failed already
                    pass
                os.waitpid(pid, 0)
    fastest = min(min(p) for p in pairs)
    same = sum((a > SLOW * fastest) == (b > SLOW * fastest) for a, b in pairs)
    print(f"{os.path.basename(os.path.dirname(task_path))}: both processes in the same mode in {same} of {len(pairs)} "
          f"rounds (slow: above {SLOW:.2f} x {fastest:.3f} ms); the leader slow {sum(a > SLOW * fastest for a, _ in pairs)}, "
          f"the follower {sum(b > SLOW * fastest for _, b in pairs)}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":  # alone --exec: one process's time
        print(",".join(f"{t:.4f}" for t in time_model(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]),
                                                       int(sys.argv[6]), int(sys.argv[7]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["sandbox", "alone", "handoff"])
    parser.add_argument("--kernelbench", help="a KernelBench checkout (or --task)")
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--only", type=int, help="the problem's number")
    parser.add_argument("--task", help="a task directory instead of a KernelBench problem")
    parser.add_argument("--processes", type=int, default=12)
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="sandbox: the device to check on")
    parser.add_argument("--at", type=int, default=40, help="sandbox: the call that probes (1: the first, a warm-up)")
    parser.add_argument("--moves", type=int, default=0,
                        help="sandbox, alone: then time the model this many times more, each after its intermediates moved")
    parser.add_argument("--move-pad-mib", type=int, default=512, help="a move's pad, at most this many MiB")
    parser.add_argument("--rounds", type=int, default=12, help="handoff: rounds led by each process")
    parser.add_argument("--kgym-arg", action="append", default=[],
                        help="sandbox: one more argument for kgym check (repeat it), e.g. --kgym-arg=--no-cupti")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--calls", type=int, default=20, help="alone, handoff: timed calls a measure")
    parser.add_argument("--exec", action="store_true", help="alone: fresh processes instead of forked ones")
    parser.add_argument("--holders", type=int, default=0, help="alone: idle CUDA processes beside them")
    parser.add_argument("--arena", action="store_true", help="alone: inputs in another process's exported allocation")
    parser.add_argument("--pad-gib", type=float, default=0.0,
                        help="alone: each process holds a pad this large before its model and inputs exist")
    args = parser.parse_args()
    if not args.task and not (args.kernelbench and args.only is not None):
        parser.error("give --kernelbench and --only, or --task")
    {"sandbox": sandbox, "alone": alone, "handoff": handoff}[args.mode](args)


if __name__ == "__main__":
    main()
