"""Model files: the loader trusts nothing. Every structural mutation of a valid file of every
estimator (a value deleted, or replaced by one of another type, NaN or infinity) either raises a
clear ``ValueError`` or loads a model that predicts exactly as the original; the holes of issue
20 are each refused."""

from __future__ import annotations

import copy
import gzip
import json

import numpy as np
import pytest

from rebelboost import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
    load_model,
)
from rebelboost.io import FORMAT_VERSION, MAX_BYTES, read_document

ESTIMATORS = {
    "rebel-tree": RebelClassifier(6, max_depth=2, random_state=0),
    "rebel-similarity": RebelClassifier(6, weak_learner="similarity"),
    "rebel-es": RebelClassifier(8, early_stopping=True, n_iter_no_change=2, random_state=0),
    "mh-tree": AdaBoostMHClassifier(4, weak_learner="tree"),
    "mh-unfactorized": AdaBoostMHClassifier(3, factorized=False),
    "mcboost-cd": MCBoostClassifier(4),
    "mcboost-gd": MCBoostClassifier(3, algorithm="gd", max_depth=2),
    "one-vs-all": OneVsAllAdaBoostClassifier(2),
}
# Values a mutation puts in place of a JSON value (NaN and Infinity written as Python's json
# writes them). In-domain numbers are left out: a changed threshold is a valid other model.
REPLACEMENTS = [None, True, False, "x", [], {}, [[1]], float("nan"), float("inf"),
                -float("inf")]


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    X[rng.rand(*X.shape) < 0.05] = np.nan
    return X, y


def _paths(node, prefix=()):
    """Every path to a value in a JSON document (lists: only a few positions)."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list) and node:
        for i in sorted({0, len(node) - 1}):
            yield from _paths(node[i], (*prefix, i))


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _set(doc, path, value):
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        if isinstance(node, dict):
            del node[path[-1]]
        else:
            node.pop(path[-1])
    else:
        node[path[-1]] = value


_DELETE = object()


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_mutation_is_refused_or_harmless(tmp_path, name):
    X, y = _data()
    if name == "rebel-similarity":
        X = np.nan_to_num(X)
    model = ESTIMATORS[name].fit(X, y)
    expected = model.predict(X)
    original = model.to_dict()
    rng = np.random.RandomState(1)
    paths = [p for p in _paths(original) if p]
    path_file = tmp_path / "m.json"
    n_loaded = 0
    for path in paths:
        for value in [_DELETE, *rng.permutation(np.array(REPLACEMENTS, dtype=object))[:6]]:
            if value is None and "threshold" in path:
                continue  # a null threshold is +infinity: a valid other split
            if isinstance(value, bool) and isinstance(_get(original, path), bool):
                continue  # another boolean is a valid other model
            doc = copy.deepcopy(original)
            _set(doc, path, value)
            path_file.write_text(json.dumps(doc))
            try:
                loaded = load_model(path_file)
            except ValueError:
                continue
            n_loaded += 1
            np.testing.assert_array_equal(loaded.predict(X), expected,
                                          err_msg=f"{path} = {value!r} changed predictions")
    assert n_loaded < len(paths) * 7  # most mutations are refused


def _fitted_doc(estimator=None):
    X, y = _data()
    model = (estimator or RebelClassifier(3, random_state=0)).fit(X, y)
    return model.to_dict()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["model"]["learners"]["feature"][0].__setitem__(0, 2**32 + 1), "feature"),
        (lambda d: d["model"]["learners"]["feature"][0].__setitem__(0, 1.0), "non-integers"),
        (lambda d: d["model"]["learners"]["threshold"][0].__setitem__(0, float("nan")), "NaN"),
        (lambda d: d["model"]["learners"]["missing_left"][0].__setitem__(0, "no"), "booleans"),
        (lambda d: d["fitted"]["cost_matrix"][0].__setitem__(1, float("nan")), "NaN"),
        (lambda d: d["fitted"]["cost_matrix"][0].__setitem__(1, -1.0), "negative"),
        (lambda d: d.update(feature_names_in=["a"]), "feature_names_in"),
        (lambda d: d.update(classes=[0, 0, 2]), "duplicated"),
        (lambda d: d.update(classes=[2, 1, 0]), "sorted"),
        (lambda d: d.update(classes_dtype="<M8[ns]"), "label type"),
        (lambda d: d["model"]["values"][0][0].__setitem__(0, 1e308), "values differ|overflow"),
        (lambda d: d["model"].update(stage_ends=[]), "stage_ends"),
        (lambda d: d.update(format_version=True), "format_version"),
        (lambda d: d["model"]["learners"].update(type="forest"), "learner type"),
        (lambda d: d["model"].pop("learners"), "learners"),
    ],
)
def test_issue_20_holes_are_refused(tmp_path, edit, message):
    doc = _fitted_doc()
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        load_model(path)


@pytest.mark.parametrize("estimator", [AdaBoostMHClassifier(3), MCBoostClassifier(3),
                                       OneVsAllAdaBoostClassifier(2)])
def test_nan_thresholds_are_refused_for_every_booster(tmp_path, estimator):
    doc = _fitted_doc(estimator)
    doc["model"]["learners"]["threshold"] = [[float("nan")] * len(row)
                                             for row in doc["model"]["learners"]["threshold"]]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="NaN"):
        load_model(path)


def test_similarity_radius_must_be_positive(tmp_path):
    X, y = _data()
    model = RebelClassifier(8, weak_learner="similarity").fit(np.nan_to_num(X), y)
    doc = model.to_dict()
    kinds = doc["model"]["learners"]["kind"]
    assert 1 in kinds
    doc["model"]["learners"]["tau"][kinds.index(1)] = -1.0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="radius"):
        load_model(path)


def test_format_1_files_migrate():
    """Format 1 (before the engine) files load through the migration table; the golden tests
    check their predictions."""
    from pathlib import Path

    doc = read_document(Path(__file__).parent / "data" / "golden" / "rebel_tree2-vowel.json.gz")
    assert doc["format_version"] == FORMAT_VERSION and "model" in doc and "fitted" in doc
    assert doc["model"]["covers"] is None  # format 1 and 2 files did not record covers


def test_envelope_limits(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError):
        load_model(deep)
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as fh:
        chunk = b" " * (1 << 24)
        for _ in range(MAX_BYTES // len(chunk) + 1):
            fh.write(chunk)
    with pytest.raises(ValueError, match="more than"):
        load_model(bomb)
    nan = tmp_path / "nan.json"
    X, y = _data()
    doc = RebelClassifier(2, random_state=0).fit(X, y).to_dict()
    doc["fitted"]["train_loss"][0] = float("nan")
    nan.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="NaN"):
        load_model(nan)


def test_renamed_and_unknown_parameters_do_not_break_old_files(tmp_path):
    X, y = _data()
    model = AdaBoostMHClassifier(3).fit(X, y)
    doc = model.to_dict()
    doc["params"]["a_parameter_of_a_later_release"] = 3
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    np.testing.assert_array_equal(load_model(path).predict(X), model.predict(X))
