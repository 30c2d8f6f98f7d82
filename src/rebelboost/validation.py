"""Checks on user input that turn bad data into one clear ``ValueError``."""

from __future__ import annotations

from numbers import Number

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, validate_data


def label_text(label) -> str:
    """A class label as a message shows it: ``1`` or ``'a'``, not NumPy's ``np.int64(1)``."""
    return repr(label.item() if isinstance(label, np.generic) else label)


def check_fit_input(estimator, X, y, sample_weight):
    """Validated ``(X, codes, sample_weight)`` for a classifier's ``fit``.

    Checks the parameters, sets ``classes_``, ``n_features_in_`` (and feature names); X may hold
    NaN but not infinity; weights must be non-negative with a positive sum. A float32 X stays
    float32 (binning reads it as it is: no float64 copy of the training set); other types
    become float64.
    """
    estimator._validate_params()
    try:
        X, y = validate_data(
            estimator, X, y, dtype=[np.float64, np.float32], ensure_all_finite="allow-nan",
            y_numeric=False,
            ensure_min_samples=2,
        )
    except (ValueError, TypeError) as exc:  # (TypeError: a column of dicts, timestamps...)
        _name_text_columns(X, exc)
        raise
    estimator.classes_, codes = check_labels(y)
    sample_weight = _checked_weights(sample_weight, X, "sample_weight")
    if (sample_weight < 0).any():
        raise ValueError("sample_weight must be non-negative")
    if sample_weight.sum() <= 0:
        raise ValueError("sample_weight sums to zero: no sample would count")
    return X, codes, sample_weight


def check_predict_input(estimator, X) -> np.ndarray:
    """Validated float64 X for prediction: the fitted features (by name when fitted with
    names), NaN allowed, no infinity, text columns named."""
    try:
        return validate_data(estimator, X, dtype=np.float64, ensure_all_finite="allow-nan",
                             reset=False)
    except (ValueError, TypeError) as exc:
        _name_text_columns(X, exc)
        raise


def check_eval_set(estimator, eval_set, eval_sample_weight=None, encode=None):
    """Validated ``(X_val, codes_val, w_val)`` of a ``fit``'s ``eval_set``: one ``(X, y)``
    pair (or a list holding one, as LightGBM and XGBoost take it) of the fitted features,
    its categorical columns encoded by ``encode`` (the estimator's encoding of the training
    set; None: none), and labels among ``classes_``. Called during ``fit``, once
    ``classes_`` and the encoding are set."""
    if isinstance(eval_set, list):
        if len(eval_set) != 1:
            raise ValueError(f"eval_set holds one (X, y) pair, got a list of {len(eval_set)}")
        eval_set = eval_set[0]
        if isinstance(eval_sample_weight, list) and len(eval_sample_weight) == 1:
            eval_sample_weight = eval_sample_weight[0]
    if not isinstance(eval_set, tuple) or len(eval_set) != 2:
        raise ValueError("eval_set must be an (X, y) pair (a tuple), or a list holding one")
    X_val, y_val = eval_set
    try:
        refuse_time_columns(X_val)
        X_val = check_predict_input(estimator, X_val if encode is None else encode(X_val))
    except ValueError as exc:
        raise ValueError(f"eval_set: {exc}") from None
    y_val = normalize_labels(y_val)
    if len(y_val) != X_val.shape[0]:
        raise ValueError(f"eval_set: X has {X_val.shape[0]} rows and y {len(y_val)} labels")
    classes = estimator.classes_
    known = np.isin(y_val, classes) if y_val.dtype.kind == classes.dtype.kind or (
        y_val.dtype.kind in "iufb" and classes.dtype.kind in "iufb") else np.zeros(len(y_val),
                                                                                 bool)
    if not known.all():
        unknown = np.unique(y_val[~known])[:5].tolist()
        raise ValueError(f"eval_set: labels {unknown} are not among the training classes "
                         f"{classes.tolist()}")
    codes = np.searchsorted(classes, y_val).astype(np.intp)
    w = _checked_weights(eval_sample_weight, X_val, "eval_sample_weight")
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError("eval_sample_weight must be non-negative with a positive sum")
    return X_val, codes, w


