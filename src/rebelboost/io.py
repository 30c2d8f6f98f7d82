"""Model files: the envelope. Versioned JSON, gzip-compressed when the name ends in ``.gz``.

A model file is one JSON object, readable by any language and loadable without pickle::

    {"format": "rebelboost-model", "format_version": 3, "library_version": "0.1.0",
     "estimator": "RebelClassifier", "params": {...},
     "classes": [...], "classes_dtype": "<i8", "n_features_in": 16, "feature_names_in": null,
     "model": {"learners": {"type": "trees", ...}, "values": [[[...]]], "stage_ends": [...],
               "covers": [[...]]},
     "fitted": {"train_loss": [...], "feature_importances": [...], ...}}

Every model predicts by one rule: learner ``t`` routes a row to one of its slots ``s`` with a
weight ``w`` (a tree: the leaf it reaches, weight 1; a similarity: slot 0, weight ``f_t(x)``),
and the class scores are ``H(x) = sum_t w_t(x) * values[t][s_t(x)]``; the prediction is
``classes[argmax_k H_k(x)]``. ``model.learners`` is written by its learner kind
(:mod:`rebelboost.learners`), ``fitted`` by the estimator; this module owns the envelope:
reading and writing with limits, the header, strict array parsing, and the migrations that
bring every released format version to the current one.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ._version import __version__

FORMAT = "rebelboost-model"
FORMAT_VERSION = 4
MAX_BYTES = 1 << 30  # largest decompressed model file read (1 GiB)


# ------------------------------------------------------------------ strict array parsing


def corrupt(message: str) -> ValueError:
    return ValueError(f"corrupt rebelboost model file: {message}")


def _array(values, shape, name: str) -> np.ndarray:
    if _holds_bool(values):  # numpy would read true/false as 1/0
        raise corrupt(f"{name} holds booleans")
    try:
        a = np.asarray(values)
    except ValueError:  # ragged lists
        raise corrupt(f"{name} is not a regular array") from None
    if shape is not None:
        if a.size != int(np.prod(shape)) or (a.ndim and a.ndim != len(shape)
                                             and a.size != 0):
            raise corrupt(f"{name} has shape {a.shape}, expected {tuple(shape)}")
        a = a.reshape(shape)
    return a


def float_array(values, shape, name: str, null=None) -> np.ndarray:
    """A float64 array from JSON numbers (``null`` becomes ``null`` when given, else refused)."""
    if null is not None:
        values = _replace_null(values, null)
    a = _array(values, shape, name)
    if a.size and a.dtype.kind not in "iuf":
        raise corrupt(f"{name} holds non-numbers")
    return a.astype(np.float64)


def int_array(values, shape, name: str, low: int, high: int) -> np.ndarray:
    """An int64 array from JSON integers in ``[low, high)``; floats and booleans are refused."""
    a = _array(values, shape, name)
    if a.size and a.dtype.kind not in "iu":
        raise corrupt(f"{name} holds non-integers")
    a = a.astype(np.int64) if a.size else np.zeros(a.shape, np.int64)
    if a.size and (a.min() < low or a.max() >= high):
        raise corrupt(f"{name} outside [{low}, {high})")
    return a


def bool_array(values, shape, name: str) -> np.ndarray:
    try:
        a = np.asarray(values)
    except ValueError:
        raise corrupt(f"{name} is not a regular array") from None
    if a.size != int(np.prod(shape)):
        raise corrupt(f"{name} has shape {a.shape}, expected {tuple(shape)}")
    a = a.reshape(shape)
    if a.size and a.dtype.kind != "b":
        raise corrupt(f"{name} holds non-booleans")
    return a.astype(bool)


def _holds_bool(values) -> bool:
    if isinstance(values, bool):
        return True
    if not isinstance(values, list):
        return False
    if values and isinstance(values[0], list):
        return any(_holds_bool(v) for v in values)
    return any(type(v) is bool for v in values)


def _replace_null(values, null):
    if isinstance(values, list):
        return [_replace_null(v, null) for v in values]
    return null if values is None else values


def floats_to_json(a: np.ndarray) -> list:
    """Nested lists with +-inf written as null (JSON has no infinity)."""
    a = np.asarray(a, dtype=np.float64)
    return np.where(np.isinf(a), None, a).tolist() if np.isinf(a).any() else a.tolist()


# ------------------------------------------------------------------ header


def json_params(params: dict) -> dict:
    out = {}
    for key, value in params.items():
        if isinstance(value, np.ndarray) or hasattr(value, "to_numpy"):
            value = np.asarray(value).tolist()
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            value = None  # e.g. a RandomState instance: not part of the fitted model
        out[key] = value
    return out


def header(estimator) -> dict:
    """The fields every model file starts with."""
    classes = np.asarray(estimator.classes_)
    if classes.dtype.kind not in "biufU":
        raise ValueError(
            f"classes of type {classes.dtype} cannot be written to a model file; "
            "use integer, float, bool or string labels"
        )
    names = getattr(estimator, "feature_names_in_", None)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": type(estimator).__name__,
        "params": json_params(estimator.get_params()),
        "classes": classes.tolist(),
        "classes_dtype": classes.dtype.str,
        "n_features_in": int(estimator.n_features_in_),
        "feature_names_in": None if names is None else [str(n) for n in names],
    }


def read_header(doc: dict) -> dict:
    """Checked header fields: ``classes`` (array), ``n_features_in``, ``feature_names_in``."""
    try:
        dtype = np.dtype(doc["classes_dtype"])
    except (KeyError, TypeError, ValueError):
        raise corrupt("missing or unknown classes_dtype") from None
    if dtype.kind not in "biufU":
        raise corrupt(f"classes_dtype {dtype.str!r} is not a label type")
    try:
        classes = np.array(doc["classes"], dtype=dtype)
    except (KeyError, TypeError, ValueError, OverflowError):
        raise corrupt("classes do not match classes_dtype") from None
    if classes.ndim != 1 or len(classes) < 2:
        raise corrupt("fewer than 2 classes")
    if len(np.unique(classes)) != len(classes):
        raise corrupt("duplicated classes")
    if not np.array_equal(np.unique(classes), classes):
        raise corrupt("classes are not in sorted order")
    if dtype.kind == "f" and not np.isfinite(classes).all():
        raise corrupt("non-finite class labels")
    d = doc.get("n_features_in")
    if type(d) is not int or d < 1:
        raise corrupt(f"n_features_in {d!r} is not a positive integer")
    names = doc.get("feature_names_in")
    if names is not None:
        if (not isinstance(names, list) or len(names) != d
                or not all(isinstance(n, str) for n in names)):
            raise corrupt("feature_names_in is not a list of n_features_in strings")
        names = np.array(names, dtype=object)
    params = doc.get("params")
    if not isinstance(params, dict):
        raise corrupt("params is not an object")
    return {"classes": classes, "n_features_in": d, "feature_names_in": names,
            "params": params}


# ------------------------------------------------------------------ migrations


def _v1_to_v2(doc: dict) -> dict:
    """Format 1 kept REBEL's trees/similarities and vectors, or a booster's trees and
    leaf_scores, at the top level; format 2 stores every model as learners + values."""
    doc = dict(doc)
    if doc.get("estimator") == "RebelClassifier":
        vectors = np.asarray(doc.pop("vectors"), dtype=np.float64)
        if "trees" in doc:
            trees = doc.pop("trees")
            leaf = np.asarray(trees["leaf_value"], dtype=np.float64)
            leaf = leaf.reshape(vectors.shape[0], -1)
            values = leaf[:, :, None] * vectors[:, None, :]
            learners = {"type": "trees", **trees}
        else:
            sims = doc.pop("similarities")
            scaling = doc.pop("scaling")
            learners = {"type": "similarities", **sims, **scaling}
            values = vectors[:, None, :]
        fitted = {name: doc.pop(name) for name in
                  ("cost_matrix", "init_loss", "train_loss", "validation_loss",
                   "best_iteration", "feature_importances", "n_relabeled") if name in doc}
        fitted["vectors"] = vectors.tolist()
        stage_ends = list(range(1, vectors.shape[0] + 1))
    else:
        learners = {"type": "trees", **doc.pop("trees")}
        values = doc.pop("leaf_scores")
        stage_ends = doc.pop("stage_ends")
        fitted = {name: doc.pop(name) for name in list(doc)
                  if name not in ("format", "format_version", "library_version", "estimator",
                                  "params", "classes", "classes_dtype", "n_features_in",
                                  "feature_names_in")}
    doc["model"] = {"learners": learners, "values": np.asarray(values).tolist(),
                    "stage_ends": stage_ends}
    doc["fitted"] = fitted
    doc["format_version"] = 2
    return doc


def _v2_to_v3(doc: dict) -> dict:
    """Format 3 gives a REBEL model's cost decisions their own fields: the temperature
    becomes a calibration map, the decision route is stored (format 2's posterior route
    always decided by minimum risk, every other model by the largest score), and a model
    may name decisions that are not its classes (none in format 2). It also adds the training
    weight reaching each tree leaf (``model.covers``), which exact contributions need; format
    2 files did not record it (``null``: unknown)."""
    doc = dict(doc, format_version=3)
    doc["model"] = {**doc["model"], "covers": None}
    if doc.get("estimator") == "RebelClassifier":
        fitted = dict(doc["fitted"])
        strategy = fitted.get("cost_strategy", "loss")  # files from before issue 15: 'loss'
        fitted["cost_strategy"] = strategy
        fitted["cost_route"] = "min_risk" if strategy == "posterior" else "loss"
        fitted["calibration"] = {"kind": "temperature",
                                 "temperature": fitted.pop("temperature", 1.0)}
        fitted.setdefault("route_costs", {})
        fitted["decisions"] = None
        fitted["cost_evidence"] = {}
        doc["fitted"] = fitted
    return doc


def _v3_to_v4(doc: dict) -> dict:
    """Format 4 adds categorical features: a REBEL model's categorical columns and their
    values (``fitted.categorical``; null: none, as in every format 3 file) and, in a tree
    stack that has them, each categorical node's set of codes (``category_sets``)."""
    doc = dict(doc, format_version=4)
    if doc.get("estimator") == "RebelClassifier":
        doc["fitted"] = {**doc["fitted"], "categorical": None}
    return doc


