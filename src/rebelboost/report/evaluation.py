"""What a report measures on a data set: error, mean cost, confusion, per class, per iteration."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Evaluation:
    """A model's results on one labelled data set (classes ordered as ``model.classes_``)."""

    n_samples: int
    error: float
    mean_cost: float
    confusion: np.ndarray  # (K, M) counts, rows true, columns predicted (class or decision)
    class_counts: np.ndarray  # (K,) rows of each true class
    class_error: np.ndarray  # (K,) error within each true class (NaN where absent)
    class_cost: np.ndarray  # (K,) mean cost within each true class (NaN where absent)
    staged_error: np.ndarray  # (n_iterations,) error after each boosting iteration
    staged_cost: np.ndarray  # (n_iterations,) mean cost after each boosting iteration


@dataclass
class Reliability:
    """Top-label calibration of ``predict_proba`` on a labelled data set."""

    confidence: np.ndarray  # (B,) mean top probability of the rows in each non-empty bin
    accuracy: np.ndarray  # (B,) share of those rows whose top class is right
    counts: np.ndarray  # (B,) rows in each bin
    ece: float  # expected calibration error: count-weighted mean |accuracy - confidence|


def reliability(model, X, y, n_bins: int = 15) -> Reliability:
    """Equal-width bins of ``predict_proba``'s top probability (the ECE's bins)."""
    from ..costs import expected_calibration_error

    proba = model.predict_proba(X)
    index = {c: i for i, c in enumerate(model.classes_.tolist())}
    true = np.array([index[v] for v in np.asarray(y).tolist()], dtype=np.intp)
    confidence = proba.max(axis=1)
    correct = np.argmax(proba, axis=1) == true
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    used = np.unique(bins)
    return Reliability(
        confidence=np.array([confidence[bins == b].mean() for b in used]),
        accuracy=np.array([correct[bins == b].mean() for b in used]),
        counts=np.array([np.sum(bins == b) for b in used]),
        ece=expected_calibration_error(proba, true, n_bins),
    )


def evaluate(model, X, y, cost_matrix: np.ndarray) -> Evaluation:
    """Score ``model`` on (X, y); labels outside ``model.classes_`` raise a ValueError."""
    classes = model.classes_.tolist()
    index = {c: i for i, c in enumerate(classes)}
    labels = np.asarray(y).tolist()
    unknown = sorted({str(v) for v in labels if v not in index})
    if unknown:
        raise ValueError(f"labels {unknown[:5]} are not among the model's classes {classes}")
    true = np.array([index[v] for v in labels], dtype=np.intp)
    if len(true) == 0:
        raise ValueError("the data set has no rows")
    k = len(classes)
    outputs = model.decision_labels_.tolist()  # the classes, or a model's named decisions
    labelled = outputs == classes
    out_index = {d: j for j, d in enumerate(outputs)}

    def codes(pred) -> np.ndarray:
        return np.array([out_index[v] for v in pred.tolist()], dtype=np.intp)

    pred = codes(model.predict(X))
    if len(pred) != len(true):
        raise ValueError(f"X has {len(pred)} rows but y has {len(true)} labels")
    confusion = np.zeros((k, len(outputs)), dtype=np.int64)
    np.add.at(confusion, (true, pred), 1)
    counts = confusion.sum(axis=1)
    cost = cost_matrix[true, pred]
    with np.errstate(invalid="ignore", divide="ignore"):
        class_error = (1.0 - np.diag(confusion) / counts if labelled
                       else np.full(k, np.nan))  # decisions that are not labels: no error
        class_cost = np.bincount(true, weights=cost, minlength=k) / counts
    staged = [codes(p) for p in model.staged_predict(X)]
    return Evaluation(
        n_samples=len(true),
        error=float(np.mean(pred != true)) if labelled else float("nan"),
        mean_cost=float(cost_matrix[true, pred].mean()),
        confusion=confusion,
        class_counts=counts,
        class_error=class_error,
        class_cost=class_cost,
        staged_error=np.array([np.mean(p != true) if labelled else np.nan for p in staged]),
        staged_cost=np.array([cost_matrix[true, p].mean() for p in staged]),
    )


CASCADE_KEEPS = (0.999, 0.995, 0.99, 0.98, 0.95)


@dataclass
class ExitPoint:
    """One way of stopping early, measured on held-out rows."""

    label: str
    agreement: float  # share of rows whose label equals full evaluation's
    share: float  # mean share of the learners evaluated


def exit_tradeoff(model, X: np.ndarray) -> list[ExitPoint]:
    """The exact exit and soft cascades calibrated on the even rows of ``X`` (at
    :data:`CASCADE_KEEPS`), measured on its odd rows: the accuracy/work trade-off curve."""
    X_cal, X_out = X[::2], np.ascontiguousarray(X[1::2])
    n = len(model.model_.learners)
    full, _ = model.model_.predict_codes(X_out)
    points = []
    for label, exit_ in [("exact exit", "exact")] + [
            (f"soft cascade, keep {keep}", model.model_.calibrate_cascade(X_cal, keep))
            for keep in CASCADE_KEEPS]:
        codes, used = model.model_.predict_codes(X_out, early_exit=exit_)
        points.append(ExitPoint(label, float(np.mean(codes == full)), float(used.mean() / n)))
    return points
