"""A vector-leaf tree grown in one compiled call, for rows held in this process.

:class:`.vector_tree.VectorTreeGrower` grows a tree leaf by leaf in Python around compiled
kernels. Up to tens of thousands of rows the Python between the kernels (the leaf heap, each
child's sums and histogram, the split tables, the tree's arrays) is much of a tree's time
(BENCHMARKS.md, "Less bookkeeping per leaf"). Here the same loop runs in numba for the common
case (:func:`applies`): rows in this process (:class:`.row_set.LocalRows`), float
histograms, and every histogram the tree keeps within the grower's budget; categorical
features are searched for category-set splits by the Python grower's own compiled search
(:func:`.category_split.best_category_in_leaf`). It takes the same decisions from the same
sums, summed in the same order, and breaks ties the same way (the leaf heap's order, the
scan's pick), so the tree is the Python grower's bit for bit
(``tests/test_compiled_grower.py`` grows both on random data), and lays the tree out as the
Python grower does (node arrays, leaves left to right, each row's leaf).
"""

from __future__ import annotations

import heapq

import numba
import numpy as np

from ..search.category_split import best_category_in_leaf, category_tasks
from ..search.histograms.dense import (
    _add_rows_parallel,
    _add_rows_serial,
    _task_starts,
    feature_tile,
    threads_pay,
    threads_pay_compiled,
)
from ..search.histograms.leaf import _subtract_serial
from ..search.histograms.sparse import (
    _column_sums,
    _fill_defaults,
    _fill_defaults_serial,
    _sparse_parallel,
    _sparse_serial,
    add_column_sums,
    entry_share,
)
from ..search.splits import TIE_RTOL, pick_index
from ..search.vector_children import (
    children_claimed,
    claimed_tiles,
    sparse_blocks,
    sparse_children_claimed,
)
from ..search.vector_leaf import leaf_loss
from ..search.vector_scan import best_in_tasks
from .category_sets import masks_to_bitsets
from .row_channels import _gather_into, row_sums
from .row_set import (
    BinTree,
    LocalRows,
    _partition_in_place_serial,
    route_bins,
    split_table,
)

# leaf fields (int64 table): the rows' range of the order array, depth, parent leaf (-1: the
# root), side, histogram slot (-1: none), split feature (-1: no split), split bin, missing
# side (1: left), and whether the split sends a set of categories left (1) or a threshold's
_START, _STOP, _DEPTH, _PARENT, _SIDE, _SLOT, _FEATURE, _BIN, _MISSING, _SET = range(10)
_MAX_ROWS = 1 << 18  # rows of the trees grown here (above, the Python grower's threads pay)
# Bytes of a child's channels gathered at once for its histogram: a tree's largest gathered
# copy was up to half the rows' channels (2.6 MB of shuttle's fit, whose peak memory it set).
GATHER_BYTES = 1 << 19
# A split's work (the smaller child's additions, the cells subtracted and scanned, times the
# channels) from which its children are built and scanned in one region on every thread
# (:func:`.vector_children.children_claimed`). A region costs the threads' wake-up and the
# claims' bookkeeping whatever its work, so small splits stay on the calling thread: chosen
# among 8,192, 32,768 and 131,072 on 45 sets (43 of the suite's and two synthetic ones),
# 0.93x the fit's wall time against none on the threads at 131,072, never above 1.18x
# (the suite's other three, sleep, fars and mnist: 0.99x, 0.83x, 0.77x);
# 8,192 (stop 45's choice, 0.88x then) measured 1.08x at stop 48, 19 sets above 1.1x (the
# cause not isolated: stops 46-47 changed the claimed kernels, and the serial fits ran
# 1.2-1.4x faster than at stop 45) (``benchmarks/children_threads.py``; BENCHMARKS.md, "A
# split's children on every thread" and stop 48).
PARALLEL_CHILDREN_WORK = 1 << 17


