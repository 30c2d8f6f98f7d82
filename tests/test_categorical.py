"""Categorical features: encoded by value, split by sets of categories, kept in model files."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import rebelboost
from rebelboost import RebelClassifier, load_model
from rebelboost.binning import BinLayout, Binner
from rebelboost.categorical import CategoricalColumns
from rebelboost.learners.category_sets import category_bitsets
from rebelboost.learners.compiled_grower import category_words
from rebelboost.search.category_split import (
    _VALUES,
    _class_weights_into,
    _order_by_principal_axis,
    _permute,
    _reach_into,
    _scan_few,
    _scratch,
    _value_order,
    _weigh,
    best_category_split,
    scan_category_feature,
    split_floor,
)
from rebelboost.search.scores import VECTOR_LEAF
from rebelboost.search.splits import scan_feature
from rebelboost.search.vector_leaf import pair_loss
from rebelboost.search.vector_scan import scan_vector_feature


def _levels_data(n=2400, n_levels=40, k=4, seed=0, noise=0.2):
    """One categorical column whose levels each lean to one class, one numeric column."""
    rng = np.random.default_rng(seed)
    leaning = rng.integers(0, k, n_levels)
    level = rng.integers(0, n_levels, n)
    x = rng.normal(size=n)
    y = np.where(rng.random(n) < 1 - noise, leaning[level], rng.integers(0, k, n))
    names = np.array([f"v{i:03d}" for i in range(n_levels)], dtype=object)
    return pd.DataFrame({"c": pd.Categorical(names[level]), "x": x}), y, level


# ------------------------------------------------------------------ encoding by value

def test_codes_follow_the_values_not_the_pandas_categories_order():
    X, y, _ = _levels_data(n=600)
    shuffled = X.copy()
    cats = list(X["c"].cat.categories)
    shuffled["c"] = X["c"].cat.set_categories(cats[::-1])  # other codes, same values
    assert (shuffled["c"].cat.codes != X["c"].cat.codes).any()
    a = RebelClassifier(10, random_state=0).fit(X, y)
    b = RebelClassifier(10, random_state=0).fit(shuffled, y)
    assert_array_equal(a.decision_function(X), b.decision_function(shuffled))
    assert_array_equal(a.decision_function(X), a.decision_function(shuffled))
    assert list(a.categories_[0]) == sorted(cats)
    assert a.is_categorical_.tolist() == [True, False]


def test_strings_objects_missing_and_unseen_values():
    X, y, _ = _levels_data(n=600)
    X = X.assign(c=X["c"].astype(object))
    X.loc[::17, "c"] = None
    model = RebelClassifier(10, random_state=0).fit(X, y)
    assert model.is_categorical_[0]
    new = X.iloc[[0] * 5].copy()  # one numeric value: the category alone differs
    new["c"] = ["never seen", None, np.nan, "v001", "v001"]
    got = model.decision_function(new)
    # unseen and missing values go where missing values go: the same scores
    assert_array_equal(got[0], got[1])
    assert_array_equal(got[1], got[2])
    assert_array_equal(got[3], got[4])


def test_categorical_features_by_name_index_and_mask():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.integers(0, 6, 300), rng.normal(size=300)])
    y = (X[:, 0] % 2).astype(int)
    frame = pd.DataFrame(X, columns=["a", "b"])
    for spec, data in (([0], X), (["a"], frame), ([True, False], X), (np.array([0]), X)):
        model = RebelClassifier(5, categorical_features=spec, random_state=0).fit(data, y)
        assert model.is_categorical_.tolist() == [True, False]
        assert_array_equal(model.categories_[0], np.arange(6.0))
    # by value: level 4 has code 4 whatever integer the column holds elsewhere
    assert RebelClassifier(5, random_state=0).fit(X, y).is_categorical_ is None  # numbers


@pytest.mark.parametrize(("spec", "X", "message"), [
    (["nope"], pd.DataFrame({"a": [1.0, 2.0]}), "does not have"),
    ([5], np.zeros((2, 2)), "out of range"),
    ([True], np.zeros((2, 2)), "mask has 1 entries"),
    ("auto", np.zeros((2, 2)), "categorical_features"),
    ("from_dtype", np.array([["a", 1], [2, "b"]], dtype=object), "mixes text and numbers"),
])
def test_bad_categorical_input_gets_a_clear_error(spec, X, message):
    with pytest.raises(ValueError, match=message):
        RebelClassifier(2, categorical_features=spec).fit(X, [0, 1])


def test_other_learners_and_prediction_time_type_changes_are_refused():
    X, y, _ = _levels_data(n=300)
    with pytest.raises(ValueError, match="weak_learner='vector_tree'"):
        RebelClassifier(2, weak_learner="tree").fit(X, y)
    model = RebelClassifier(3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="now it holds other values|held text"):
        model.predict(X.assign(c=np.arange(len(X), dtype=float)))
    numeric = RebelClassifier(3, random_state=0).fit(X.assign(c=X["c"].cat.codes), y)
    with pytest.raises(ValueError, match="not numeric"):
        numeric.predict(X)


def test_encoder_round_trips_and_refuses_corrupt_sections():
    X, _, _ = _levels_data(n=100)
    columns = CategoricalColumns.fit(X, "from_dtype")
    again = CategoricalColumns.from_dict(columns.to_dict(), 2)
    assert_array_equal(again.transform(X).to_numpy(), columns.transform(X).to_numpy())
    doc = columns.to_dict()
    for bad in ({**doc, "mask": [True]}, {**doc, "categories": [["b", "a"], None]},
                {**doc, "categories": [["a", 1], None]}, {"mask": doc["mask"]}):
        with pytest.raises(ValueError):
            CategoricalColumns.from_dict(bad, 2)


# ------------------------------------------------------------------ binning and the search

def test_binner_keeps_the_most_frequent_codes_and_sends_the_rest_to_missing():
    codes = np.array([0, 0, 0, 1, 1, 2, 3, 3, 3, 3, np.nan, 4])[:, None]
    binner = Binner(max_bins=3).fit(codes, categorical=np.array([True]))
    bins = binner.transform(codes)[:, 0]
    # most frequent: 3 (4 rows), 0 (3 rows), 1 (2 rows) -> bins in code order 0, 1, 2
    assert bins.tolist() == [0, 0, 0, 1, 1, 3, 2, 2, 2, 2, 3, 3]
    assert binner.n_value_bins_[0] == 3 and binner.has_missing_[0]
    left = np.array([True, False, True, True])  # bins 0, 2 and the missing bin go left
    assert np.flatnonzero(binner.left_codes(0, left)).tolist() == [0, 2, 3, 4]


def test_many_nodes_codes_and_bitsets_are_each_nodes_own():
    """The compiled trees' bitsets (``category_words``: every node's codes at once) are the
    Python grower's (``category_bitsets`` of each node's ``left_codes``), on random binners
    of features of 1-150 codes and random bins going left."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        n_features = int(rng.integers(1, 5))
        X = np.column_stack([rng.integers(0, c, 300) for c in rng.integers(1, 150, n_features)])
        X = np.where(rng.random(X.shape) < 0.05, np.nan, X.astype(float))
        binner = Binner(max_bins=int(rng.choice([4, 16, 255]))).fit(
            X, np.ones(n_features, bool), rng.integers(0, 3, 300))
        feature = rng.integers(0, n_features, 40)
        threshold = np.where(rng.random(40) < 0.6, np.nan, 1.0)
        tables = rng.random((40, binner.missing_bin + 1)) < 0.5
        words = category_words(binner, feature, threshold, tables)
        expected = category_bitsets([
            np.flatnonzero(binner.left_codes(f, t)) if np.isnan(v) else None
            for f, t, v in zip(feature, tables, threshold, strict=True)])
        assert words.dtype == expected.dtype
        assert_array_equal(words, expected)


