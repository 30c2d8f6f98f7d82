"""Cost-sensitive decisions: cost checks, per-sample costs, the minimum-risk decision.

A cost matrix ``C`` has one row per true class and one column per decision: K x K when the
decisions are the class labels, or K x M with named ``decisions`` (e.g. the K labels plus
"refer to a human"). A fitted REBEL model decides by one of three routes (``cost_route_``):

* ``'min_risk'``: ``argmin_m (p(x) @ C)_m`` with ``p`` the calibrated posteriors;
* ``'argmax'``: the decision of least cost for the class of largest score (the class itself
  for a K x K matrix), i.e. the plain prediction taken as certain;
* ``'loss'``: the class of largest score of a model trained on REBEL's cost-sensitive loss.

This module is a foundation: it checks costs and turns scores into decisions; it never fits
a model. Choosing the route (cross-fitting, calibration, the guard) is the estimator layer's
job (:mod:`rebelboost.ensemble._cost_route`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from .exact_sums import rounded, sum_by_group
from .validation import check_cost_matrix, label_text

COST_STRATEGIES = ("loss", "posterior", "auto")
ROUTES = ("min_risk", "argmax", "loss")


def check_costs(cost_matrix, decisions, n_classes: int, classes=None):
    """``(C, decisions)``: the validated K x M cost matrix and the decision names (or None).

    Without ``decisions`` the matrix must be K x K with a zero diagonal (the decisions are the
    classes); with them, K x M for M names, any non-negative finite entries. Errors name the
    offending entry.
    """
    names = check_decisions(decisions)
    if cost_matrix is None:
        if names is not None:
            raise ValueError("decisions need a cost_matrix of shape (n_classes, "
                             f"{len(names)}) saying what each decision costs")
        return check_cost_matrix(None, n_classes), None
    _check_labelled_classes(cost_matrix, classes)
    raw = cost_matrix.to_numpy() if hasattr(cost_matrix, "to_numpy") else cost_matrix
    try:
        cost = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cost_matrix must be a numeric array: {exc}") from None
    wanted = n_classes if names is None else len(names)
    if cost.ndim != 2 or cost.shape != (n_classes, wanted):
        raise ValueError(
            f"cost_matrix must have shape ({n_classes}, {n_classes}) for {n_classes} classes, "
            f"or ({n_classes}, M) with decisions= naming its M columns"
            + ("" if names is None else f" (here {len(names)} decisions)")
            + f"; got {cost.shape}")
    _check_entries(cost, None if hasattr(cost_matrix, "columns") else classes)
    if names is None:
        return check_cost_matrix(cost_matrix, n_classes, classes), None
    if hasattr(cost_matrix, "columns") and hasattr(cost_matrix, "index"):
        raise ValueError("with decisions, pass cost_matrix as a plain array (rows in the "
                         "order of classes_, columns in the order of decisions)")
    return cost, names


def check_decisions(decisions) -> np.ndarray | None:
    """The decision names as a 1-d object array of distinct strings (None stays None)."""
    if decisions is None:
        return None
    names = [decisions] if isinstance(decisions, str) else list(decisions)
    if not names:
        raise ValueError("decisions must name at least one decision")
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ValueError(f"decisions must be non-empty strings; got {bad[0]!r}")
    seen = set()
    for n in names:
        if n in seen:
            raise ValueError(f"decisions name {n!r} more than once")
        seen.add(n)
    return np.asarray(names, dtype=object)


def _check_labelled_classes(cost_matrix, classes) -> None:
    """A labelled table naming a class with no training rows is refused by that name."""
    if classes is None or not hasattr(cost_matrix, "to_numpy"):
        return
    known = set(np.asarray(classes).tolist())
    axes = [cost_matrix.index] + ([cost_matrix.columns] if hasattr(cost_matrix, "columns")
                                  else [])
    for axis in axes:
        labels = axis.tolist()
        if labels == list(range(len(labels))):
            continue  # pandas' default positions, not labels
        absent = [c for c in labels if c not in known]
        if absent:
            raise ValueError(f"cost_matrix names class(es) {absent} with no training rows; "
                             "every class in the costs needs at least one row")


def binary_threshold(cost_matrix: np.ndarray) -> float | None:
    """For two classes: the probability of class 1 above which minimum risk predicts it,
    ``C[0, 1] / (C[0, 1] + C[1, 0])`` (None when the matrix is not 2 x 2)."""
    if cost_matrix.shape != (2, 2):
        return None
    c01, c10 = cost_matrix[0, 1] - cost_matrix[0, 0], cost_matrix[1, 0] - cost_matrix[1, 1]
    if c01 < 0 or c10 < 0 or c01 + c10 == 0:
        return None  # one decision dominates: no threshold
    return float(c01 / (c01 + c10))


def _check_entries(cost: np.ndarray, classes=None) -> None:
    """Refuse NaN, infinite and negative entries, naming the first one."""
    for bad, what in ((~np.isfinite(cost), "is NaN or infinite"), (cost < 0, "is negative")):
        if bad.any():
            i, j = np.argwhere(bad)[0]
            label = (f" (true class {label_text(np.asarray(classes)[i])})"
                     if classes is not None else "")
            raise ValueError(f"cost_matrix[{i}, {j}]{label} {what} ({cost[i, j]}); costs "
                             "must be finite and >= 0")


def check_sample_cost(sample_cost, codes: np.ndarray, n_classes: int,
                      n_decisions: int | None = None) -> np.ndarray:
    """Validated (n_samples, K) float array of per-sample costs ((n_samples, M) with M
    named decisions).

    Row n is the cost of each decision for sample n, columns in the order of ``classes_``
    (or of the decisions): non-negative and finite; without decisions also zero at the true
    class and positive somewhere.
    """
    if hasattr(sample_cost, "to_numpy"):
        sample_cost = sample_cost.to_numpy()
    try:
        cost = np.asarray(sample_cost, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample_cost must be a numeric (n_samples, n_classes) array: {exc}") \
            from None
    expected = (len(codes), n_classes if n_decisions is None else n_decisions)
    if cost.shape != expected:
        raise ValueError(
            f"sample_cost must have shape {expected} (one row per sample, one column per "
            f"{'class' if n_decisions is None else 'decision'}), got {cost.shape}"
        )
    if not np.isfinite(cost).all():
        rows = np.flatnonzero(~np.isfinite(cost).all(axis=1))
        raise ValueError(f"sample_cost contains NaN or infinity (rows {_some(rows)})")
    if (cost < 0).any():
        rows = np.flatnonzero((cost < 0).any(axis=1))
        raise ValueError(f"sample_cost has negative entries (rows {_some(rows)}); costs must "
                         "be >= 0")
    if n_decisions is not None:
        return cost
    true_cost = cost[np.arange(len(codes)), codes]
    if (true_cost != 0).any():
        rows = np.flatnonzero(true_cost != 0)
        raise ValueError(
            f"sample_cost must be zero at each sample's true class (a correct prediction "
            f"costs 0); rows {_some(rows)} are not"
        )
    if (cost.sum(axis=1) == 0).any():
        rows = np.flatnonzero(cost.sum(axis=1) == 0)
        raise ValueError(
            f"sample_cost rows {_some(rows)} are all zero: every sample needs some positive "
            "cost of being misclassified"
        )
    return cost


def _some(rows: np.ndarray) -> str:
    shown = ", ".join(str(r) for r in rows[:5])
    return shown + (f", ... ({len(rows)} in all)" if len(rows) > 5 else "")


def cost_column_names(columns, classes, prefix: str = "cost_") -> list:
    """The columns among ``columns`` that hold per-sample costs, ``prefix + str(class)``, one
    per class, in the order of ``classes`` (a ValueError naming the missing and the extra
    ones otherwise)."""
    names = [str(c) for c in np.asarray(classes).tolist()]
    present = [str(c) for c in columns if str(c).startswith(prefix)]
    wanted = [prefix + name for name in names]
    missing = [c for c in wanted if c not in present]
    extra = [c for c in present if c not in wanted]
    if missing or extra:
        raise ValueError(
            f"cost columns must be exactly {wanted} (one per class); "
            + (f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"no class for {extra}" if extra else "")
        )
    by_name = {str(c): c for c in columns}
    return [by_name[c] for c in wanted]


def cost_columns(frame, classes, prefix: str = "cost_") -> tuple[np.ndarray, list[str]]:
    """Per-sample costs from a table's columns ``prefix + str(class)``, one per class
    (:func:`cost_column_names`).

    Returns ``(sample_cost, column names)`` with columns in the order of ``classes``, so a
    caller (the command line) can drop those columns from the features. The values are
    checked by ``fit``.
    """
    names = cost_column_names(frame.columns, classes, prefix)
    try:
        cost = frame[names].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cost columns must be numeric: {exc}") from None
    return cost, names


def resolve_costs(cost_matrix, sample_cost, codes: np.ndarray, n_classes: int, classes=None,
                  decisions=None):
    """``(cost_matrix_, decisions_, sample_cost)`` for ``fit``.

    With per-sample costs the model's ``cost_matrix_`` is the mean cost row of each true
    class: the matrix that ``expected_cost``, ``cost_score`` and the posterior route use,
    since test rows come without costs.
    """
    if sample_cost is None:
        return (*check_costs(cost_matrix, decisions, n_classes, classes), None)
    if cost_matrix is not None:
        raise ValueError("give either cost_matrix or sample_cost, not both")
    names = check_decisions(decisions)
    sample_cost = check_sample_cost(sample_cost, codes, n_classes,
                                    None if names is None else len(names))
    return class_mean_costs(sum_by_group(codes, sample_cost, n_classes),
                            np.bincount(codes, minlength=n_classes)), names, sample_cost


def class_mean_costs(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each class's mean cost row from the exact sums of its rows' costs (accumulators,
    :func:`~rebelboost.exact_sums.sum_by_group`: the same on any partitioning of the rows)
    and its number of rows."""
    return rounded(sums) / counts[:, None]


