"""Dispatch overhead and scaling of `kgym serve` + `kgym worker`, with executors that answer at
once (`kgym worker --null-executor`), so what is measured is the control plane: the ZeroMQ
API, the scheduler, CAF's middleman between processes.

- latency: one request at a time; request in -> executor start, and result out (executor
  start -> answer at the client), p50 and p99, through 1 worker process;
- throughput: answers/s with 2000 requests in flight, as worker processes grow (1, 2, 4, 8,
  16, one executor each); the baseline is the 1-worker figure of the same run.

- soak (--soak N): N requests through one worker, 2000 in flight at a time, and the server's
  resident memory (VmRSS) after each 10% of them: with answers kept in memory at most
  --max-answers (the request table's bound), it stays flat once that many are held.
- two builds (--before OLD/build/kgym): answers/s and the result path's p50 of each, plain,
  TLS and TLS + journal, the builds alternated in a fresh random order each round.

    python3 bench/dispatch_bench.py [--kgym build/kgym] [--requests 2000] [--workers 1,2,4,8,16]
    python3 bench/dispatch_bench.py --soak 100000 [--max-answers 10000]
    python3 bench/dispatch_bench.py --before OLD/build/kgym --requests 50000 --rounds 5 --slots 8

--pin (6 CPUs or more) gives the client, serve and the workers cores of their own (client: the
first; serve: half the rest; the workers: the others), so the OS's placement of their threads
does not move from run to run: on a 16-core host the rounds of one setup spread 0.53-1.71x
unpinned (2026-11-28).
"""
import argparse
import atexit
import json
import os
import platform
import random
import shutil
import subprocess
import tempfile
import time
import urllib.request

import zmq


def wait_line(path: str, timeout: float = 30.0) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path):
            text = open(path).read().strip()
            if text:
                return text
        time.sleep(0.05)
    raise RuntimeError(f"{path} did not appear")


def make_certs() -> str:
    """Cluster credentials for serve and the workers (deploy/cluster_certs.sh)."""
    certs = tempfile.mkdtemp(prefix="kgym-dispatch-certs-")
    atexit.register(shutil.rmtree, certs, True)
    subprocess.run(["bash", os.path.join(os.path.dirname(__file__), "..", "deploy", "cluster_certs.sh"), certs,
                    "serve", "w0", "w1"], check=True, stdout=subprocess.DEVNULL)
    return certs


PINNED = {}  # --pin: "client", "serve" and "workers" -> their cores (pin_cores)


