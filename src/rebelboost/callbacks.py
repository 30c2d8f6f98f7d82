"""Per-iteration callbacks for ``fit`` (progress bars, logging, custom stopping rules).

A callback is any callable taking an :class:`IterationInfo`; returning ``True`` stops training
after that iteration (the model keeps what it has, or its best iteration under early stopping).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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
    """Validation loss when ``early_stopping`` holds out a validation split."""
    validation_cost: float | None = None
    """Mean cost of the current model's predictions on the validation split (its error rate
    when the cost matrix is cost-neutral)."""


Callback = Callable[[IterationInfo], "bool | None"]


def run_callbacks(callbacks, info: IterationInfo) -> bool:
    """Call every callback (all of them, even after one asks to stop); True if any asked."""
    stop = False
    for callback in callbacks or ():
        stop = bool(callback(info)) or stop
    return stop
