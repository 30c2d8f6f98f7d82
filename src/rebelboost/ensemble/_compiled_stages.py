"""REBEL's vector-leaf trees boosted in one compiled call, for fits of under 65,536 rows x classes.

A small fit (a few hundred rows, hundreds of trees) spent most of its time in the Python
around each tree: the booster's stage, the family's row set, the grower's set-up and the
dispatch of a dozen compiled calls, ~45 us a tree against ~25 us of compiled work
(BENCHMARKS.md, "Boosting in one compiled call"). Where REBEL's weights take one thread and
every tree is one compiled call (:func:`applies`; inside it the tree's histograms use
numba's threads where they pay), the whole loop runs here: REBEL's weights, the tree
(:func:`.compiled_grower.grow_laid_out`), its leaf steps and the score update, iteration after
iteration. It takes the same steps in the same order as :meth:`.RebelBooster.fit_stage` with
:class:`.VectorTreeFamily`, so the model is the Python loop's bit for bit
(``tests/test_compiled_stages.py``); it holds no lock on the interpreter, so the cost route's
folds fit side by side on threads.
"""

from __future__ import annotations

import numba
import numpy as np

from ..engine import StageRun
from ..learners.compiled_grower import (
    category_options,
    category_words,
    children_together,
    fits_in_call,
    gather_rows,
    grow_laid_out,
    sparse_arrays,
)
from ..learners.leaf_tree import LeafTreeArrays
from ..learners.rebel_learners import VectorTreeFamily
from ..losses.rebel import PARALLEL_CELLS, _weights_serial, pairwise_sum, scale_and_loss
from ..search.histograms.dense import _task_starts, feature_tile
from ..search.histograms.sparse import _column_sums
from ..search.vector_children import scan_kinds
from ..search.vector_leaf import leaf_vectors, root_priors
from ..search.vector_scan import scan_tasks

# Stages per compiled call: its arrays are allocated for every stage it may fit, so a fit of
# many iterations that stops early at its target loss allocates a chunk's worth, not all.
CHUNK = 500


def applies(booster) -> bool:
    """Whether :func:`fit_stages` runs ``booster``'s fit: vector-leaf trees on every row and
    feature (no sampling), float histograms, REBEL's weights small enough for one thread
    (:data:`.PARALLEL_CELLS`) and every tree one :func:`.compiled_grower.grow_laid_out`.
    A root histogram that pays for threads is built on them inside the call, as the loop's
    trees build it (up to stop 51 it sent the fit to the Python loop, which took 1.03-1.12x
    this call's wall time on 1,500-5,000 rows: BENCHMARKS.md, stop 52)."""
    family = booster.family
    if type(family) is not VectorTreeFamily or booster.exact_sums:
        return False
    opt, grower = family.options, family.grower
    n, k = booster.scores.shape
    return (family._packed is not None and booster.channels.base is family._packed
            and opt.subsample >= 1.0 and opt.colsample_bytree >= 1.0
            and opt.histogram_bits is None
            and n * k < PARALLEL_CELLS
            and fits_in_call(grower, n))


def fit_stages(booster, n_iterations: int, target_loss: float | None) -> StageRun | None:
    """Up to ``n_iterations`` stages of ``booster`` in compiled calls of at most
    :data:`CHUNK` stages each (None where it does not :func:`apply <applies>`), stopping, as
    the boosting loop does, after the first whose loss is below ``target_loss`` or zero; the
    booster's scores, channels and scale advance."""
    if not applies(booster):
        return None
    family, loss = booster.family, booster.loss
    grower, opt, data = family.grower, family.options, family.data
    features = np.arange(grower.binner.n_features, dtype=np.intp)
    categorical, numeric = features[grower.categorical], features[~grower.categorical]
    n_cells, n_channels = grower.hist_shape
    numeric_cells = int(np.sum(grower.n_value_bins[numeric])) + len(numeric)  # (its scans')
    sparse = sparse_arrays(data)
    stop_below = -np.inf if target_loss is None else float(target_loss)
    row_weight = np.ascontiguousarray(family.sample_weight, dtype=np.float64)
    tile = feature_tile(n_cells / max(1, len(grower.n_value_bins)), n_channels)
    chunks, n_done = [], 0
    while n_done < n_iterations:
        asked = min(CHUNK, n_iterations - n_done)
        done, booster.scale, *arrays = _boost(
            asked, stop_below, float(booster.learning_rate), float(booster.scale),
            *loss._tables(), booster.scores, family._packed, row_weight,
            grower.histogram_store, data.bins, features, grower.n_value_bins,
            grower.has_missing, grower.offsets, grower.missing_bin,
            grower.layout.n_bins_total, float(opt.leaf_smoothing),
            float(opt.min_samples_leaf), opt.max_leaves,
            -1 if opt.max_depth is None else opt.max_depth,
            _task_starts(len(features), numba.get_num_threads()),
            tile, sparse, grower.thresholds, gather_rows(n_channels),
            scan_tasks(numeric_cells, n_channels), float(opt.cat_l2),
            (categorical, numeric, *category_options(grower, categorical))
            if len(categorical) else None,
            children_together(scan_kinds(grower.categorical, grower.has_missing), tile, features,
                              data))
        chunks.append([a[:done] for a in arrays])
        n_done += done
        last = arrays[4][done - 1]
        if done < asked or last < stop_below or last == 0.0:
            break  # stopped at the target (or a zero loss)
    nodes, threshold, missing_left, values, losses, gains, n_gains, work, tables, covers = (
        np.concatenate(parts) if len(parts) > 1 else parts[0]  # (one chunk: no copy)
        for parts in zip(*chunks, strict=True))
    feature, left, right = (np.ascontiguousarray(nodes[:, i]) for i in range(3))
    split = np.arange(gains.shape[1]) < n_gains[:, None]  # each stage's splits, in order
    words = None
    if len(categorical):  # (the bitsets of the whole stack, as its trees' stacked)
        words = category_words(grower.binner, feature.ravel(), threshold.ravel(),
                               tables.reshape(-1, tables.shape[2]))
        words = None if words is None else words.reshape(*feature.shape, -1)
    return StageRun(LeafTreeArrays(feature, threshold, missing_left, left, right,
                                   category_words=words), values,
                    losses.tolist(), feature[split].astype(np.intp), gains[split],
                    [{"vector": None, "work": w} for w in work.tolist()],
                    covers if booster.cover_weight is not None else None)


