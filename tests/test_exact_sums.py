"""Exact sums (superaccumulators): the correctly rounded sum of any finite doubles, the same in
any order and over any split into parts; checked against exact rational arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebelboost.exact_sums import (
    DIGITS,
    accumulator,
    exact_sum,
    normalize,
    rounded,
    sum_by_slot,
    sum_rows,
    sum_values,
)

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _reference(values) -> float:
    """The sum in exact rational arithmetic, rounded once (Python's int / int rounds
    correctly)."""
    total = sum((Fraction(float(v)) for v in values), Fraction(0))
    try:
        return total.numerator / total.denominator
    except OverflowError:
        return np.inf if total > 0 else -np.inf


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, max_size=60), st.randoms(use_true_random=False))
def test_exactly_rounded_in_any_order_and_any_split(values, random):
    want = _reference(values)
    assert exact_sum(np.array(values)) == want
    shuffled = list(values)
    random.shuffle(shuffled)
    cut = random.randint(0, len(shuffled))
    parts = sum_values(np.array(shuffled[:cut])) + sum_values(np.array(shuffled[cut:]))
    assert rounded(parts) == want


@pytest.mark.parametrize("values", [
    [5e-324, 5e-324, -5e-324],  # subnormals
    [1e308, 1e308, -1e308],  # beyond the float range on the way, not at the end
    [1e308, 1e308],  # beyond it at the end: infinity
    [1.0, 1e-300, -1.0],  # cancellation leaves the tiny value exactly
    [2.0 ** 53, 1.0, 1.0],  # a float sum in this order would lose both ones
    [0.1] * 10,
])
def test_hard_cases(values):
    assert exact_sum(np.array(values)) == _reference(values)


def test_normalize_keeps_the_integer_and_carries_large_digits():
    rng = np.random.default_rng(0)
    acc = rng.integers(-(2 ** 62), 2 ** 62, size=(3, DIGITS))
    acc[:, -4:] = 0  # (room above for the carries)
    value = [sum(int(d) << (32 * i) for i, d in enumerate(row)) for row in acc]
    normalize(acc)
    assert (acc[:, :-1] >= 0).all() and (acc[:, :-1] < 2 ** 32).all()
    assert [sum(int(d) << (32 * i) for i, d in enumerate(row)) for row in acc] == value


def test_row_sums_and_slot_sums_match_their_references():
    rng = np.random.default_rng(1)
    channels = rng.standard_normal((200, 3)) * 10.0 ** rng.integers(-200, 200, (200, 3))
    amplify, weight = rng.random(200) * 4, rng.random(200)
    rows = np.sort(rng.choice(200, 120, replace=False))
    got = rounded(sum_rows(channels, rows, amplify, weight))
    want = [_reference(channels[rows, j] * amplify[rows]) for j in range(3)]
    assert got.tolist() == want + [_reference(weight[rows])]
    slots = rng.integers(0, 5, (200, 2))
    covers = rounded(sum_by_slot(slots, weight, accumulator(2, 5)))
    for t in range(2):
        for s in range(5):
            assert covers[t, s] == _reference(weight[slots[:, t] == s])