def test_more_codes_than_bins_are_grouped_by_class_mix():
    """40 codes, 8 bins: codes of one class mix share a bin, every code keeps a bin (none is
    sent to the missing bin), and the same rows give the same bins."""
    codes = np.repeat(np.arange(40), 30).astype(float)
    labels = np.repeat(np.arange(40) % 4, 30)  # code c is all class c % 4
    binner = Binner(max_bins=8).fit(codes[:, None], np.array([True]), labels)
    bins = binner.code_bins_[0]
    assert (bins < 8).all() and binner.n_value_bins_[0] <= 8 and not binner.has_missing_[0]
    for c in range(4):  # one mix, one bin; four mixes, four bins
        assert len(set(bins[c::4])) == 1
    assert len(set(bins)) == 4
    again = Binner(max_bins=8).fit(codes[:, None], np.array([True]), labels)
    assert_array_equal(again.code_bins_[0], bins)


def test_fewer_class_mixes_than_bins_are_grouped_without_k_means(monkeypatch):
    """300 codes of few class mixes into 127 bins: each mix its own bin (as k-means gave),
    found without it (k-means warned that it found fewer clusters than asked, silenced by a
    warnings filter that is not thread-safe: the cost route's fold models bin on threads side
    by side, and the warning leaked)."""
    import sklearn.cluster

    rng = np.random.default_rng(4)
    code = rng.integers(0, 300, 3000)
    y = code % 6 // 2
    y[code % 7 == 0] = 0

    def refused(*args, **kwargs):
        raise AssertionError("k-means was called")

    monkeypatch.setattr(sklearn.cluster, "KMeans", refused)
    bins = Binner(max_bins=127).fit(np.c_[code.astype(float)], np.array([True]), y).code_bins_[0]
    counts = [tuple(np.bincount(y[code == c], minlength=3)) for c in range(300)]
    assert len(set(counts)) < 127
    for a in range(300):  # one bin a class mix (their rows' class counts)
        assert {bins[b] for b in range(300) if counts[b] == counts[a]} == {bins[a]}
        assert bins[a] not in {bins[b] for b in range(300) if counts[b] != counts[a]}


def _brute_force(hist_f, n_bins, prior, min_count):
    """The best split over every set of the value bins, missing values on either side."""
    best = np.inf
    for size in range(1, n_bins):
        for subset in itertools.combinations(range(n_bins), size):
            left = hist_f[list(subset)].sum(axis=0)
            right = hist_f[:n_bins].sum(axis=0) - left
            for m_left in (False, True):
                lm = left + hist_f[-1] * m_left
                rm = right + hist_f[-1] * (not m_left)
                best = min(best, pair_loss(lm, rm, prior, len(prior), min_count))
    return best


def test_category_search_comes_close_to_every_subset():
    """The principal order's and the values' prefixes against all subsets of six
    categories, on 20 draws: never better (they are subsets), within 10% of the best loss,
    and the best itself on half the draws at least. (One order finds the best subset less
    often than the K class orders did: on 200 such draws 132 against 181, at most 1.155x its
    loss against 1.047x; it erred less on the categorical benchmark's sets, BENCHMARKS.md,
    stop 50.) One test for all draws: the count of bests is theirs together, whichever
    worker process runs it."""
    found_best = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        k = 2 + seed % 3
        n_bins = 6
        hist = np.zeros((n_bins + 1, 2 * k + 1))
        hist[:, :2 * k] = rng.gamma(0.5, 1.0, (n_bins + 1, 2 * k))
        hist[:, -1] = rng.integers(1, 20, n_bins + 1)
        prior = np.full(k, 0.01)
        score, *_ = scan_category_feature(hist, n_bins, True, n_bins, prior, 0.0, 0.0, 0.0, 32,
                                          0)
        exhaustive = _brute_force(hist, n_bins, prior, 0.0)
        assert exhaustive * (1 - 1e-12) <= score <= exhaustive * 1.10, seed
        found_best.append(score <= exhaustive * (1 + 1e-12))
    assert sum(found_best) >= 10, found_best


