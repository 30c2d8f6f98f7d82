"""Training on row blocks held elsewhere (workers of a cluster): the tree grower's row set
over the blocks, and REBEL's booster whose rows stay with the blocks.

The vector-tree grower (:mod:`rebelboost.learners.vector_tree`) runs unchanged, on the client
or on every worker at once: it asks :class:`BlockRows` for counts, channel sums and
histograms, which every block computes for its own rows (:mod:`.tasks`) and a fixed-order
tree reduction adds up; only split decisions and step vectors go back. The weights' common
scale (their largest exponent) is agreed first, by a max reduction. How tasks run is the
backend's :class:`Executor` (Dask's: :class:`rebelboost.dask._cluster.Cluster`, scheduler
tasks; :class:`rebelboost.dask._actors.ActorExecutor`, an actor per worker called by the
client; :class:`rebelboost.dask._peers.PeerExecutor`, inside each worker's actor, whose
reductions are exchanges between the actors); whatever order the blocks answer in, the sums
are added in the blocks' order, so the model is the same.
"""

from __future__ import annotations

import functools
from operator import getitem
from typing import Protocol

import numpy as np

from ..engine import Stage
from ..exact_sums import rounded
from ..learners.leaf_tree import LeafTreeArrays
from ..learners.row_sampling import find_threshold, goss_factor, goss_sizes, rest_draw, sample_rows
from ..learners.row_set import BinTree, split_table
from ..learners.vector_tree import VectorTreeGrower, VectorTreeOptions
from ..losses.rebel import scale_and_loss
from ..search.histograms import feature_cells
from ..search.quantize import channel_scales, dequantize
from . import tasks as part_fn


class Executor(Protocol):
    """How a backend runs the blocks' tasks. A "future" is whatever the backend hands back
    for a task's result (a Dask future, a Ray object reference, the value itself)."""

    gathered_bytes: int  # bytes fetched to the client so far

    def submit(self, func, *args, worker=None):
        """``func(*args)`` as a task (on ``worker`` if given); a future."""

    def map(self, func, futures: list, *args) -> list:
        """``func(f, *args)`` for every future ``f``, in order."""

    def unpack(self, futures: list, n: int) -> list[list]:
        """``n`` lists of futures from futures of ``n``-tuples."""

    def reduce(self, func, futures: list):
        """``func`` applied pairwise in a fixed order (a tree over the list's order)."""

    def reduce_gather(self, func, futures: list, fan_in: int = 2):
        """:meth:`reduce`'s value, fetched (the same order of additions)."""

    def reduce_to(self, func, futures: list, fan_in: int = 2) -> list:
        """:meth:`reduce_gather`'s work before the fetch: at most ``fan_in`` futures, whose
        values added pairwise in order (:func:`finish_reduce`) are its value."""

    def gather(self, future):
        """The value(s) of a future or a list of futures."""


class TreeReductions:
    """An :class:`Executor`'s maps, unpacking and fixed-order reductions, made of its
    ``submit`` and ``gather``: every backend adds the blocks' answers in the same pairs and
    order, so the sums are the same whichever backend runs them."""

    def map(self, func, futures, *args) -> list:
        return [self.submit(func, f, *args) for f in futures]

    def unpack(self, futures, n: int) -> list[list]:
        """``n`` futures per tuple-valued future: ``[[f[0] ...], [f[1] ...]]``."""
        return [[self.submit(getitem, f, i) for f in futures] for i in range(n)]

    def reduce(self, func, futures):
        """``func`` applied pairwise in a fixed order (a tree over the blocks' order), so the
        result is the same whichever worker computes what; a future."""
        level = list(futures)
        while len(level) > 1:
            level = self.reduce_level(func, level)
        return level[0]

    def reduce_level(self, func, futures: list) -> list:
        """One level of :meth:`reduce`: ``func`` of each pair in order (the last one alone
        if odd); futures."""
        return _pairs(func, list(futures), self.submit)

    def reduce_gather(self, func, futures, fan_in: int = 2):
        """:meth:`reduce`'s value, the last levels (``fan_in`` values or fewer) summed here:
        one worker-to-worker hop fewer, the same order of additions."""
        return finish_reduce(func, self.gather(self.reduce_to(func, futures, fan_in)))

    def reduce_to(self, func, futures, fan_in: int = 2) -> list:
        """:meth:`reduce_gather`'s levels on the workers: ``fan_in`` futures or fewer, whose
        values :func:`finish_reduce` sums (gathered with others in one round trip)."""
        level = list(futures)
        while len(level) > fan_in:
            level = self.reduce_level(func, level)
        return level


