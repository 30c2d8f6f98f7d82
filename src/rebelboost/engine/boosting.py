"""The one boosting loop every booster plugs into.

A booster (a loss and its way of fitting weak learners) fits one stage at a time from its own
training scores; the loop owns what is common: validation scores and loss, callbacks (early
stopping is one of them), ``target_loss``, stopping at a zero loss, verbose output, feature
importances, and the thread settings of the kernels.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .._malloc import fresh_arrays_unadvised
from ..callbacks import EarlyStopping, IterationInfo, run_callbacks
from ..learners.registry import LearnerStack
from ..parallel import numba_threads
from .model import AdditiveModel


@dataclass
class Stage:
    """What one boosting iteration adds."""

    learners: LearnerStack  # this iteration's learners (one, or one per class)
    values: np.ndarray  # (len(learners), n_slots, K) class scores of their slots
    loss: float  # training loss after the stage
    gains: list[tuple[int, float]] = field(default_factory=list)  # (feature, importance)
    record: dict[str, Any] = field(default_factory=dict)  # per-iteration fitted values
    # (len(learners), n_slots) training weight reaching each slot, where the booster knows
    # it as prediction would route the rows (None: the estimator routes them after the fit)
    covers: np.ndarray | None = None


class Booster(Protocol):
    """A loss and its weak learners, as the loop drives them."""

    blas_threads: int | None  # BLAS threads while fitting (None: leave BLAS as it is)

    def initial_loss(self) -> float:
        """Training loss of the empty model."""

    def fit_stage(self, iteration: int) -> Stage:
        """Fit the next stage on the current training scores and add it to them."""

    def validation_loss(self, scores: np.ndarray) -> float:
        """The loss of the validation rows (given at construction) at these scores."""

    # optional: ``fit_stages(n_iterations, target_loss) -> StageRun | None``, up to
    # ``n_iterations`` stages at once (stopping after a loss below ``target_loss`` or zero),
    # the stages ``fit_stage`` would fit; None where it cannot. The loop asks for it where
    # nothing looks at a stage before the next (no validation, callbacks or output).

    def stack(self, pieces: list[LearnerStack]) -> LearnerStack:
        """One learner stack from the stages' learners."""


@dataclass
class StageRun:
    """Stages fitted at once (``Booster.fit_stages``), one learner each, as arrays: what the
    stages of the loop would hold, without an object per stage."""

    learners: LearnerStack  # one learner per stage
    values: np.ndarray  # (n_stages, n_slots, K)
    losses: list[float]  # training loss after each stage
    gain_features: np.ndarray  # every split's feature, stage by stage (intp)
    gains: np.ndarray  # and its gain
    records: list[dict]  # per stage
    covers: np.ndarray | None = None  # (n_stages, n_slots), as ``Stage.covers``


@dataclass
class Validation:
    """Held-out rows scored as the model grows."""

    X: np.ndarray
    codes: np.ndarray
    sample_weight: np.ndarray
    cost_rows: np.ndarray  # (n, K) each row's cost of each prediction: the validation cost


@dataclass
class BoostResult:
    model: AdditiveModel
    init_loss: float
    train_loss: np.ndarray  # kept iterations
    validation_loss: np.ndarray | None  # every iteration run
    best_iteration: int | None  # iterations kept by early stopping
    feature_importances: np.ndarray
    records: list[dict]  # every iteration run (the kept ones first)
    n_kept: int
    covers: np.ndarray | None = None  # (kept learners, n_slots) where every stage had them