def test_category_search_is_never_worse_than_thresholds_on_the_values():
    """Every threshold on the values (what a numeric column of the sorted codes could split)
    is among the candidates, whatever the smoothing, the light categories and the one-hot
    limit: an ordinal column declared categorical loses no split (up to 65 categories, where
    the cap of 32 going left, from either end, hides none)."""
    compared = 0
    for seed in range(300):
        rng = np.random.default_rng(100 + seed)
        k = 2 + seed % 4
        n_bins = int(rng.integers(1, 40))
        hist = np.zeros((n_bins + 1, 2 * k + 1))
        hist[:, :2 * k] = rng.gamma(0.5, 1.0, (n_bins + 1, 2 * k))
        hist[:, -1] = rng.integers(1, 20, n_bins + 1)
        hist[rng.random(n_bins + 1) < 0.3] = 0.0  # some levels (or missing values) unseen
        has_missing = bool(hist[n_bins, -1] > 0)
        prior = np.full(k, 0.01)
        min_count = float(rng.integers(1, 5))  # (a leaf holds rows: 0 admits an empty side)
        numeric, *_ = scan_feature(hist, n_bins, has_missing, n_bins, VECTOR_LEAF, prior,
                                   min_count, True)
        score, *_ = scan_category_feature(hist, n_bins, has_missing, n_bins, prior, min_count,
                                          float(rng.uniform(0, 2)), float(rng.integers(0, 10)),
                                          32, int(rng.choice([0, 4])))
        if np.isfinite(numeric):
            compared += 1
            assert score <= numeric * (1 + 1e-12), seed
    assert compared >= 250


def _every_order_scanned(hist, n_bins, has_missing, prior, min_count, smooth, mpc, max_left):
    """The best loss over every prefix of every order the search reads (the principal order
    from either end, light categories on the right; the values' order), each order scanned by
    itself."""
    k = len(prior)
    count = hist[:n_bins, -1]
    light = np.flatnonzero((count > 0) & (count < mpc))
    held = np.flatnonzero(count > 0)
    missing = hist[n_bins] if has_missing else np.zeros(hist.shape[1])
    order = _principal_order(hist, n_bins, smooth, mpc)
    readings = [(order, light), (order[::-1], light), (held, held[:0]), (held[::-1], held[:0])]
    best = np.inf
    for order, rest in readings:
        everything = hist[np.concatenate([order, rest]).astype(int)].sum(axis=0)
        for i in range(1, min(len(order), max_left) + 1):
            left = hist[order[:i]].sum(axis=0)
            right = everything - left
            for m_left in (False, True) if has_missing else (False,):
                best = min(best, pair_loss(left + missing * m_left,
                                           right + missing * (not m_left), prior, k, min_count))
        if has_missing:  # every category left, missing values right
            best = min(best, pair_loss(everything, missing, prior, k, min_count))
    return best


def _principal_order(hist, n_bins, smooth, mpc):
    """The search's own principal order of the heavy categories (``_order_by_principal_axis``)."""
    k = (hist.shape[1] - 1) // 2
    scratch = _scratch(max(n_bins, 1), 2 * k + 1)
    n_heavy, _ = _weigh(hist, n_bins, mpc, scratch.heavy, scratch.light)
    _order_by_principal_axis(hist, n_bins, smooth, scratch.heavy, n_heavy, scratch)
    return scratch.order[:n_heavy].copy()


def _integer_histogram(rng, n_bins, k, scale, counts, has_missing):
    """A feature's histogram whose class weights are small integers times ``scale(rng)``
    (ties and zero sums are common), its counts drawn from ``counts``; its missing bin
    empty unless ``has_missing``."""
    hist = np.zeros((n_bins + 1, 2 * k + 1))
    hist[:, :2 * k] = rng.integers(0, 3, (n_bins + 1, 2 * k)) * scale(rng)
    hist[:, -1] = rng.integers(*counts, n_bins + 1)
    if not has_missing:
        hist[n_bins] = 0.0
    return hist


def test_the_category_search_scans_every_order_it_reads():
    """The search's best equals the best over every order scanned one by one: skipping an
    order read before (the principal order often is the values' order, or its reverse) loses
    none. Integer weights make such repeats common; over these 2,000 draws, matching repeats
    on their first bin only fails."""
    repeated = 0
    for seed in range(2000):
        rng = np.random.default_rng(seed)
        k = 2 + seed % 3
        n_bins = int(rng.integers(2, 9))
        has_missing = bool(seed % 2)
        hist = _integer_histogram(rng, n_bins, k, lambda r: r.integers(1, 4), (1, 12),
                                  has_missing)
        prior = np.full(k, 0.3)
        min_count, smooth, mpc = float(rng.integers(1, 4)), float(rng.choice([0.5, 5.0])), 4.0
        max_left = int(rng.choice([2, 32]))
        if np.count_nonzero(hist[:n_bins, -1] > 0) < 2:
            continue
        score, *_ = scan_category_feature(hist, n_bins, has_missing, n_bins, prior, min_count,
                                          smooth, mpc, max_left, 0)
        reference = _every_order_scanned(hist, n_bins, has_missing, prior, min_count, smooth,
                                         mpc, max_left)
        assert score == pytest.approx(reference, rel=1e-12) or score == reference == np.inf
        order = tuple(_principal_order(hist, n_bins, smooth, mpc))
        held = tuple(np.flatnonzero(hist[:n_bins, -1] > 0))
        repeated += order in (held, held[::-1])
    assert repeated >= 150  # (the draws do repeat orders)