def _checked_weights(weights, X, name: str) -> np.ndarray:
    """scikit-learn's checked float64 sample weights, with ``name`` in the error where they
    are not numbers (its own says only "could not convert string to float")."""
    try:
        return _check_sample_weight(weights, X, dtype=np.float64)
    except TypeError as exc:
        raise TypeError(f"{name} must hold numbers: {_not_a_number(weights, exc)}") from None
    except ValueError as exc:
        if "convert" in str(exc):
            raise ValueError(f"{name} must hold numbers: {_not_a_number(weights, exc)}"
                             ) from None
        raise


def _not_a_number(values, exc: Exception) -> str:
    """The first of ``values`` that is not a number, as it reads (else the error's text)."""
    for value in np.asarray(values, dtype=object).ravel():
        try:
            float(value)
        except (TypeError, ValueError):
            return f"{label_text(value)} is not one"
    return str(exc)


def refuse_time_columns(X) -> None:
    """A ValueError naming a DataFrame's date, time, duration, period or interval columns
    (called on the X a user passes, before any encoding turns such a column into numbers).

    As numbers they would be counts of a unit that depends on the column's resolution
    (microseconds in one frame, nanoseconds in the next: a model that silently predicts
    from the wrong scale), and tz-aware or period columns do not convert at all. LightGBM
    refuses them too; the user chooses the numbers (days since a date, a day of the week)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return
    # (a list of the dtypes, no names unless one is bad: 25 us on a 60-column row, a few
    # percent of predicting it, against 85 us zipped with the names)
    found = [j for j, dtype in enumerate(dtypes.tolist())
             if getattr(dtype, "kind", "") in "mM"
             or type(dtype).__name__ in ("PeriodDtype", "IntervalDtype")]
    if found:
        bad = [(X.columns[j], dtypes.iloc[j]) for j in found]
        raise ValueError(
            f"X columns {[name for name, _ in bad]} hold dates, times, durations or intervals "
            f"({', '.join(sorted({str(dtype) for _, dtype in bad}))}); convert them to numbers "
            "first, for example days since a reference date, or the day of the week as a "
            "categorical column")


def _name_text_columns(X, exc: Exception) -> None:
    """Raise an error naming the columns of X that are not numbers, if that caused ``exc``
    (or saying that a DataFrame X has no columns at all): numpy's "could not convert" (text)
    and "setting an array element with a sequence" (lists) as a ValueError, its "float()
    argument must be a string or a real number" (dicts, timestamps) as a TypeError that keeps
    those words (scikit-learn's estimator checks expect them)."""
    if hasattr(X, "columns") and len(X.columns) == 0:
        raise ValueError(f"X has no feature columns (a DataFrame of shape {X.shape})") from None
    said = " ".join(str(exc).split())
    if isinstance(exc, TypeError):
        if "argument must be" not in said:
            return
    elif "could not convert" not in said and "with a sequence" not in said:
        return
    if hasattr(X, "columns"):
        columns = [(name, X[name].to_numpy()) for name in X.columns]
        what = "X columns {} are not numeric"
    else:
        try:
            X = np.asarray(X, dtype=object)
        except ValueError:  # (ragged rows: not a table whose columns could be named)
            return
        if X.ndim != 2:
            return
        columns = list(enumerate(X.T))
        what = "X columns {} (0-based) are not numeric"
    bad = []
    for name, values in columns:
        try:
            np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            bad.append(name)
    if bad:
        message = what.format(bad) + "; encode them as numbers first (or drop them)"
        if isinstance(exc, TypeError):
            raise TypeError(f"{message} ({said})") from None
        raise ValueError(message) from None


def check_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """Encode labels to 0..K-1; return (classes, codes). Needs at least two classes.

    All-string labels (also from pandas object, string or categorical columns) come back as a
    numpy string array, which model files can store.
    """
    y = normalize_labels(y)
    if y.size == 0:
        raise ValueError("y is empty; classification needs labelled samples")
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y has a single class ({label_text(classes[0])}); classification "
                         "needs at least 2 classes")
    return classes, codes.astype(np.intp)


