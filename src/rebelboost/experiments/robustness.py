"""ICML 2017 figs 4-5: localized similarities on sparse and on mislabeled training data.

The spiral of figs 2-3, trained on 4/5 .. 1/5 of its training set (fig 4) or with 1% .. 30%
of the labels flipped to another class (fig 5). The paper: the test error is fairly stable
once it reaches its minimum, and with mislabeled data the test error roughly equals the
mislabeled fraction (the labels of the test set are flipped alike, so a classifier that
ignores the noise errs on about that fraction). Stumps and depth-3 REBEL trees, given the
same number of iterations, are the comparison (the contrast of the paper's fig 10). The quick
mode uses the easier three-ring set (150 points), on which few points still suffice.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..ensemble import RebelClassifier
from ..plotting import plot_decision_boundary, plot_error_curves, require_matplotlib
from . import ExperimentResult
from .boundaries import make_rings, split_two_thirds
from .spiral import save_figure, split_spiral, staged_errors, write_table

LEARNERS = {"similarities": {"weak_learner": "similarity"},
            "stumps": {"weak_learner": "stump"},
            "trees (depth 3)": {"weak_learner": "tree", "max_depth": 3}}


def flip_labels(y: np.ndarray, fraction: float, n_classes: int, rng) -> np.ndarray:
    """``y`` with ``round(fraction * len(y))`` labels moved to another class at random."""
    y = y.copy()
    rows = rng.choice(len(y), round(fraction * len(y)), replace=False)
    y[rows] = (y[rows] + rng.integers(1, n_classes, rows.size)) % n_classes
    return y


def _settings(X_tr, y_tr, y_te, quick):
    """(scenario, label, training rows, training labels, noisy test labels, noise fraction)."""
    rng = np.random.default_rng(0)
    fractions = (4, 2) if quick else (4, 3, 2, 1)
    for five in fractions:
        rows = rng.permutation(len(y_tr))[: round(five * len(y_tr) / 5)]
        yield "sparse", f"{five}/5 of the data", X_tr[rows], y_tr[rows], y_te, 0.0
    for p in (0.1, 0.3) if quick else (0.01, 0.05, 0.1, 0.2, 0.3):
        yield ("mislabeled", f"{p:.0%} mislabeled", X_tr, flip_labels(y_tr, p, 3, rng),
               flip_labels(y_te, p, 3, rng), p)


def run(out_dir: Path, quick: bool = False, echo=print) -> ExperimentResult:
    n_samples, n_iter, resolution = (150, 150, 60) if quick else (500, 1000, 120)
    stable_tol, noise_tol = (0.08, 0.10) if quick else (0.05, 0.05)
    plt = require_matplotlib()
    X_tr, y_tr, X_te, y_te = (split_two_thirds(*make_rings(n_samples)) if quick
                              else split_spiral(n_samples))
    settings = list(_settings(X_tr, y_tr, y_te, quick))
    rows, runs = [], []
    for scenario, label, X, y, y_noisy, p in settings:
        errors = {}
        for learner, params in LEARNERS.items():
            model = RebelClassifier(n_iter, **params).fit(X, y)
            errors[learner] = float(np.mean(model.predict(X_te) != y_te))
            if learner == "similarities":
                curves = {"training error": staged_errors(model, X, y),
                          "test error": staged_errors(model, X_te, y_te)}
                noisy = float(np.mean(model.predict(X_te) != y_noisy))
                runs.append((scenario, label, model, X, y, curves))
        test_curve = curves["test error"]
        rows.append([scenario, label, len(y), p, float(curves["training error"][-1]),
                     float(test_curve.min()), errors["similarities"], noisy,
                     errors["stumps"], errors["trees (depth 3)"]])
        echo(f"{label:20s} similarities {errors['similarities']:.3f} (min "
             f"{test_curve.min():.3f}), stumps {errors['stumps']:.3f}, "
             f"trees {errors['trees (depth 3)']:.3f}")

    files = []
    for scenario in ("sparse", "mislabeled"):
        chosen = [r for r in runs if r[0] == scenario]
        fig, axes = plt.subplots(2, len(chosen), figsize=(2.8 * len(chosen), 5.6), squeeze=False)
        for c, (_, label, model, X, y, curves) in enumerate(chosen):
            plot_decision_boundary(axes[0, c], model, X, y, resolution=resolution, title=label)
            plot_error_curves(axes[1, c], curves)
            axes[1, c].set_ylim(0, 0.8)
            axes[1, c].legend(fontsize=7)
        fig.tight_layout()
        files.append(save_figure(fig, out_dir / f"robustness_{scenario}.png"))

    header = ["scenario", "setting", "training points", "mislabeled fraction",
              "sim. final training error",
              "sim. min test error", "sim. final test error", "sim. test error (noisy labels)",
              "stumps test error", "trees test error"]
    table, paths = write_table(out_dir, "robustness", header, rows)
    clean = min(r[6] for r in rows if r[0] == "sparse")  # error with the most clean data
    claims = {
        f"similarities' test error ends within {stable_tol:.2f} of its minimum in every setting":
            all(r[6] <= r[5] + stable_tol for r in rows),
        f"with mislabeled data the test error on equally mislabeled test labels is at most the "
        f"mislabeled fraction + the clean-data error + {noise_tol:.2f}":
            all(r[7] <= r[3] + clean + noise_tol for r in rows if r[0] == "mislabeled"),
        "similarities have a lower mean test error than stumps and than trees":
            bool(np.mean([r[6] for r in rows]) < min(np.mean([r[8] for r in rows]),
                                                     np.mean([r[9] for r in rows]))),
    }
    return ExperimentResult("robustness", [*files, *paths], table, claims)