def _few_category_draw(seed, most_bins):
    """A draw of the tests of features of few categories: ``(rng, k, n_bins, has_missing,
    hist, prior, min_count)``, class weights of random multiples (ties and zero sums common),
    light and empty bins, missing values in two draws of three."""
    rng = np.random.default_rng(seed)
    k = 1 + seed % 4
    n_bins = int(rng.integers(1, most_bins))
    has_missing = bool(seed % 3)
    hist = _integer_histogram(rng, n_bins, k, lambda r: r.random(), (0, 9), has_missing)
    prior = np.full(k, float(rng.choice([0.0, 0.3, 5.0])))
    return rng, k, n_bins, has_missing, hist, prior, float(rng.integers(0, 6))


def _against_rest_scanned(hist, order, alone, light, n_bins, has_missing, prior, min_count,
                          scratch):
    """What the scan returns on the histogram of one category against the rest: its row,
    the other heavy bins then the light ones summed (in that order), the missing bin."""
    k = (hist.shape[1] - 1) // 2
    rest = np.zeros(2 * k + 1)
    for b in [*np.delete(order, alone), *light]:
        rest += hist[b]
    two = len(order) - 1 + len(light) > 0
    perm = np.stack([hist[order[alone]], *([rest] if two else []), hist[n_bins]])
    return scan_vector_feature(perm, len(perm) - 1, has_missing, len(perm) - 1, prior,
                               min_count, scratch.work, scratch.candidates, scratch.sums)


def _same_search(got, expected):
    return tuple(got) == tuple(expected) or (np.isinf(got[0]) and np.isinf(expected[0]))


def test_one_category_against_the_rest_is_the_scan_of_its_permuted_histogram():
    """A category against the rest skips the general scan (:func:`_scan_few`, that category
    its only job): it returns what the scan returns on the two rows (the category; the other
    heavy bins, then the light ones, summed in order) and the missing bin, bit for bit, light
    bins, empty bins, missing values and leaf limits included (integer multiples make ties
    and zero sums common)."""
    checked = 0
    for seed in range(1500):
        _, k, n_bins, has_missing, hist, prior, min_count = _few_category_draw(seed, 6)
        scratch = _scratch(n_bins, 2 * k + 1)
        n_heavy, n_light = _weigh(hist, n_bins, 3.0, scratch.heavy, scratch.light)
        order = scratch.heavy[:n_heavy].copy()
        light = scratch.light[:n_light].copy()
        for alone in range(n_heavy):
            expected = _against_rest_scanned(hist, order, alone, light, n_bins, has_missing,
                                             prior, min_count, scratch)
            first = np.array([order[alone], *np.delete(order, alone)])  # (the others in order)
            score, which, b, ml = _scan_few(hist, n_bins, has_missing, n_bins, prior,
                                            min_count, first, n_heavy, light, n_light, 1, 0,
                                            scratch.few)
            assert _same_search((score, b, ml), expected), seed
            assert which == -1 or np.isinf(score)
            checked += np.isfinite(expected[0])
    assert checked >= 1000


def _values_order_scanned(hist, n_bins, has_missing, prior, min_count, scratch):
    """What the scan returns on the values' order's permuted histogram (every value bin that
    holds weight, in bin order, then the missing bin): the reference of the in-place reads."""
    n_held = _value_order(hist, n_bins, scratch.order)
    n_value, rows = _permute(hist, scratch.order, n_held, 0, 32, scratch.light, 0, n_bins,
                             scratch.perm)
    return n_held, scan_vector_feature(scratch.perm[:rows], n_value, has_missing, rows - 1,
                                       prior, min_count, scratch.work, scratch.candidates,
                                       scratch.sums)


def test_the_values_order_read_in_place_is_the_scan_of_its_permuted_histogram():
    """A feature of few categories scans its values' order in place (:func:`_scan_few`, the
    values' order its only job): what the scan returns on the permuted histogram (the value
    bins that hold weight, in bin order, then the missing bin), bit for bit, with empty bins
    (some holding the rounding left by a subtraction), missing values and leaf limits
    (integer multiples make ties and zero sums common)."""
    checked = 0
    for seed in range(1500):
        _, k, n_bins, has_missing, hist, prior, min_count = _few_category_draw(seed, 7)
        empty = np.flatnonzero(hist[:n_bins, -1] == 0)
        hist[empty[:1], :2 * k] = 1e-17 * (seed % 2)  # (a subtraction's residue, or none)
        scratch = _scratch(n_bins, 2 * k + 1)
        _, expected = _values_order_scanned(hist, n_bins, has_missing, prior, min_count,
                                            scratch)
        n_heavy, n_light = _weigh(hist, n_bins, 3.0, scratch.heavy, scratch.light)
        score, which, b, ml = _scan_few(hist, n_bins, has_missing, n_bins, prior, min_count,
                                        scratch.heavy, n_heavy, scratch.light, n_light, 0, 1,
                                        scratch.few)
        assert _same_search((score, b, ml), expected), seed
        assert which == _VALUES or np.isinf(score)
        checked += np.isfinite(expected[0])
    assert checked >= 700


