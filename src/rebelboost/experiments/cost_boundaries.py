"""REBEL fig 7 (thesis fig 4.3): decision boundaries under four cost matrices.

One 2-D, 3-class Gaussian-mixture set (blue, red, green as drawn by ``plot_decision_boundary``),
REBEL with 100 depth-2 trees trained under (a) uniform costs, (b) 10x costlier green false
negatives (row of green), (c) 10x costlier red false negatives (row of red) and (d) 10x costlier
red false positives (column of red). The panel order and labels follow the thesis; the paper's
caption swaps (c) and (d). Expected: a costlier false negative on class k grows k's region
(in the thesis's (c) no red point is missed), a costlier false positive shrinks it (in (d) no
red prediction is wrong).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..ensemble import RebelClassifier
from ..metrics import mean_cost
from ..plotting import plot_decision_boundary, require_matplotlib
from . import ExperimentResult
from .cost_sensitive import _markdown, make_gaussian_mixture

BLUE, RED, GREEN = 0, 1, 2
MARGIN = 0.1  # plot_decision_boundary's default padding, so the areas match the pictures


def cost_matrices() -> dict[str, np.ndarray]:
    """The four panels' cost matrices (rows true class, columns predicted)."""
    uniform = 1.0 - np.eye(3)
    green_fn, red_fn, red_fp = uniform.copy(), uniform.copy(), uniform.copy()
    green_fn[GREEN] *= 10
    red_fn[RED] *= 10
    red_fp[:, RED] *= 10
    return {"(a) uniform costs": uniform, "(b) high green F.N.": green_fn,
            "(c) high red F.N.": red_fn, "(d) high red F.P.": red_fp}


def area_fractions(model, X: np.ndarray, resolution: int) -> np.ndarray:
    """Share of the plotted window predicted as each class."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = MARGIN * (hi - lo)
    g0, g1 = np.meshgrid(np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution),
                         np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution))
    pred = model.predict(np.c_[g0.ravel(), g1.ravel()])
    return np.bincount(pred, minlength=3) / pred.size


def run(out_dir: Path, quick: bool = False, echo=print) -> ExperimentResult:
    """Train the four models, draw the 2x2 figure, and compare class areas and red errors."""
    n_trees, n_samples, resolution = (30, 300, 80) if quick else (100, 600, 200)
    X, y, _ = make_gaussian_mixture(np.random.default_rng(7), 3, 2, n_samples)
    plt = require_matplotlib()
    fig, axes = plt.subplots(2, 2, figsize=(8, 8))
    records = []
    for (label, cost), ax in zip(cost_matrices().items(), axes.ravel(), strict=True):
        model = RebelClassifier(n_trees, weak_learner="tree", max_depth=2, cost_matrix=cost,
                                cost_strategy="loss",  # the paper's cost-sensitive training
                                random_state=0, n_jobs=1).fit(X, y)
        pred = model.predict(X)
        plot_decision_boundary(ax, model, X, y, resolution=resolution, margin=MARGIN,
                               title=label)
        areas = area_fractions(model, X, resolution)
        records.append({
            "panel": label, "area_blue": areas[BLUE], "area_red": areas[RED],
            "area_green": areas[GREEN],
            "red_missed": int(((y == RED) & (pred != RED)).sum()),
            "red_wrongly_predicted": int(((y != RED) & (pred == RED)).sum()),
            "green_missed": int(((y == GREEN) & (pred != GREEN)).sum()),
            "training_cost": mean_cost(y, pred, cost, model.classes_),
        })
        echo(f"  {label}: areas blue/red/green {np.round(areas, 3).tolist()}")
    fig.tight_layout()
    png = out_dir / "cost_boundaries.png"
    fig.savefig(png, dpi=100)
    plt.close(fig)

    csv_path = out_dir / "cost_boundaries.csv"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    table = (
        f"REBEL, {n_trees} depth-2 trees, {n_samples} training points; area = share of the "
        "plotted window predicted as the class; errors counted on the training points.\n\n"
        + _markdown(["panel", "area blue", "area red", "area green", "red points missed",
                     "wrong red predictions", "green points missed", "training cost"],
                    [[r["panel"], f"{r['area_blue']:.3f}", f"{r['area_red']:.3f}",
                      f"{r['area_green']:.3f}", r["red_missed"], r["red_wrongly_predicted"],
                      r["green_missed"], f"{r['training_cost']:.4f}"] for r in records])
    )
    md_path = out_dir / "cost_boundaries.md"
    md_path.write_text(table)

    uniform, green_fn, red_fn, red_fp = records
    claims = {
        "10x costlier green false negatives enlarge the green region":
            bool(green_fn["area_green"] > uniform["area_green"]),
        "10x costlier red false negatives enlarge the red region":
            bool(red_fn["area_red"] > uniform["area_red"]),
        "10x costlier red false positives shrink the red region":
            bool(red_fp["area_red"] < uniform["area_red"]),
        "costlier red false negatives miss no more red points than uniform costs":
            red_fn["red_missed"] <= uniform["red_missed"],
        "costlier red false positives make no more wrong red predictions than uniform costs":
            red_fp["red_wrongly_predicted"] <= uniform["red_wrongly_predicted"],
    }
    return ExperimentResult("cost-boundaries", [png, md_path, csv_path], table, claims)
