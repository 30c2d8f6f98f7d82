"""A tree model as a standard ONNX graph (ai.onnx.ml), to serve it outside Python.

The graph reads ``X`` (float64, shape ``(N, d)``; NaN is a missing value) and computes, in
float64 so that every threshold test is the model's own:

1. ``TreeEnsemble`` (ai.onnx.ml opset 5): each tree's leaf, as an index into a
   ``(trees x leaves, K)`` table of leaf class scores (a vector leaf holds K scores; the ONNX
   tree ensemble holds one weight per leaf, so it returns the leaf and a ``Gather`` reads the
   K-vector), missing values routed as in training (``nodes_missing_value_tracks_true``);
2. ``scores``: the sum over trees, ``H(x)`` (N, K);
3. ``probabilities`` (RebelClassifier): ``sigmoid(2 H / temperature)`` renormalised, then
   for a vector- or matrix-scaling calibration ``softmax(W log p + b)``, as ``predict_proba``;
4. the decision: ``argmax_k H_k`` or, for a model that decides by expected cost, the cost
   rule ``argmin_j (probabilities @ C)_j`` with the cost matrix ``C`` (K x M) in the graph
   (output ``expected_cost``); ``label`` holds the decision names (the classes, or a cost
   matrix's named decisions).

Built with the ``onnx`` package's helpers (the optional ``onnx`` extra); check a graph with
onnxruntime (``tests/test_onnx.py``: labels equal ``predict`` on every row).
"""

from __future__ import annotations

import json

import numpy as np

from .calibration import LOG_FLOOR
from .learners.category_sets import set_codes
from .tree_tables import TreeTables, tree_tables

ML_OPSET, ONNX_OPSET = 5, 18
_TINY = float(np.finfo(np.float64).tiny)  # proba_from_scores's floor


class OnnxExportError(ValueError):
    """The model cannot be written as an ONNX graph (and says what is unsupported)."""