def test_few_categories_take_the_splits_of_every_order_scanned():
    """A feature of at most ``max_cat_to_onehot`` categories (its own route: each category
    against the rest, then the values' order in place) finds the split that scanning each of
    its orders' permuted histograms finds: the same score, order, position and missing side;
    and so does one whose cap on categories going left (``max_cat_threshold``) hides some of
    the values' order's prefixes, whose orders the general scan reads."""
    checked = 0
    for seed in range(1500):
        rng, k, n_bins, has_missing, hist, prior, min_count = _few_category_draw(seed, 7)
        mpc = float(rng.choice([0.0, 3.0]))
        scratch = _scratch(n_bins, 2 * k + 1)
        n_heavy, n_light = _weigh(hist, n_bins, mpc, scratch.heavy, scratch.light)
        if n_heavy + n_light > 4:
            continue
        heavy, light = scratch.heavy[:n_heavy].copy(), scratch.light[:n_light].copy()
        max_left = 32 if seed % 4 else 2
        got = scan_category_feature(hist, n_bins, has_missing, n_bins, prior, min_count, 5.0,
                                    mpc, max_left, 4)
        best = (np.inf, 0, 0, False)
        jobs = 1 if n_heavy == 2 and n_light == 0 else n_heavy
        if n_heavy + n_light < 2 and not (has_missing and n_heavy == 1):
            jobs = 0
        for alone in range(jobs):
            score, b, ml = _against_rest_scanned(hist, heavy, alone, light, n_bins,
                                                 has_missing, prior, min_count, scratch)
            if score < best[0] * (1 - 1e-12):
                best = (score, -1 - alone, b, ml)
        n_held = n_heavy + n_light
        if not ((n_held < 2 and not (has_missing and n_held == 1))
                or (2 <= n_held <= 3 and n_light == 0)):
            if n_held - 1 <= max_left:
                _, (score, b, ml) = _values_order_scanned(hist, n_bins, has_missing, prior,
                                                          min_count, scratch)
                if score < best[0] * (1 - 1e-12):
                    best = (score, _VALUES, b, ml)
            else:  # (from either end, at most max_left categories left)
                n_order = _value_order(hist, n_bins, scratch.order)
                for end in (0, 1):
                    n_value, rows = _permute(hist, scratch.order, n_order, end, max_left,
                                             scratch.light, 0, n_bins, scratch.perm)
                    score, b, ml = scan_vector_feature(
                        scratch.perm[:rows], n_value, has_missing, rows - 1, prior, min_count,
                        scratch.work, scratch.candidates, scratch.sums)
                    if score < best[0] * (1 - 1e-12):
                        best = (score, _VALUES + end, b, ml)
        assert _same_search(got, best), seed
        checked += np.isfinite(best[0])
    assert checked >= 700


@pytest.mark.parametrize("levels", [2, 5, 32, 33, 70])
def test_the_principal_order_sorts_by_the_first_principal_axis(levels):
    """The categories' order is that of their smoothed class-step vectors projected on the
    first principal axis of those vectors, each weighted by its weight (numpy's eigh of the
    weighted scatter), its sign making its largest entry positive; equal categories keep
    their bin order (the in-place sort of few, numpy's stable sort of more)."""
    checked = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        k = 2 + seed % 4
        hist = np.zeros((levels + 1, 2 * k + 1))
        hist[:, :2 * k] = rng.gamma(0.5, 1.0, (levels + 1, 2 * k))
        hist[:, -1] = rng.integers(1, 30, levels + 1)
        hist[0, -1] = 10.0
        hist[levels - 1] = hist[0]  # two equal heavy categories: a tie
        scratch = _scratch(levels, 2 * k + 1)
        n_heavy, _ = _weigh(hist, levels, 3.0, scratch.heavy, scratch.light)
        heavy = scratch.heavy[:n_heavy].copy()
        _order_by_principal_axis(hist, levels, 5.0, scratch.heavy, n_heavy, scratch)
        total_w = hist[:levels, :k].sum(axis=0) + hist[:levels, k:2 * k].sum(axis=0)
        s = np.maximum(5.0 * total_w / (2.0 * hist[:levels, -1].sum()), 1e-300)
        steps = np.log(hist[heavy, k:2 * k] + s) - np.log(hist[heavy, :k] + s)
        w = hist[heavy, -1]
        steps -= w @ steps / w.sum()
        values, vectors = np.linalg.eigh((steps * w[:, None]).T @ steps)
        if values[-2] > (1.0 - 1e-6) * values[-1]:
            continue  # (no single first axis)
        axis = vectors[:, -1] * np.sign(vectors[np.argmax(np.abs(vectors[:, -1])), -1])
        along = steps @ axis
        sorted_along = np.sort(along)
        gaps = np.diff(sorted_along)
        if np.any((gaps > 0) & (gaps < 1e-9 * np.abs(sorted_along).max())):
            continue  # (two categories whose order rounding could swap)
        assert_array_equal(scratch.order[:n_heavy], heavy[np.argsort(along, kind="mergesort")])
        order = list(scratch.order[:n_heavy])
        assert order.index(0) < order.index(levels - 1)
        checked += 1
    assert checked >= 35


@pytest.mark.parametrize("n_bins", [2, 3, 9])
def test_the_chosen_set_scores_what_the_scan_reported(n_bins):
    """The set handed back scores what the scan found; with at most 4 categories it is one
    category against the rest, the best of those."""
    rng = np.random.default_rng(5)
    k = 3
    hist = np.zeros((n_bins + 1, 2 * k + 1))  # compact: the value bins, the missing bin
    hist[:n_bins, :2 * k] = rng.gamma(0.5, 1.0, (n_bins, 2 * k))
    hist[:n_bins, -1] = rng.integers(5, 30, n_bins)
    layout = BinLayout(np.array([n_bins], np.int32), np.array([False]), 255, 256)
    prior = np.full(k, 0.01)
    split, left_bins = best_category_split(hist, np.array([0]), layout, layout.cell_offsets(),
                                           prior, 1.0, 1.0, 1.0, 32, 4)
    assert left_bins.shape == (256,) and not left_bins[n_bins:].any()
    left = hist[:n_bins][left_bins[:n_bins]].sum(axis=0)
    right = hist.sum(axis=0) - left
    assert split.score == pytest.approx(pair_loss(left, right, prior, k, 1.0), rel=1e-12)
    assert 0 < left_bins[:n_bins].sum() < n_bins
    if n_bins <= 4:
        assert left_bins[:n_bins].sum() in (1, n_bins - 1)
        singles = [pair_loss(hist[b], hist.sum(axis=0) - hist[b], prior, k, 1.0)
                   for b in range(n_bins)]
        assert split.score == pytest.approx(min(singles), rel=1e-12)


