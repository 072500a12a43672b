#!/usr/bin/env python3
"""Line charts as a PNG, for `kgym report` and `kgym eval`: panels of curves over x, two
columns, each with its title and legend, drawn by matplotlib (Debian's python3-matplotlib).

    python3 report/plot_curves.py SPEC.json OUT.png

SPEC: a kgym.PlotSpec (messages/kgym.proto) in protobuf's JSON mapping: {"x_label": ...,
"panels": [{"title": T, "series": [{"name": N, "values": [...]}]}]}; x is 1, 2, ... per value,
and "NaN" (as the mapping writes a NaN) is a gap.
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")  # files only: no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    panels = spec.get("panels") or [{"title": "(no data)", "series": []}]
    rows = math.ceil(len(panels) / 2)
    columns = 1 if len(panels) == 1 else 2
    figure, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 3.2 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        for series in panel.get("series", []):
            values = [float(v) for v in series.get("values", [])]  # "NaN", "Infinity": strings
            ax.plot(range(1, len(values) + 1), values, marker="o" if len(values) < 30 else None,
                    markersize=3, label=series.get("name", ""))
        ax.set_title(panel.get("title", ""), fontsize=10)
        ax.set_xlabel(spec.get("x_label", "iteration"), fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
        if panel.get("series"):
            ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    figure.tight_layout()
    figure.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