def gather_rows(n_channels: int) -> int:
    """Rows of a child's channels :func:`grow_numeric` gathers at a time."""
    return max(1, GATHER_BYTES // (8 * n_channels))


@numba.njit(cache=True, nogil=True)
def _threads_pay(n_rows, bins, features, n_channels, starts, sparse):
    """Whether a histogram of ``n_rows`` rows runs on numba's threads: its additions pay
    for them (:func:`~..search.histograms.dense.threads_pay`; sparse bins count their
    entries, as :attr:`.BinnedData.entry_fraction`) and ``starts`` deals the features to
    several tasks."""
    fraction = 1.0
    if sparse is not None:
        fraction = entry_share(sparse[2].shape[0], bins.shape[0], bins.shape[1])
    return starts.shape[0] > 2 and threads_pay_compiled(n_rows, features.shape[0], n_channels,
                                                        fraction)


@numba.njit(cache=True, nogil=True)
def _add_block(hist, block, rows, bins, features, caps, offsets, starts, tile, sparse, parallel,
               fresh):
    """Adds ``rows`` (``block[i]`` row ``rows[i]``'s channels) to ``hist``; ``fresh``: the
    features' cells cleared first (sparse bins: the whole histogram, whose default bins the
    caller fills once every row is in)."""
    n_rows, n_channels = block.shape
    if sparse is None:
        if parallel:
            _add_rows_parallel(bins, block, rows, np.intp(0), n_rows, features, starts, hist,
                               caps, offsets, tile, fresh, None, ())
        else:
            _add_rows_serial(bins, block, rows, np.intp(0), n_rows, features, starts, hist,
                             caps, offsets, tile, fresh, None, ())
        return
    _, indptr, entries = sparse
    if fresh:
        hist[:] = 0.0
    if parallel:
        _sparse_parallel(indptr, entries, block.reshape(-1), n_channels, rows, 0, n_rows, hist,
                         offsets, caps, ())
    else:
        _sparse_serial(indptr, entries, block.reshape(-1), n_channels, rows, 0, n_rows, hist,
                       offsets, caps, ())


@numba.njit(cache=True, nogil=True)
def _fill_sparse_defaults(hist, sparse, offsets, sums, parallel):
    """Sparse bins: each feature's default bin is the rest of the leaf's ``sums``."""
    if sparse is None:
        return
    if parallel:
        _fill_defaults(hist, offsets, sparse[0], sums)
    else:
        _fill_defaults_serial(hist, offsets, sparse[0], sums)


# (_build, _build_in_blocks and grow_laid_out are inlined by numba into their callers: a
# function compiled on its own has LLVM optimize everything it calls once more, 1-4 s of a
# fresh install's first fit for each of these wrappers: BENCHMARKS.md, issue 27, stop 71)
@numba.njit(cache=True, nogil=True, inline="always")
def _build(hist, gathered, order, start, stop, sums, bins, features, caps, offsets, starts,
           tile, sparse):
    """A leaf's histogram into ``hist`` (:func:`~..search.histograms.leaf.
    build_leaf_histogram`) from its rows' channels ``gathered`` (row ``order[start + i]``'s
    in ``gathered[i]``); ``caps``: the features' value bins (intp); ``sparse``
    (:func:`sparse_arrays`): the sparse bins' default bin per feature, with their ``indptr``
    and ``entries`` (None: dense bins, and numba compiles no sparse kernel in). Where
    :func:`_threads_pay`, the features' tasks run on numba's threads (each feature's cells
    add the same rows in the same order: the same histogram)."""
    rows = order[start:stop]
    parallel = _threads_pay(stop - start, bins, features, gathered.shape[1], starts, sparse)
    _add_block(hist, gathered, rows, bins, features, caps, offsets, starts, tile, sparse,
               parallel, np.bool_(True))
    _fill_sparse_defaults(hist, sparse, offsets, sums, parallel)


@numba.njit(cache=True, nogil=True)
def _gather_rows(out, channels, rows, amplify, row_weight):
    """:func:`.row_channels._gather_into` of ``rows`` into ``out``, called rather than
    inlined: :func:`grow_numeric` with the gather's loop inlined took 1.05-1.15x the fit's
    wall time on sleep, connect4 and nursery (BENCHMARKS.md, stop 52)."""
    _gather_into(out, channels, rows, amplify, row_weight, 0, rows.shape[0])


@numba.njit(cache=True, nogil=True, inline="always")
def _build_in_blocks(hist, buffer, channels, amplify, row_weight, order, start, stop, bins,
                     features, caps, offsets, starts, tile, sparse):
    """:func:`_build` for a leaf of more rows than ``buffer`` holds, returning the leaf's
    sums: its rows' channels are gathered a buffer at a time (each cell still adds its rows in
    row order: the same histogram as from one gathered copy of them all, which cost up to half
    the rows' channels in memory), and summed from the buffer as they come (in row order: the
    bits of :func:`.row_channels.row_sums`, without reading the scattered rows a second
    time)."""
    rows = order[start:stop]
    n_rows, size = stop - start, buffer.shape[0]
    sums = np.zeros(buffer.shape[1])
    parallel = _threads_pay(n_rows, bins, features, buffer.shape[1], starts, sparse)
    for b0 in range(0, n_rows, size):
        b1 = min(n_rows, b0 + size)
        block = buffer[:b1 - b0]
        _gather_rows(block, channels, rows[b0:b1], amplify, row_weight)
        add_column_sums(sums, block)
        _add_block(hist, block, rows[b0:b1], bins, features, caps, offsets, starts, tile,
                   sparse, parallel, b0 == 0)
    _fill_sparse_defaults(hist, sparse, offsets, sums, parallel)
    return sums


@numba.njit(cache=True, nogil=True)
def _take_slot(pool, free, n_cells, n_channels):
    """A free histogram buffer of ``pool`` (one more allocated if none is free), and how many
    are now taken."""
    if len(free) == 0:
        pool.append(np.empty((n_cells, n_channels)))
        free.append(len(pool) - 1)
    slot = free.pop()
    return slot, len(pool) - len(free)


@numba.njit(cache=True, nogil=True)
def _can_split(leaf, sums, losses, j, min_weight, max_depth, n_features):
    """:meth:`.vector_tree.VectorTreeGrower._can_split`."""
    return (leaf[j, _STOP] - leaf[j, _START] >= 2 and sums[j, sums.shape[1] - 1] >= min_weight
            and (max_depth < 0 or leaf[j, _DEPTH] < max_depth) and losses[j] > 0.0
            and n_features > 0)


@numba.njit(cache=True, nogil=True)
def grow_numeric(store, root_rows, root_sums, channels, row_weight, amplify, order, scratch,
                 bins, features, n_value_bins, has_missing, offsets, missing_bin, n_bins_total,
                 prior, min_samples_leaf, max_leaves, max_depth, starts, tile, sparse,
                 gather_rows, scan_tasks, category_prior, categories, together):
    """Grow one tree over the rows ``order`` (partitioned in place, as the row set does).

    ``store``: (S >= 1, n_cells, C) histogram buffers kept from tree to tree (fresh memory costs
    a page fault a page), ``store[0]`` the root's histogram if it can be split: built here from
    ``root_rows`` (its rows' channels, gathered; its additions counted), or (no rows) by the
    caller on every thread; ``root_sums`` its sums; buffers beyond ``store`` are allocated as
    needed (returned: how many the tree used at most). ``sparse`` (:func:`sparse_arrays`): the
    sparse bins' arrays, None for dense bins (the sparse kernels, behind branches on the
    argument itself, are then not compiled). ``max_depth`` -1: none; ``gather_rows``:
    rows of a child's channels gathered at a time (:func:`gather_rows`). A histogram whose
    additions pay for threads (:func:`.dense.threads_pay`) runs on numba's threads (``starts``:
    the features' tasks; one task keeps it on the calling thread), and so does a leaf's scan in
    ``scan_tasks`` > 1 feature blocks (:func:`.vector_scan.scan_tasks`). ``together``
    (:func:`children_together`): where there are threads, the root (its histogram built here)
    and each split whose larger child can be split are searched in one region whose threads
    claim tiles of features (:func:`.vector_children.children_claimed`; over sparse bins the
    entries' feature blocks, :func:`.vector_children.sparse_children_claimed`), from that much
    work: the smaller child's histogram built there where its channels are gathered whole,
    the larger one's subtracted, both scanned. Every other kernel runs on the calling
    thread (partitions and gathers on threads, from 2,048-32,768 rows, did not pay:
    BENCHMARKS.md, stop 52). Returns ``(leaves, sums, losses, nodes, gains, updates, searched,
    held)``: ``leaves`` (L, 9) the int fields of every leaf made (the root, then each
    split's children, left and right), ``sums`` (L, C) and ``losses`` (L,) theirs, ``nodes`` the
    leaves split, in split order, with their loss reductions ``gains``; the histogram additions
    made here and the leaves searched, the most histograms held at once (at most
    ``max_leaves // 2 + 1``: those of leaves ranked below the splits left are given back);
    ``tables`` (L, n_bins_total) the bins each leaf's split
    sends left where it splits a set of categories (``leaves[:, _SET]``).

    ``categories`` (:func:`category_search`): the tree's categorical features (at least
    one), scanned for category-set splits with ``category_prior`` as
    :meth:`.vector_tree.VectorTreeGrower._choose` does, and what that search reads; the
    numeric features are the rest of ``features``. None: every feature is numeric, and numba
    prunes the category search from this compile (its branches test the argument itself),
    the first fit's longest kernel (BENCHMARKS.md, stop 48)."""
    k = prior.shape[0]
    n_channels = channels.shape[1] + 1
    n_cells = offsets[-1]
    n_features = features.shape[0]
    cap = 2 * max_leaves + 1
    leaf = np.full((cap, 10), -1, dtype=np.int64)
    if categories is None:
        numeric, n_tables = features, 0
    else:
        numeric, n_tables = categories[1], cap
    tables = np.zeros((n_tables, n_bins_total), dtype=np.bool_)
    sums = np.zeros((cap, n_channels))
    losses = np.zeros(cap)
    nodes = np.empty(max_leaves, dtype=np.int64)
    gains = np.empty(max_leaves)
    caps = n_value_bins.astype(np.intp)
    # (a child's channels, in the channels' dtype)
    buffer = np.empty((min(order.shape[0], gather_rows), n_channels), channels.dtype)
    pool = [store[s] for s in range(store.shape[0])]  # histograms, taken and given back
    free = [s for s in range(store.shape[0] - 1, -1, -1)]  # (slot 0 first: the root's)
    n_made, n_nodes, updates, searched, ticket, held = 1, 0, 0, 0, 1, 0
    min_weight = 2.0 * min_samples_leaf
    sums[0] = root_sums
    leaf[0, _START], leaf[0, _STOP], leaf[0, _DEPTH], leaf[0, _SIDE] = 0, order.shape[0], 0, 0
    losses[0] = leaf_loss(sums[0], prior, k)
    # the root, and a split's children, in one claimed region (2 threads or more): what each
    # feature scans, the tiles threads claim, and the per-feature bests (rows: the root or the
    # smaller child, the larger child)
    n_threads, least_work, scanned, tiles, blocks = together
    threaded = n_threads > 1 and n_features > 1
    # sparse bins: a leaf's additions are its rows' entries (the claimed tiles are their
    # feature blocks; none given: built on the calling thread)
    if sparse is None:
        claims_all, entry_features = True, float(n_features)
    else:
        claims_all = blocks.shape[1] > 1
        entry_features = bins.shape[1] * entry_share(sparse[2].shape[0], bins.shape[0],
                                                     bins.shape[1])
    counter = np.zeros(1, dtype=np.int64)
    # the claimed kernels' flags, typed bool: a literal True or False types another signature
    # of the kernels, compiled again (8-19 s each on a fresh cache: BENCHMARKS.md, stop 47)
    yes, no = np.bool_(True), np.bool_(False)
    child_scores = np.full((2, n_features), np.inf)
    child_bins = np.zeros((2, n_features), dtype=np.int32)
    child_missing = np.zeros((2, n_features), dtype=np.bool_)
    found = np.full(cap, -2, dtype=np.int64)  # a made leaf's scan (-2: not yet; -1: none)
    found_row = np.zeros(cap, dtype=np.int64)  # and its row of the bests
    if root_rows.shape[0] > 0 and _can_split(leaf, sums, losses, np.intp(0), min_weight,
                                             max_depth, n_features):
        n_rows = order.shape[0]
        if (threaded and claims_all
                and (n_rows * entry_features + n_cells) * n_channels >= least_work):
            child_scores[:] = np.inf
            if sparse is not None:
                default_bin, indptr, entries = sparse
                sparse_children_claimed(indptr, entries, default_bin, root_rows, order,
                                        root_sums,
                                        features, blocks, store[0], store[0], caps, offsets,
                                        scanned, prior, float(min_samples_leaf), yes, no,
                                        child_scores, child_bins, child_missing, counter,
                                        n_threads)
            else:
                children_claimed(bins, root_rows, order, features, tiles, store[0], store[0],
                                 caps, offsets, (), scanned, prior, float(min_samples_leaf),
                                 yes, yes, no, child_scores, child_bins, child_missing,
                                 counter, n_threads)
            found[0] = pick_index(child_scores[0])
        else:
            _build(store[0], root_rows, order, np.intp(0), n_rows, root_sums, bins, features,
                   caps, offsets, starts, tile, sparse)
        updates += n_rows * n_features
    heap = [(0.0, 0, 0)]
    heap.pop()
    to_search = [0]
    while True:
        for j in to_search:  # (the Python grower's _search, children left then right)
            if not _can_split(leaf, sums, losses, j, min_weight, max_depth, n_features):
                continue
            slot = leaf[j, _SLOT]
            if slot < 0:  # the root: its histogram came built
                slot, taken = _take_slot(pool, free, n_cells, n_channels)
                held = max(held, taken)
                leaf[j, _SLOT] = slot
            searched += 1
            if found[j] == -2:
                # (``caps``, the value bins as intp: the children's scan's types, so the
                # one scan compiles once)
                index, score, split_bin, missing_left = best_in_tasks(
                    pool[slot], numeric, caps, has_missing, offsets, prior,
                    float(min_samples_leaf), scan_tasks)
                feature = numeric[index] if index >= 0 else -1
            else:  # scanned in a claimed region
                side, index = found_row[j], found[j]
                score = child_scores[side, index] if index >= 0 else np.inf
                split_bin, missing_left = child_bins[side, index], child_missing[side, index]
                feature = features[index] if index >= 0 else -1
            best = losses[j]
            if index >= 0 and score < best * (1.0 - TIE_RTOL):
                leaf[j, _FEATURE], leaf[j, _BIN] = feature, split_bin
                leaf[j, _MISSING], leaf[j, _SET], best = 1 if missing_left else 0, 0, score
            if categories is not None:  # a set of categories, where better still
                (categorical, _, cat_smooth, min_per_category, max_left, max_onehot,
                 category_blocks) = categories
                index, score, split_bin, missing_left = best_category_in_leaf(
                    pool[slot], categorical, n_value_bins, has_missing, offsets,
                    category_prior, float(min_samples_leaf), cat_smooth, min_per_category,
                    max_left, max_onehot, missing_bin, best, category_blocks, tables[j])
                if index >= 0 and score < best * (1.0 - TIE_RTOL):
                    leaf[j, _FEATURE], leaf[j, _BIN] = categorical[index], split_bin
                    leaf[j, _MISSING], leaf[j, _SET], best = 1 if missing_left else 0, 1, score
            if best < losses[j]:
                heapq.heappush(heap, (-(losses[j] - best), 0 if j == 0 else ticket, j))
                ticket += 0 if j == 0 else 1
            else:  # no split: its histogram is not read again
                free.append(slot)
                leaf[j, _SLOT] = -1
        if len(heap) == 0 or n_made - n_nodes >= max_leaves:
            break
        splits_left = max_leaves - (n_made - n_nodes)
        if len(heap) > splits_left:  # (the Python grower's _enforce_budget) those ranked
            # below the splits left are never split: each split takes the best leaf, and
            # those above them all go first; their histograms are given back
            heap.sort()
            for e in range(splits_left, len(heap)):
                j = heap[e][2]
                if leaf[j, _SLOT] >= 0:
                    free.append(leaf[j, _SLOT])
                    leaf[j, _SLOT] = -1
            del heap[splits_left:]  # (a sorted list is a heap)
        neg_gain, _, i = heapq.heappop(heap)
        nodes[n_nodes], gains[n_nodes] = i, -neg_gain
        n_nodes += 1
        start, stop = leaf[i, _START], leaf[i, _STOP]
        if leaf[i, _SET] == 1:  # (the category search's table: its missing side set)
            table = tables[i]
        else:
            table = np.arange(n_bins_total) <= leaf[i, _BIN]  # (the row set's split_table)
            table[missing_bin] = leaf[i, _MISSING] == 1
        middle = start + _partition_in_place_serial(bins, order, scratch, start, stop,
                                                    leaf[i, _FEATURE], table)
        left, right = n_made, n_made + 1
        n_made += 2
        for j, s0, s1 in ((left, start, middle), (right, middle, stop)):
            leaf[j, _START], leaf[j, _STOP] = s0, s1
            leaf[j, _DEPTH], leaf[j, _PARENT] = leaf[i, _DEPTH] + 1, i
            leaf[j, _SIDE] = j - left
        small, big = (left, right) if middle - start <= stop - middle else (right, left)
        s0, s1 = leaf[small, _START], leaf[small, _STOP]
        gathered = buffer[:s1 - s0]
        whole = s1 - s0 <= buffer.shape[0]  # (else gathered in blocks, and built there)
        last = n_made - n_nodes >= max_leaves  # (the children are the tree's last leaves)
        slot = -1
        if whole:
            _gather_rows(gathered, channels, order[s0:s1], amplify, row_weight)
            sums[small] = _column_sums(gathered)
        elif last:
            sums[small] = row_sums(channels, order[s0:s1], amplify, row_weight)
        else:  # built while its rows are summed: one read of them (wasted if neither child
            # can be split, which so many rows rarely are)
            slot, taken = _take_slot(pool, free, n_cells, n_channels)
            held = max(held, taken)
            sums[small] = _build_in_blocks(pool[slot], buffer, channels, amplify, row_weight,
                                           order, s0, s1, bins, features, caps, offsets,
                                           starts, tile, sparse)
        sums[big] = sums[i] - sums[small]
        losses[left] = leaf_loss(sums[left], prior, k)
        losses[right] = leaf_loss(sums[right], prior, k)
        # the children's histograms (_children_histograms): the smaller built, the larger
        # its parent's minus it
        # (the last split's children are never split: neither built nor searched)
        want_small = not last and _can_split(leaf, sums, losses, small, min_weight, max_depth,
                                             n_features)
        want_big = not last and _can_split(leaf, sums, losses, big, min_weight, max_depth,
                                           n_features)
        parent_slot = leaf[i, _SLOT]
        leaf[i, _SLOT] = -1
        if want_small or want_big:
            if slot < 0:
                slot, taken = _take_slot(pool, free, n_cells, n_channels)
                held = max(held, taken)
            updates += (s1 - s0) * n_features
            # both children in one region on every thread where the work pays: the larger
            # child can be split, and the smaller one's histogram is built there too where
            # its channels are gathered whole
            built = not (threaded and whole and claims_all)
            work = float(n_cells * (1 + want_small + want_big) * n_channels)
            if not built:
                work += (s1 - s0) * entry_features * n_channels
            claimed = threaded and want_big and work >= least_work
            if (built or not claimed) and whole:
                _build(pool[slot], gathered, order, s0, s1, sums[small], bins, features,
                       caps, offsets, starts, tile, sparse)
            if claimed:
                child_scores[:] = np.inf
                if sparse is not None and not built:
                    default_bin, indptr, entries = sparse
                    sparse_children_claimed(
                        indptr, entries, default_bin, gathered, order[s0:s1], sums[small],
                        features, blocks, pool[slot], pool[parent_slot], caps, offsets,
                        scanned, prior, float(min_samples_leaf), want_small, yes,
                        child_scores, child_bins, child_missing, counter, n_threads)
                else:
                    children_claimed(bins, gathered, order[s0:s1], features, tiles, pool[slot],
                                     pool[parent_slot], caps, offsets, (), scanned,
                                     prior, float(min_samples_leaf), not built, want_small,
                                     yes, child_scores, child_bins, child_missing, counter,
                                     n_threads)
                found[big], found_row[big] = pick_index(child_scores[1]), 1
                if want_small:
                    found[small] = pick_index(child_scores[0])
            elif want_big:
                _subtract_serial(pool[parent_slot], pool[slot])
            if want_big:
                leaf[big, _SLOT] = parent_slot
            else:
                free.append(parent_slot)
            if want_small:
                leaf[small, _SLOT] = slot
            else:
                free.append(slot)
        else:
            free.append(parent_slot)
            if slot >= 0:
                free.append(slot)
        if last:  # (nothing more to search: the tree is whole)
            break
        to_search = [left, right]
    return (leaf[:n_made].copy(), sums[:n_made].copy(), losses[:n_made].copy(),
            nodes[:n_nodes].copy(), gains[:n_nodes].copy(), updates, searched, held,
            tables)


def children_together(scanned: np.ndarray, tile: int, features: np.ndarray, data) -> tuple:
    """:func:`grow_numeric`'s ``together`` for a tree's ``features`` over binned ``data``:
    numba's threads now, :data:`PARALLEL_CHILDREN_WORK` (read at each call, so that tests
    can lower it), what each feature scans (:func:`.vector_children.scan_kinds`), the tiles
    that the threads claim over dense bins (:func:`.vector_children.claimed_tiles`), and
    over sparse bins their entries' feature blocks (:func:`.vector_children.sparse_blocks`)."""
    n_threads = numba.get_num_threads()
    tiles = claimed_tiles(len(scanned), tile, n_threads)
    blocks = (np.empty((2, 0), dtype=np.intp) if data.sparse is None
              else sparse_blocks(data.sparse.edges, features))
    return n_threads, PARALLEL_CHILDREN_WORK, np.ascontiguousarray(scanned), tiles, blocks


def sparse_arrays(data) -> tuple | None:
    """:func:`grow_numeric`'s ``sparse`` for binned ``data``: its sparse bins' default bin
    per feature, ``indptr`` and ``entries``; None for dense bins (numba then prunes the
    sparse kernels from the compile: BENCHMARKS.md, stop 48)."""
    if data.sparse is None:
        return None
    return (np.ascontiguousarray(data.sparse.default_bin, dtype=np.intp), data.sparse.indptr,
            data.sparse.entries)


def applies(grower, rows) -> bool:
    """Whether :func:`grow_numeric` grows ``grower``'s tree over ``rows``: rows in this
    process with float histograms (categorical features too), histograms small enough for the
    one-thread scan, every histogram the tree can hold at once within the grower's budget
    (so the Python grower would drop none either), and under 262,144 rows. The histograms whose
    additions pay for threads (:func:`.dense.threads_pay`) run on numba's threads (split by
    feature, as the Python grower's), every other kernel on the calling thread, where the Python
    grower's threads split by feature or keep the order (a stable partition): the tree is the
    same either way, and up to that size the compiled tree was the faster (BENCHMARKS.md, "Trees
    compiled up to 131,072 rows" and "Boosting in one compiled call"): 0.76-0.82x the fit's wall
    time on connect4 and sleep, 0.93-0.96x on 100,000-300,000 synthetic rows of 20 dense
    features; 1.16x on 500,000, where the Python grower's threaded partitions pay
    (``benchmarks/compiled_tree_limit.py``)."""
    return (type(rows) is LocalRows and rows.quantized is None
            and fits_in_call(grower, len(rows.order)))


def fits_in_call(grower, n_rows: int) -> bool:
    """Whether ``grower``'s trees over ``n_rows`` rows fit :func:`grow_numeric`: histograms
    for the one-thread scan, as many as the tree can hold at once within the grower's budget,
    and under 262,144 rows (:func:`applies`)."""
    return (not grower._big_histograms and n_rows < _MAX_ROWS
            and grower.histograms_in_budget() > grower.options.max_leaves)


@numba.njit(cache=True, nogil=True, inline="always")  # (inlined: see _build's comment)
def grow_laid_out(store, root_rows, root_sums, channels, row_weight, amplify, order, scratch,
                  bins, features, n_value_bins, has_missing, offsets, missing_bin,
                  n_bins_total, prior, min_samples_leaf, max_leaves, max_depth, starts, tile,
                  sparse, thresholds, n_samples, gather_rows, scan_tasks,
                  category_prior, categories, together):
    """:func:`grow_numeric` and :func:`_lay_out` in one call (each array a call returns
    costs a microsecond or so): ``(nodes, threshold, missing_left, leaf sums, loss, leaf of
    every row, gains, updates, searched, histograms held at once, set tables)``, ``nodes`` (4,
    max_leaves - 1) int32: feature, left, right and split bin; the set tables: the bins
    each node of a category-set split sends left (:func:`_lay_out`)."""
    leaves, sums, losses, split, gains, updates, searched, held, tables = grow_numeric(
        store, root_rows, root_sums, channels, row_weight, amplify, order, scratch, bins,
        features, n_value_bins, has_missing, offsets, missing_bin, n_bins_total, prior,
        min_samples_leaf, max_leaves, max_depth, starts, tile, sparse, gather_rows,
        scan_tasks, category_prior, categories, together)
    leaf_of_row = np.zeros(n_samples, dtype=np.intp)
    nodes, threshold, missing_left, ordered, loss, node_tables = _lay_out(
        leaves, sums, losses, split, has_missing, thresholds, order, leaf_of_row, max_leaves,
        tables, missing_bin)
    return (nodes, threshold, missing_left, ordered, loss, leaf_of_row, gains, updates,
            searched, held, node_tables)


@numba.njit(cache=True, nogil=True)
def _lay_out(leaf, sums, losses, nodes, has_missing, thresholds, order, leaf_of_row,
             max_leaves, tables, missing_bin):
    """:func:`grow_numeric`'s tree as :meth:`.vector_tree.VectorTreeGrower._assemble` lays it
    out: the node arrays (``max_leaves - 1`` nodes, the unused ones sending every row to leaf
    0; a leaf child ``~i``, leaves numbered left to right: feature, left, right and split
    bin in one int32 table, the thresholds (NaN: a set of categories) and missing sides),
    the leaves' sums in that order and their summed loss (added in that order), and each
    node's table of bins going left where it splits a set of categories (its missing side
    in the missing bin's entry; all False elsewhere, and no rows where the tree's features
    hold no category). ``leaf_of_row``: each row of ``order`` gets its leaf's number."""
    m = max_leaves - 1
    node_tables = np.zeros((m if tables.shape[0] else 0, tables.shape[1]), dtype=np.bool_)
    table = np.full((4, m), -1, dtype=np.int32)
    feature, left, right, split_bin = table[0], table[1], table[2], table[3]
    split_bin[:] = 0
    threshold = np.zeros(m)
    missing_left = np.zeros(m, dtype=np.bool_)
    node_of = np.full(leaf.shape[0], -1, dtype=np.int64)
    for n in range(nodes.shape[0]):
        i = nodes[n]
        node_of[i] = n
        f, b = leaf[i, _FEATURE], leaf[i, _BIN]
        feature[n], split_bin[n] = f, b
        threshold[n] = np.nan if leaf[i, _SET] == 1 else thresholds[f, b]
        first = 1 + 2 * n  # its children: made in split order, left then right
        if has_missing[f]:
            missing_left[n] = leaf[i, _MISSING] == 1
        else:  # NaN at prediction: the larger side
            missing_left[n] = (leaf[first, _STOP] - leaf[first, _START]
                               >= leaf[first + 1, _STOP] - leaf[first + 1, _START])
        if leaf[i, _SET] == 1:
            node_tables[n] = tables[i]
            node_tables[n, missing_bin] = missing_left[n]
    ordered = np.empty((nodes.shape[0] + 1, sums.shape[1]))
    loss = 0.0
    n_leaves = 0
    stack = [0]  # made leaves, the left child popped first
    while len(stack):
        j = stack.pop()
        n = node_of[j]
        if n >= 0:
            stack.append(2 + 2 * n)
            stack.append(1 + 2 * n)
            continue
        ordered[n_leaves] = sums[j]
        loss += losses[j]
        for r in range(leaf[j, _START], leaf[j, _STOP]):
            leaf_of_row[order[r]] = n_leaves
        parent = leaf[j, _PARENT]
        if parent >= 0:
            (left if leaf[j, _SIDE] == 0 else right)[node_of[parent]] = ~n_leaves
        n_leaves += 1
    for n in range(nodes.shape[0]):
        for child, links in ((1 + 2 * n, left), (2 + 2 * n, right)):
            if node_of[child] >= 0:
                links[n] = node_of[child]
    return table, threshold, missing_left, ordered, loss, node_tables


def grow_tree(grower, rows, root) -> tuple:
    """:func:`grow_numeric` for ``grower`` (a :class:`.vector_tree.VectorTreeGrower` whose
    tree is set up: features, prior) over ``rows`` from ``root`` (its leaf, sums and loss
    set): the tree's node arrays (``feature``, ``threshold``, ``missing_left``, ``left``,
    ``right``, each of ``max_leaves - 1`` nodes), its leaves' sums left to right, their
    loss, the leaf of every row, the splits' ``(feature, gain)`` and the histogram additions
    and leaves searched, as the Python grower counts them."""
    opt, data, features = grower.options, rows.data, grower.features
    sparse = sparse_arrays(data)
    n_cells, n_channels = grower.hist_shape
    store = grower.histogram_store
    root_updates, root_rows = 0, rows.kept_channels(root.rows)
    # the root's histogram: in the call (one thread in the row set too: the same histogram)
    # or by the row set, on every thread
    if root_rows is None or threads_pay(root.n_rows, len(features), n_channels,
                                        data.entry_fraction):
        root_rows = np.empty((0, 0), rows.channels.dtype)  # (none: one signature a dtype)
        if grower._can_split(root):
            root_updates = root.n_rows * len(features)
            rows.histogram(root.rows, root.sums, features, store[0])
    tile = feature_tile(n_cells / max(1, len(grower.n_value_bins)), n_channels)
    (nodes, threshold, missing_left, leaf_sums, loss, leaf_of_row, gains, updates, searched,
     _, node_tables) = grow_laid_out(
        store, root_rows, root.sums, rows.channels, rows.row_weight, rows.amplify, rows.order,
        rows._scratch, data.bins, features, grower.n_value_bins, grower.has_missing,
        grower.offsets, grower.missing_bin, grower.layout.n_bins_total, grower.prior,
        float(opt.min_samples_leaf), opt.max_leaves,
        -1 if opt.max_depth is None else opt.max_depth,
        _task_starts(len(features), numba.get_num_threads()), tile, sparse,
        grower.thresholds, data.n_samples, gather_rows(n_channels), grower.scan_tasks,
        grower.category_prior, category_search(grower),
        children_together(grower._scanned, tile, features, data))
    feature, left, right, split_bin = nodes
    words = category_words(grower.binner, feature, threshold, node_tables)
    arrays = feature, threshold, missing_left, left, right, words
    if rows.sampled and len(gains):  # rows outside the sample: through the tree
        tables = None if words is None else bin_tables(
            feature, split_bin, missing_left, threshold, node_tables, len(gains),
            grower.missing_bin)
        leaf_of_row = route_bins(data.bins, BinTree(feature, split_bin, missing_left, left,
                                                    right, tables), grower.missing_bin)
    gains = list(zip(feature[:len(gains)].tolist(), gains.tolist(), strict=True))
    return arrays, leaf_sums, loss, leaf_of_row, gains, root_updates + int(updates), int(searched)


def category_search(grower) -> tuple | None:
    """:func:`grow_numeric`'s ``categories`` for ``grower``'s tree (its features set,
    :meth:`.vector_tree.VectorTreeGrower.grow`): the categorical features, the numeric ones
    and :func:`category_options`; None where the tree has no categorical feature."""
    if len(grower.categories) == 0:
        return None
    categorical = np.ascontiguousarray(grower.categories, dtype=np.intp)
    return (categorical, np.ascontiguousarray(grower.numeric, dtype=np.intp),
            *category_options(grower, categorical))


def category_options(grower, categorical: np.ndarray) -> tuple:
    """The category search's options for ``grower``'s trees over the ``categorical``
    features: ``cat_smooth``, ``min_data_per_category``, ``max_cat_threshold``,
    ``max_cat_to_onehot`` and the blocks of features it runs in
    (:func:`~..search.category_split.category_tasks`)."""
    opt = grower.options
    cells = int(np.sum(grower.n_value_bins[categorical])) + len(categorical)
    return (float(opt.cat_smooth), float(opt.min_data_per_category), int(opt.max_cat_threshold),
            int(opt.max_cat_to_onehot),
            category_tasks(cells, grower.hist_shape[1], len(categorical)))


def category_words(binner, feature, threshold, node_tables) -> np.ndarray | None:
    """(nodes, W) uint64 bitsets of the category codes each node of a laid-out tree (or of
    a stack of them, raveled; :func:`_lay_out`: NaN thresholds) sends left, as the Python
    grower stores them; None for a tree without such a node."""
    nodes = np.flatnonzero(np.isnan(threshold))
    if not len(nodes):
        return None
    words = masks_to_bitsets(binner.left_code_masks(feature[nodes], node_tables[nodes]))
    out = np.zeros((len(feature), words.shape[1]), dtype=np.uint64)
    out[nodes] = words
    return out


def bin_tables(feature, split_bin, missing_left, threshold, node_tables, n_nodes: int,
               missing_bin: int) -> np.ndarray:
    """(nodes, n_bins_total) the bins each of the first ``n_nodes`` nodes of a laid-out tree
    with category sets sends left (the rest: none), as :class:`.row_set.BinTree` routes."""
    tables = np.zeros(node_tables.shape, dtype=bool)
    for n in range(n_nodes):
        tables[n] = (node_tables[n] if np.isnan(threshold[n]) else split_table(
            int(split_bin[n]), bool(missing_left[n]), node_tables.shape[1], missing_bin))
    return tables