def _random_histogram(rng, n_bins, k, n_features=1):
    """Compact histograms of ``n_features`` features of ``n_bins`` value bins and a missing
    bin: gamma weights spread over decades, some classes and bins pure or empty."""
    hist = rng.gamma(0.3, 1.0, ((n_bins + 1) * n_features, 2 * k + 1))
    hist[:, :2 * k] *= 10.0 ** rng.integers(-3, 3, hist.shape[0])[:, None]
    hist[:, :2 * k][rng.random((hist.shape[0], 2 * k)) < 0.2] = 0.0
    hist[:, -1] = rng.integers(0, 30, hist.shape[0])
    return hist


@given(seed=st.integers(0, 2**31), n_bins=st.integers(1, 7), k=st.integers(1, 4),
       prior=st.sampled_from([0.0, 1e-3, 0.5, 20.0]))
@settings(max_examples=150, deadline=None)
def test_no_split_of_the_bins_scores_below_their_floor(seed, n_bins, k, prior):
    """split_floor is at most the score of every split of a feature's bins that the search
    places (value bins of positive count, the missing bin) into two sides, all checked."""
    rng = np.random.default_rng(seed)
    hist = _random_histogram(rng, n_bins, k)
    placed = hist[(hist[:, -1] > 0) | (np.arange(n_bins + 1) == n_bins)]
    priors = np.full(k, prior)
    weight = np.zeros(k)
    _class_weights_into(hist, n_bins, weight)
    assert_allclose(weight, placed[:, :k].clip(0).sum(axis=0)
                    + placed[:, k:2 * k].clip(0).sum(axis=0), rtol=1e-12)
    reach, wider_reach = np.empty(k), np.empty(k)
    _reach_into(weight, priors, reach)
    _reach_into(weight * 3.0, priors, wider_reach)  # (the search's: the heaviest feature's)
    floor = split_floor(hist, n_bins, reach)
    wider = split_floor(hist, n_bins, wider_reach)
    total = placed.sum(axis=0)
    for mask in itertools.product([False, True], repeat=len(placed)):
        left = placed[np.array(mask)].sum(axis=0)
        score = pair_loss(left, total - left, priors, k, 0.0)
        assert score >= floor * (1 - 1e-12) and score >= wider * (1 - 1e-12)
    assert wider <= floor * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_features_that_cannot_win_are_passed_over_with_the_same_split(seed):
    """The category search given the score to beat (a numeric split's, the leaf's loss)
    returns the split it returns without one wherever that split beats it, and none that
    beats it otherwise: the features it passes over (split_floor) could not have won."""
    rng = np.random.default_rng(seed)
    k, n_bins, n_features = 3, 6, 12
    hist = _random_histogram(rng, n_bins, k, n_features)
    hist[:(n_bins + 1), :2 * k] *= 3.0  # one feature with a clear split
    blocks = hist.reshape(n_features, n_bins + 1, 2 * k + 1)  # (a view)
    sums = blocks.sum(axis=1, keepdims=True)
    blocks *= np.where(sums > 0, sums[0] / np.where(sums > 0, sums, 1.0), 1.0)  # (as a leaf's:
    # every feature's bins hold the leaf's weight, the search's floors take one reach)
    layout = BinLayout(np.full(n_features, n_bins, np.int32), np.ones(n_features, bool), 255,
                       256)
    features = np.arange(n_features)
    args = (hist, features, layout, layout.cell_offsets(), np.full(k, 0.3), 1.0, 1.0, 1.0, 32,
            4)
    split, left_bins = best_category_split(*args)
    passed = 0
    for incumbent in split.score * np.array([0.5, 0.999, 1.0 + 1e-9, 1.001, 1.5, 3.0, 1e9]):
        found = best_category_split(*args, incumbent)
        if split.score < incumbent * (1 - 1e-12):
            assert found[0] == split
            assert_array_equal(found[1], left_bins)
        else:
            assert found is None or not found[0].score < incumbent * (1 - 1e-12)
            passed += found is None
    assert passed >= 1  # (some features were passed over)


# ------------------------------------------------------------------ models

def test_native_categories_beat_integer_codes_and_routing_matches_training():
    """300 levels, 10 training rows each: a few trees of category sets find what integer
    codes cannot (thresholds on arbitrary codes isolate few levels per split)."""
    X, y, level = _levels_data(n=4000, n_levels=300)
    train, test = slice(0, 3000), slice(3000, None)
    native = RebelClassifier(30, random_state=0).fit(X.iloc[train], y[train])
    codes = X.assign(c=level.astype(float))
    as_codes = RebelClassifier(30, categorical_features=None, random_state=0).fit(
        codes.iloc[train], y[train])
    err_native = (native.predict(X.iloc[test]) != y[test]).mean()
    err_codes = (as_codes.predict(codes.iloc[test]) != y[test]).mean()
    assert err_native < err_codes - 0.03, (err_native, err_codes)
    assert native.model_.learners.category_words is not None


