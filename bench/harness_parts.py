"""Where an evaluation's wall time went: the mean of each part of ExecResult.harness_seconds
over the OK evaluations, one column per set of results. Shared by the benchmarks."""
import statistics


def print_parts(results: dict) -> None:
    """`results`: column name -> list of ExecResult dicts. The parts done while the processes
    waited as the next evaluation's (confine, cuda_driver, cuda_wait, cuda_init, pair_*) are not on the evaluation's
    path; wall_s is."""
    ok = {name: [r for r in rows if r.get("verdict") == "OK"] for name, rows in results.items()}
    parts = sorted({p for rows in ok.values() for r in rows for p in r.get("harness_seconds", {})})
    print("| part (mean s per evaluation) | " + " | ".join(ok) + " |")
    print("|---|" + "---|" * len(ok))
    for part in parts + ["wall_s"]:
        cells = []
        for rows in ok.values():
            values = [r.get(part, 0) if part == "wall_s" else r.get("harness_seconds", {}).get(part, 0) for r in rows]
            cells.append(f"{statistics.fmean(values):.3f}" if rows else "-")
        print(f"| {part} | " + " | ".join(cells) + " |")