# version -> function bringing a document of that version to the next one
MIGRATIONS: dict[int, Callable[[dict], dict]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def migrate(doc) -> dict:
    """Check the envelope and bring ``doc`` to :data:`FORMAT_VERSION`."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not a rebelboost model file (no 'format': 'rebelboost-model')")
    version = doc.get("format_version")
    if type(version) is not int or version < 1:
        raise ValueError(f"model file has an invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"model file has format_version {version}, newer than this library reads "
            f"({FORMAT_VERSION}); upgrade rebelboost"
        )
    while version < FORMAT_VERSION:
        try:
            doc = MIGRATIONS[version](doc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise corrupt(f"format {version} file: {type(exc).__name__}: {exc}") from None
        version = doc["format_version"]
    if not isinstance(doc.get("model"), dict) or not isinstance(doc.get("fitted"), dict):
        raise corrupt("no 'model' or 'fitted' object")
    return doc


# ------------------------------------------------------------------ reading and writing


def write_document(doc: dict, path) -> None:
    """Write ``doc`` to ``path`` atomically (gzip-compressed when it ends in ``.gz``)."""
    data = json.dumps(doc, allow_nan=False, separators=(",", ":")).encode()
    path = Path(path)
    if path.suffix == ".gz":
        data = gzip.compress(data)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_document(path) -> dict:
    """The current-format document of a model file; a bad file raises ``ValueError``."""
    path = Path(path)
    with path.open("rb") as fh:
        raw = fh.read(MAX_BYTES + 1)
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = _gunzip(raw)
        if len(raw) > MAX_BYTES:
            raise ValueError(f"larger than {MAX_BYTES} bytes")
        # NaN and Infinity are not JSON; too deep a nesting raises RecursionError.
        doc = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError,
            RecursionError) as exc:
        raise ValueError(f"{path} is not a readable rebelboost model file: {exc}") from None
    return migrate(doc)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _gunzip(raw: bytes) -> bytes:
    """Decompress at most :data:`MAX_BYTES` (a small file may expand enormously)."""
    out = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = out.decompress(raw, MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"decompresses to more than {MAX_BYTES} bytes")
    if not out.eof:
        raise EOFError("truncated gzip stream")
    return data

