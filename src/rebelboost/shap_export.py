"""A tree model in the custom-tree form ``shap.TreeExplainer`` accepts.

``shap.TreeExplainer(rebelboost.to_shap(model))`` explains a rebelboost tree model with shap's
own path-dependent TreeSHAP: a dict ``{"trees": [...]}`` whose trees list, per node,
``children_left/right/default`` (-1 at leaves), ``features``, ``thresholds`` (``x <= t`` goes
left), ``values`` (the leaf's K class scores: shap walks each vector-leaf tree once for all
classes) and ``node_sample_weight`` (the training weight reaching the node). Its values equal
:meth:`~rebelboost.ensemble.RebelClassifier.contributions` to rounding (shap returns them as
``(n, d, K)`` with the bias in ``expected_value``).
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
    trees = [_shap_tree(tables, t) for t in range(tables.n_trees)]
    return {"trees": trees, "base_offset": np.zeros(estimator.model_.n_classes),
            "tree_output": "raw_value", "input_dtype": np.float64,
            "internal_dtype": np.float64}


def _shap_tree(tables: TreeTables, t: int) -> dict:
    """Tree ``t``'s reachable nodes, renumbered from its root in depth-first order."""
    k = tables.values.shape[2]
    left, right, default, features, thresholds, values, weights = [], [], [], [], [], [], []

    def add(child: int) -> int:
        index = len(left)
        for column in (left, right, default, features):
            column.append(-1)
        thresholds.append(0.0)
        if child < 0:
            values.append(tables.values[t, ~child])
            weights.append(tables.leaf_cover[t, ~child])
            return index
        values.append(np.zeros(k))  # shap fills in internal nodes' expectations
        weights.append(tables.cover[t, child])
        if weights[-1] <= 0:
            raise ContributionsUnavailable(
                f"tree {t} has a split no training row reached; shap divides by its zero "
                "cover (rebelboost.contributions splits it evenly)")
        features[index] = int(tables.feature[t, child])
        thresholds[index] = float(tables.threshold[t, child])
        left[index] = add(int(tables.left[t, child]))
        right[index] = add(int(tables.right[t, child]))
        default[index] = left[index] if tables.missing_left[t, child] else right[index]
        return index

    add(int(tables.root[t]))
    return {"children_left": np.array(left, np.int32), "children_right": np.array(right, np.int32),
            "children_default": np.array(default, np.int32),
            "features": np.array(features, np.int32),
            "thresholds": np.array(thresholds, np.float64), "values": np.array(values),
            "node_sample_weight": np.array(weights, np.float64)}
