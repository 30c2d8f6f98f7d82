"""Cost-sensitive decisions: per-sample costs, the minimum-risk decision, the posterior route.

A REBEL model meets a cost matrix ``C`` (or per-sample costs) by one of two routes:

* ``'loss'``: train on REBEL's cost-sensitive loss and predict ``argmax_k H_k(x)``;
* ``'posterior'``: train cost-neutrally, temperature-scale the posteriors on held-out rows
  and predict the minimum-risk class ``argmin_k (p(x) @ C)_k``.

``'auto'`` trains both on a split of the training set and keeps the one of lower mean cost
on the held-out rows. Both routes are one-line hooks in the estimator; their logic is here.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit
from sklearn.base import clone
from sklearn.model_selection import train_test_split

from .validation import check_cost_matrix

COST_STRATEGIES = ("loss", "posterior", "auto")


def check_sample_cost(sample_cost, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Validated (n_samples, K) float array of per-sample costs.

    Row n is the cost of each prediction for sample n, columns in the order of ``classes_``:
    non-negative, finite, zero at the true class and positive somewhere.
    """
    if hasattr(sample_cost, "to_numpy"):
        sample_cost = sample_cost.to_numpy()
    try:
        cost = np.asarray(sample_cost, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample_cost must be a numeric (n_samples, n_classes) array: {exc}") \
            from None
    expected = (len(codes), n_classes)
    if cost.shape != expected:
        raise ValueError(
            f"sample_cost must have shape {expected} (one row per sample, one column per "
            f"class), got {cost.shape}"
        )
    if not np.isfinite(cost).all():
        rows = np.flatnonzero(~np.isfinite(cost).all(axis=1))
        raise ValueError(f"sample_cost contains NaN or infinity (rows {_some(rows)})")
    if (cost < 0).any():
        rows = np.flatnonzero((cost < 0).any(axis=1))
        raise ValueError(f"sample_cost has negative entries (rows {_some(rows)}); costs must "
                         "be >= 0")
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


def cost_columns(frame, classes, prefix: str = "cost_") -> tuple[np.ndarray, list[str]]:
    """Per-sample costs from a table's columns ``prefix + str(class)``, one per class.

    Returns ``(sample_cost, column names)`` with columns in the order of ``classes``, so a
    caller (the command line) can drop those columns from the features. The values are
    checked by ``fit``.
    """
    names = [str(c) for c in np.asarray(classes).tolist()]
    present = [str(c) for c in frame.columns if str(c).startswith(prefix)]
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
    by_name = {str(c): c for c in frame.columns}
    try:
        cost = frame[[by_name[c] for c in wanted]].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cost columns must be numeric: {exc}") from None
    return cost, [by_name[c] for c in wanted]


def resolve_costs(cost_matrix, sample_cost, codes: np.ndarray, n_classes: int, classes=None):
    """``(cost_matrix_, sample_cost)`` for ``fit``.

    With per-sample costs the model's ``cost_matrix_`` is the mean cost row of each true
    class: the matrix that ``expected_cost``, ``cost_score`` and the posterior route use,
    since test rows come without costs.
    """
    if sample_cost is None:
        return check_cost_matrix(cost_matrix, n_classes, classes), None
    if cost_matrix is not None:
        raise ValueError("give either cost_matrix or sample_cost, not both")
    sample_cost = check_sample_cost(sample_cost, codes, n_classes)
    counts = np.bincount(codes, minlength=n_classes)
    means = np.zeros((n_classes, n_classes))
    np.add.at(means, codes, sample_cost)
    return means / counts[:, None], sample_cost


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


def decision_codes(model, scores: np.ndarray) -> np.ndarray:
    """Class codes a fitted REBEL model predicts from its scores ``H`` (per its route)."""
    if getattr(model, "cost_strategy_", "loss") == "posterior":
        proba = proba_from_scores(scores, getattr(model, "temperature_", 1.0))
        return min_risk_codes(proba, model.cost_matrix_)
    return np.argmax(scores, axis=1)


def fit_temperature(scores: np.ndarray, codes: np.ndarray, sample_weight=None) -> float:
    """The T >= 1 minimising the (weighted) log-loss of ``proba_from_scores(scores, T)``.

    Boosted scores are over-confident once the training loss is small (the measured T on
    held-out rows was 1.5-14 for 100-200 trees), which skews ``p @ C`` towards the top class.
    T < 1 is not searched: when every held-out row is confidently right the log-loss keeps
    falling as T -> 0 (a 150-row split of optdigits gave T = 0.41 and doubled the test
    log-loss).
    """
    rows = np.arange(len(codes))

    def log_loss(log_t):
        p = proba_from_scores(scores, np.exp(log_t))[rows, codes]
        return -np.average(np.log(p), weights=sample_weight)

    return float(np.exp(minimize_scalar(log_loss, bounds=(0.0, 5.0), method="bounded").x))


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


def choose_route(model, X, codes, sample_weight, sample_cost, rng) -> tuple[str, float, dict]:
    """``(cost_strategy_, temperature_, route_costs_)`` for ``model.fit``.

    'loss' (and any strategy under 0-1 costs, where both routes predict ``argmax H``) needs
    no extra fit. 'posterior' fits a cost-neutral copy on ``1 - validation_fraction`` of the
    rows to find the temperature on the rest; 'auto' also fits a cost-sensitive copy there
    and picks the route of lower mean cost on the held-out rows (``route_costs_``).
    """
    n_classes = model.cost_matrix_.shape[0]
    neutral = sample_cost is None and np.array_equal(model.cost_matrix_, 1.0 - np.eye(n_classes))
    if model.cost_strategy == "loss" or neutral:
        return "loss", 1.0, {}
    fit_idx, val_idx = _route_split(codes, model.validation_fraction, rng)
    copy = clone(model).set_params(cost_strategy="loss", cost_matrix=None)
    copy.fit(X[fit_idx], codes[fit_idx], sample_weight[fit_idx])
    val_codes, val_w = codes[val_idx], sample_weight[val_idx]
    scores = copy._scores(X[val_idx])
    temperature = fit_temperature(scores, val_codes, val_w)
    if model.cost_strategy == "posterior":
        return "posterior", temperature, {}
    val_rows = row_costs(model.cost_matrix_, val_codes,
                         None if sample_cost is None else sample_cost[val_idx])
    picked = {"posterior": min_risk_codes(proba_from_scores(scores, temperature),
                                          model.cost_matrix_)}
    sensitive = clone(model).set_params(cost_strategy="loss")
    sensitive.fit(X[fit_idx], codes[fit_idx], sample_weight[fit_idx],
                  sample_cost=None if sample_cost is None else sample_cost[fit_idx])
    picked["loss"] = np.argmax(sensitive._scores(X[val_idx]), axis=1)
    costs = {route: float(np.average(val_rows[np.arange(len(val_idx)), pred], weights=val_w))
             for route, pred in picked.items()}
    route = "posterior" if costs["posterior"] < costs["loss"] else "loss"
    return route, temperature if route == "posterior" else 1.0, costs


def _route_split(codes: np.ndarray, fraction: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Stratified (fit rows, held-out rows); every class must keep a row on both sides."""
    counts = np.bincount(codes)
    if counts.min() < 2:
        raise ValueError(
            f"cost_strategy 'posterior' and 'auto' hold out rows of every class, but class "
            f"code {int(np.argmin(counts))} has {counts.min()} training row(s); use "
            "cost_strategy='loss'"
        )
    n_val = max(int(np.ceil(fraction * len(codes))), len(counts))
    n_val = min(n_val, len(codes) - len(counts))
    fit_idx, val_idx = train_test_split(np.arange(len(codes)), test_size=n_val,
                                        stratify=codes, random_state=rng)
    if len(np.unique(codes[fit_idx])) < len(counts):
        raise ValueError("the held-out split left a class without training rows; use "
                         "cost_strategy='loss'")
    return fit_idx, val_idx
