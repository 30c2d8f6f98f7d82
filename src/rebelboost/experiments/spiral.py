"""ICML 2017 figs 2-3: REBEL with localized similarities on the 3-class spiral.

500 points, (2/3, 1/3) train/test split, 1000 iterations. The paper shows perfect training
and test classification (fig 2) and a test error that does not rise after the training error
reaches zero (fig 3). Also holds the small helpers the other similarity reproductions share.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..datasets import make_spiral
from ..ensemble import RebelClassifier
from ..plotting import plot_decision_boundary, plot_error_curves, require_matplotlib
from . import ExperimentResult

DPI = 80


def write_table(out_dir: Path, stem: str, header: list[str], rows: list[list], note: str = ""
                ) -> tuple[str, list[Path]]:
    """The rows as ``stem.csv`` and ``stem.md`` (plus ``note`` under the markdown table);
    returns the markdown and both paths."""
    def cell(v):
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    csv_path, md_path = out_dir / f"{stem}.csv", out_dir / f"{stem}.md"
    with csv_path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows([[cell(v) for v in row] for row in rows])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    markdown = "\n".join(lines) + "\n" + (f"\n{note}\n" if note else "")
    md_path.write_text(markdown)
    return markdown, [md_path, csv_path]


def staged_errors(model, X, y) -> np.ndarray:
    """Classification error after each iteration."""
    return np.array([np.mean(p != y) for p in model.staged_predict(X)])


def save_figure(fig, path: Path) -> Path:
    """Write a small PNG and free the figure."""
    fig.savefig(path, dpi=DPI)
    require_matplotlib().close(fig)
    return path


def split_spiral(n_samples: int, random_state: int = 0):
    """The paper's spiral with its (2/3, 1/3) train/test split (rows are in random order)."""
    X, y = make_spiral(n_samples, random_state=random_state)
    order = np.random.default_rng(random_state).permutation(n_samples)
    X, y = X[order], y[order]
    n_train = round(2 * n_samples / 3)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def first_zero(errors: np.ndarray) -> int | None:
    """1-based iteration at which ``errors`` first reaches zero, or None."""
    hits = np.flatnonzero(errors == 0)
    return int(hits[0]) + 1 if hits.size else None


def run(out_dir: Path, quick: bool = False, echo=print) -> ExperimentResult:
    n_samples, n_iter = (240, 400) if quick else (500, 1000)
    # The paper's "perfect" test classification relaxed to 20% (quick: 45%, few points).
    test_bound, rise_tol = (0.45, 0.05) if quick else (0.20, 0.03)
    plt = require_matplotlib()
    X_tr, y_tr, X_te, y_te = split_spiral(n_samples)
    echo(f"spiral: {len(y_tr)} train / {len(y_te)} test points, {n_iter} iterations")
    model = RebelClassifier(n_iter, weak_learner="similarity").fit(X_tr, y_tr)
    train_err, test_err = staged_errors(model, X_tr, y_tr), staged_errors(model, X_te, y_te)
    loss = model.train_loss_
    zero_at = first_zero(train_err)

    fig, axes = plt.subplots(1, 2, figsize=(8, 4))
    plot_decision_boundary(axes[0], model, X_tr, y_tr, resolution=150,
                           title=f"train (error {train_err[-1]:.3f})")
    plot_decision_boundary(axes[1], model, X_te, y_te, resolution=150,
                           title=f"test (error {test_err[-1]:.3f})")
    fig.tight_layout()
    fig2 = save_figure(fig, out_dir / "spiral_boundaries.png")

    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    plot_error_curves(axes[0], {"training error": train_err, "test error": test_err})
    if zero_at:
        axes[0].axvline(zero_at, color="gray", ls=":", lw=1)
    axes[0].set_title("spiral, REBEL with localized similarities")
    axes[1].semilogy(np.arange(1, len(loss) + 1), loss, label="training loss")
    axes[1].axhline(1 / len(y_tr), color="gray", ls="--", lw=1, label="1/N")
    axes[1].set_xlabel("iteration")
    axes[1].set_ylabel("loss")
    axes[1].legend()
    fig.tight_layout()
    fig3 = save_figure(fig, out_dir / "spiral_curves.png")

    checkpoints = sorted({c for c in (1, 10, 50, 100, 200, 500, 1000) if c <= len(loss)}
                         | ({zero_at} if zero_at else set()) | {len(loss)})
    rows = [[c, float(loss[c - 1]), float(train_err[c - 1]), float(test_err[c - 1])]
            for c in checkpoints]
    after = test_err[zero_at - 1:] if zero_at else test_err[-1:]
    peak = int(np.argmax(after)) + (zero_at or len(loss))
    note = (f"After the training error first hits 0 the test error peaks at {after.max():.4f} "
            f"(iteration {peak}) and ends at {after[-1]:.4f}.")
    table, paths = write_table(out_dir, "spiral", ["iteration", "training loss",
                                                   "training error", "test error"], rows, note)
    claims = {
        "training error reaches 0 within the iterations": zero_at is not None,
        f"final test error below {test_bound:.2f} (paper: 0)": bool(test_err[-1] < test_bound),
        f"no lasting rise: final test error at most {rise_tol:.2f} above its value when the "
        "training error first hits 0":
            zero_at is not None and bool(after[-1] <= after[0] + rise_tol),
    }
    echo(f"training error 0 at iteration {zero_at}; final test error {test_err[-1]:.4f}")
    return ExperimentResult("spiral", [fig2, fig3, *paths], table, claims)
