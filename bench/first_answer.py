"""How long a server's first request waits, against its second: `kgym serve` started and left
idle (as a trainer that starts after its server), then one candidate submitted twice through the
Python client, each answer awaited. With `--before OLD_KGYM` (and `--before-home OLD_TREE`, the
source tree whose sandbox that binary runs) the two builds alternate, `--rounds` times each.

    python3 bench/first_answer.py [--device cpu] [--idle 20] [--rounds 2] [--before OLD/build/kgym --before-home OLD]
"""
import argparse
import os
import platform
import sys
import tempfile
import time

from local_serve import ROOT, local_serve  # first: it puts the client on the path


def first_two(kgym: str, home: str, device: str, idle_s: float, source: str) -> tuple:
    """Seconds to the first answer and to the second, after `idle_s` of an idle server."""
    with tempfile.TemporaryDirectory() as workdir:
        env = dict(os.environ, KGYM_HOME=home)
        with local_serve(kgym, ["--device", device], workdir, env) as client:
            time.sleep(idle_s)
            times = []
            for variant in (source, source + "\n# the same program again, not from the cache\n"):
                t0 = time.monotonic()
                client.submit("gelu_scale_residual", variant)
                answer = client.receive()
                times.append(time.monotonic() - t0)
                if answer["result"].get("verdict") != "OK":
                    sys.exit(f"{kgym}: {answer['result'].get('verdict')}: {answer['result'].get('message')}")
            return tuple(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kgym", default=os.path.join(ROOT, "build", "kgym"))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds the server is left idle first")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", help="another build's kgym, alternated with --kgym")
    parser.add_argument("--before-home", help="the source tree of --before (its sandbox)")
    args = parser.parse_args()
    source = open(os.path.join(ROOT, "tasks", "gelu_scale_residual", "candidates", "fused.py")).read()
    builds = [("this", args.kgym, ROOT)]
    if args.before:
        builds.insert(0, ("before", args.before, args.before_home or os.path.dirname(os.path.dirname(args.before))))
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs; device {args.device}; server idle {args.idle:.0f} s")
    print("| build | round | first answer s | second answer s |")
    print("|---|---|---|---|")
    for r in range(args.rounds):
        for name, kgym, home in builds:
            first, second = first_two(kgym, home, args.device, args.idle, source)
            print(f"| {name} | {r + 1} | {first:.2f} | {second:.2f} |", flush=True)


if __name__ == "__main__":
    main()
