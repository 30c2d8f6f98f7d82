"""REBEL's weak learners by name: each fits one iteration's learner from REBEL's 2K channels.

Every family implements :class:`~.contract.WeakLearnerFamily` (built once per fit, its
``fit(channels)`` returns one :class:`~.contract.LearnerFit`). A new weak learner is one class
here (or in its own module) and an entry in :data:`REBEL_LEARNERS`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..losses.rebel import CHANNEL_DTYPE
from ..search.binned import BinnedData
from ..search.histograms import HistogramPool
from ..search.splits import is_better
from .contract import LearnerFit
from .leaf_tree import LeafTreeArrays
from .rebel_tree import FittedLearner, constant_learner, grow_rebel_tree
from .row_sampling import sample_rows
from .row_set import LocalRows
from .similarity import SimilarityArrays, resolve_coincident, scaling_statistics
from .similarity_search import fit_follow_up, fit_similarity
from .tree import TreeArrays
from .vector_tree import VectorTreeFit, VectorTreeGrower, VectorTreeOptions

_FLOAT32_ENTRIES = 10_000_000  # training matrices this large are searched in float32


@dataclass
class LearnerOptions:
    """The estimator parameters weak learners read."""

    depth: int
    max_bins: int
    quickboost: bool
    similarity_mode: str
    scaling: str | None
    vector_tree: VectorTreeOptions | None = None
    categorical: np.ndarray | None = None  # (n_features,) bool: columns of category codes
    min_data_in_bin: int = 1  # a numeric feature's bins: at most one per this many rows


class TreeFamily:
    """Trees or stumps on binned features; each iteration also tries the constant learner."""

    blas_threads = 1  # the histogram kernels do the parallel work
    # the training rows' scores the booster adds up are the model's predictions, bit for bit
    # (rows routed by bins exactly as by the thresholds on their values)
    scores_as_predicted = True

    def __init__(self, X, codes, sample_weight, cost_matrix, options: LearnerOptions, rng):
        self.depth = options.depth
        self.quickboost = options.quickboost
        # Thresholds come from the samples that count, so a zero weight equals removal;
        # QuickBoost's prefixes also read a row-wise copy of the sparse entries.
        self.data = BinnedData.fit(X, sample_weight, options.max_bins, rng.randint(2**31),
                                   row_layout=self.quickboost,
                                   min_data_in_bin=options.min_data_in_bin)
        self.pool = HistogramPool()
        self.codes = codes
        self.state: dict = {}

    def fit(self, channels) -> LearnerFit:
        """The tree or the constant learner, whichever leaves the lower loss: its leaves add
        ``+-a`` (their output times the step vector)."""
        bias = constant_learner(channels.sum(axis=0), channels.shape[0], self.depth)
        tree = grow_rebel_tree(self.data, channels, self.depth, quickboost=self.quickboost,
                               pool=self.pool)
        work = tree.histogram_updates if tree is not None else 0
        best: FittedLearner = bias if tree is None or is_better(bias.loss, tree.loss) else tree
        values = best.arrays.slot_outputs()[0][:, None] * best.vector
        return LearnerFit(best.arrays, values, best.leaf_of_row, None, best.vector, best.loss,
                          best.gains, work)

    def stack(self, pieces) -> TreeArrays:
        return TreeArrays.stack(pieces, self.depth)


class SimilarityFamily:
    """Localized similarities on scaled features (the constant learner is in their search)."""

    blas_threads = None  # the search's matrix products are BLAS's parallel work
    # (training distances come from other products than prediction's: the last bits differ)
    scores_as_predicted = False

    def __init__(self, X, codes, sample_weight, cost_matrix, options: LearnerOptions, rng):
        if np.isnan(X).any():
            raise ValueError(
                "X contains NaN; localized similarities need complete rows (impute first, or "
                "use weak_learner='tree', which learns where missing values go)"
            )
        self.offset, self.scale = scaling_statistics(X, options.scaling)
        # Large data is searched in float32: the matrix products that dominate the search then
        # move half the bytes. Coincidence and norms are taken on the very array the search
        # reads, so rows that float32 merges are treated as coincident.
        dtype = np.float32 if X.size >= _FLOAT32_ENTRIES else np.float64
        self.X = np.ascontiguousarray((X - self.offset) / self.scale, dtype=dtype)
        self.sq_norms = np.einsum("ij,ij->i", self.X, self.X, dtype=np.float64)
        self.one_point_only = options.similarity_mode == "one-point"
        self.follow_up = None  # see fit
        self.codes, changed = resolve_coincident(self.X, codes, cost_matrix, sample_weight)
        self.state = {"n_relabeled": changed}
        if changed:
            warnings.warn(
                f"{changed} training rows coincide with rows of another class; they were "
                "relabelled to their group's least-cost class so that the training error can "
                "reach zero (n_relabeled_)", UserWarning, stacklevel=4,
            )

    def fit(self, channels) -> LearnerFit:
        """This iteration's learner: its one slot adds its output times the step vector.
        After a constant step, the learner its search ranked best for the weights that step
        leaves is taken without a new search (fit_follow_up)."""
        fit = fit_follow_up(self.follow_up, channels) if self.follow_up is not None else None
        if fit is None:
            fit = fit_similarity(self.X, self.sq_norms, channels,
                                 one_point_only=self.one_point_only)
        self.follow_up = fit.follow_up
        arrays = fit.arrays
        for index, label in ((arrays.first_index, arrays.first_class),
                             (arrays.second_index, arrays.second_class)):
            label[:] = np.where(index >= 0, self.codes[np.maximum(index, 0)], -1)
        arrays.offset, arrays.scale = self.offset, self.scale
        n = channels.shape[0]
        return LearnerFit(arrays, arrays.slot_outputs()[0][:, None] * fit.vector,
                          np.zeros(n, dtype=np.intp), fit.output, fit.vector, fit.loss,
                          list(fit.gains))

    def stack(self, pieces) -> SimilarityArrays:
        return SimilarityArrays.stack(pieces, self.X.shape[1], self.offset, self.scale)


class VectorTreeFamily:
    """Vector-leaf trees grown leaf-wise (:mod:`.vector_tree`): each leaf its own K-vector
    (no step vector)."""

    blas_threads = 1
    scores_as_predicted = True  # (as TreeFamily's)
    _packed: np.ndarray | None = None  # channels_out's array (None: channels come apart)

    def __init__(self, X, codes, sample_weight, cost_matrix, options: LearnerOptions, rng):
        self.data = BinnedData.fit(X, sample_weight, options.max_bins, rng.randint(2**31),
                                   row_layout=True, categorical=options.categorical,
                                   labels=codes, min_data_in_bin=options.min_data_in_bin)
        self.n_classes = cost_matrix.shape[0]
        self.options = options.vector_tree
        self.grower = VectorTreeGrower(self.data.binner, self.n_classes, self.options,
                                       np.random.RandomState(rng.randint(2**31)))
        self.sample_weight = sample_weight  # what min_samples_leaf counts
        self.codes = codes
        self.state: dict = {}

    def channels_out(self, n_channels: int) -> np.ndarray:
        """Where the loss writes each iteration's channels: the first ``n_channels`` columns
        of one (n, n_channels + 1) array whose last column is the sample weight, so that a
        histogram of every row reads the rows in place instead of gathering a copy; in
        :data:`~..losses.rebel.CHANNEL_DTYPE`."""
        self._packed = np.empty((len(self.sample_weight), n_channels + 1), CHANNEL_DTYPE)
        self._packed[:, -1] = self.sample_weight
        return self._packed[:, :-1]

    def fit(self, channels) -> LearnerFit:
        rows, amplify = sample_rows(channels, self.options.subsample, self.options.sampling,
                                    self.grower.rng)
        bits = self.options.histogram_bits
        seed = 0 if bits is None else self.grower.rng.randint(2**31)  # float: draws as before
        packed = self._packed
        if packed is None or amplify is not None or channels.base is not packed:
            packed = None  # (channels of another array, or amplified: no packed rows)
        fit: VectorTreeFit = self.grower.grow(
            LocalRows(self.data, channels, rows, amplify, self.sample_weight, bits, seed,
                      packed))
        return LearnerFit(fit.arrays, fit.leaf_values, fit.leaf_of_row, None, None, fit.loss,
                          fit.gains, fit.histogram_updates)

    def stack(self, pieces) -> LeafTreeArrays:
        return LeafTreeArrays.stack(pieces, self.options.max_leaves)


REBEL_LEARNERS: dict[str, type] = {
    "tree": TreeFamily,
    "vector_tree": VectorTreeFamily,
    "stump": TreeFamily,
    "similarity": SimilarityFamily,
}
