"""The feature-major histogram engine of the tree layers: exact sums, any subset, node labels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebelboost.binning import Binner
from rebelboost.search.histograms import (
    HistogramPool,
    bin_columns,
    column_histograms,
    node_totals,
    split_node,
)

FAST = settings(max_examples=60, deadline=None)


@st.composite
def layers(draw):
    """Binned data (sparse, dense and mixed features, NaN), channels, rows labelled by node."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n, d = draw(st.integers(1, 150)), draw(st.integers(1, 8))
    X = rng.integers(0, draw(st.sampled_from([1, 3, 40])), size=(n, d)).astype(float)
    X[rng.random((n, d)) < draw(st.sampled_from([0.0, 0.6, 0.95]))] = 0.0
    X[rng.random((n, d)) < draw(st.sampled_from([0.0, 0.1]))] = np.nan
    binner = Binner(draw(st.sampled_from([2, 3, 255])))
    bins = binner.fit_transform(X)
    n_channels = draw(st.sampled_from([1, 2, 5, 20]))
    channels = rng.exponential(size=(n, n_channels)) ** draw(st.sampled_from([1, 6]))
    channels[rng.random(channels.shape) < 0.3] = 0.0
    n_nodes = draw(st.integers(1, 4))
    node_of_row = rng.integers(-1, n_nodes + 1, size=n).astype(np.int32)  # some rows in no node
    max_density = draw(st.sampled_from([0.0, 0.5, 1.0]))
    return bins, binner.n_bins_total, channels, node_of_row, n_nodes, max_density, rng


def _reference(bins, nbt, channels, node_of_row, n_nodes, default_bin):
    """Row by row, by increasing index; a sparse feature's default bin by subtraction."""
    n, d = bins.shape
    hist = np.zeros((n_nodes, d, nbt, channels.shape[1]))
    totals = np.zeros((n_nodes, channels.shape[1]))
    for r in range(n):
        k = node_of_row[r]
        if 0 <= k < n_nodes:
            totals[k] += channels[r]
            for f in range(d):
                if bins[r, f] != default_bin[f]:
                    hist[k, f, bins[r, f]] += channels[r]
    for k in range(n_nodes):
        for f in range(d):
            if default_bin[f] >= 0:
                rest = totals[k].copy()
                for b in range(nbt):
                    if b != default_bin[f]:
                        rest -= hist[k, f, b]
                hist[k, f, default_bin[f]] = rest
    return hist, totals


@FAST
@given(layers())
def test_layer_histograms_equal_the_row_by_row_reference_bit_for_bit(layer):
    bins, nbt, channels, node_of_row, n_nodes, max_density, _ = layer
    columns = bin_columns(bins, max_density)
    hist, totals = column_histograms(columns, channels, node_of_row, n_nodes, nbt)
    ref_hist, ref_totals = _reference(bins, nbt, channels, node_of_row, n_nodes,
                                      columns.default_bin)
    np.testing.assert_array_equal(hist, ref_hist)
    np.testing.assert_array_equal(totals, ref_totals)
    np.testing.assert_array_equal(totals, node_totals(channels, node_of_row, n_nodes))


@FAST
@given(layers())
def test_any_subset_of_features_or_nodes_gives_the_same_bits(layer):
    bins, nbt, channels, node_of_row, n_nodes, max_density, rng = layer
    columns = bin_columns(bins, max_density)
    full, _ = column_histograms(columns, channels, node_of_row, n_nodes, nbt)
    pool = HistogramPool()
    features = rng.permutation(bins.shape[1])[: rng.integers(0, bins.shape[1] + 1)]
    for k in range(n_nodes):  # one node at a time, as QuickBoost finishes its survivors
        one, _ = column_histograms(columns, channels, node_of_row - k, 1, nbt, features, pool)
        np.testing.assert_array_equal(one[0, features], full[k, features])


@FAST
@given(layers())
def test_columns_store_every_entry_once(layer):
    bins, *_, max_density, _ = layer
    columns = bin_columns(bins, max_density)
    rebuilt = np.empty_like(bins)
    for f in range(bins.shape[1]):
        if columns.default_bin[f] >= 0:
            rebuilt[:, f] = columns.default_bin[f]
            span = slice(columns.indptr[f], columns.indptr[f + 1])
            rows = columns.entry_row[span]
            assert np.all(np.diff(rows.astype(np.int64)) > 0)
            assert np.all(columns.entry_bin[span] != columns.default_bin[f])
            rebuilt[rows, f] = columns.entry_bin[span]
        else:
            rebuilt[:, f] = columns.dense[columns.dense_slot[f]]
    np.testing.assert_array_equal(rebuilt, bins)


@FAST
@given(layers(), st.data())
def test_split_node_sends_each_row_to_its_side(layer, data):
    bins, nbt, _, node_of_row, n_nodes, max_density, rng = layer
    columns = bin_columns(bins, max_density)
    node = data.draw(st.integers(0, n_nodes - 1))
    f = data.draw(st.integers(0, bins.shape[1] - 1))
    threshold = data.draw(st.integers(0, nbt - 1))
    missing_bin, missing_left = nbt - 1, data.draw(st.booleans())
    labels = node_of_row.copy()
    split_node(columns, labels, node, f, threshold, missing_bin, missing_left, 10, 11)
    in_node = node_of_row == node
    b = bins[:, f]
    left = np.where(b == missing_bin, missing_left, b <= threshold)
    np.testing.assert_array_equal(labels[~in_node], node_of_row[~in_node])
    np.testing.assert_array_equal(labels[in_node], np.where(left, 10, 11)[in_node])


@pytest.mark.parametrize("case", ["dtype", "codes", "rows", "bins"])
def test_bad_inputs_are_refused(case):
    bins = np.zeros((5, 2), np.uint8)
    bins[0, 0] = 9
    columns = bin_columns(bins)
    channels, labels = np.ones((5, 2)), np.zeros(5, np.int32)
    calls = {
        "dtype": (TypeError, "uint8", lambda: bin_columns(bins.astype(np.int64))),
        "codes": (ValueError, "beyond n_bins_total",
                  lambda: column_histograms(columns, channels, labels, 1, 5)),
        "rows": (ValueError, "one row per sample",
                 lambda: column_histograms(columns, channels[:4], labels, 1, 16)),
        "bins": (ValueError, "n_bins_total must be",
                 lambda: column_histograms(columns, channels, labels, 1, 300)),
    }
    error, message, call = calls[case]
    with pytest.raises(error, match=message):
        call()
