"""Cost-sensitive evaluation."""

from __future__ import annotations

import numpy as np


def mean_cost(y_true, y_pred, cost_matrix, classes, decisions=None) -> float:
    """Mean of ``cost_matrix[true, predicted]`` with rows ordered as ``classes`` and columns
    as ``classes`` (or as ``decisions``, when ``y_pred`` holds named decisions)."""
    classes = np.asarray(classes)
    cost_matrix = np.asarray(cost_matrix, dtype=float)
    index = {c: i for i, c in enumerate(classes.tolist())}
    columns = index if decisions is None else {d: j for j, d in enumerate(list(decisions))}
    try:
        t = np.array([index[v] for v in np.asarray(y_true).tolist()], dtype=np.intp)
    except KeyError as exc:
        raise ValueError(
            f"label {exc.args[0]!r} is not one of the classes {classes.tolist()}"
        ) from None
    try:
        p = np.array([columns[v] for v in np.asarray(y_pred).tolist()], dtype=np.intp)
    except KeyError as exc:
        what = "classes" if decisions is None else "decisions"
        raise ValueError(
            f"label {exc.args[0]!r} is not one of the {what} {list(columns)}"
        ) from None
    if t.shape != p.shape:
        raise ValueError(f"y_true has {len(t)} labels but y_pred has {len(p)}")
    return float(cost_matrix[t, p].mean())
