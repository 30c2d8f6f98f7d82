"""What a worker does with its row blocks (partitions): check them, summarise them for the
binner, bin them, and answer the grower's questions about its rows.

Every function is pure (it returns new objects and never changes its inputs), so a backend
(Dask, Ray, Spark) may run one again on another worker after a failure and get the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._malloc import release_free_memory
from ..binning import (
    NO_VALUES,
    Binner,
    as_float,
    code_counts,
    merge_code_counts,
    merge_value_counts,
    value_counts,
)
from ..calibration import row_margins
from ..categorical import CategoricalColumns
from ..costs import check_sample_cost
from ..exact_sums import accumulator, sum_by_group, sum_by_slot, sum_rows, sum_values
from ..learners.row_sampling import (
    bucket_counts,
    heaviest_by_threshold,
    keys_in,
    row_weights,
    weight_keys,
)
from ..learners.row_set import BinTree, RowArrays
from ..losses.rebel import CHANNEL_DTYPE, RebelLoss, add_slot_values
from ..search.binned import BinnedData
from ..search.histograms import build_leaf_histogram, feature_cells
from ..search.quantize import gather_as_float, quantize_channels, weight_range
from ..validation import normalize_labels


def held_bytes(value, depth: int = 4) -> int:
    """Bytes of the arrays ``value`` holds (in containers and objects' attributes, ``depth``
    levels down): what a partition weighs. A backend's scheduler reads it (Dask's ``sizeof``
    falls back on ``__sizeof__``) to see that moving a partition to another worker is
    expensive; without it a partition looks like a few bytes and is moved to idle workers."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if depth == 0 or isinstance(value, str | bytes | int | float | bool | type(None)):
        return 0
    if isinstance(value, dict):
        value = list(value.values())
    elif hasattr(value, "__dict__"):
        value = list(vars(value).values())
    elif hasattr(value, "__dataclass_fields__"):
        value = [getattr(value, f) for f in value.__dataclass_fields__]
    if isinstance(value, list | tuple):
        return sum(held_bytes(v, depth - 1) for v in value)
    return 0


class _WeighsItsArrays:
    """``sys.getsizeof`` (and so a scheduler's size estimate) counts the arrays held."""

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + held_bytes(self)


@dataclass
class RawPartition(_WeighsItsArrays):
    """One partition's checked input rows."""

    X: np.ndarray  # float32 or float64
    y: np.ndarray  # labels (one type)
    weight: np.ndarray  # float64 sample weights
    cost: np.ndarray | None = None  # per-row costs (n, K), checked once the classes are known
    index: int = 0  # the first partition it holds


def _array(v, dtype=None) -> np.ndarray:
    """A partition's block (NumPy, or a pandas frame or series) as an array."""
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=dtype)


