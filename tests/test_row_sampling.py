"""GOSS's sample, the same rows wherever they are held: the heaviest rows are a stable
sort's first, and the threshold found block by block from bucket counts (a distributed
fit's way) is the one found on all rows at once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from rebelboost.learners import row_sampling
from rebelboost.learners.row_sampling import (
    bucket_counts,
    find_threshold,
    heaviest_by_threshold,
    heaviest_rows,
    keys_in,
    row_weights,
    sample_rows,
    weight_keys,
)


def _weights(draw_seed: int, n: int, distinct: int | None) -> np.ndarray:
    rng = np.random.default_rng(draw_seed)
    if distinct is None:
        return rng.lognormal(0, 3, n)
    return rng.choice(rng.lognormal(0, 3, distinct), n)  # many ties


def _blocks_threshold(weight: np.ndarray, cuts: list[int], top: int):
    """The heaviest rows found as a distributed fit finds them: per block, bucket counts
    and fetched keys only."""
    keys = [weight_keys(part) for part in np.split(weight, cuts)]
    passes = []

    def count_pass(low, shift):
        passes.append(shift)
        return [bucket_counts(k, low, shift) for k in keys]

    key_range = (min(int(k.min()) for k in keys if len(k)),
                 max(int(k.max()) for k in keys if len(k)))
    threshold, ties, heavy = find_threshold(
        count_pass, lambda lo, hi: [keys_in(k, lo, hi) for k in keys], top, key_range,
        [len(k) for k in keys])
    masks = [heaviest_by_threshold(k, threshold, t) for k, t in zip(keys, ties, strict=True)]
    assert heavy == [int(m.sum()) for m in masks]  # (each block's count, known to the caller)
    return np.concatenate(masks), passes


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 3000),
       distinct=st.one_of(st.none(), st.integers(1, 40)), fraction=st.floats(0.01, 1.0),
       n_cuts=st.integers(0, 5), fetch=st.sampled_from([4, 1 << 16]))
def test_the_heaviest_rows_are_the_same_from_blocks(seed, n, distinct, fraction, n_cuts,
                                                     fetch):
    weight = _weights(seed, n, distinct)
    top = max(1, min(n, int(round(fraction * n))))
    expected = np.zeros(n, bool)
    expected[np.argsort(-weight, kind="stable")[:top]] = True  # a stable sort's first
    assert_array_equal(heaviest_rows(weight, top), expected)
    cuts = sorted(np.random.default_rng(seed).integers(0, n + 1, n_cuts).tolist())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(row_sampling, "FETCH_ROWS", fetch)  # (small: every pass counted)
        mask, _ = _blocks_threshold(weight, cuts, top)
    assert_array_equal(mask, expected)


def test_equal_weights_take_no_pass_and_spread_weights_few():
    weight = np.full(5000, 0.25)
    mask, passes = _blocks_threshold(weight, [1000, 1000, 3000], 1200)
    assert passes == [] and mask.sum() == 1200 and mask[:1200].all()  # the first rows
    weight = _weights(3, 200_000, None)
    mask, passes = _blocks_threshold(weight, [50_000, 120_000], 40_000)
    assert_array_equal(mask, heaviest_rows(weight, 40_000))
    assert len(passes) <= 3


def test_row_weights_do_not_depend_on_the_layout():
    rng = np.random.default_rng(0)
    wide = rng.lognormal(0, 2, (500, 23)).astype(np.float32)
    narrow = np.ascontiguousarray(wide[:, :20])
    assert_array_equal(row_weights(wide[:, :20]), row_weights(narrow))
    assert_array_equal(row_weights(narrow[100:300]), row_weights(narrow)[100:300])


def test_goss_draws_the_rest_by_place_and_scales_it_up():
    channels = np.random.default_rng(1).lognormal(0, 1, (900, 6))
    rows, amplify = sample_rows(channels, 0.3, "goss", np.random.RandomState(4))
    heavy = heaviest_rows(row_weights(channels), 180)
    assert heavy[rows].sum() == 180 and len(rows) == 180 + 90
    assert np.all(amplify[heavy] == 1) and np.allclose(amplify[rows[~heavy[rows]]], 720 / 90)
    assert np.all(np.diff(rows) > 0)