def to_onnx(estimator, path=None):
    """The fitted ``estimator`` as an ``onnx.ModelProto`` (written to ``path`` when given)."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install "
                          "'rebelboost[onnx]'") from None
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)
    try:
        tables = tree_tables(estimator.model_, need_cover=False)
    except ValueError as exc:
        raise OnnxExportError(f"ONNX export supports tree and stump models only: {exc}") \
            from None
    rule = _decision_rule(estimator)
    labels = _labels(rule["names"])
    n_trees, n_leaves, k = tables.values.shape
    d = int(estimator.n_features_in_)

    nodes = [helper.make_node("TreeEnsemble", ["X"], ["leaf_ids"], domain="ai.onnx.ml",
                              **_ensemble_attributes(tables, helper, numpy_helper)),
             helper.make_node("Cast", ["leaf_ids"], ["leaf_index"], to=TensorProto.INT64),
             helper.make_node("Gather", ["leaf_table", "leaf_index"], ["leaf_scores"], axis=0),
             helper.make_node("ReduceSum", ["leaf_scores", "tree_axis"], ["scores"],
                              keepdims=0)]
    constants = {"leaf_table": tables.values.reshape(n_trees * n_leaves, k),
                 "tree_axis": np.array([1], np.int64), "labels": labels}
    outputs = ["label", "scores"]
    if rule["temperature"] is not None:
        # sigmoid(2 H / T) as 1 / (1 + exp(-2 H / T)): onnxruntime's Sigmoid loses the
        # digits of very negative scores (their ratios decide between unlikely classes)
        nodes += [helper.make_node("Mul", ["scores", "minus_two_over_t"], ["scaled"]),
                  helper.make_node("Exp", ["scaled"], ["exp"]),
                  helper.make_node("Add", ["exp", "one"], ["one_plus"]),
                  helper.make_node("Reciprocal", ["one_plus"], ["sigmoid"]),
                  helper.make_node("Max", ["sigmoid", "tiny"], ["floored"]),
                  helper.make_node("ReduceSum", ["floored", "class_axis"], ["total"],
                                   keepdims=1)]
        constants.update(minus_two_over_t=np.array(-2.0 / rule["temperature"]),
                         one=np.array(1.0), tiny=np.array(_TINY),
                         class_axis=np.array([1], np.int64))
        scaling = rule["scaling"]
        if scaling is None:
            nodes.append(helper.make_node("Div", ["floored", "total"], ["probabilities"]))
        else:  # softmax(W log p + b) on the tempered posteriors, logs floored
            weights, bias = scaling
            nodes += [helper.make_node("Div", ["floored", "total"], ["tempered"]),
                      helper.make_node("Max", ["tempered", "tiny"], ["tempered_floored"]),
                      helper.make_node("Log", ["tempered_floored"], ["log_tempered"]),
                      helper.make_node("Max", ["log_tempered", "log_floor"], ["log_p"]),
                      helper.make_node("MatMul", ["log_p", "scaling_weights_t"], ["mixed"]),
                      helper.make_node("Add", ["mixed", "scaling_bias"], ["logits"]),
                      helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1)]
            constants.update(log_floor=np.array(LOG_FLOOR),
                             scaling_weights_t=np.ascontiguousarray(weights.T, np.float64),
                             scaling_bias=np.asarray(bias, np.float64))
        outputs.append("probabilities")
    if rule["cost_matrix"] is not None:
        nodes += [helper.make_node("MatMul", ["probabilities", "cost_matrix"],
                                   ["expected_cost"]),
                  helper.make_node("ArgMin", ["expected_cost"], ["decision"], axis=1,
                                   keepdims=0)]
        constants["cost_matrix"] = np.asarray(rule["cost_matrix"], np.float64)
        outputs.append("expected_cost")
    else:
        nodes.append(helper.make_node("ArgMax", ["scores"], ["decision"], axis=1, keepdims=0))
    nodes.append(helper.make_node("Gather", ["labels", "decision"], ["label"], axis=0))

    widths = {"label": [None], "scores": [None, k], "probabilities": [None, k],
              "expected_cost": [None, len(labels)]}
    graph = helper.make_graph(
        nodes, "rebelboost",
        [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [None, d])],
        [helper.make_tensor_value_info(
            name, _onnx_type(labels) if name == "label" else TensorProto.DOUBLE,
            widths[name]) for name in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), name)
                     for name, v in constants.items()])
    model = helper.make_model(
        graph, producer_name="rebelboost", doc_string=rule["text"],
        opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                       helper.make_opsetid("ai.onnx.ml", ML_OPSET)])
    helper.set_model_props(model, _metadata(estimator, rule))
    onnx.checker.check_model(model, full_check=True)
    if path is not None:
        onnx.save_model(model, str(path))
    return model


def _decision_rule(estimator) -> dict:
    """How ``estimator`` turns scores into a decision: names, temperature, cost matrix."""
    classes = np.asarray(estimator.classes_)
    if not hasattr(estimator, "temperature_"):  # not REBEL: no probability link
        if not estimator.decides_by_argmax_:
            raise OnnxExportError(f"ONNX export of a {type(estimator).__name__}: its decision "
                                  "rule is not the largest score")
        return {"names": classes, "temperature": None, "scaling": None, "cost_matrix": None,
                "text": "label = the class of largest score"}
    from .costs import certain_codes, route_of

    calibration = getattr(estimator, "calibration_", None)
    scaling = (None if calibration is None or calibration.kind == "temperature"
               else (np.asarray(calibration.weights), np.asarray(calibration.bias)))
    temperature = float(estimator.temperature_ if calibration is None
                        else calibration.temperature)
    route = route_of(estimator)
    if route != "min_risk":
        names, text = classes, "label = the class of largest score"
        decisions = getattr(estimator, "decisions_", None)
        if route == "argmax":  # the guard kept argmax: the decision best for that class
            certain = certain_codes(np.arange(len(classes)), np.asarray(estimator.cost_matrix_))
            names = (classes if decisions is None else np.asarray(decisions))[certain]
            text = "label = the decision of least cost for the class of largest score"
        return {"names": names, "temperature": temperature, "scaling": scaling,
                "cost_matrix": None, "text": text}
    cost = np.asarray(estimator.cost_matrix_, np.float64)
    names = getattr(estimator, "decisions_", None)
    names = classes if names is None else np.asarray(names)
    if cost.ndim != 2 or cost.shape[0] != len(classes) or cost.shape[1] != len(names):
        raise OnnxExportError(f"a cost matrix of shape {cost.shape} for {len(classes)} "
                              f"classes and {len(names)} decisions")
    return {"names": names, "temperature": temperature, "scaling": scaling,
            "cost_matrix": cost,
            "text": "label = the decision of least expected cost under the probabilities"}


def _labels(names: np.ndarray) -> np.ndarray:
    if names.dtype.kind in "iu":
        return names.astype(np.int64)
    if names.dtype.kind == "f":
        return names.astype(np.float64)
    if names.dtype.kind == "b":
        return names.astype(bool)
    if names.dtype.kind in "UO":
        return np.array([str(n) for n in names], dtype=object)
    raise OnnxExportError(f"labels of type {names.dtype} cannot be written to ONNX")


def _onnx_type(labels: np.ndarray) -> int:
    from onnx import TensorProto

    return {"i": TensorProto.INT64, "f": TensorProto.DOUBLE, "b": TensorProto.BOOL,
            "O": TensorProto.STRING}[labels.dtype.kind]


def _ensemble_attributes(tables: TreeTables, helper, numpy_helper) -> dict:
    """opset-5 ``TreeEnsemble`` attributes: reachable splits and leaves of every tree; leaf
    ``l`` of tree ``t`` writes ``t * L + l`` to output column ``t``."""
    n_trees, n_leaves = tables.values.shape[:2]
    feature, split, missing, modes, members = [], [], [], [], []
    words = tables.category_words
    true_ids, true_leafs, false_ids, false_leafs = [], [], [], []
    leaf_target, leaf_weight, roots = [], [], []

    for t in range(n_trees):
        roots.append(len(feature))
        root = int(tables.root[t])
        order = [root] if root >= 0 else []  # splits, breadth first (no recursion)
        n = 0
        while n < len(order):
            order += [c for c in (int(tables.left[t, order[n]]), int(tables.right[t, order[n]]))
                      if c >= 0]
            n += 1
        position = {node: len(feature) + i for i, node in enumerate(order)}

        def target(child: int, t: int = t, position: dict = position) -> tuple[int, int]:
            """(node or leaf id, 1 if a leaf) for a child pointer; a leaf gets its id here."""
            if child >= 0:
                return position[child], 0
            leaf_target.append(t)
            leaf_weight.append(float(t * n_leaves + ~child))
            return len(leaf_target) - 1, 1

        if root < 0:  # a tree without splits: one always-true test, both sides its leaf
            feature.append(0)
            split.append(np.inf)
            missing.append(1)
            modes.append(0)
            leaf_id, _ = target(root)
            true_ids.append(leaf_id)
            false_ids.append(leaf_id)
            true_leafs.append(1)
            false_leafs.append(1)
            continue
        for node in order:
            feature.append(int(tables.feature[t, node]))
            missing.append(int(tables.missing_left[t, node]))
            if words is not None and np.isnan(tables.threshold[t, node]):
                # BRANCH_MEMBER: the codes going left, listed in node order, NaN-delimited
                split.append(0.0)
                modes.append(6)
                members += [*map(float, set_codes(words[t, node])), np.nan]
            else:  # BRANCH_LEQ: x <= split goes to the true branch (our left)
                split.append(float(tables.threshold[t, node]))
                modes.append(0)
            for child, ids, leafs in ((int(tables.left[t, node]), true_ids, true_leafs),
                                      (int(tables.right[t, node]), false_ids, false_leafs)):
                ident, is_leaf = target(child)
                ids.append(ident)
                leafs.append(is_leaf)
    attributes = {"aggregate_function": 1, "post_transform": 0, "n_targets": n_trees,
            "tree_roots": roots, "nodes_featureids": feature,
            "nodes_splits": numpy_helper.from_array(np.array(split, np.float64)),
            "nodes_modes": numpy_helper.from_array(np.array(modes, np.uint8)),
            "nodes_missing_value_tracks_true": missing,
            "nodes_truenodeids": true_ids, "nodes_trueleafs": true_leafs,
            "nodes_falsenodeids": false_ids, "nodes_falseleafs": false_leafs,
            "leaf_targetids": leaf_target,
            "leaf_weights": numpy_helper.from_array(np.array(leaf_weight, np.float64))}
    if members:
        attributes["membership_values"] = numpy_helper.from_array(
            np.array(members, np.float64))
    return attributes


def _metadata(estimator, rule: dict) -> dict:
    """What a reviewer needs beside the graph: features, classes, rule, costs, versions."""
    from . import __version__

    names = estimator.feature_names()
    meta = {"rebelboost_version": __version__, "estimator": type(estimator).__name__,
            "features": json.dumps(names), "classes": json.dumps(
                np.asarray(estimator.classes_).tolist()),
            "decisions": json.dumps(np.asarray(rule["names"]).tolist()),
            "decision_rule": rule["text"],
            "missing_values": "NaN in X is a missing value, routed as in training"}
    categories = getattr(estimator, "categories_", None)
    if categories is not None:
        meta["categories"] = json.dumps(
            [None if c is None else np.asarray(c).tolist() for c in categories])
        meta["categorical_input"] = ("categorical columns of X hold codes: the index of the "
                                     "value in 'categories', NaN when missing or unseen")
    if rule["temperature"] is not None:
        meta["temperature"] = repr(rule["temperature"])
    if rule["scaling"] is not None:
        meta["calibration"] = json.dumps(estimator.calibration_.to_dict())
    if rule["cost_matrix"] is not None:
        meta["cost_matrix"] = json.dumps(rule["cost_matrix"].tolist())
    return meta
