"""Figures with matplotlib (the ``plot`` extra): shared by the demo, the report and the
reproductions. Every function draws on a given ``Axes`` and returns it."""

from __future__ import annotations

import numpy as np


def require_matplotlib():
    """``matplotlib.pyplot`` on the file-only Agg backend, or a clear error naming the extra."""
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "plots need matplotlib: pip install 'rebelboost[plot]'"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_training_curves(ax, train_loss, validation_loss=None, *, log: bool = True):
    """Training (and validation) loss per iteration."""
    it = np.arange(1, len(train_loss) + 1)
    plot = ax.semilogy if log else ax.plot
    plot(it, train_loss, label="training loss")
    if validation_loss is not None and len(validation_loss):
        plot(np.arange(1, len(validation_loss) + 1), validation_loss, label="validation loss")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss")
    ax.legend()
    return ax


def plot_error_curves(ax, curves: dict[str, np.ndarray], *, ylabel: str = "error"):
    """Several per-iteration curves (e.g. training and test error) on one axis."""
    for label, values in curves.items():
        ax.plot(np.arange(1, len(values) + 1), values, label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    ax.legend()
    return ax


def plot_decision_boundary(ax, model, X, y, *, resolution: int = 200, margin: float = 0.1,
                           title: str | None = None):
    """Predicted class over a grid covering 2-D data, with the points on top."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"decision boundaries need 2-D data, got {X.shape[1]} features")
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = margin * np.where(hi > lo, hi - lo, 1.0)
    g0, g1 = np.meshgrid(np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution),
                         np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution))
    classes = list(model.classes_)
    pred = model.predict(np.c_[g0.ravel(), g1.ravel()])
    codes = np.array([classes.index(c) for c in pred.tolist()]).reshape(g0.shape)
    cmap = _class_colormap(len(classes))
    ax.contourf(g0, g1, codes, levels=np.arange(len(classes) + 1) - 0.5, cmap=cmap, alpha=0.35)
    y_codes = np.array([classes.index(c) for c in np.asarray(y).tolist()])
    ax.scatter(X[:, 0], X[:, 1], c=y_codes, cmap=cmap, vmin=-0.5, vmax=len(classes) - 0.5,
               s=12, edgecolors="k", linewidths=0.3)
    if title:
        ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    return ax


def plot_confusion(ax, matrix: np.ndarray, labels, *, title: str | None = None):
    """A confusion matrix (rows true, columns predicted) with counts in the cells."""
    matrix = np.asarray(matrix)
    ax.imshow(matrix, cmap="Blues")
    ticks = np.arange(len(labels))
    ax.set_xticks(ticks, [str(c) for c in labels], rotation=45)
    ax.set_yticks(ticks, [str(c) for c in labels])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    half = matrix.max() / 2 if matrix.size else 0
    for (i, j), v in np.ndenumerate(matrix):
        ax.text(j, i, f"{v:g}", ha="center", va="center", fontsize=8,
                color="white" if v > half else "black")
    if title:
        ax.set_title(title)
    return ax


def plot_feature_importances(ax, importances, names, *, top: int = 20):
    """The ``top`` features by importance, largest on top."""
    importances = np.asarray(importances, dtype=float)
    order = np.argsort(-importances, kind="stable")[:top][::-1]
    ax.barh(np.arange(len(order)), importances[order])
    ax.set_yticks(np.arange(len(order)), [str(names[i]) for i in order])
    ax.set_xlabel("share of the loss reduction")
    return ax


def plot_exit_tradeoff(ax, curves: dict[str, tuple], *, xlabel: str = "share of learners "
                       "evaluated"):
    """Agreement with full evaluation against work (or speed), one line of markers per
    method: ``curves[name] = (x values, agreements)``."""
    for i, (name, (x, agreement)) in enumerate(curves.items()):
        ax.plot(x, agreement, "o-" if len(x) > 1 else "s", color=f"C{i}", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("labels equal to full evaluation")
    ax.legend()
    return ax


def _class_colormap(n_classes: int):
    from matplotlib.colors import ListedColormap

    base = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf"]
    return ListedColormap([base[i % len(base)] for i in range(n_classes)])
