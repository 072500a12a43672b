"""What the judge's per-call output checks cost on the GPU: compare.compare (closeness, sums
for the tracker and the fingerprints) by the one-pass kernel (gpu/checks, $KGYM_CHECKS_LIB)
against the same rule with PyTorch's operators, and one plain copy of the output as the unit
(a memory-bound pass). Median of 5 per cell, after one warm-up.

    KGYM_CHECKS_LIB=build/libkgym_checks.so python3 bench/output_checks.py [--gib 0.0625 1 4]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "sandbox"))

import torch  # noqa: E402

from kgym_sandbox import compare, output_kernel  # noqa: E402


def median_ms(work, n: int = 5) -> float:
    work()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        started = time.perf_counter()
        work()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
    return sorted(times)[n // 2] * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, nargs="+", default=[0.0625, 1, 4], help="output sizes (float32)")
    args = parser.parse_args()
    library = os.environ.get("KGYM_CHECKS_LIB", "")
    if not torch.cuda.is_available() or output_kernel.library() is None:
        sys.exit(f"needs a GPU and the library (KGYM_CHECKS_LIB={library!r})")
    print(f"machine: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    print("| output | operators ms | kernel ms | operators/kernel | one copy ms | kernel/copy |")
    print("|---|---|---|---|---|---|")
    for gib in args.gib:
        expected = torch.randn(int(gib * (1 << 30)) // 4, device="cuda")
        actual = expected + 1e-4 * torch.randn_like(expected)
        kernel = median_ms(lambda: compare.compare(expected, actual, 1e-2, 1e-2))
        os.environ["KGYM_CHECKS_LIB"] = ""
        operators = median_ms(lambda: compare.compare(expected, actual, 1e-2, 1e-2))
        os.environ["KGYM_CHECKS_LIB"] = library
        copy = median_ms(lambda: expected.clone())
        print(f"| {gib:g} GiB | {operators:.2f} | {kernel:.2f} | {operators / kernel:.1f} | {copy:.2f} | "
              f"{kernel / copy:.1f} |", flush=True)
        expected = actual = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
