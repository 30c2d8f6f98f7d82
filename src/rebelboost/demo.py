"""The main job: train REBEL on the bundled data, compare it, show its curve, explain it."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .datasets import load_pendigits
from .ensemble import RebelClassifier


def text_curve(values: np.ndarray, width: int = 60, height: int = 10, log: bool = True) -> str:
    """A small character plot of a curve (log scale by default)."""
    v = np.log10(values) if log else np.asarray(values, dtype=float)
    cols = np.linspace(0, len(v) - 1, min(width, len(v))).round().astype(int)
    v = v[cols]
    lo, hi = float(v.min()), float(v.max())
    levels = np.zeros(len(v), int) if hi == lo else ((v - lo) / (hi - lo) * (height - 1)).round()
    rows = []
    for r in range(height - 1, -1, -1):
        label = lo + (hi - lo) * r / max(height - 1, 1)
        tick = f"{10**label if log else label:9.3g} |"
        rows.append(tick + "".join("*" if lvl == r else " " for lvl in levels))
    rows.append(" " * 10 + "+" + "-" * len(v))
    rows.append(" " * 11 + f"iteration 1 .. {len(values)}")
    return "\n".join(rows)


def _fit_rebel(data, n_estimators: int, max_leaves: int) -> tuple:
    """REBEL fitted on the training digits, its fit time, and, where numba compiled kernels
    during the fit (a first run on a machine), that fit's time: the model is then fitted
    again, so the time shown is what a fit takes once the kernels are cached."""
    from numba.core import event

    def fit() -> tuple:
        start = time.perf_counter()
        model = RebelClassifier(n_estimators, max_leaves=max_leaves, random_state=0)
        model.fit(data.X_train, data.y_train)
        return model, time.perf_counter() - start

    with event.install_recorder("numba:compile") as compiles:
        rebel, first = fit()
    if not compiles.buffer:
        return rebel, first, None
    rebel, again = fit()
    return rebel, again, first


def run_demo(n_estimators: int = 100, max_leaves: int = 31, out_dir: str | Path = "demo-output",
             echo=print) -> dict:
    """Train, evaluate against scikit-learn's AdaBoost, plot and explain; return the numbers."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    data = load_pendigits()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    echo(f"pendigits: {len(data.y_train)} training and {len(data.y_test)} test digits, "
         f"{data.X_train.shape[1]} features, 10 classes\n")

    echo(f"training REBEL ({n_estimators} trees; the first run on a machine compiles numba's "
         "kernels first, for a minute or two) ...")
    rebel, rebel_time, compile_fit = _fit_rebel(data, n_estimators, max_leaves)
    rebel_acc = rebel.score(data.X_test, data.y_test)

    start = time.perf_counter()
    ada = AdaBoostClassifier(DecisionTreeClassifier(max_leaf_nodes=max_leaves),
                             n_estimators=n_estimators, random_state=0)
    ada.fit(data.X_train, data.y_train)
    ada_time = time.perf_counter() - start
    ada_acc = ada.score(data.X_test, data.y_test)

    echo(f"{'model':52s} {'test accuracy':>13s} {'fit time':>9s}")
    trees = f"{n_estimators} trees of {max_leaves} leaves"
    echo(f"{f'REBEL, {trees}':52s} {rebel_acc:13.4f} {rebel_time:8.2f}s")
    echo(f"{f'scikit-learn AdaBoost (SAMME), {trees}':52s} {ada_acc:13.4f} {ada_time:8.2f}s")
    if compile_fit is not None:
        echo(f"(REBEL's first fit took {compile_fit:.0f} s: numba compiled its kernels, now "
             "cached on disk; the time above is a second fit, which loads them)")
    echo("")

    echo("REBEL training loss (log scale):")
    echo(text_curve(rebel.train_loss_))
    plot_path = out / "training_loss.png"
    try:
        from .plotting import plot_training_curves, require_matplotlib

        plt = require_matplotlib()
        fig, ax = plt.subplots(figsize=(6, 4))
        plot_training_curves(ax, rebel.train_loss_)
        ax.set_title("REBEL on pendigits")
        fig.tight_layout()
        fig.savefig(plot_path, dpi=100)
        plt.close(fig)
        echo(f"plot saved to {plot_path}")
    except ImportError:
        plot_path = None
        echo("(install rebelboost[plot] for a saved plot of the curve)")

    row = 0
    explanation = rebel.explain(data.X_test[row], top=8, feature_names=data.feature_names)
    echo(f"\nWhy test digit #{row} (true class {data.y_test[row]}) is predicted "
         f"{explanation.predicted}:")
    echo(str(explanation))

    model_path = out / "pendigits-rebel.json"
    rebel.save(model_path)
    same = np.array_equal(RebelClassifier.load(model_path).predict(data.X_test),
                          rebel.predict(data.X_test))
    echo(f"\nmodel saved to {model_path} ({model_path.stat().st_size // 1024} KiB); "
         f"reloaded model predicts identically: {same}")
    return {"rebel_accuracy": rebel_acc, "adaboost_accuracy": ada_acc,
            "rebel_seconds": rebel_time, "rebel_first_fit_seconds": compile_fit,
            "adaboost_seconds": ada_time,
            "plot": plot_path, "model": model_path}