def row_costs(cost_matrix: np.ndarray, codes: np.ndarray, sample_cost=None) -> np.ndarray:
    """Each sample's cost row: ``sample_cost`` when given, else ``cost_matrix[codes]``."""
    return cost_matrix[codes] if sample_cost is None else sample_cost


def proba_from_scores(scores: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """``sigmoid(2 H / T)`` renormalised over classes (the posterior at T = 1, 0-1 costs)."""
    # expit, not 0.5 (1 + tanh(H / T)): that loses every digit once H / T < -18 (1 + tanh
    # cancels), where only the classes' ratios remain to decide on
    p = expit(scores * (2.0 / temperature))
    p = np.maximum(p, np.finfo(float).tiny)
    return p / p.sum(axis=1, keepdims=True)


def min_risk_codes(proba: np.ndarray, cost_matrix: np.ndarray) -> np.ndarray:
    """The minimum-risk decision: ``argmin_k (proba @ cost_matrix)_k`` per row."""
    return np.argmin(proba @ cost_matrix, axis=1)


def certain_codes(class_codes: np.ndarray, cost_matrix: np.ndarray) -> np.ndarray:
    """The least-cost decision for each row's class taken as certain:
    ``argmin_m C[k, m]``; the class itself for a K x K matrix with a zero diagonal."""
    if cost_matrix.shape[0] == cost_matrix.shape[1] and not np.diag(cost_matrix).any():
        return class_codes
    return np.argmin(cost_matrix, axis=1)[class_codes]


def route_of(model) -> str:
    """A fitted model's decision route (models from before ``cost_route_``: by strategy)."""
    route = getattr(model, "cost_route_", None)
    if route is not None:
        return route
    return "min_risk" if getattr(model, "cost_strategy_", "loss") == "posterior" else "loss"


def decision_codes(model, scores: np.ndarray) -> np.ndarray:
    """Decision codes (columns of ``cost_matrix_``) a fitted REBEL model takes from its
    scores ``H``, by its route."""
    route = route_of(model)
    if route == "min_risk":
        calibration = getattr(model, "calibration_", None)
        proba = (proba_from_scores(scores, model.temperature_) if calibration is None
                 else calibration.proba(scores))
        return min_risk_codes(proba, model.cost_matrix_)
    codes = np.argmax(scores, axis=1)
    return certain_codes(codes, model.cost_matrix_) if route == "argmax" else codes


def expected_calibration_error(proba: np.ndarray, codes: np.ndarray, n_bins: int = 15) -> float:
    """Top-label ECE: mean |accuracy - confidence| over equal-width confidence bins."""
    confidence = proba.max(axis=1)
    correct = np.argmax(proba, axis=1) == codes
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        sel = bins == b
        total += sel.mean() * abs(correct[sel].mean() - confidence[sel].mean())
    return float(total)
