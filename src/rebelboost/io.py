"""Model files: versioned JSON (gzip-compressed when the name ends in ``.gz``).

A model file is one JSON object, readable by any language and loadable without pickle::

    {"format": "rebelboost-model", "format_version": 1, "library_version": "0.1.0",
     "estimator": "RebelClassifier", "params": {...},
     "classes": [...], "classes_dtype": "<i8", "n_features_in": 16, "feature_names_in": null,
     "cost_matrix": [[...]],
     "trees": {"depth": 2, "feature": [[...]], "threshold": [[...]],
               "missing_left": [[...]], "leaf_value": [[...]]},
     "vectors": [[...]], "init_loss": 5.0, "train_loss": [...], "validation_loss": null,
     "best_iteration": null, "feature_importances": [...]}

A similarity model stores ``similarities`` (per learner: ``kind`` 0 constant, 1 one-point, 2
two-point; support points ``first``/``second`` in scaled units, radius ``tau``, and the support
rows' training indices and class codes) and ``scaling`` (``x_scaled = (x - offset) / scale``)
in place of ``trees``; see :mod:`rebelboost.learners.similarity` for ``f_t``.

Tree ``t`` sends ``x`` left at internal node ``i`` when ``x[feature[t][i]] <= threshold[t][i]``
(NaN: when ``missing_left``; ``feature == -1``: always; a null threshold is +infinity); node
``i``'s children are ``2i+1`` and ``2i+2``; the leaf reached gives ``f_t(x)`` from
``leaf_value``, and ``H(x) = sum_t f_t(x) * vectors[t]``; the prediction is
``classes[argmax H]``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

FORMAT = "rebelboost-model"
FORMAT_VERSION = 1


def _floats(a: np.ndarray) -> list:
    """Nested lists with +-inf written as null (JSON has no infinity)."""
    return np.where(np.isinf(a), None, a).tolist() if np.isinf(a).any() else a.tolist()


def _unfloats(values, shape) -> np.ndarray:
    a = np.array(values, dtype=object).reshape(shape)
    a[a == None] = np.inf  # noqa: E711 (element-wise comparison)
    return a.astype(np.float64)


def _json_params(params: dict) -> dict:
    out = {}
    for key, value in params.items():
        if isinstance(value, np.ndarray) or hasattr(value, "to_numpy"):
            value = np.asarray(value).tolist()
        try:
            json.dumps(value)
        except TypeError:
            value = None  # e.g. a RandomState instance: not part of the fitted model
        out[key] = value
    return out


def header(model) -> dict:
    """The fields every estimator's model file starts with."""
    from sklearn.utils.validation import check_is_fitted

    from . import __version__

    check_is_fitted(model)
    classes = np.asarray(model.classes_)
    if classes.dtype == object or classes.dtype.kind not in "biufUS":
        raise ValueError(
            f"classes of type {classes.dtype} cannot be written to a model file; "
            "use integer, float, bool or string labels"
        )
    feature_names = getattr(model, "feature_names_in_", None)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": type(model).__name__,
        "params": _json_params(model.get_params()),
        "classes": classes.tolist(),
        "classes_dtype": classes.dtype.str,
        "n_features_in": int(model.n_features_in_),
        "feature_names_in": None if feature_names is None else [str(n) for n in feature_names],
    }


def check_header(doc) -> str:
    """Validate a model file's envelope; return the estimator class name it names."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not a rebelboost model file (no 'format': 'rebelboost-model')")
    version = doc.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"model file has an invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"model file has format_version {version}, newer than this library reads "
            f"({FORMAT_VERSION}); upgrade rebelboost"
        )
    name = doc.get("estimator")
    if name not in _estimators():
        raise ValueError(f"model file holds an unknown estimator {name!r}")
    return name


def model_from_header(cls, doc: dict):
    """A ``cls`` with the header's parameters, classes and feature names set."""
    model = cls(**doc["params"])
    model.classes_ = np.array(doc["classes"], dtype=np.dtype(doc["classes_dtype"]))
    model.n_features_in_ = int(doc["n_features_in"])
    if doc["feature_names_in"] is not None:
        model.feature_names_in_ = np.array(doc["feature_names_in"], dtype=object)
    return model


def trees_to_dict(trees) -> dict:
    return {
        "depth": trees.depth,
        "feature": trees.feature.tolist(),
        "threshold": _floats(trees.threshold),
        "missing_left": trees.missing_left.tolist(),
        "leaf_value": trees.leaf_value.tolist(),
    }


def trees_from_dict(t: dict):
    from .learners.tree import TreeArrays

    depth = int(t["depth"])
    n_trees = len(t["feature"])
    feature = np.array(t["feature"], dtype=np.int64).reshape(n_trees, 2**depth - 1)
    return TreeArrays(
        feature.astype(np.int32),
        _unfloats(t["threshold"], feature.shape),
        np.array(t["missing_left"], dtype=bool).reshape(feature.shape),
        np.array(t["leaf_value"], dtype=np.float64).reshape(n_trees, 2**depth),
    )


def _estimators() -> dict:
    from . import ensemble

    return {name: getattr(ensemble, name) for name in ensemble.__all__}


def model_to_dict(model) -> dict:
    """The JSON-ready description of a fitted ``RebelClassifier``."""
    return {
        **header(model),
        "cost_matrix": model.cost_matrix_.tolist(),
        **_learners_to_dict(model),
        "vectors": model.vectors_.tolist(),
        "init_loss": float(model.init_loss_),
        "train_loss": model.train_loss_.tolist(),
        "validation_loss": None
        if model.validation_loss_ is None
        else model.validation_loss_.tolist(),
        "best_iteration": model.best_iteration_,
        "feature_importances": model.feature_importances_.tolist(),
    }


