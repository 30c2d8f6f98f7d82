"""The report's figures, drawn by :mod:`rebelboost.plotting` and returned as inline PNG data
URIs so that the page needs no other file and no network."""

from __future__ import annotations

import base64
import io
import warnings

import numpy as np

from ..plotting import (
    plot_confusion,
    plot_decision_boundary,
    plot_error_curves,
    plot_exit_tradeoff,
    plot_feature_importances,
    plot_training_curves,
    require_matplotlib,
)


def _draw(draw, size=(6.0, 4.0)) -> str:
    """Run ``draw(ax)`` on a fresh figure and return it as a ``data:image/png`` URI."""
    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=size, dpi=100)
    try:
        draw(ax)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def training_curves(model) -> str:
    """Training (and validation) loss per iteration, the kept iteration marked."""
    train = np.asarray(model.train_loss_, dtype=float)
    validation = getattr(model, "validation_loss_", None)
    best = getattr(model, "best_iteration_", None)
    values = train if validation is None else np.concatenate([train, validation])

    def draw(ax):
        plot_training_curves(ax, train, validation, log=bool(np.all(values > 0)))
        if best is not None:
            ax.axvline(best, color="grey", linestyle=":", label="kept iteration")
            ax.legend()

    return _draw(draw)


def error_curves(curves: dict[str, np.ndarray]) -> str:
    """Error (and mean cost) per boosting iteration."""
    return _draw(lambda ax: plot_error_curves(ax, curves, ylabel="error / mean cost"))


def reliability(confidence: np.ndarray, accuracy: np.ndarray, counts: np.ndarray) -> str:
    """Accuracy against mean top probability per bin (marker area: rows), and the diagonal."""

    def draw(ax):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="calibrated")
        ax.plot(confidence, accuracy, "-", color="C0")
        ax.scatter(confidence, accuracy, s=10 + 200 * counts / counts.max(), color="C0",
                   label="model (area: rows)")
        ax.set_xlabel("predicted probability of the top class")
        ax.set_ylabel("share of rows whose top class is right")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.legend()

    return _draw(draw, size=(4.6, 4.0))


def confusion(matrix: np.ndarray, labels) -> str:
    k = len(labels)
    side = min(4.0 + 0.35 * k, 12.0)
    return _draw(lambda ax: plot_confusion(ax, matrix, labels), size=(side, side))


def importances(values: np.ndarray, names, top: int) -> str:
    height = 1.0 + 0.3 * min(top, len(values))
    return _draw(lambda ax: plot_feature_importances(ax, values, names, top=top),
                 size=(6.0, height))


def decision_boundary(model, X, y) -> str:
    """Predicted class over the plane of 2-D data, with the points."""
    def draw(ax):
        with warnings.catch_warnings():  # a grid has no feature names; the model may have
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            plot_decision_boundary(ax, model, X, y)

    return _draw(draw, size=(5.0, 5.0))


def exit_tradeoff(points) -> str:
    """Agreement with full evaluation against the share of learners evaluated."""
    exact = [p for p in points if p.label == "exact exit"]
    cascades = [p for p in points if p.label != "exact exit"]
    curves = {"soft cascades": ([p.share for p in cascades], [p.agreement for p in cascades]),
              "exact exit": ([p.share for p in exact], [p.agreement for p in exact])}
    return _draw(lambda ax: plot_exit_tradeoff(ax, curves), size=(5.0, 3.8))