def boost(booster: Booster, n_iterations: int, n_features: int, *,
          validation: Validation | None = None, early_stopping: EarlyStopping | None = None,
          callbacks: Sequence[Callable[[IterationInfo], Any]] | None = None,
          target_loss: float | None = None, verbose: int = 0,
          n_jobs: int | None = None, estimator=None) -> BoostResult:
    """Run up to ``n_iterations`` stages of ``booster``; see the module docstring."""
    if early_stopping is not None and validation is None:
        raise ValueError("early stopping needs a validation set")
    callbacks = [*(callbacks or ()), *([early_stopping] if early_stopping else [])]
    stages: list[Stage] = []
    train_loss: list[float] = []
    val_losses: list[float] = []
    val_scores = None
    init_loss = booster.initial_loss()
    # (the booster's arrays made by now keep NumPy's hugepage advice; a stage's fresh ones,
    # made and dropped every iteration, go without it)
    with numba_threads(n_jobs, blas_threads=booster.blas_threads), fresh_arrays_unadvised():
        if validation is None and not callbacks and not verbose and n_iterations > 0:
            run = getattr(booster, "fit_stages", lambda *_: None)(n_iterations, target_loss)
            if run is not None:
                return _run_result(run, init_loss, n_features)
        for it in range(n_iterations):
            stage = booster.fit_stage(it)
            stages.append(stage)
            train_loss.append(stage.loss)
            val_loss = val_cost = None
            if validation is not None:
                if val_scores is None:
                    val_scores = np.zeros((validation.X.shape[0], stage.values.shape[2]))
                stage.learners.accumulate(validation.X, stage.values, val_scores)
                val_loss = booster.validation_loss(val_scores)
                val_losses.append(val_loss)
                predicted = np.argmax(val_scores, axis=1)
                rows = np.arange(len(predicted))
                val_cost = float(np.average(validation.cost_rows[rows, predicted],
                                            weights=validation.sample_weight))
            _report(verbose, it, train_loss[-1], val_loss)
            info = IterationInfo(it + 1, n_iterations, train_loss[-1], val_loss, val_cost,
                                 estimator)
            if run_callbacks(callbacks, info):
                break
            if target_loss is not None and train_loss[-1] < target_loss:
                break
            if train_loss[-1] == 0.0:  # nothing left to fit
                break
    keep = early_stopping.best_iteration if early_stopping is not None else len(stages)
    kept = stages[:keep]
    ends = np.cumsum([len(s.learners) for s in kept], dtype=np.int64)
    learners = booster.stack([s.learners for s in kept])
    n_slots = learners.n_slots
    n_classes = stages[0].values.shape[2]
    values = (np.concatenate([s.values for s in kept]) if kept
              else np.zeros((0, n_slots, n_classes)))
    importances = np.zeros(n_features)
    for s in kept:
        for f, gain in s.gains:
            importances[f] += gain
    covers = (np.concatenate([s.covers for s in kept])
              if kept and all(s.covers is not None for s in kept) else None)
    return BoostResult(
        model=AdditiveModel(learners, values, ends),
        init_loss=init_loss,
        train_loss=np.asarray(train_loss[:keep]),
        validation_loss=np.asarray(val_losses) if validation is not None else None,
        best_iteration=keep if early_stopping is not None else None,
        feature_importances=_normalized(importances),
        records=[s.record for s in stages],
        n_kept=keep,
        covers=covers,
    )


def _run_result(run: StageRun, init_loss: float, n_features: int) -> BoostResult:
    """The loop's result for stages fitted at once (every stage kept)."""
    importances = np.zeros(n_features)
    np.add.at(importances, run.gain_features, run.gains)  # (in order, as the loop adds)
    n = len(run.losses)
    return BoostResult(
        model=AdditiveModel(run.learners, run.values, np.arange(1, n + 1, dtype=np.int64)),
        init_loss=init_loss, train_loss=np.asarray(run.losses), validation_loss=None,
        best_iteration=None, feature_importances=_normalized(importances),
        records=run.records, n_kept=n, covers=run.covers)


def _normalized(importances: np.ndarray) -> np.ndarray:
    total = importances.sum()
    return importances / total if total > 0 else importances


def _report(verbose: int, it: int, train_loss: float, val_loss: float | None) -> None:
    if not verbose or (it + 1) % int(verbose):
        return
    line = f"[{it + 1:5d}] train loss {train_loss:.6g}"
    if val_loss is not None:
        line += f"  validation loss {val_loss:.6g}"
    print(line, file=sys.stderr)