def _learners_to_dict(model) -> dict:
    from .learners.tree import TreeArrays

    learners = model.learners_
    if isinstance(learners, TreeArrays):
        return {"trees": trees_to_dict(learners)}
    offset, scale = model.scaling_
    return {
        "similarities": {
            "kind": learners.kind.tolist(),
            "first": learners.first.tolist(),
            "second": learners.second.tolist(),
            "tau": learners.tau.tolist(),
            "first_index": learners.first_index.tolist(),
            "second_index": learners.second_index.tolist(),
            "first_class": learners.first_class.tolist(),
            "second_class": learners.second_class.tolist(),
        },
        "scaling": {"offset": offset.tolist(), "scale": scale.tolist()},
        "n_relabeled": int(model.n_relabeled_),
    }


def _learners_from_dict(doc: dict):
    """(learners, scaling) of a RebelClassifier file: trees, or similarities and their scaling."""
    from .learners.similarity import SimilarityArrays

    if "trees" in doc:
        return trees_from_dict(doc["trees"]), None
    s, d = doc["similarities"], int(doc["n_features_in"])
    n = len(s["kind"])
    learners = SimilarityArrays(
        np.array(s["kind"], dtype=np.int8).reshape(n),
        np.array(s["first"], dtype=np.float64).reshape(n, d),
        np.array(s["second"], dtype=np.float64).reshape(n, d),
        np.array(s["tau"], dtype=np.float64).reshape(n),
        np.array(s["first_index"], dtype=np.int64).reshape(n),
        np.array(s["second_index"], dtype=np.int64).reshape(n),
        np.array(s["first_class"], dtype=np.int64).reshape(n),
        np.array(s["second_class"], dtype=np.int64).reshape(n),
    )
    scaling = doc["scaling"]
    offset = np.array(scaling["offset"], dtype=np.float64).reshape(d)
    scale = np.array(scaling["scale"], dtype=np.float64).reshape(d)
    return learners, (offset, scale)


def model_from_dict(doc: dict):
    """Rebuild a fitted ``RebelClassifier`` from :func:`model_to_dict`'s output, checking it."""
    from .ensemble import RebelClassifier

    if check_header(doc) != "RebelClassifier":
        raise ValueError(f"model file holds a {doc['estimator']}, not a RebelClassifier")
    try:
        model = model_from_header(RebelClassifier, doc)
        model.cost_matrix_ = np.array(doc["cost_matrix"], dtype=np.float64)
        model.learners_, model.scaling_ = _learners_from_dict(doc)
        n_trees = len(model.learners_)
        n_classes = len(model.classes_)
        model.vectors_ = np.array(doc["vectors"], dtype=np.float64).reshape(n_trees, n_classes)
        model.n_estimators_ = n_trees
        model.init_loss_ = float(doc["init_loss"])
        model.train_loss_ = np.array(doc["train_loss"], dtype=np.float64)
        val = doc["validation_loss"]
        model.validation_loss_ = None if val is None else np.array(val, dtype=np.float64)
        model.best_iteration_ = doc["best_iteration"]
        model.feature_importances_ = np.array(doc["feature_importances"], dtype=np.float64)
        if "n_relabeled" in doc:
            model.n_relabeled_ = int(doc["n_relabeled"])
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"corrupt rebelboost model file: {type(exc).__name__}: {exc}") from None
    _check_consistent(model)
    return model


def _check_consistent(model) -> None:
    from .learners.tree import TreeArrays

    learners, k, d = model.learners_, len(model.classes_), model.n_features_in_
    problems = []
    if model.cost_matrix_.shape != (k, k):
        problems.append(f"cost matrix shape {model.cost_matrix_.shape} for {k} classes")
    if not np.isfinite(model.vectors_).all():
        problems.append("non-finite step vectors")
    if isinstance(learners, TreeArrays):
        if learners.feature.size and (learners.feature.max() >= d or learners.feature.min() < -1):
            problems.append(f"split feature outside [-1, {d})")
        if not np.isfinite(learners.leaf_value).all():
            problems.append("non-finite leaf values")
        if np.isnan(learners.threshold).any():
            problems.append("NaN thresholds")
    else:
        arrays = (learners.first, learners.second, learners.tau, *model.scaling_)
        if not all(np.isfinite(a).all() for a in arrays):
            problems.append("non-finite support points, radii or scaling")
        if np.any((learners.kind < 0) | (learners.kind > 2)):
            problems.append("unknown similarity kind")
        if np.any((learners.first_class < -1) | (learners.first_class >= k)) or np.any(
            (learners.second_class < -1) | (learners.second_class >= k)
        ):
            problems.append("support class outside the classes")
        if np.any(model.scaling_[1] <= 0):
            problems.append("non-positive feature scale")
    if model.feature_importances_.shape != (d,):
        problems.append("feature_importances length differs from n_features_in")
    if k < 2:
        problems.append("fewer than 2 classes")
    if problems:
        raise ValueError("corrupt rebelboost model file: " + "; ".join(problems))


def _to_dict(model) -> dict:
    return model.to_dict() if hasattr(model, "to_dict") else model_to_dict(model)


def save_model(model, path) -> None:
    """Write ``model`` to ``path`` (gzip-compressed when it ends in ``.gz``)."""
    text = json.dumps(_to_dict(model), allow_nan=False, separators=(",", ":"))
    data = text.encode()
    path = Path(path)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


def load_model(path):
    """Read any rebelboost model file; a bad file raises ``ValueError``."""
    raw = Path(path).read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable rebelboost model file: {exc}") from None
    cls = _estimators()[check_header(doc)]
    return cls.from_dict(doc) if hasattr(cls, "from_dict") else model_from_dict(doc)
