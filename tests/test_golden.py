"""Models stay the same: refits and saved model files reproduce the golden decision values.

The golden files (``tests/data/golden``) were written by ``tests/data/make_golden.py`` with the
code of format version 1. A refactor that changes a model (a split, a step) or stops an old
model file loading fails here. Summation order may change the last bits, so decision values
are compared to 1e-9 relative and labels exactly. A case changed on purpose is refitted
against its refit reference (``golden/refits``, :data:`make_golden.REFIT_REASONS`), and its
golden file still loads with the decisions it was written with.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).parent / "data"))
import make_golden  # noqa: E402

from rebelboost import load_model  # noqa: E402
from rebelboost.io import read_document  # noqa: E402

CASES = [(case, dataset) for dataset in make_golden.DATASETS for case in make_golden.CASES
         if not make_golden.skip(case, dataset)]


def _expected(case, dataset, refit=False):
    stem = (make_golden.reference(case, dataset) if refit
            else make_golden.GOLDEN / f"{case}-{dataset}")
    with np.load(f"{stem}.npz", allow_pickle=False) as d:
        return d["decision"], d["predict"]


def _assert_same(model, X_test, decision, labels):
    got = model.decision_function(X_test)
    scale = np.abs(decision).max() + 1.0
    np.testing.assert_allclose(got, decision, rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_array_equal(model.predict(X_test), labels)


@pytest.mark.parametrize(("case", "dataset"), CASES)
def test_refit_gives_the_golden_model(case, dataset):
    X, y, X_test = make_golden.load(dataset)
    cls, params = make_golden.CASES[case]
    model = cls(**make_golden.make_params(params, len(np.unique(y)))).fit(X, y)
    _assert_same(model, X_test, *_expected(case, dataset, refit=True))


@pytest.mark.parametrize(("case", "dataset"), CASES)
def test_golden_model_file_loads_with_the_same_predictions(case, dataset):
    _, _, X_test = make_golden.load(dataset)
    model = load_model(make_golden.GOLDEN / f"{case}-{dataset}.json.gz")
    _assert_same(model, X_test, *_expected(case, dataset))


def test_a_parameter_added_since_a_file_was_written_loads_as_that_file_was_fitted(tmp_path):
    """``min_data_in_bin`` is newer than the golden files: they load with 1, the value
    their models were fitted with (a bin per value), not today's default; a file that has
    the parameter keeps its own value."""
    X, y, _ = make_golden.load("vowel")
    old = load_model(make_golden.GOLDEN / "rebel_vtree-vowel.json.gz")
    assert "min_data_in_bin" not in read_document(
        make_golden.GOLDEN / "rebel_vtree-vowel.json.gz")["params"]
    assert old.get_params()["min_data_in_bin"] == 1
    new = clone(old).set_params(min_data_in_bin=5, n_estimators=3).fit(X, y)
    new.save(tmp_path / "new.json")
    assert load_model(tmp_path / "new.json").get_params()["min_data_in_bin"] == 5


# The default learner's cases: a refit writes the golden file's model section bit for bit (the
# JSON floats round-trip exactly), on one thread and on two -- up to the last bits of the
# logarithm: the files were written with numpy's, whose SIMD code differs between instruction
# sets (2 of the 6,200 leaf values of the pendigits file differed by 1 ulp on an AVX2 machine);
# leaf steps now take the C library's (compiled), within an ulp of numpy's, and the boosting
# iterations carry such differences on (5 ulps after 12 sampled trees). Every
# integer, flag and string must be equal (the same splits), every float within MAX_ULP units
# in the last place (1.4e-14 relative; a 1e-13 relative change of a leaf step still fails).
BITWISE = [(case, dataset) for case, dataset in CASES if case.startswith("rebel_vtree")]
MAX_ULP = 64


def _assert_documents(got, want, close, where=""):
    """JSON documents with the same structure, integers, flags and strings; their floats
    (a list of floats at once) compared by ``close(got, want, where)``."""
    assert type(got) is type(want) or {type(got), type(want)} <= {int, float}, where
    if isinstance(want, dict):
        assert got.keys() == want.keys(), where
        for key in want:
            _assert_documents(got[key], want[key], close, f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        floats = [isinstance(v, float) for v in want]
        if want and all(floats) and all(isinstance(v, float) for v in got):
            close(np.array(got), np.array(want), where)
            return
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_documents(a, b, close, f"{where}[{i}]")
    elif isinstance(want, float):
        close(np.float64(got), np.float64(want), where)
    else:
        assert got == want, where


def _assert_bitwise(got, want, where=""):
    """JSON documents equal, floats within MAX_ULP ulps."""
    _assert_documents(got, want, lambda a, b, _: np.testing.assert_array_max_ulp(a, b, MAX_ULP),
                      where)


@pytest.mark.parametrize(("case", "dataset"), BITWISE)
def test_refit_writes_the_golden_vector_tree_model_bit_for_bit(case, dataset):
    X, y, _ = make_golden.load(dataset)
    cls, params = make_golden.CASES[case]
    golden = read_document(f"{make_golden.reference(case, dataset)}.json.gz")
    covers = golden["model"].pop("covers")
    assert (covers is None) == (case not in make_golden.REFIT_REASONS)  # (not in format 2)
    for n_jobs in (1, 2):
        model = cls(**make_golden.make_params(params, len(np.unique(y))), n_jobs=n_jobs)
        doc = model.fit(X, y).to_dict()
        got_covers = doc["model"].pop("covers")
        assert got_covers is not None
        if covers is not None:
            _assert_bitwise(got_covers, covers, f"covers n_jobs={n_jobs}")
        _assert_bitwise(doc["model"], golden["model"], f"model n_jobs={n_jobs}")
        _assert_bitwise(doc["fitted"], golden["fitted"], f"fitted n_jobs={n_jobs}")


def test_the_bitwise_comparison_fails_on_a_tiny_change():
    """The comparison above is strict: a 1e-13 relative change of one value fails it."""
    doc = {"values": [[0.25, -0.2673695110116583]], "n": 3}
    _assert_bitwise({"values": [[0.25, -0.2673695110116583]], "n": 3}, doc)
    with pytest.raises(AssertionError):
        _assert_bitwise({"values": [[0.25, -0.2673695110116583 * (1 + 1e-13)]], "n": 3}, doc)
    with pytest.raises(AssertionError):
        _assert_bitwise({"values": [[0.25, -0.2673695110116583]], "n": 4}, doc)


def _assert_close(got, want, where=""):
    """JSON documents equal but for floats, within 1e-5 relative (or 1e-7 absolute)."""
    _assert_documents(got, want, lambda a, b, at: np.testing.assert_allclose(
        a, b, rtol=1e-5, atol=1e-7, err_msg=at), where)


@pytest.mark.parametrize(("case", "dataset"),
                         [(c, d) for c, d in CASES if c in make_golden.REFIT_REASONS])
def test_a_refit_reference_is_its_golden_model_up_to_the_stated_change(case, dataset):
    """The float32 channels move leaf values in their last float32 bits only: the refit
    reference has the golden file's splits, labels and (within 1e-5) numbers."""
    stem = make_golden.reference(case, dataset)
    golden = read_document(make_golden.GOLDEN / f"{case}-{dataset}.json.gz")["model"]
    refit = read_document(f"{stem}.json.gz")["model"]
    assert golden.pop("covers") is None and refit.pop("covers") is not None
    _assert_close(refit, golden, "model")
    decision, labels = _expected(case, dataset)
    refit_decision, refit_labels = _expected(case, dataset, refit=True)
    np.testing.assert_array_equal(refit_labels, labels)
    np.testing.assert_allclose(refit_decision, decision, rtol=0, atol=1e-7)
