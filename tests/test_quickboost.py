"""QuickBoost pruning: the same split as exhaustive search, bit for bit, with less work."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rebelboost.binning import BinLayout, Binner
from rebelboost.losses.rebel import RebelLoss
from rebelboost.search import (
    best_split,
    best_split_per_feature,
    build_histogram,
    quickboost,
    rebel_score,
    sign_cost_score,
)
from rebelboost.search.histograms import (
    HistogramPool,
    bin_columns,
    column_histograms,
    sparse_bins,
)
from rebelboost.search.quickboost import (
    heaviest_first,
    prefix_schedule,
    quickboost_split,
    rounding_slack,
    visiting_order,
)

FAST = settings(max_examples=100, deadline=None)


@st.composite
def problems(draw):
    """Binned data with ties, NaN, constant and duplicated columns; REBEL or sign-cost channels.

    Channels come from a real REBEL state (huge dynamic range when the scores are large), from
    heavy-tailed random weights with zeros, or are small integers (exact sums: many exact ties).
    """
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 120))
    d = draw(st.integers(1, 10))
    n_distinct = draw(st.sampled_from([1, 2, 3, 8, 50]))
    X = rng.integers(0, n_distinct, size=(n, d)).astype(float)
    X[rng.random((n, d)) < draw(st.sampled_from([0.0, 0.0, 0.1, 0.5, 1.0]))] = np.nan
    if draw(st.booleans()):
        X[:, rng.integers(d)] = 2.5  # a constant column
    for _ in range(draw(st.integers(0, 3))):  # duplicated columns: exact ties across features
        X[:, rng.integers(d)] = X[:, rng.integers(d)]
    k = draw(st.integers(2, 4))
    kind = draw(st.sampled_from(["rebel", "random", "integer"]))
    if kind == "rebel":
        y = rng.integers(0, k, size=n)
        cost = rng.uniform(0.5, 3.0, size=(k, k))
        np.fill_diagonal(cost, 0.0)
        scores = rng.standard_normal((n, k)) * draw(st.sampled_from([0.0, 1.0, 30.0]))
        channels, _ = RebelLoss(cost, y, np.ones(n)).weights(scores)
    elif kind == "random":
        channels = rng.exponential(size=(n, 2 * k)) ** draw(st.sampled_from([1, 4]))
        channels[rng.random(channels.shape) < 0.3] = 0.0
    else:
        channels = rng.integers(0, 3, size=(n, 2 * k)).astype(float)
    score = draw(st.sampled_from([rebel_score, sign_cost_score]))
    if score is sign_cost_score:
        channels = np.ascontiguousarray(channels[:, :2])
    binner = Binner(draw(st.sampled_from([2, 3, 255])))
    bins = binner.fit_transform(X)
    return bins, channels, binner, score, rng


def _bits(split):
    return None if split is None else (split.feature, split.bin, split.missing_left,
                                       np.float64(split.score).tobytes())


def _full_histogram(source, bins, channels, rows, nbt, sparse, rng):
    """An exact full histogram of ``rows`` for QuickBoost to finish features with.

    "columns": the trees' feature-major kernel (only the listed features built, into a pooled
    buffer that holds stale values elsewhere); "rows": the row-wise kernel, in the given order.
    """
    if source == "rows":
        hist = build_histogram(bins, channels, rows, nbt, sparse)
        return hist, lambda features: hist
    columns = bin_columns(bins, float(rng.choice([0.0, 0.5, 1.0])))
    labels = np.full(bins.shape[0], -1, np.int32)
    labels[rows] = 0
    pool = HistogramPool()
    hist = column_histograms(columns, channels, labels, 1, nbt)[0][0]
    return hist, lambda features: column_histograms(columns, channels, labels, 1, nbt,
                                                    features, pool)[0][0]


@FAST
@given(problems(), st.sampled_from([0.0, 0.5, 0.9, 1.0]), st.integers(1, 25),
       st.sampled_from(["given", "heaviest first", "visiting order"]), st.booleans(),
       st.booleans(), st.sampled_from(["columns", "rows"]))
def test_pruned_split_is_bit_identical_to_exhaustive(problem, first_mass, n_steps, order,
                                                     parallel, sparse, source):
    bins, channels, binner, score, rng = problem
    n = bins.shape[0]
    rows = rng.permutation(n)[: rng.integers(0, n + 1)].astype(np.intp)
    ends = None
    if order == "heaviest first":
        rows = heaviest_first(channels, rows)  # correctness never depends on the order
    elif order == "visiting order":
        rows, ends = visiting_order(channels, rows, first_mass, n_steps)
    # Sparse bins (the default bins by subtraction), with 1 or 3 feature blocks.
    sparse = sparse_bins(bins, int(rng.integers(1, 4)), max_density=1.0) if sparse else None
    nbt = binner.n_bins_total
    hist, full_histogram = _full_histogram(source, bins, channels, rows, nbt, sparse, rng)
    expected = best_split(hist, binner.layout, score)
    serial_work = quickboost.SERIAL_WORK
    quickboost.SERIAL_WORK = 0 if parallel else serial_work  # small data: force the lanes
    try:
        pruned = quickboost_split(bins, channels, rows, binner.layout, score, full_histogram,
                                  first_mass=first_mass, n_steps=n_steps, sparse=sparse,
                                  ends=ends)
    finally:
        quickboost.SERIAL_WORK = serial_work
    assert _bits(pruned.split) == _bits(expected)
    # Prefixes plus the survivors' full rebuilds: at most twice the exhaustive work.
    assert pruned.histogram_updates <= 2 * len(rows) * bins.shape[1]


@FAST
@given(problems())
def test_preliminary_best_never_decreases_as_the_prefix_grows(problem):
    bins, channels, binner, score, _ = problem
    nbt = binner.n_bins_total
    rows = heaviest_first(channels, np.arange(bins.shape[0]))
    slack = rounding_slack(score, len(rows), nbt, channels.shape[1], float(channels.sum()))
    previous = np.zeros(bins.shape[1])
    for m in np.unique(np.linspace(1, len(rows), 15).astype(int)):
        hist = build_histogram(bins, channels, rows[:m], nbt)
        prelim, _, _ = best_split_per_feature(hist, binner.layout, score)
        # Exact arithmetic: never lower. Computed: never lower by more than rounding.
        assert np.all(prelim >= previous * (1 - 2e-12) - slack)
        previous = prelim


def test_integer_channels_bound_holds_exactly():
    # Small integer weights sum exactly, so the bound needs no rounding slack there.
    rng = np.random.default_rng(1)
    bins = rng.integers(0, 6, size=(300, 5)).astype(np.uint8)
    channels = rng.integers(0, 4, size=(300, 6)).astype(float)
    nvb, has_missing = np.full(5, 6), np.zeros(5, bool)
    for score, ch in ((rebel_score, channels), (sign_cost_score, channels[:, :2].copy())):
        rows = heaviest_first(ch, np.arange(300))
        previous = np.zeros(5)
        for m in range(1, 301, 7):
            hist = build_histogram(bins, ch, rows[:m], 7)
            prelim, _, _ = best_split_per_feature(hist, BinLayout(nvb, has_missing, 6, 7), score)
            if score is sign_cost_score:
                assert np.all(prelim >= previous)
            else:
                assert np.all(prelim >= previous * (1 - 1e-14))
            previous = prelim


def test_schedule_starts_at_the_mass_quantile_and_ends_at_every_row():
    ch = np.array([[8.0], [1.0], [0.5], [0.25], [0.25]])
    ends = prefix_schedule(ch, 0.9, 20)
    assert ends[0] == 2 and ends[-1] == 5  # 9 of 10 units in the first two rows
    assert np.all(np.diff(ends) > 0)
    assert prefix_schedule(ch, 1.0, 20).tolist() == [5]
    assert prefix_schedule(ch[:0], 0.9, 20).tolist() == [0]


def _useless_features_problem(score):
    """One informative feature among 300 noise features, REBEL weights of a boosted state."""
    rng = np.random.default_rng(0)
    n, d, k = 4000, 300, 3
    X = rng.standard_normal((n, d))
    y = rng.integers(0, k, size=n)
    X[:, 137] += 1.5 * y
    cost = 1.0 - np.eye(k)
    scores = 3.0 * rng.standard_normal((n, k))  # a later boosting state: skewed weights
    channels, _ = RebelLoss(cost, y, np.ones(n)).weights(scores)
    if score is sign_cost_score:
        a = np.array([0.3, -0.2, 0.1])
        g_plus = channels[:, :k] @ np.exp(a) + channels[:, k:] @ np.exp(-a)
        g_minus = channels[:, :k] @ np.exp(-a) + channels[:, k:] @ np.exp(a)
        channels = np.ascontiguousarray(np.column_stack([g_plus, g_minus]))
    binner = Binner(255)
    return binner.fit_transform(X), channels, binner


@FAST
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.5, 0.9, 1.0]), st.integers(1, 25))
def test_visiting_order_is_heaviest_chunks_each_by_index(seed, first_mass, n_steps):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    channels = rng.exponential(size=(n, 3)) ** 3
    channels[rng.random(n) < 0.2] = 1.0  # ties
    rows = rng.permutation(n)[: rng.integers(0, n + 1)].astype(np.intp)
    ordered, ends = visiting_order(channels, rows, first_mass, n_steps)
    heavy = heaviest_first(channels, rows)
    np.testing.assert_array_equal(ends, prefix_schedule(channels[heavy], first_mass, n_steps))
    starts = np.concatenate([[0], ends[:-1]])
    for a, b in zip(starts, ends, strict=True):  # each chunk: the same rows, by index
        np.testing.assert_array_equal(ordered[a:b], np.sort(heavy[a:b]))
    assert len(ordered) == len(rows)


def test_pruning_saves_most_work_when_most_features_are_useless():
    for score in (rebel_score, sign_cost_score):
        bins, channels, binner = _useless_features_problem(score)
        n, d = bins.shape
        rows = heaviest_first(channels, np.arange(n))
        nbt = binner.n_bins_total
        hist = build_histogram(bins, channels, rows, nbt)
        pruned = quickboost_split(bins, channels, rows, binner.layout, score, lambda f, h=hist: h)
        assert _bits(pruned.split) == _bits(best_split(hist, binner.layout, score))
        assert pruned.split.feature == 137
        assert pruned.histogram_updates < 0.4 * n * d  # exhaustive: every row x feature


def test_no_candidate_feature_means_no_split_and_no_work():
    X = np.column_stack([np.full(10, 1.0), np.full(10, np.nan)])
    binner = Binner(255)
    bins = binner.fit_transform(X)
    channels = np.random.default_rng(0).exponential(size=(10, 4))

    def never(features):
        raise AssertionError("no feature can split: nothing to finish")

    result = quickboost_split(bins, channels, np.arange(10), binner.layout, rebel_score, never)
    assert result.split is None and result.histogram_updates == 0


# --------------------------------------------------------------------- whole models


@settings(max_examples=16, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["stump", "tree"]), st.integers(2, 3),
       st.booleans(), st.booleans())
def test_models_are_identical_with_and_without_quickboost(seed, weak_learner, depth, costly,
                                                          mostly_zero):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(20, 300)), int(rng.integers(1, 12)), int(rng.integers(2, 5))
    X = np.round(rng.standard_normal((n, d)), int(rng.integers(0, 3)))
    if mostly_zero:  # the estimator then takes the sparse layout
        X[rng.random((n, d)) < 0.8] = 0.0
    X[rng.random((n, d)) < 0.1] = np.nan
    X[:, -1] = X[:, 0]  # a duplicated column
    y = (np.nan_to_num(X[:, 0]) + 0.5 * rng.standard_normal(n) > 0).astype(int)
    y = (y + rng.integers(0, k, size=n) * (rng.random(n) < 0.5)) % k
    k = len(np.unique(y))  # the noise may leave a class out: the cost matrix follows y
    if k < 2:
        return
    cost = None
    if costly:
        cost = rng.uniform(0.2, 4.0, size=(k, k))
        np.fill_diagonal(cost, 0.0)
    # (the 'loss' route: the posterior route holds out rows, which a class of one row lacks)
    params = dict(n_estimators=15, weak_learner=weak_learner, max_depth=depth, cost_matrix=cost,
                  cost_strategy="loss", random_state=0)
    from rebelboost import RebelClassifier

    if mostly_zero:
        assert sparse_bins(Binner(255).fit_transform(X)) is not None  # the layout is in use
    on = RebelClassifier(quickboost=True, **params).fit(X, y)
    off = RebelClassifier(quickboost=False, **params).fit(X, y)
    for name in ("feature", "threshold", "missing_left", "leaf_value"):
        np.testing.assert_array_equal(getattr(on.trees_, name), getattr(off.trees_, name))
    np.testing.assert_array_equal(on.vectors_, off.vectors_)
    np.testing.assert_array_equal(on.train_loss_, off.train_loss_)
    np.testing.assert_array_equal(on.predict_proba(X), off.predict_proba(X))
    np.testing.assert_array_equal(on.predict(X), off.predict(X))
    assert len(on.histogram_updates_) == len(off.histogram_updates_) == 15