def normalize_labels(y) -> np.ndarray:
    """Class labels as a 1-D array of one type (strings as a str array), or a ValueError
    naming what is wrong (NaN, None, mixed types, fractional floats, a regression target)."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per sample), got shape {y.shape}")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity; every sample needs a class label")
    if y.dtype == object:
        y = _object_labels(y)
    if y.dtype.kind == "f" and not np.array_equal(y, np.round(y)):
        fraction = float(y[y != np.round(y)][0])
        raise ValueError(
            f"Unknown label type: y holds fractional float labels (such as {fraction!r}), which "
            "scikit-learn reads as a regression target; pass class labels as integers or "
            "strings (for example y.astype(str))"
        )
    if y.size:
        check_classification_targets(y)
    return y


def _object_labels(y: np.ndarray) -> np.ndarray:
    """Labels of an object array: strings as a str array; refuse None, NaN and mixed types."""
    examples = {}
    for v in y:
        if v is None:
            raise ValueError("y contains None; every sample needs a class label")
        kind = ("str" if isinstance(v, str) else "number" if isinstance(v, Number | np.bool_)
                else type(v).__name__)
        examples.setdefault(kind, v)
    if examples.keys() == {"str"}:
        return y.astype(str)
    if examples.keys() == {"number"}:
        values = np.asarray(y.tolist())
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            raise ValueError("y contains NaN or infinity; every sample needs a class label")
        return values
    if len(examples) == 1:
        return y
    raise ValueError(
        "y mixes label types (" + ", ".join(f"{k} such as {v!r}" for k, v in examples.items())
        + "); use one type for every label, for example y.astype(str)"
    )


def check_cost_matrix(cost_matrix, n_classes: int, classes=None) -> np.ndarray:
    """Validated K x K float cost matrix; ``None`` means the cost-neutral ``1 - I``.

    Rows are true classes and columns predicted classes, both in the order of ``classes_``. A
    pandas DataFrame whose index or columns carry labels is reordered to ``classes`` by them
    (an unlabelled axis follows the labelled one); labels that are not the classes are refused.
    """
    if cost_matrix is None:
        return 1.0 - np.eye(n_classes)
    rows = columns = None
    if hasattr(cost_matrix, "to_numpy"):
        if hasattr(cost_matrix, "columns"):
            rows, columns = (_labels(axis, n_classes) for axis in (cost_matrix.index,
                                                                  cost_matrix.columns))
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
    if (rows is not None or columns is not None) and classes is not None:
        cost = order_by_labels(cost, rows, columns, np.asarray(classes).tolist(),
                               "cost_matrix")
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


def _labels(axis, n: int) -> list | None:
    """The labels of a DataFrame axis, or None for pandas' default positions 0..n-1."""
    import pandas as pd

    if isinstance(axis, pd.RangeIndex) and axis.equals(pd.RangeIndex(n)):
        return None
    return axis.tolist()


def order_by_labels(cost: np.ndarray, rows: list | None, columns: list | None, classes: list,
                    what: str) -> np.ndarray:
    """``cost`` with its rows and columns put in the order of ``classes``, by their labels.

    ``rows`` or ``columns`` may be None: that axis then carries the other axis's labels.
    """
    order = []
    for axis, given in (("rows", rows if rows is not None else columns),
                        ("columns", columns if columns is not None else rows)):
        if len(given) != len(set(given)) or set(given) != set(classes):
            raise ValueError(
                f"{what}: the labels of its {axis} {given} do not match the classes {classes} "
                "(each class once)"
            )
        order.append([given.index(c) for c in classes])
    return cost[np.ix_(order[0], order[1])]
