"""Per-iteration callbacks for ``fit`` (progress bars, logging, custom stopping rules).

A callback is any callable taking an :class:`IterationInfo`; returning ``True`` stops training
after that iteration (the model keeps what it has, or its best iteration under early stopping).
Early stopping itself is the callback :class:`EarlyStopping`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class IterationInfo:
    """What one boosting iteration leaves behind, as seen by a callback."""

    iteration: int
    """Iterations done so far (1-based)."""
    n_estimators: int
    """The planned number of iterations."""
    train_loss: float
    """Training loss after this iteration."""
    validation_loss: float | None = None
    """Validation loss: on ``fit``'s ``eval_set``, or the split ``early_stopping`` holds out."""
    validation_cost: float | None = None
    """Mean cost of the current model's predictions on the validation rows (its error rate
    when the cost matrix is cost-neutral)."""
    model: Any = None
    """The estimator being fitted (its fitted attributes appear when ``fit`` returns)."""


Callback = Callable[[IterationInfo], "bool | None"]


class EarlyStopping:
    """Stop when the validation ``metric`` ('loss' or 'cost') has not improved by ``tol``
    (relative) for ``patience`` iterations; ``best_iteration`` is the number to keep."""

    def __init__(self, patience: int, tol: float = 0.0, metric: str = "loss"):
        if metric not in ("loss", "cost"):
            raise ValueError(f"metric must be 'loss' or 'cost', got {metric!r}")
        self.patience = patience
        self.tol = tol
        self.metric = metric
        self.best_iteration = 0
        self.best_loss = float("inf")

    def __call__(self, info: IterationInfo) -> bool:
        value = info.validation_loss if self.metric == "loss" else info.validation_cost
        if value is None:
            raise ValueError(f"early stopping needs a validation {self.metric}")
        if value < self.best_loss * (1 - self.tol):
            self.best_iteration, self.best_loss = info.iteration, value
        if self.best_iteration == 0:  # NaN or infinite losses: keep at least one iteration
            self.best_iteration = info.iteration
        return info.iteration - self.best_iteration >= self.patience


def run_callbacks(callbacks, info: IterationInfo) -> bool:
    """Call every callback (all of them, even after one asks to stop); True if any asked."""
    stop = False
    for callback in callbacks or ():
        stop = bool(callback(info)) or stop
    return stop