def finish_reduce(func, values: list):
    """The last levels of :meth:`TreeReductions.reduce_gather`, on gathered values."""
    while len(values) > 1:
        values = _pairs(func, values, lambda f, a, b: f(a, b))
    return values[0]


def _pairs(func, level: list, call) -> list:
    """``call(func, a, b)`` for each pair of ``level`` in order (the last one alone if odd)."""
    nxt = [call(func, a, b) for a, b in zip(level[::2], level[1::2], strict=False)]
    if len(level) % 2:
        nxt.append(level[-1])
    return nxt


def nbytes(value) -> int:
    """Bytes of a gathered value (arrays, lists and tuples of them; 8 for anything else)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, list | tuple):
        return sum(nbytes(v) for v in value)
    return 8


class BlockRows:
    """The :class:`~rebelboost.learners.row_set.RowSet` of one tree over the blocks (leaf
    handles are integers).

    Splits go in batches: the grower says which splits it may ask for next (:meth:`expect`,
    the leaves that can still be split, best first), and the first split it asks for that is
    not done yet is done in one round trip together with every expected one not done yet.
    A searched leaf's histogram (with its row-count channel) tells how many rows each side
    gets, so each block splits the rows and builds the smaller child's histogram in the same
    task; the client keeps the answers until the grower asks. Splits the grower never asks
    for cost their histograms, not a round trip; the tree, sums and histograms are those of
    one split per round trip. The root's histogram comes with the weights
    (:class:`BlockRebelBooster`)."""

    batches_splits = True

    def __init__(self, cluster: Executor, parts: list, root_sums: np.ndarray, n_rows: int,
                 layout, root_histogram: np.ndarray, features: np.ndarray,
                 scales: np.ndarray | None = None):
        """``scales``: the blocks' histograms are of quantized channels with these scales
        (integer cells, :mod:`..search.quantize`) and their sums exact (accumulators)."""
        self.cluster = cluster
        self.scales = scales  # (their cells hold integers, in float64)
        self.quantized = None if scales is None else True  # (what the grower asks)
        self.parts = parts
        self._counts = {0: n_rows}
        self._sums = {0: root_sums}
        self._cell_counts: dict[int, np.ndarray] = {}  # leaf -> rows per histogram cell
        self._next = 1
        self.layout = layout
        self.offsets = layout.cell_offsets()  # of the compact leaf histograms
        self._built = {0: (features, root_histogram)}  # leaf -> (features, packed histogram)
        self._done: dict[int, tuple[int, int]] = {}  # leaf -> its children, split already
        self._asked: set[int] = set()  # leaves the grower split
        self._released: set[int] = set()  # their rows, for the blocks to forget next time
        self._expected: list[tuple] = []
        self.features = None  # this tree's, from the grower's first histogram
        self.leaves: list[int] | None = None
        self.tree: BinTree | None = None
        self.round_trips = 0  # batches of splits sent to the blocks

    def root(self) -> int:
        return 0

    def count(self, leaf: int) -> int:
        return self._counts[leaf]

    def sums(self, leaf: int) -> np.ndarray:
        return self._sums[leaf]

    def expect(self, splits: list[tuple]) -> None:
        self._expected = list(splits)

    def is_split(self, leaf: int) -> bool:
        return leaf in self._done

    def float_channels(self, leaf: int) -> None:
        return None  # (the rows are on the workers)

    def split(self, leaf: int, feature: int, split_bin: int, missing_left: bool,
              left_bins: np.ndarray | None = None) -> tuple[int, int]:
        self._asked.add(leaf)
        if leaf not in self._done:
            batch = [(leaf, feature, split_bin, missing_left, left_bins)]
            batch += [e for e in self._expected
                      if e[0] not in self._asked and e[0] not in self._done]
            self._split_batch(batch)
        return self._done.pop(leaf)

    def _split_batch(self, batch: list[tuple]) -> None:
        """Every split of ``batch`` in one round trip: its children's row counts and sums,
        and the smaller child's histogram."""
        n_bins, jobs = self.layout.n_bins_total, []
        for leaf, feature, split_bin, missing_left, left_bins in batch:
            left, right = self._next, self._next + 1
            self._next += 2
            # The leaf was searched, so its rows per histogram cell are known (from its own
            # histogram, or its parent's minus its sibling's): they say which child is
            # smaller.
            if left_bins is not None:  # (a copy travels: the grower may change its own)
                left_bins = np.array(left_bins, dtype=np.bool_)
            goes_left = (split_table(split_bin, missing_left, n_bins, self.layout.missing_bin)
                         if left_bins is None else left_bins)
            n_left = self._cell_counts[leaf][self._left_cells(feature, goes_left)].sum()
            smaller = left if n_left <= self._counts[leaf] - n_left else right
            jobs.append((leaf, left, right, int(feature), int(split_bin), bool(missing_left),
                         smaller, left_bins))
        cluster = self.cluster
        done = cluster.map(part_fn.split_many, self.parts, jobs, self.features,
                           sorted(self._released))
        self._released.clear()
        self.parts, answers = cluster.unpack(done, 2)
        # (sums and histograms added in one fixed-order reduction, fetched in one gather)
        total, packed = cluster.reduce_gather(part_fn.add_answers, answers)
        if self.scales is not None:
            total = rounded(total)
        self.round_trips += 1
        c = len(total) // len(jobs)  # channels with the row count, per built child
        cells_per_leaf = len(self._cells(self.features))
        for i, (leaf, left, right, *_, smaller, _) in enumerate(jobs):
            sums = total[c * i:c * (i + 1)]
            other = right if smaller == left else left
            self._counts[smaller] = int(sums[-1])
            self._counts[other] = self._counts[leaf] - self._counts[smaller]
            if (smaller == left) != (self._counts[left] <= self._counts[right]):
                raise RuntimeError("the row counts of a split disagree with its leaf's "
                                   "histogram")
            self._sums[smaller] = sums[:-1]  # (the grower takes the other's by subtraction)
            hist = packed[cells_per_leaf * i:cells_per_leaf * (i + 1)]
            self._built[smaller] = (self.features, hist)
            self._cell_counts[right if smaller == left else left] = (
                self._cell_counts[leaf] - self._unpack_counts(self.features, hist))
            self._done[leaf] = (left, right)

    def release(self, leaf: int) -> None:
        for table in (self._counts, self._sums, self._cell_counts, self._built):
            table.pop(leaf, None)
        self._released.add(leaf)

    def histogram(self, leaf: int, sums: np.ndarray, features: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
        if self.features is None:
            self.features = np.asarray(features)
        ready_features, packed = self._built.pop(leaf, (None, None))
        if ready_features is None or not np.isin(features, ready_features).all():
            ready_features = features
            packed = self.cluster.reduce_gather(
                part_fn.add, self.cluster.map(part_fn.histogram, self.parts, leaf, features))
            self.round_trips += 1
        out[self._cells(ready_features)] = packed[:, :-1]
        self._cell_counts[leaf] = self._unpack_counts(ready_features, packed)
        return out

    def dequantize(self, hist: np.ndarray, features: np.ndarray, out: np.ndarray
                   ) -> np.ndarray:
        """The float sums a search reads from a quantized histogram (as the local rows')."""
        return dequantize(hist, self.scales, features, self.offsets, out)

    def _cells(self, features):
        return feature_cells(self.offsets, features)

    def _left_cells(self, feature: int, goes_left: np.ndarray) -> np.ndarray:
        """The cells of ``feature`` whose bins a split sends left (a table over the bins)."""
        n = self.layout.n_value_bins[feature]
        local = np.append(goes_left[:n], goes_left[self.layout.missing_bin])
        return self.offsets[feature] + np.flatnonzero(local)

    def _unpack_counts(self, features, packed) -> np.ndarray:
        counts = np.zeros(self.offsets[-1])
        counts[self._cells(features)] = packed[:, -1]
        return counts

    def assign(self, leaves: list[int], tree: BinTree) -> None:
        """Remembered for the step: the rows' leaves stay on the workers."""
        self.leaves, self.tree = list(leaves), tree


class BlockRebelBooster:
    """REBEL's loss with vector-leaf trees on partitions held by the workers (the engine's
    :class:`~rebelboost.engine.Booster`)."""

    blas_threads = 1

    def __init__(self, cluster: Executor, parts: list, binner, n_rows: int, n_classes: int,
                 options: VectorTreeOptions, rng: np.random.RandomState, learning_rate: float,
                 validation_loss=None, block_starts: list[int] | None = None,
                 weight_range: tuple | None = None, n_trees: int | None = None):
        """``options.histogram_bits``: quantized histograms and exact sums (the blocks made
        with ``exact``; ``weight_range``: the sample weights', from
        :func:`~..search.quantize.weight_range`), the local fit's model bit for bit.
        ``n_trees``: the trees the fit asks for at most; with float histograms each but the
        last asks for the next tree's root histogram in the same round trip as its weights
        (None: in a round trip of its own, when the tree starts)."""
        self.cluster = cluster
        self.parts = parts
        self.binner = binner
        self.n_rows = n_rows
        self.options = options
        self.learning_rate = learning_rate
        self.val_loss = validation_loss  # a RebelLoss of the eval set (on the client)
        self.round_trips: list[int] = []  # per tree: batches of splits and histograms asked
        self.grower = VectorTreeGrower(binner, n_classes, options, rng)
        self.all_features = np.arange(binner.n_features, dtype=np.intp)
        # each block's first row among all rows (where its part of a row sample starts)
        self.block_starts = block_starts or [0] * len(parts)
        self.bits = options.histogram_bits
        self.weight_range = weight_range
        self.scales = None  # this tree's quantization scales
        self._seed = 0  # and its rounding's seed
        self.n_trees = n_trees
        self._root = None  # the next tree's root histogram, if asked with its weights
        if self.bits is None:
            logs = cluster.gather(cluster.map(part_fn.log_partial_sums, parts))
            self._initial = float(np.exp(np.logaddexp(*np.logaddexp.reduce(logs, axis=0))))
            self._weigh()
        else:  # as the local fit: the loss of the first weights, an exact sum
            self._initial = self._weigh()

    def _weigh(self) -> float:
        """New channels on the workers; returns the loss (the channels' total times their
        scale). The next tree's quantized channels and root histogram wait for the tree
        (:meth:`_root_histogram`): after the last one, none is made."""
        cluster = self.cluster
        shift = cluster.reduce(max, cluster.map(part_fn.max_exponent, self.parts))
        if self.options.subsample < 1 and self.options.sampling == "goss":
            return self._weigh_goss(shift)
        samples = [None] * len(self.parts)
        if self.options.subsample < 1:  # the next tree's rows, drawn as the local fit draws
            rows, _ = sample_rows(np.empty((self.n_rows, 0)), self.options.subsample,
                                  "uniform", self.grower.rng)
            mask = np.zeros(self.n_rows, dtype=bool)
            mask[rows] = True
            bits = np.packbits(mask)
            samples = [(bits, start) for start in self.block_starts]
        self.parts, stats = cluster.unpack(
            [cluster.submit(part_fn.weigh, part, shift, sample)
             for part, sample in zip(self.parts, samples, strict=True)], 2)
        shift, stats = self._gather_with_root([shift, stats])
        return self._settle(shift, [t for t, _, _ in stats], [r for _, *r in stats])

    def _gather_with_root(self, values: list) -> list:
        """``values`` gathered; where the histograms are float and a tree follows (fewer
        trees grown than ``n_trees``), the partitions' root histogram in the same round trip
        (kept for :meth:`_root_histogram`, added in :meth:`~TreeReductions.reduce_gather`'s
        order)."""
        cluster = self.cluster
        tree_follows = self.n_trees is not None and len(self.round_trips) < self.n_trees
        if self.bits is not None or not tree_follows:
            return cluster.gather(values)
        level = cluster.reduce_to(part_fn.add, self._root_histograms())
        *values, level = cluster.gather([*values, level])
        self._root = finish_reduce(part_fn.add, level)
        return values

    def _settle(self, shift: float, totals: list, roots: list) -> float:
        """The tree's root (its sums and row count) and, with ``histogram_bits``, its scales
        (of all rows) and rounding seed, from the blocks' total weights and ``(root sums,
        scales)``; returns the loss."""
        add = functools.partial(functools.reduce, part_fn.add)
        if self.bits is not None:  # exact sums, rounded once
            total, sums = rounded(add(totals)), rounded(add([s for s, _ in roots]))
            self.scales = channel_scales(np.max([top for _, top in roots], axis=0),
                                         self.weight_range, self.bits)
            self._seed = self.grower.rng.randint(2**31)  # drawn where the local fit draws it
        else:
            total, sums = add(totals), add([s for s, _ in roots])
        self.root_sums = sums[:-1]  # (without the row count)
        self.root_rows = int(sums[-1])
        self.scale, loss = scale_and_loss(shift, total)
        return loss

    def _weigh_goss(self, shift) -> float:
        """:meth:`_weigh` for GOSS trees: the heaviest rows' threshold found from counts of
        the blocks' row weights (:func:`~..learners.row_sampling.find_threshold`: two or
        three round trips of 256 KiB a block), the rest's rows drawn on the client as the
        local fit draws them, by their place among the rows left."""
        cluster = self.cluster
        self.parts, facts = cluster.unpack(
            [cluster.submit(part_fn.weigh_for_goss, part, shift) for part in self.parts], 2)
        shift, facts = cluster.gather([shift, facts])
        block_rows = np.diff([*self.block_starts, self.n_rows]).tolist()
        ranges = [(low, high) for _, low, high in facts if low is not None]
        top, other = goss_sizes(self.options.subsample, self.n_rows)
        threshold, ties, heavy = find_threshold(
            lambda low, bits: cluster.gather(cluster.map(part_fn.goss_counts, self.parts,
                                                         low, bits)),
            lambda low, high: cluster.gather(cluster.map(part_fn.goss_keys_in, self.parts,
                                                         low, high)),
            top, (min(r[0] for r in ranges), max(r[1] for r in ranges)), block_rows)
        places = rest_draw(self.n_rows - top, other, self.grower.rng)
        factor = goss_factor(self.n_rows - top, len(places))
        rest_starts = np.cumsum([0] + [n - h for n, h in zip(block_rows, heavy, strict=True)])
        self.parts, stats = cluster.unpack(
            [cluster.submit(part_fn.goss_sample, part, threshold, tie,
                            np.sort(places[(places >= a) & (places < b)] - a), factor)
             for part, tie, a, b in zip(self.parts, ties, rest_starts[:-1], rest_starts[1:],
                                        strict=True)], 2)
        return self._settle(shift, [t for t, _, _ in facts], self._gather_with_root([stats])[0])

    def initial_loss(self) -> float:
        return self._initial

    def _root_histogram(self) -> np.ndarray:
        """The tree's quantized channels on the workers (with ``histogram_bits``) and its
        root's histogram over every feature."""
        cluster = self.cluster
        if self._root is not None:  # (asked with the weights)
            root, self._root = self._root, None
            return root
        if self.bits is not None:
            self.parts = [cluster.submit(part_fn.quantize, part, self.scales, self.bits,
                                         self._seed, start)
                          for part, start in zip(self.parts, self.block_starts, strict=True)]
        return cluster.reduce_gather(part_fn.add, self._root_histograms())

    def _root_histograms(self) -> list:
        """Each block's histogram of the tree's rows over every feature (futures)."""
        return self.cluster.map(part_fn.histogram, self.parts, 0, self.all_features)

    def fit_stage(self, iteration: int) -> Stage:
        root_histogram = self._root_histogram()  # (the quantized partitions first)
        rows = BlockRows(self.cluster, self.parts, self.root_sums, self.root_rows,
                         self.binner.layout, root_histogram, self.all_features, self.scales)
        fit = self.grower.grow(rows)
        self.round_trips.append(rows.round_trips)
        steps = self.learning_rate * fit.leaf_values
        # (the tree's arrays one by one: a backend may unpack a named tuple into a plain one)
        self.parts = self.cluster.map(part_fn.step, rows.parts, rows.leaves, steps, *rows.tree)
        gains = [(f, gain * self.scale) for f, gain in fit.gains]
        loss = self._weigh()
        return Stage(fit.arrays, steps[None], loss, gains,
                     {"vector": None, "work": fit.histogram_updates})

    def validation_loss(self, scores) -> float:
        return self.val_loss.loss(scores)

    def stack(self, pieces) -> LeafTreeArrays:
        return LeafTreeArrays.stack(pieces, self.options.max_leaves)

    def covers(self) -> np.ndarray:
        """(trees, max_leaves): the training weight that reached each leaf of each tree, as
        the local fit's ``leaf_covers`` (summed over the partitions in a fixed order)."""
        cluster = self.cluster
        covers = cluster.reduce_gather(part_fn.add, cluster.map(
            part_fn.covers, self.parts, self.options.max_leaves))
        return covers if self.bits is None else rounded(covers)

    def release(self) -> None:
        """Drop the partitions (the workers free their memory)."""
        self.parts = []
