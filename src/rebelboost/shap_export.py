"""A tree model in the custom-tree form ``shap.TreeExplainer`` accepts.

``shap.TreeExplainer(rebelboost.to_shap(model))`` explains a rebelboost tree model with shap's
own path-dependent TreeSHAP: a dict ``{"trees": [...]}`` whose trees list, per node,
``children_left/right/default`` (-1 at leaves), ``features``, ``thresholds`` (``x <= t`` goes
left), ``values`` (the leaf's K class scores: shap walks each vector-leaf tree once for all
classes) and ``node_sample_weight`` (the training weight reaching the node). Its values equal
:meth:`~rebelboost.ensemble.RebelClassifier.contributions` to rounding (shap returns them as
``(n, d, K)`` with the bias in ``expected_value``).

shap's custom trees hold ``x <= t`` tests only, so a model with categorical splits (sets of
category codes) is refused there; :func:`shap_explanation` hands shap the exact
contributions of any tree model, categorical included, as a ``shap.Explanation`` for its plots.
"""

from __future__ import annotations

import numpy as np

from .explain import ContributionsUnavailable
from .tree_tables import TreeTables, tree_tables


def to_shap(estimator) -> dict:
    """The fitted tree model of ``estimator`` as a shap custom-tree dict (raw class scores)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)
    tables = tree_tables(estimator.model_)
    if tables.category_words is not None:
        raise ContributionsUnavailable(
            "shap's custom trees test x <= t only and this model splits by sets of "
            "categories; rebelboost.shap_explanation(model, X) gives shap the exact "
            "contributions (model.contributions) as a shap.Explanation instead")
    trees = [_shap_tree(tables, t) for t in range(tables.n_trees)]
    return {"trees": trees, "base_offset": np.zeros(estimator.model_.n_classes),
            "tree_output": "raw_value", "input_dtype": np.float64,
            "internal_dtype": np.float64}


def shap_explanation(estimator, X):
    """``shap.Explanation`` of the exact contributions of ``estimator`` on ``X`` (values
    ``(n, d, K)``, base values the bias, data the rows as the trees read them and
    ``display_data`` as given), for shap's plots; any tree model, categorical included."""
    try:
        import shap
    except ImportError:
        raise ImportError("shap_explanation needs shap: pip install 'rebelboost[shap]'") \
            from None
    phi = estimator.contributions(X)
    display = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
    return shap.Explanation(values=phi[:, :-1, :], base_values=phi[:, -1, :],
                            data=estimator.encode(X), display_data=display,
                            feature_names=estimator.feature_names(),
                            output_names=[str(c) for c in estimator.classes_])


def _shap_tree(tables: TreeTables, t: int) -> dict:
    """Tree ``t``'s reachable nodes, numbered breadth first from its root (no recursion: a
    leaf-wise tree may be thousands of nodes deep)."""
    order = [int(tables.root[t])]  # node ids: >= 0 a split, < 0 leaf ~id
    n = 0
    while n < len(order):
        if order[n] >= 0:
            order += [int(tables.left[t, order[n]]), int(tables.right[t, order[n]])]
        n += 1
    index = {node: i for i, node in enumerate(order)}
    size = len(order)
    left, right, default, features = (np.full(size, -1, np.int32) for _ in range(4))
    thresholds, weights = np.zeros(size), np.zeros(size)
    values = np.zeros((size, tables.values.shape[2]))  # shap fills in internal nodes' values
    for i, node in enumerate(order):
        if node < 0:
            values[i], weights[i] = tables.values[t, ~node], tables.leaf_cover[t, ~node]
            continue
        weights[i] = tables.cover[t, node]
        if weights[i] <= 0:
            raise ContributionsUnavailable(
                f"tree {t} has a split no training row reached; shap divides by its zero "
                "cover (rebelboost.contributions splits it evenly)")
        features[i], thresholds[i] = tables.feature[t, node], tables.threshold[t, node]
        left[i], right[i] = index[int(tables.left[t, node])], index[int(tables.right[t, node])]
        default[i] = left[i] if tables.missing_left[t, node] else right[i]
    return {"children_left": left, "children_right": right, "children_default": default,
            "features": features, "thresholds": thresholds, "values": values,
            "node_sample_weight": weights}
