"""ICML 2017 fig 1: decision boundaries of REBEL with stumps vs localized similarities.

Stumps give axis-aligned boundaries that do not follow curved classes; localized similarities
follow them and reach zero training error on any set. Three 2-D toy sets: the 3-class spiral,
three concentric rings and XOR blobs; each is split 2/3 train, 1/3 test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..ensemble import RebelClassifier
from ..plotting import plot_decision_boundary, require_matplotlib
from . import ExperimentResult
from .spiral import save_figure, split_spiral, write_table


def make_rings(n_samples: int, random_state: int = 0):
    """Three concentric noisy rings, one class each."""
    rng = np.random.default_rng(random_state)
    y = np.arange(n_samples) % 3
    angle = rng.uniform(0, 2 * np.pi, n_samples)
    radius = 0.3 + 0.35 * y + 0.06 * rng.standard_normal(n_samples)
    return np.column_stack([radius * np.cos(angle), radius * np.sin(angle)]), y


def make_xor(n_samples: int, random_state: int = 0):
    """Four Gaussian blobs on the corners of a square; opposite corners share a class."""
    rng = np.random.default_rng(random_state)
    corner = rng.integers(0, 4, n_samples)
    centers = np.array([[-1, -1], [1, 1], [-1, 1], [1, -1]], dtype=float)
    return centers[corner] + 0.45 * rng.standard_normal((n_samples, 2)), corner // 2


def split_two_thirds(X, y):
    """The first 2/3 of the rows for training, the rest for testing."""
    n_train = round(2 * len(y) / 3)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def run(out_dir: Path, quick: bool = False, echo=print) -> ExperimentResult:
    n_samples, n_iter, resolution = (150, 300, 80) if quick else (450, 1000, 150)
    plt = require_matplotlib()
    sets = {"spiral": split_spiral(n_samples),
            "rings": split_two_thirds(*make_rings(n_samples)),
            "xor": split_two_thirds(*make_xor(n_samples))}
    learners = {"stumps": {"weak_learner": "stump"},
                "similarities": {"weak_learner": "similarity", "target_loss": "auto"}}
    fig, axes = plt.subplots(len(sets), len(learners), figsize=(7, 3.3 * len(sets)))
    rows, train_error = [], {}
    for r, (name, (X_tr, y_tr, X_te, y_te)) in enumerate(sets.items()):
        for c, (learner, params) in enumerate(learners.items()):
            model = RebelClassifier(n_iter, **params).fit(X_tr, y_tr)
            tr, te = np.mean(model.predict(X_tr) != y_tr), np.mean(model.predict(X_te) != y_te)
            train_error[name, learner] = tr
            rows.append([name, learner, model.n_estimators_, float(tr), float(te)])
            echo(f"{name:7s} {learner:12s} {model.n_estimators_:5d} iterations, "
                 f"train error {tr:.3f}, test error {te:.3f}")
            plot_decision_boundary(axes[r, c], model, X_tr, y_tr, resolution=resolution,
                                   title=f"{name}, {learner}: train err {tr:.2f}")
    fig.tight_layout()
    figure = save_figure(fig, out_dir / "boundaries.png")
    table, paths = write_table(out_dir, "boundaries", ["data", "weak learner", "iterations",
                                                        "training error", "test error"], rows)
    claims = {
        f"similarities reach 0 training error on all {len(sets)} toy sets":
            all(train_error[name, "similarities"] == 0 for name in sets),
        f"stumps do not reach 0 training error on the spiral in {n_iter} iterations":
            bool(train_error["spiral", "stumps"] > 0),
    }
    return ExperimentResult("boundaries", [figure, *paths], table, claims)
