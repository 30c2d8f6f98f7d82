"""The accuracy/speed trade-off of early exits as a plot, from the tables of BENCHMARKS.md's
"Predictions (issue 19)" section (written by ``bench_predict.py --cascades``): agreement with
the same library's full evaluation against throughput relative to REBEL's full evaluation.

    python benchmarks/plot_exit_tradeoff.py     # writes benchmarks/results/exit_tradeoff.png
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rebelboost.plotting import plot_exit_tradeoff  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def tables(text: str) -> dict[str, list[tuple[str, float, float]]]:
    """Per data set: (method, agreement, x REBEL full) rows of its trade-off table."""
    section = text.split("## Predictions (issue 19)", 1)[1].split("\n## ", 1)[0]
    out = {}
    for part in section.split("\n### ")[1:]:
        name = part.split(" ", 1)[0]
        rows = re.findall(r"^\| ((?:REBEL|LightGBM), [^|]+) \| ([\d.]+) \| [\d.]+ \| [^|]+ \| "
                          r"[\d,]+ \| ([\d.]+) \|$", part, flags=re.M)
        out[name] = [(m.strip(), float(a), float(x)) for m, a, x in rows]
    return out


def main():
    data = tables((ROOT / "BENCHMARKS.md").read_text())
    fig, axes = plt.subplots(1, len(data), figsize=(5.5 * len(data), 4.2), dpi=100)
    for ax, (name, rows) in zip(list(getattr(axes, "flat", [axes])), data.items(), strict=True):
        groups = {"REBEL soft cascades": [r for r in rows if "soft cascade" in r[0]],
                  "REBEL exact exit": [r for r in rows if r[0] == "REBEL, exact exit"],
                  "REBEL full": [r for r in rows if r[0] == "REBEL, full"],
                  "LightGBM pred_early_stop": [r for r in rows if "pred_early_stop" in r[0]],
                  "LightGBM full": [r for r in rows if r[0] == "LightGBM, full"]}
        plot_exit_tradeoff(ax, {k: ([r[2] for r in v], [r[1] for r in v])
                                for k, v in groups.items() if v},
                           xlabel="throughput / REBEL full evaluation's")
        ax.set_title(f"{name} test set")
    fig.tight_layout()
    path = ROOT / "benchmarks" / "results" / "exit_tradeoff.png"
    fig.savefig(path)
    print(path)


if __name__ == "__main__":
    main()