@pytest.mark.parametrize("subsample", [1.0, 0.5])
def test_training_rows_take_the_leaves_their_values_reach(subsample):
    """Training routes rows by bins (partitions; the rows outside a sample by the bin
    tables), prediction by values: every training row reaches the same leaf both ways,
    missing values and the rare categories sent to the missing bin included."""
    from rebelboost.learners.rebel_learners import REBEL_LEARNERS, LearnerOptions
    from rebelboost.learners.vector_tree import VectorTreeOptions

    X, y, _ = _levels_data(n=3000, n_levels=300)
    X.loc[X.index[::13], "c"] = np.nan
    columns = CategoricalColumns.fit(X, "from_dtype")
    encoded = columns.transform(X).to_numpy()
    options = LearnerOptions(1, 64, False, "two-point", None,  # 64 bins: rare levels missing
                             VectorTreeOptions(subsample=subsample, min_samples_leaf=5),
                             categorical=columns.mask)
    k = 4
    family = REBEL_LEARNERS["vector_tree"](encoded, y, np.ones(len(y)), 1 - np.eye(k),
                                           options, np.random.RandomState(0))
    rng = np.random.default_rng(0)
    for _ in range(3):
        fit = family.fit(rng.gamma(1.0, 1.0, (len(y), 2 * k)))
        assert np.isnan(fit.arrays.threshold).any()
        assert_array_equal(fit.arrays.leaves(encoded)[:, 0], fit.slot_of_row)


def test_model_files_rules_contributions_and_what_shap_refuses(tmp_path):
    X, y, _ = _levels_data(n=800)
    model = RebelClassifier(15, random_state=0).fit(X, y)
    model.save(tmp_path / "m.json.gz")
    loaded = load_model(tmp_path / "m.json.gz")
    new = X.iloc[:50].copy()
    new.loc[new.index[:3], "c"] = np.nan
    assert_array_equal(loaded.decision_function(new), model.decision_function(new))
    assert_array_equal(loaded.categories_[0], model.categories_[0])
    assert_array_equal(model.predict(X, early_exit="exact"), model.predict(X))
    rules = model.model_.learners.regions(0, ["c", "x"], model.classes_,
                                          categories=model.categories_)
    assert any("c in {v0" in text for text, _ in rules)
    # exact contributions (TreeSHAP through the categorical nodes) add up to the scores
    phi = model.contributions(new)
    np.testing.assert_allclose(phi.sum(axis=1), model.model_.scores(model._encode(new)
                                                                    .to_numpy()), atol=1e-9)
    assert np.abs(phi[:, 0]).sum() > 0  # the categorical column takes part
    with pytest.raises(ValueError, match="sets of categories"):  # shap's trees test x <= t
        rebelboost.to_shap(model)


def test_the_command_line_fits_predicts_and_explains_text_columns(tmp_path):
    from click.testing import CliRunner

    from rebelboost.cli import main

    X, y, _ = _levels_data(n=600)
    frame = X.assign(c=X["c"].astype(str), label=y, shop=np.arange(600) % 7)
    frame.to_csv(tmp_path / "data.csv", index=False)
    run = CliRunner().invoke
    out = run(main, ["fit", str(tmp_path / "data.csv"), "-t", "label", "-q", "--n-estimators",
                     "10", "--categorical", "shop", "-o", str(tmp_path / "m.json")])
    assert out.exit_code == 0, out.output
    model = load_model(tmp_path / "m.json")
    assert model.is_categorical_.tolist() == [True, False, True]
    assert model.categories_[2].tolist() == list(range(7))
    out = run(main, ["predict", str(tmp_path / "m.json"), str(tmp_path / "data.csv"),
                     "-o", str(tmp_path / "p.csv")])
    assert out.exit_code == 0, out.output
    predicted = pd.read_csv(tmp_path / "p.csv").iloc[:, -1].to_numpy()
    assert_array_equal(predicted, model.predict(frame.drop(columns="label")))
    out = run(main, ["explain", str(tmp_path / "m.json"), str(tmp_path / "data.csv"), "-r",
                     "0", "-t", "label"])
    assert out.exit_code == 0, out.output
    assert f"c = {frame['c'][0]}" in out.output


def test_every_column_categorical():
    X, y, _ = _levels_data(n=400)
    only = X[["c"]].assign(d=pd.Categorical(np.arange(400) % 3))
    model = RebelClassifier(5, random_state=0).fit(only, y)
    assert model.is_categorical_.all() and np.isnan(model.model_.learners.threshold).any()


def test_cost_route_folds_split_the_categories_too(monkeypatch):
    """The cross-fitted fold models train on the encoded columns as categories."""
    X, y, _ = _levels_data(n=600)
    seen = []
    real_fit = RebelClassifier._fit_scorer  # (how the route fits its fold models)

    def spy(self, X, y, *args, **kwargs):
        seen.append(self.categorical_features)
        return real_fit(self, X, y, *args, **kwargs)

    monkeypatch.setattr(RebelClassifier, "_fit_scorer", spy)
    cost = 1 - np.eye(4)
    cost[0] = 5 * (1 - np.eye(4)[0])
    model = RebelClassifier(5, cost_matrix=cost, random_state=0).fit(X, y)
    assert model.cost_evidence_["n_folds"] == 3
    assert model.categorical_features == "from_dtype" and len(seen) == 3  # (folds: clones)
    for spec in seen:
        assert np.asarray(spec).tolist() == [True, False]


def test_quantized_histograms_split_categories_the_same_on_any_thread_count():
    X, y, _ = _levels_data(n=1200, n_levels=60)
    fits = [RebelClassifier(10, histogram_bits=8, n_jobs=jobs, random_state=0).fit(X, y)
            for jobs in (1, 2)]
    assert np.isnan(fits[0].model_.learners.threshold).any()
    assert_array_equal(fits[0].decision_function(X), fits[1].decision_function(X))