def check_partition(X, y, weight, n_features: int, index: int, cost=None,
                    categorical: CategoricalColumns | None = None) -> RawPartition:
    """The partition as arrays (``categorical``: its categorical columns as codes), or a
    ValueError naming the partition and the problem."""
    where = f"partition {index}: "
    if categorical is not None:
        try:
            X = categorical.transform(X)
        except ValueError as exc:
            raise ValueError(where + str(exc)) from None
    X = _array(X)
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(f"{where}X must have {n_features} columns, got shape {X.shape}")
    try:
        X = as_float(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}X is not numeric ({exc})") from None
    if any(np.isinf(X[a:b]).any() for a, b in _row_blocks(X)):
        raise ValueError(f"{where}X contains infinity (NaN is allowed: a missing value)")
    y = _array(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.shape != (X.shape[0],):
        raise ValueError(f"{where}y has shape {y.shape} for {X.shape[0]} rows of X; X and y "
                         "must be partitioned alike")
    try:
        y = normalize_labels(y)
    except ValueError as exc:
        raise ValueError(where + str(exc)) from None
    if weight is None:
        weight = np.ones(X.shape[0])
    else:
        weight = _array(weight, np.float64).ravel()
        if weight.shape != (X.shape[0],):
            raise ValueError(f"{where}sample_weight has {weight.shape[0]} entries for "
                             f"{X.shape[0]} rows")
        if not np.isfinite(weight).all() or (weight < 0).any():
            raise ValueError(f"{where}sample_weight must be finite and non-negative")
    if cost is not None:
        cost = _array(cost)
        if cost.ndim != 2 or cost.shape[0] != X.shape[0]:
            raise ValueError(f"{where}sample_cost has shape {cost.shape} for {X.shape[0]} rows; "
                             "one row per sample, partitioned like X")
    return RawPartition(X, y, weight, cost, index)


def _row_blocks(X: np.ndarray, cells: int = 1 << 22):
    """``[start, stop)`` ranges of about ``cells`` values of X: a check over X in these
    allocates a few MiB, not an array the size of X."""
    step = max(1, cells // max(1, X.shape[1]))
    return [(a, min(a + step, X.shape[0])) for a in range(0, X.shape[0], step)]


def facts(raw: RawPartition) -> dict:
    """What the client needs to know of a partition before binning (all small)."""
    positive = raw.weight > 0
    d = raw.X.shape[1]
    has_missing, has_values = np.zeros(d, bool), np.zeros(d, bool)
    for a, b in _row_blocks(raw.X):
        nan = np.isnan(raw.X[a:b][positive[a:b]])
        has_missing |= nan.any(axis=0)
        has_values |= ~nan.all(axis=0)
    return {
        "n_rows": raw.X.shape[0],
        "labels": np.unique(raw.y),
        "label_kind": raw.y.dtype.kind if raw.y.size else None,
        "n_positive": int(positive.sum()),
        "has_missing": has_missing,
        "has_values": has_values,
        "weight_sum": sum_values(raw.weight),  # an accumulator: totals add up exactly
        "weight_range": weight_range(raw.weight),
    }


def cost_sums(raw: RawPartition, classes: np.ndarray, n_decisions: int | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Per true class, the exact sum of the rows' ``sample_cost`` rows (accumulators) and
    their number (the model's ``cost_matrix_`` is the classes' mean cost rows, as in a local
    fit: :func:`~rebelboost.costs.class_mean_costs`)."""
    codes, cost = _costs(raw, classes, n_decisions)
    k = len(classes)
    return sum_by_group(codes, cost, k), np.bincount(codes, minlength=k)


def _costs(raw: RawPartition, classes: np.ndarray, n_decisions: int | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    codes = np.searchsorted(classes, raw.y).astype(np.intp)
    try:
        return codes, check_sample_cost(raw.cost, codes, len(classes), n_decisions)
    except ValueError as exc:
        raise ValueError(f"partitions from {raw.index}: {exc}") from None


def codes_and_weights(raw: RawPartition, classes: np.ndarray) -> tuple:
    """The rows' class codes, sample weights and ``sample_cost`` rows (None without): a cost
    route's folds are dealt on them and its guard weighs the routes by them."""
    return np.searchsorted(classes, raw.y).astype(np.intp), raw.weight, raw.cost


def class_codes(raw: RawPartition, classes: np.ndarray) -> np.ndarray:
    """The rows' class codes in the smallest unsigned type that holds them (an
    early-stopping fit's held-out rows are drawn on them: a byte a row for up to 256
    classes)."""
    return np.searchsorted(classes, raw.y).astype(np.min_scalar_type(max(len(classes) - 1, 0)))


def hold_out(raw: RawPartition, held: np.ndarray) -> tuple[RawPartition, RawPartition]:
    """The partition's rows split in two, each in order: those it keeps for training, and
    those ``held`` marks (an early-stopping fit's validation rows)."""
    def rows(mask):
        return RawPartition(raw.X[mask], raw.y[mask], raw.weight[mask],
                            None if raw.cost is None else raw.cost[mask], raw.index)
    return rows(~held), rows(held)


def select_rows(raw: RawPartition, keep: np.ndarray, classes: np.ndarray) -> tuple:
    """``(X, class codes, weights, costs or None)`` of the rows ``keep`` marks (a fold
    model's training rows: its classes are the codes, as a local fold model's)."""
    return (raw.X[keep], np.searchsorted(classes, raw.y[keep]).astype(np.intp),
            raw.weight[keep], None if raw.cost is None else raw.cost[keep])


def fold_scores(raw: RawPartition, held_out: np.ndarray, model) -> np.ndarray:
    """A fold model's class scores of the rows ``held_out`` marks (``model`` local)."""
    return model.model_.scores(model.encode(raw.X[held_out]))


def score_margins(raw: RawPartition, rows: np.ndarray | None, model,
                  own_codes: bool = False) -> np.ndarray:
    """The gap between the two largest class scores of ``model`` (local) on each of the
    partition's rows that ``rows`` marks (None: all), as the cost route sizes a model's
    scores (:func:`~rebelboost.calibration.row_margins`). ``own_codes``: the rows hold the
    model's own category codes already (the final model on its training partitions), so
    they are scored as they are; a fold model encodes them (its categories are these
    codes)."""
    X = raw.X if rows is None else raw.X[rows]
    return row_margins(model.model_.scores(X if own_codes else model.encode(X)))


def sample_summary(raw: RawPartition, rows: np.ndarray | None,
                   categorical: np.ndarray | None = None) -> list:
    """Each numeric feature's :func:`~rebelboost.binning.value_counts` over this partition's
    share of the binner's sample (``rows`` index its positive-weight rows; None: all of
    them); a categorical feature's codes are counted by :func:`code_summary` instead."""
    positive = raw.weight > 0
    if rows is not None:  # (only the sampled rows are copied)
        X = raw.X[np.flatnonzero(positive)[rows]]
    else:
        X = raw.X if positive.all() else raw.X[positive]
    return [NO_VALUES if categorical is not None and categorical[j] else value_counts(X[:, j])
            for j in range(X.shape[1])]


def merge_summaries(a: list, b: list) -> list:
    return [merge_value_counts(x, y) for x, y in zip(a, b, strict=True)]


def code_summary(raw: RawPartition, categorical: np.ndarray, classes: np.ndarray) -> list:
    """The categorical features' :func:`~rebelboost.binning.code_counts` over this
    partition's rows of positive weight (with their class codes), None for the others."""
    positive = raw.weight > 0
    labels = np.searchsorted(classes, raw.y[positive])
    X = raw.X[positive]
    return [code_counts(X[:, j], labels) if categorical[j] else None
            for j in range(X.shape[1])]


def merge_code_summaries(a: list, b: list) -> list:
    return [None if x is None else merge_code_counts(x, y) for x, y in zip(a, b, strict=True)]


def fit_binner(summaries: list[list], max_bins: int, has_missing, has_values,
               categorical: np.ndarray | None = None, codes: list | None = None,
               min_data_in_bin: int = 1) -> Binner:
    """The binner of the merged ``summaries`` (each a list of per-feature
    :func:`~rebelboost.binning.value_counts`), merged here one feature at a time: the whole
    merged summary (16 bytes a sampled value) is never held beside its parts."""
    merged = (merge_value_counts(*feature) for feature in zip(*summaries, strict=True))
    binner = Binner(max_bins, min_data_in_bin=min_data_in_bin).fit_summary(
        merged, has_missing, has_values)
    return binner if categorical is None else binner.fit_codes(categorical, codes)


@dataclass
class Partition(_WeighsItsArrays):
    """A partition being boosted: its bins and loss (fixed), its scores (new every iteration)
    and the rows of each leaf of the tree being grown.

    Its histograms carry one channel more than the local grower's: the row count (the
    client reads from a leaf's histogram how many rows each side of a split will get, and so
    which child's histogram to build, before it asks for the split)."""

    data: BinnedData
    loss: RebelLoss
    weight: np.ndarray
    all_rows: np.ndarray
    scores: np.ndarray
    counted: np.ndarray | None = None  # (n, 2K + 2): weight channels, sample weight, 1
    leaves: dict | None = None
    sampled: bool = False  # the tree grows on a sample of the rows (the rest are routed)
    covers: tuple = ()  # per tree so far: the sample weight reaching each of its leaves
    exact: bool = False  # quantized histograms, exact sums (accumulators) for the client
    quantized: np.ndarray | None = None  # (n, 2K + 2): ``counted`` quantized for this tree
    # the stepped tree's ``counted``, which the next :func:`weigh` writes over: no task reads
    # a tree's channels once it is stepped, and a fresh (n, 2K + 2) array a tree cost a
    # worker of 10,000,000 rows 0.3 s of page faults (BENCHMARKS.md, issue 32, stop 36)
    spent: np.ndarray | None = None

    def rows(self) -> RowArrays:
        """The rows as the grower reads them; sums and histograms end with the row count."""
        return RowArrays.packed(self.data, self.counted)


@dataclass
class BinnedBlock(_WeighsItsArrays):
    """Consecutive partitions binned as one block: what a :class:`Partition` is made of,
    without the raw rows."""

    data: BinnedData
    codes: np.ndarray  # class codes
    weight: np.ndarray
    costs: np.ndarray | None  # per-row costs (None: the cost matrix)


def bin_block(raws: list[RawPartition], binner: Binner, classes: np.ndarray,
              row_costs: bool = True) -> BinnedBlock:
    """Bins, class codes and weights of consecutive partitions as one block (each binned
    apart into one array: the raw rows are never copied). ``row_costs`` False: the rows'
    own costs are left out (the posterior route trains cost-neutrally)."""
    codes, weight, costs = [], [], []
    bins = np.empty((sum(len(raw.y) for raw in raws), binner.n_features), dtype=np.uint8)
    start = 0
    for raw in raws:
        binner.transform(raw.X, bins[start:start + len(raw.y)])
        start += len(raw.y)
        if raw.cost is None or not row_costs:
            codes.append(np.searchsorted(classes, raw.y).astype(np.intp))
        else:
            c, cost = _costs(raw, classes)
            codes.append(c)
            costs.append(cost)
        weight.append(raw.weight)
    codes, weight = (np.concatenate(a) for a in (codes, weight))
    return BinnedBlock(BinnedData(binner, bins, row_layout=True), codes, weight,
                       np.concatenate(costs) if costs else None)


def make_partition(block: BinnedBlock, n_classes: int, cost_matrix: np.ndarray,
                   subcosts: str, weight_total: float, exact: bool = False) -> Partition:
    """A binned block with REBEL's loss and scores: its training state, made once the raw
    rows are dropped (so that a worker never holds both). ``exact``: the block answers with
    exact sums (:mod:`..exact_sums`) and quantized histograms."""
    if block.costs is not None:
        loss = RebelLoss(None, block.codes, block.weight, subcosts, block.costs, weight_total)
    else:  # (a class table: no (n, K) cost rows)
        loss = RebelLoss(cost_matrix, block.codes, block.weight, subcosts, None, weight_total)
    n = len(block.codes)
    return Partition(block.data, loss, block.weight, np.arange(n, dtype=np.intp),
                     np.zeros((n, n_classes)), exact=exact)


def log_partial_sums(part: Partition) -> np.ndarray:
    if part.scores.shape[0] == 0:
        return np.full(2, -np.inf)
    return part.loss.log_partial_sums()


def max_exponent(part: Partition) -> float:
    return part.loss.max_exponent(part.scores)


def weigh(part: Partition, shift: float, sample=None) -> tuple[Partition, object]:
    """The partition with its channels at ``shift``, and ``(total weight, root sums,
    scales)`` (the total over every row, the root over the next tree's rows; :func:`_root`).
    ``sample``: ``(bits, start)``, the tree's rows as a packed mask over all rows, this
    partition's from row ``start`` (None: every row). An exact partition answers with
    accumulators."""
    part, row_totals = _weighed(part, shift)
    rows = part.all_rows
    if sample is not None:
        bits, start = sample
        mask = np.unpackbits(bits, count=start + len(rows))[start:].astype(bool)
        rows = np.flatnonzero(mask)
    part = replace(part, leaves={0: rows}, sampled=sample is not None)
    return part, (_total(part, row_totals), *_root(part, rows))


def _weighed(part: Partition, shift: float) -> tuple[Partition, np.ndarray]:
    """The partition with its channels at ``shift`` (written over the last tree's), and
    each row's total weight."""
    release_free_memory()  # (the last tree's arrays, before the peak)
    k2 = 2 * part.scores.shape[1]
    shape = (part.scores.shape[0], k2 + 2)
    counted = part.spent  # (channels written in place)
    if counted is None or counted.shape != shape:
        counted = np.empty(shape, CHANNEL_DTYPE)  # (a local fit's packed rows' dtype)
    _, row_totals = part.loss.scaled_row_weights(part.scores, shift, counted[:, :k2])
    counted[:, k2] = part.weight
    counted[:, k2 + 1] = 1.0  # the row count
    return replace(part, counted=counted, quantized=None, spent=None), row_totals


def _root(part: Partition, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The tree's rows' sums and, for an exact partition, its channels' largest values (the
    quantization's scales; None for float histograms)."""
    sums = _sums(part, rows)
    if not part.exact:
        return sums, None
    k2 = part.counted.shape[1] - 2
    counted = part.counted[:, :k2]  # (every row's, as the local fit's scales)
    return sums, counted.max(axis=0) if len(counted) else np.zeros(k2)


def weigh_for_goss(part: Partition, shift: float) -> tuple[Partition, tuple]:
    """:func:`weigh` for a GOSS tree, whose rows wait for the heaviest rows' threshold:
    the partition with its channels, and ``(total weight, least and most row-weight
    key)`` (keys None for an empty partition; the total an accumulator where exact)."""
    part, row_totals = _weighed(part, shift)
    total, keys = _total(part, row_totals), _goss_keys(part)
    if not len(keys):
        return part, (total, None, None)
    return part, (total, int(keys.min()), int(keys.max()))


def _total(part: Partition, row_totals: np.ndarray):
    """The rows' total weight: an accumulator for an exact partition."""
    return sum_values(row_totals) if part.exact else row_totals.sum()


def _goss_keys(part: Partition) -> np.ndarray:
    return weight_keys(row_weights(part.counted[:, :part.counted.shape[1] - 2]))


def goss_counts(part: Partition, low: int, shift: int) -> np.ndarray:
    """:func:`~rebelboost.learners.row_sampling.bucket_counts` of the rows' weights."""
    return bucket_counts(_goss_keys(part), low, shift).astype(np.int32)


def goss_keys_in(part: Partition, low: int, high: int) -> np.ndarray:
    """The rows' weight keys in ``[low, high]``."""
    return keys_in(_goss_keys(part), low, high)


def goss_sample(part: Partition, threshold: int, ties: int, places: np.ndarray,
                factor: float) -> tuple[Partition, tuple]:
    """The partition with its GOSS rows (the heaviest by ``threshold`` and ``ties``, and the
    rest's rows at ``places``, whose channels are amplified by ``factor``, rounded to the
    channels' dtype as a local fit's gathered rows are), and the tree's root sums and
    scales as :func:`weigh` gives them. (The amplified channels are written in place, as
    :func:`weigh` writes over the last tree's: the threshold's passes, which read the
    channels as weighed, are over when this runs, and the partition given is
    :func:`weigh_for_goss`'s, which nothing else reads.)"""
    heavy = heaviest_by_threshold(_goss_keys(part), threshold, ties)
    drawn = np.flatnonzero(~heavy)[places]
    k2 = part.counted.shape[1] - 2
    part.counted[drawn, :k2] = (part.counted[drawn, :k2] * factor).astype(CHANNEL_DTYPE)
    heavy[drawn] = True
    rows = np.flatnonzero(heavy).astype(np.intp)
    part = replace(part, leaves={0: rows}, sampled=True)
    return part, _root(part, rows)


def quantize(part: Partition, scales: np.ndarray, bits: int, seed: int, start: int
             ) -> Partition:
    """The partition with this tree's quantized channels (``scales`` of all rows; ``start``:
    its first row among all, as the local fit draws each row's rounding) and the row count."""
    k2 = part.counted.shape[1] - 2
    q, _ = quantize_channels(part.counted[:, :k2], None, part.weight, bits, seed, scales,
                             start)
    quantized = np.empty(part.counted.shape, dtype=q.dtype)
    quantized[:, :-1] = q
    quantized[:, -1] = 1
    return replace(part, quantized=quantized)


def _sums(part: Partition, rows: np.ndarray) -> np.ndarray:
    """The rows' sums (ending with the row count): accumulators for an exact partition."""
    rowset = part.rows()
    if part.exact:
        return sum_rows(rowset.channels, rows, None, rowset.row_weight)
    return rowset.sums_of(rows)


def split_many(part: Partition, jobs: list[tuple], features: np.ndarray, drop: list[int]
               ) -> tuple[Partition, tuple[np.ndarray, np.ndarray]]:
    """The partition with each ``(leaf, left, right, feature, split_bin, missing_left, built,
    left_bins)`` of ``jobs`` done in order: the leaf's rows split into ``left`` and ``right``
    (``left_bins``: a categorical split's bins going left; the leaf's own rows kept, as the
    grower may leave it a leaf) and child ``built``'s :func:`histogram`; and the rows of the
    leaves in ``drop`` (split for good) forgotten. Also the sums of each ``built`` child
    (ending with its row count: the grower takes the other child's as the parent's minus
    these) and the histograms, each concatenated in the jobs' order (one array apiece, so
    that a reduction adds them up as one), as one answer (:func:`add_answers` reduces the
    blocks' answers in one pass: one gather a round trip)."""
    leaves = {h: r for h, r in part.leaves.items() if h not in drop}
    rowset = part.rows()
    stats, hists = [], []
    for leaf, left, right, feature, split_bin, missing_left, built, left_bins in jobs:
        lrows, rrows = rowset.split_rows(leaves[leaf], feature, split_bin, missing_left,
                                         left_bins)
        leaves[left], leaves[right] = lrows, rrows
        hist, sums = _histogram(part, leaves[built], features)
        stats.append(sums)
        hists.append(hist)
    return replace(part, leaves=leaves), (np.concatenate(stats),
                                          _compact(part, np.concatenate(hists)))


def histogram(part: Partition, leaf: int, features: np.ndarray) -> np.ndarray:
    """The leaf's histogram on the cells of ``features``, packed (:func:`feature_cells`)."""
    return _compact(part, _histogram(part, part.leaves[leaf], features)[0])


def _histogram(part: Partition, rows: np.ndarray, features: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The rows' packed histogram and their sums (:func:`_sums`): scattered rows are read
    once for both, into a gathered copy (as a local leaf's are)."""
    data = part.data
    cells = feature_cells(data.cell_offsets, features)
    out = np.empty((int(data.cell_offsets[-1]), part.counted.shape[1]))
    rowset = part.rows()
    if part.quantized is not None:  # integers in float64 cells: exact in any order below 2^53
        q = gather_as_float(part.quantized, rows)
        build_leaf_histogram(data, q, rows, q.sum(axis=0), features, out)
        return out[cells], _sums(part, rows)
    gathered, sums = rowset.gathered(rows)
    rowset.histogram_of(rows, sums, features, out, gathered)
    return out[cells], sums


def step(part: Partition, leaves: list[int], steps: np.ndarray, *tree) -> Partition:
    """The partition after the tree (a :class:`BinTree`'s arrays): each row's score plus its
    leaf's step."""
    leaf_of_row = part.rows().leaves_of([part.leaves[h] for h in leaves], BinTree(*tree),
                                        sampled=part.sampled)
    scores = part.scores.copy()
    add_slot_values(scores, leaf_of_row, None, steps)
    if part.exact:
        cover = sum_by_slot(leaf_of_row[:, None], part.weight,
                            accumulator(1, steps.shape[0]))[0]
    else:
        cover = np.bincount(leaf_of_row, weights=part.weight, minlength=steps.shape[0])
    return replace(part, scores=scores, counted=None, leaves=None, quantized=None,
                   covers=part.covers + (cover,), spent=part.counted)


def covers(part: Partition, n_leaves: int) -> np.ndarray:
    """(trees, n_leaves): the sample weight of the partition's rows reaching each leaf
    (accumulators, with a last axis of digits, for an exact partition)."""
    if part.covers:
        return np.stack(part.covers)
    return accumulator(0, n_leaves) if part.exact else np.zeros((0, n_leaves))


def _compact(part: Partition, hist: np.ndarray) -> np.ndarray:
    """A quantized partition's histogram (integers in float64 cells, none negative) as
    int32 where every cell fits: half the bytes to send; :func:`add` widens (the same
    integers)."""
    if part.quantized is not None and (not hist.size or hist.max() < 2**31):
        return hist.astype(np.int32)
    return hist


def add_answers(a: tuple, b: tuple) -> tuple:
    """Two blocks' answers to a round of splits (sums, histograms) added up."""
    return add(a[0], b[0]), add(a[1], b[1])


def add(a, b):
    """The sum of two blocks' answers (int32 histograms added in int64: no overflow)."""
    if getattr(a, "dtype", None) == np.int32 or getattr(b, "dtype", None) == np.int32:
        return np.add(a, b, dtype=np.int64)
    return a + b