@numba.njit(cache=True, nogil=True)
def _boost(n_iterations, stop_below, learning_rate, scale, log_plus, log_minus, row_of, log_w,
           scores, packed, row_weight, store, bins, features, n_value_bins, has_missing,
           offsets, missing_bin, n_bins_total, smoothing, min_samples_leaf, max_leaves,
           max_depth, starts, tile, sparse, thresholds, gather_rows,
           scan_tasks, cat_l2, categories, together):
    """The stages: per tree its nodes (4, max_leaves - 1) (feature, left, right, split bin),
    thresholds, missing sides, shrunk leaf values, loss after it, its splits' gains (in the
    scale of the weights it was fitted to), histogram additions and the bins its nodes of
    category sets send left (none without categorical features), and the row weight reaching
    each leaf (its cover). ``packed`` holds the current weights (its first 2K columns) and
    the row weights; ``scores`` and ``packed`` advance in place. ``categories``: the
    categorical and the numeric features and the category search's options
    (:func:`.compiled_grower.category_options`); each tree takes its category prior from its
    root, with ``cat_l2`` more pseudo-rows. None: no categorical feature, and no category
    search compiled (:func:`.compiled_grower.grow_numeric`)."""
    n, k = scores.shape
    m = max_leaves - 1
    n_tables = 0 if categories is None else n_iterations
    tables_out = np.zeros((n_tables, m, n_bins_total), dtype=np.bool_)
    channels = packed[:, :2 * k]
    nodes = np.empty((n_iterations, 4, m), dtype=np.int32)
    thresholds_out = np.empty((n_iterations, m))
    missing_out = np.empty((n_iterations, m), dtype=np.bool_)
    values = np.zeros((n_iterations, max_leaves, k))
    covers = np.zeros((n_iterations, max_leaves))
    losses = np.empty(n_iterations)
    gains_out = np.zeros((n_iterations, m))
    n_gains = np.zeros(n_iterations, dtype=np.int64)
    work = np.zeros(n_iterations, dtype=np.int64)
    order = np.empty(n, dtype=np.intp)
    scratch = np.empty(n, dtype=np.intp)
    done = 0
    for it in range(n_iterations):
        for r in range(n):  # (a fresh row set: every row, in order)
            order[r] = r
        root_sums = _column_sums(packed)
        prior, category_prior, _ = root_priors(root_sums, k, smoothing, smoothing + cat_l2)
        (table, threshold, missing_left, leaf_sums, _, leaf_of_row, gains, updates, _,
         _, node_tables) = grow_laid_out(
            store, packed, root_sums, channels, row_weight, None, order, scratch, bins,
            features, n_value_bins, has_missing, offsets, missing_bin, n_bins_total, prior,
            min_samples_leaf, max_leaves, max_depth, starts, tile, sparse, thresholds, n,
            gather_rows, scan_tasks, category_prior, categories, together)
        nodes[it] = table
        if categories is not None:
            tables_out[it] = node_tables
        thresholds_out[it] = threshold
        missing_out[it] = missing_left
        leaf_values = values[it]
        leaf_vectors(leaf_sums, prior, k, leaf_values)
        for i in range(max_leaves):
            for c in range(k):
                leaf_values[i, c] = learning_rate * leaf_values[i, c]
        for r in range(n):
            s = leaf_of_row[r]
            covers[it, s] += row_weight[r]  # (in row order, as tree_tables.leaf_covers)
            for c in range(k):
                scores[r, c] += leaf_values[s, c]
        for j in range(gains.shape[0]):
            gains_out[it, j] = gains[j] * scale
        n_gains[it] = gains.shape[0]
        work[it] = updates
        shift, row_sums = _weights_serial(log_plus, log_minus, row_of, log_w, scores, channels)
        scale, loss = scale_and_loss(shift, pairwise_sum(row_sums))
        losses[it] = loss
        done = it + 1
        if loss < stop_below or loss == 0.0:
            break
    return (done, scale, nodes, thresholds_out, missing_out, values, losses, gains_out,
            n_gains, work, tables_out, covers)