def pin_cores(cores: list) -> dict:
    """The client on the first core, serve on half of the rest, the workers on the others."""
    if len(cores) < 6:
        raise SystemExit(f"--pin needs 6 CPUs or more, this process may use {len(cores)}")
    rest = cores[1:]
    return {"client": cores[:1], "serve": rest[:len(rest) // 2], "workers": rest[len(rest) // 2:]}


def pinned(role: str):
    """A Popen preexec_fn that moves the child to its role's cores (nothing without --pin)."""
    cores = PINNED.get(role)
    return (lambda: os.sched_setaffinity(0, cores)) if cores else None


class Cluster:
    def __init__(self, kgym: str, workers: int, certs: str = "", journal: bool = False, serve_args: list = (),
                 slots: int = 1):
        """`slots`: null executors per worker (a GPU node has one per GPU).
        `certs`: cluster credentials (make_certs) for serve and workers; "plain": the plain
        middleman (--plain-loopback, no TLS); "": as users get it on loopback (TLS under the
        user's own loopback CA). `journal`: serve journals every request and answer
        (--state-dir). `serve_args`: more for serve."""
        self.tmp = tempfile.mkdtemp(prefix="kgym-dispatch-")
        self.state_dir = f"{self.tmp}/state" if journal else ""
        serve_tls = ["--plain-loopback"] if certs == "plain" else ["--cluster-certs", f"{certs}/serve"] if certs else []
        # With the journal, HTTP too: /v1/status counts how its answers were committed.
        serve_tls += ["--state-dir", self.state_dir, "--http", "127.0.0.1:0", "--http-file", f"{self.tmp}/http"] \
            if journal else []
        self.serve = subprocess.Popen([kgym, "serve", "--executors", "0", "--api", "tcp://127.0.0.1:*",
                                       "--endpoint-file", f"{self.tmp}/api", "--listen", "127.0.0.1:0",
                                       "--listen-file", f"{self.tmp}/port"] + serve_tls + list(serve_args),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=pinned("serve"))
        self.endpoint = wait_line(f"{self.tmp}/api")
        self.http_port = int(wait_line(f"{self.tmp}/http")) if journal else 0
        join = "127.0.0.1:" + wait_line(f"{self.tmp}/port")
        # Over TLS a worker's name is its certificate's (w0, w1): --name then says the same.
        self.workers = [subprocess.Popen([kgym, "worker", "--join", join, "--null-executor", "--name", f"w{i}",
                                          "--cpu-slots", str(slots)]
                                         + (["--plain-loopback"] if certs == "plain" else
                                            ["--cluster-certs", f"{certs}/w{i}"] if certs else []),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         preexec_fn=pinned("workers"))
                        for i in range(workers)]
        self.socket = zmq.Context.instance().socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(self.endpoint)
        self.serial = 0
        # Warm up until every worker has joined and answered.
        self.run_batch(20 * workers)

    def request(self) -> bytes:
        self.serial += 1
        return json.dumps({"request_id": f"q{self.serial}", "task_id": "softmax_rows",
                           "candidate_source": f"class ModelNew: pass  # {self.serial}"}).encode()

    def receive(self) -> dict:
        if not self.socket.poll(60000):
            raise TimeoutError("no answer in 60 s")
        answer = json.loads(self.socket.recv())
        if answer.get("error"):
            raise RuntimeError(answer["error"])
        return answer

    def run_batch(self, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            self.socket.send(self.request())
        for _ in range(n):
            self.receive()
        return n / (time.perf_counter() - start)

    def latencies(self, n: int):
        inbound, outbound = [], []
        for _ in range(n):
            sent = time.time()
            self.socket.send(self.request())
            answer = self.receive()
            received = time.time()
            started = answer["result"]["harness_seconds"]["executor_start_unix"]
            inbound.append((started - sent) * 1e3)
            outbound.append((received - started) * 1e3)
        return inbound, outbound

    def journal_commits(self) -> tuple:
        """(answers committed on the API service's thread, by the journal writer's) so far."""
        status = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/v1/status").read())
        return int(status.get("answers_committed_at_once", 0)), int(status.get("answers_committed_by_writer", 0))

    def close(self):
        """Stops the processes (serve commits the journal's last batch on exit), notes the
        journal's size (`journal_bytes`) and removes the cluster's files: a round's journal left
        on disk would be written back while the next setup is measured."""
        for w in self.workers:
            w.terminate()
        for w in self.workers:
            w.wait(timeout=30)
        self.serve.terminate()
        self.serve.wait(timeout=30)
        self.journal_bytes = journal_bytes(self.state_dir)
        shutil.rmtree(self.tmp, ignore_errors=True)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def journal_bytes(state_dir: str) -> int:
    return sum(os.path.getsize(os.path.join(state_dir, f)) for f in os.listdir(state_dir)) if state_dir else 0


def compare_tls(args) -> None:
    """Latency (500 requests one at a time) and answers/s (args.requests in flight after 500 to
    warm up, 2 worker processes of args.slots executors): plain, over TLS, and over TLS with the
    journal, each of args.rounds rounds running the three in a fresh random order, so neither
    drift nor what one setup leaves behind falls on one of them; medians, the ratio to plain
    and the result path's difference to plain within each round (their medians); and the
    journal's size per 100,000 requests."""
    certs = make_certs()
    setups = (("plain", "plain", False), ("tls", certs, False), ("tls+journal", certs, True))
    rows = {name: [] for name, _, _ in setups}
    journal_per_request = 0.0
    at_once = {"one at a time": [], "in flight": []}  # the journal's answers committed on the API thread, a share
    for _ in range(args.rounds):
        for name, tls, journal in random.sample(setups, len(setups)):
            cluster = Cluster(args.kgym, 1, tls, journal, serve_args=args.serve_arg)
            before = cluster.journal_commits() if journal else None
            inbound, outbound = cluster.latencies(500)
            if journal:
                at_once["one at a time"].append(share_at_once(before, cluster.journal_commits()))
            cluster.close()
            cluster = Cluster(args.kgym, 2, tls, journal, serve_args=args.serve_arg, slots=args.slots)
            cluster.run_batch(500)
            before = cluster.journal_commits() if journal else None
            rate = cluster.run_batch(args.requests)
            if journal:
                at_once["in flight"].append(share_at_once(before, cluster.journal_commits()))
            cluster.close()  # the journal's last batch is committed on exit
            if journal:
                journal_per_request = cluster.journal_bytes / (args.requests + 540)  # + the warm-ups
            rows[name].append((percentile(inbound, 50), percentile(outbound, 50), rate))
    print(f"{'link':>12} {'in p50 ms':>10} {'out p50 ms':>11} {'answers/s':>10}   (medians of {args.rounds} rounds, "
          f"{args.slots} executor(s) a worker)")
    median = {name: tuple(percentile([r[i] for r in runs], 50) for i in range(3)) for name, runs in rows.items()}
    for name, (inbound, outbound, rate) in median.items():
        print(f"{name:>12} {inbound:>10.3f} {outbound:>11.3f} {rate:>10.0f}")
    plain = median["plain"]
    for name in ("tls", "tls+journal"):
        other = median[name]
        ratios = [o[2] / p[2] for o, p in zip(rows[name], rows["plain"])]
        out_diffs = [o[1] - p[1] for o, p in zip(rows[name], rows["plain"])]
        print(f"{name} - plain: in p50 {other[0] - plain[0]:+.3f} ms, out p50 {other[1] - plain[1]:+.3f} ms "
              f"(paired by round: median {percentile(out_diffs, 50):+.3f}; "
              f"{', '.join(f'{d:+.3f}' for d in out_diffs)}), answers/s {percentile(ratios, 50):.2f}x "
              f"(median of the rounds' ratios: {', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"journal: {journal_per_request * 1e5 / 2**20:.1f} MiB per 100,000 requests (this bench's small programs), "
          f"written at {median['tls+journal'][2]:.0f} requests/s")
    print("journal: answers committed on the API service's thread (sent at once, not through the writer's): " +
          "; ".join(f"{how} {percentile(shares, 50):.0%} (rounds {', '.join(f'{x:.0%}' for x in shares)})"
                    for how, shares in at_once.items()))


def share_at_once(before: tuple, after: tuple) -> float:
    """Of the answers committed between two Cluster.journal_commits(), the share committed at once."""
    at_once, by_writer = after[0] - before[0], after[1] - before[1]
    return at_once / max(at_once + by_writer, 1)


def compare_builds(args) -> None:
    """Two builds of kgym, plain, over TLS and over TLS with the journal, the builds in a fresh
    random order each of args.rounds rounds: the result path's latency (p50 of 500 requests one
    at a time through 1 worker: executor start -> answer at the client) and answers/s with
    args.requests in flight (2 worker processes of args.slots executors); medians, each round's
    after/before ratio, and the result path's difference paired by round."""
    certs = make_certs()
    setups = (("plain", "plain", False), ("tls", certs, False), ("tls+journal", certs, True))
    rates, outs = {}, {}
    for _ in range(args.rounds):
        builds = [("before", args.before), ("after", args.kgym)]
        random.shuffle(builds)
        for build, kgym in builds:
            for name, tls, journal in setups:
                cluster = Cluster(kgym, 1, tls, journal, serve_args=args.serve_arg)
                try:
                    outs.setdefault((build, name), []).append(percentile(cluster.latencies(500)[1], 50))
                finally:
                    cluster.close()
                cluster = Cluster(kgym, 2, tls, journal, serve_args=args.serve_arg, slots=args.slots)
                try:
                    cluster.run_batch(500)
                    rates.setdefault((build, name), []).append(cluster.run_batch(args.requests))
                finally:
                    cluster.close()
    print(f"before: {args.before}, after: {args.kgym}; {args.requests} requests in flight, 2 workers x {args.slots} "
          f"executors, medians of {args.rounds} rounds")
    print(f"{'link':>12} {'before':>9} {'after':>9} {'after/before':>13}   (each round's ratio)   "
          f"{'out p50 ms before':>18} {'after':>7}")
    for name, _, _ in setups:
        before, after = rates[("before", name)], rates[("after", name)]
        ratios = [a / b for a, b in zip(after, before)]
        print(f"{name:>12} {percentile(before, 50):>9.0f} {percentile(after, 50):>9.0f} "
              f"{percentile(after, 50) / percentile(before, 50):>13.3f}   ({', '.join(f'{r:.2f}' for r in ratios)})   "
              f"{percentile(outs[('before', name)], 50):>18.3f} {percentile(outs[('after', name)], 50):>7.3f}")
    # Paired by round (both builds measured in it, in a random order): a small change on the way
    # out shows here even where rounds of one build spread far more than it (a 2-core VM).
    for name, _, _ in setups:
        diffs = [a - b for a, b in zip(outs[("after", name)], outs[("before", name)])]
        print(f"{name:>12} out p50 after - before, paired by round: median {percentile(diffs, 50):+.3f} ms, "
              f"lower in {sum(d < 0 for d in diffs)} of {len(diffs)} rounds")


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def soak(args) -> None:
    """args.soak requests through one worker, args.requests in flight at a time; the server's
    RSS at the start (after the warm-up) and after every tenth."""
    cluster = Cluster(args.kgym, 1, serve_args=["--max-answers", str(args.max_answers)])
    start = rss_mib(cluster.serve.pid)
    print(f"soak: {args.soak} requests, {args.requests} in flight, kgym serve --max-answers {args.max_answers}")
    print(f"{'requests':>9} {'serve RSS MiB':>14} {'answers/s':>10}")
    print(f"{0:>9} {start:>14.1f} {'':>10}")
    done, step = 0, max(args.soak // 10, args.requests)
    while done < args.soak:
        rates = []
        for _ in range(step // args.requests):
            rates.append(cluster.run_batch(args.requests))
        done += step // args.requests * args.requests
        print(f"{done:>9} {rss_mib(cluster.serve.pid):>14.1f} {sum(rates) / len(rates):>10.0f}")
    end = rss_mib(cluster.serve.pid)
    cluster.close()
    print(f"serve RSS: start {start:.1f} MiB, end {end:.1f} MiB ({end - start:+.1f} MiB over {done} requests)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kgym", default="build/kgym")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--tls", action="store_true",
                        help="only compare plain, TLS (cluster credentials) and TLS + the request journal, same run")
    parser.add_argument("--rounds", type=int, default=5, help="for --tls: rounds of the three setups")
    parser.add_argument("--slots", type=int, default=1,
                        help="for --tls: executors per worker process (1: each answer waits for a round trip "
                             "to its worker; 8: as a node with 8 GPUs, the control plane's capacity)")
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="for --tls: one more argument for kgym serve (repeat it), e.g. --serve-arg=--log-level=debug")
    parser.add_argument("--before", default="",
                        help="another build's kgym: only compare its answers/s with --kgym's (plain, TLS, TLS + "
                             "journal; --rounds, --slots, --requests apply)")
    parser.add_argument("--soak", type=int, default=0, help="only the soak: this many requests, RSS as they go")
    parser.add_argument("--max-answers", type=int, default=10000, help="for the soak: kgym serve --max-answers")
    parser.add_argument("--pin", action="store_true", help="the client, serve and the workers on cores of their own")
    args = parser.parse_args()
    print(f"kgym dispatch bench: {platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}")
    if args.pin:
        PINNED.update(pin_cores(sorted(os.sched_getaffinity(0))))
        os.sched_setaffinity(0, PINNED["client"])
        print("pinned: " + ", ".join(f"{role} on cores {','.join(map(str, cores))}" for role, cores in PINNED.items()))
    if args.soak:
        soak(args)
        return
    if args.before:
        compare_builds(args)
        return
    if args.tls:
        compare_tls(args)
        return

    cluster = Cluster(args.kgym, 1)
    inbound, outbound = cluster.latencies(500)
    cluster.close()
    print("latency, one request at a time, 1 worker process (500 requests):")
    print(f"  request in -> executor start  p50 {percentile(inbound, 50):.3f} ms  p99 {percentile(inbound, 99):.3f} ms")
    print(f"  result out -> client          p50 {percentile(outbound, 50):.3f} ms  p99 {percentile(outbound, 99):.3f} ms")

    print(f"throughput, {args.requests} requests in flight:")
    print(f"{'workers':>8} {'answers/s':>10} {'vs 1 worker':>12}")
    baseline = None
    for n in [int(x) for x in args.workers.split(",")]:
        cluster = Cluster(args.kgym, n)
        rate = cluster.run_batch(args.requests)
        cluster.close()
        baseline = baseline or rate
        print(f"{n:>8} {rate:>10.0f} {rate / baseline:>11.2f}x")


if __name__ == "__main__":
    main()