def test_why_this_decision_names_the_category_and_the_report_explains_rows():
    from rebelboost.explain import explain_decision
    from rebelboost.report.decisions import decisions_section

    X, y, _ = _levels_data(n=600)
    cost = 1 - np.eye(4)
    cost[0] *= 5
    model = RebelClassifier(15, cost_matrix=cost, random_state=0).fit(X, y)
    why = explain_decision(model, X.iloc[3])
    effect = next(e for e in why.effects if e.feature == "c")
    assert effect.value == X["c"].iloc[3]
    assert f"c = {X['c'].iloc[3]}" in str(why)
    assert abs(why.residual) < 1e-9
    text = str(model.explain(X.iloc[3]))
    assert "Why" in text and f"c = {X['c'].iloc[3]}" in text
    assert "c = " in decisions_section(model, X, y)


def test_the_report_names_categories_in_the_learners():
    from rebelboost.report.model_view import learner_views

    X, y, _ = _levels_data(n=600)
    model = RebelClassifier(5, random_state=0).fit(X, y)
    texts = [text for view in learner_views(model) for text, _ in view.branches]
    assert any("c in {v0" in text for text in texts)


def test_rare_categories_are_split_on_small_data():
    """On the small-data shape (leaves of any size) a category of one or two rows is sorted
    like any other (``min_data_per_category`` follows ``min_samples_leaf``, at most 5): a
    column whose 120 rare levels each fix the class is learnt; with a category minimum of 5
    (leaves of at least 5), the rare levels stay lumped together and err more on new rows."""
    X, y, _ = _levels_data(n=600, n_levels=120, k=3, noise=0.0)
    train, test = slice(0, 300), slice(300, None)
    small = RebelClassifier(60, random_state=0).fit(X[train], y[train])
    assert small._vector_tree_options().min_data_per_category == 1.0
    lumped = RebelClassifier(60, min_samples_leaf=5, random_state=0).fit(X[train], y[train])
    assert lumped._vector_tree_options().min_data_per_category == 5.0
    small_error = np.mean(small.predict(X[test]) != y[test])
    lumped_error = np.mean(lumped.predict(X[test]) != y[test])
    assert small_error + 0.1 <= lumped_error, (small_error, lumped_error)


def test_a_numeric_text_column_with_a_typo_is_warned_about():
    """A CSV column of numbers with one typo reads as text, which 'from_dtype' splits as
    categories: a NumbersAsTextWarning names it and the first such value. Declared columns,
    columns of real categories and pandas categoricals are not warned about."""
    import warnings

    from rebelboost.categorical import NumbersAsTextWarning

    rng = np.random.default_rng(0)
    n = 200
    typo = pd.Series(rng.normal(size=n).round(3)).astype(str)
    typo[11] = "1,5"
    X = pd.DataFrame({"a": rng.normal(size=n), "b": typo})
    y = rng.integers(0, 3, n)
    with pytest.warns(NumbersAsTextWarning, match=r"column 'b' holds text.* such as '1,5' "
                                                   r"\(row 11\)"):
        RebelClassifier(3).fit(X, y)
    missing = typo.astype("string").where(rng.random(n) > 0.1)  # (pandas' NA among them)
    missing[11] = "1,5"
    with pytest.warns(NumbersAsTextWarning, match=r"such as '1,5' \(row 11\)"):
        RebelClassifier(3).fit(X.assign(b=missing), y)  # (crashed on NA up to stop 61)
    marked = X["b"].where(rng.random(n) > 0.03, "?")  # (the UCI sets' missing values)
    with pytest.warns(NumbersAsTextWarning, match="such as '\\?'"):
        RebelClassifier(3).fit(X.assign(b=marked.where(marked != "1,5", "0.5")), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbersAsTextWarning)
        RebelClassifier(3, categorical_features=["b"]).fit(X, y)
        RebelClassifier(3).fit(X.assign(b=X["b"].astype("category")), y)
        codes = rng.choice([str(v) for v in range(20)] + ["other", "none"], n)
        RebelClassifier(3).fit(X.assign(b=codes), y)  # (2 of 22 levels: categories)


def test_text_in_a_column_fitted_numeric_is_named_at_prediction():
    """A column that was numeric in training but holds text at prediction (a CSV with a typo)
    is refused, naming the first value that is not a number and its row (a model with a
    categorical column; without one, validation names the column as not numeric)."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60),
                      "c": rng.choice(["red", "blue"], 60)})
    model = RebelClassifier(3).fit(X, rng.integers(0, 3, 60))
    typo = X.head(5).assign(b=["0.5", "1.5", "2,5", "oops", "3"])
    with pytest.raises(ValueError, match=r"column 'b' holds text \(such as '2,5' in row 2\), "
                                         "but it was numeric when the model was fitted"):
        model.predict(typo)


@pytest.mark.parametrize("spec", [["n"], [0], [True, False]])
def test_a_text_column_that_categorical_features_leaves_out_is_named_at_fit(spec):
    """Columns named explicitly are exactly the categorical ones: a text column left out is
    refused at fit, by name and value, saying how to include it (it once read as a column
    'numeric when the model was fitted', during the fit)."""
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"n": rng.integers(0, 4, 40), "city": rng.choice(["oslo", "rome"], 40)})
    with pytest.raises(ValueError, match=r"column 'city' holds text \(such as '(oslo|rome)' in "
                                         r"row 0\), which categorical_features=.* does not "
                                         "name: name it too, or pass 'from_dtype'"):
        RebelClassifier(3, categorical_features=spec).fit(X, rng.integers(0, 2, 40))
    model = RebelClassifier(3, categorical_features=["n", "city"]).fit(X, rng.integers(0, 2, 40))
    assert model.is_categorical_.tolist() == [True, True]
