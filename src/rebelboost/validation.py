"""Checks on user input that turn bad data into one clear ``ValueError``."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, validate_data


def check_fit_input(estimator, X, y, sample_weight):
    """Validated ``(X, codes, sample_weight)`` for a classifier's ``fit``.

    Checks the parameters, sets ``classes_``, ``n_features_in_`` (and feature names); X may hold
    NaN but not infinity; weights must be non-negative with a positive sum.
    """
    estimator._validate_params()
    X, y = validate_data(
        estimator, X, y, dtype=np.float64, ensure_all_finite="allow-nan", y_numeric=False,
        ensure_min_samples=2,
    )
    estimator.classes_, codes = check_labels(y)
    sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
    if (sample_weight < 0).any():
        raise ValueError("sample_weight must be non-negative")
    if sample_weight.sum() <= 0:
        raise ValueError("sample_weight sums to zero: no sample would count")
    return X, codes, sample_weight


def check_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """Encode labels to 0..K-1; return (classes, codes). Needs at least two classes."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per sample), got shape {y.shape}")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity; every sample needs a class label")
    if y.dtype == object and any(v is None for v in y):
        raise ValueError("y contains None; every sample needs a class label")
    check_classification_targets(y)
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(
            f"y has a single class ({classes[0]!r}); classification needs at least 2 classes"
        )
    return classes, codes.astype(np.intp)


def check_cost_matrix(cost_matrix, n_classes: int) -> np.ndarray:
    """Validated K x K float cost matrix; ``None`` means the cost-neutral ``1 - I``.

    Rows are true classes and columns predicted classes, both in the order of ``classes_``.
    """
    if cost_matrix is None:
        return 1.0 - np.eye(n_classes)
    if hasattr(cost_matrix, "to_numpy"):
        cost_matrix = cost_matrix.to_numpy()
    try:
        cost = np.asarray(cost_matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cost_matrix must be a numeric K x K array: {exc}") from None
    if cost.shape != (n_classes, n_classes):
        raise ValueError(
            f"cost_matrix must have shape ({n_classes}, {n_classes}) for {n_classes} classes, "
            f"got {cost.shape}"
        )
    if not np.isfinite(cost).all():
        raise ValueError("cost_matrix contains NaN or infinity")
    if (cost < 0).any():
        raise ValueError("cost_matrix has negative entries; costs must be >= 0")
    if np.any(np.diag(cost) != 0):
        raise ValueError("cost_matrix must have a zero diagonal (a correct prediction costs 0)")
    zero_rows = np.flatnonzero(cost.sum(axis=1) == 0)
    if zero_rows.size:
        raise ValueError(
            f"cost_matrix rows {zero_rows.tolist()} are all zero: every true class needs some "
            "positive cost of being misclassified"
        )
    return cost
