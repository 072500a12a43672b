#!/usr/bin/env python3
"""Where kgym serve's CPU goes under load: the setups of dispatch_bench.py (plain, TLS to the
workers, TLS + the request journal), each run --runs times in turn with --requests in flight,
and for each the answers/s and the CPU seconds of every thread of serve and of the workers,
read from /proc (serve's own thread is "kgym", the journal's writer "kgym-journal", CAF's
"caf.multiplexer"). The thread that is busy most of the wall time is what bounds the rate.

    python3 bench/dispatch_threads.py [--requests 20000] [--runs 2] [--slots 1]
"""
import argparse
import os
import platform
import time

import dispatch_bench


def thread_cpu(pid: int) -> dict:
    """(tid, name) -> CPU seconds (user + system) of every thread of `pid`."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[(tid, name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kgym", default="build/kgym")
    parser.add_argument("--requests", type=int, default=20000, help="requests in flight per measurement")
    parser.add_argument("--runs", type=int, default=2, help="rounds of the three setups, alternated")
    parser.add_argument("--slots", type=int, default=1,
                        help="executors per worker process, as dispatch_bench.py --slots (8: the control plane's capacity)")
    args = parser.parse_args()
    print(f"kgym dispatch threads: {platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}")
    certs = dispatch_bench.make_certs()
    for _ in range(args.runs):
        for setup in ("plain", "tls", "tls+journal"):
            cluster = dispatch_bench.Cluster(args.kgym, 2, "plain" if setup == "plain" else certs,
                                             setup == "tls+journal", slots=args.slots)
            try:
                cluster.run_batch(1000)  # warm
                pids = {"serve": cluster.serve.pid, **{f"worker{i}": w.pid for i, w in enumerate(cluster.workers)}}
                before = {n: thread_cpu(p) for n, p in pids.items()}
                started = time.perf_counter()
                rate = cluster.run_batch(args.requests)
                wall = time.perf_counter() - started
                after = {n: thread_cpu(p) for n, p in pids.items()}
            finally:
                cluster.close()
            print(f"{setup:12s} {rate:7.0f} answers/s, wall {wall:.2f} s")
            for n in pids:
                used = {k: v - before[n].get(k, 0.0) for k, v in after[n].items()}
                top = sorted(used, key=lambda k: -used[k])[:3]
                print(f"  {n:8s} " + ", ".join(f"{k[1]} {used[k]:.2f} s ({used[k] / wall:.0%})" for k in top))


if __name__ == "__main__":
    main()
