"""Every histogram of the split searches: per (feature, bin) sums of the rows' channels.

A booster describes its split problem as C channels per row (REBEL: the 2K weights and the
sample weight); a node's histogram sums them over the node's rows for every feature and bin,
and every split score reads only that. One kernel adds rows for each storage of the bins:

* :mod:`.dense` — row-major bins: the one dense kernel, rows added one by one into the cells
  of a set of features (tiled so the cells stay in cache).
* :mod:`.sparse` — row-wise entries outside each feature's most frequent bin
  (:class:`SparseBins`); that bin is the node's totals minus the others.
* :mod:`.layer` — feature-major bins (:class:`BinColumns`): every node of a tree layer in one
  pass over each feature, for the layer-grown learners (stumps, the paper's trees, Hamming
  trees), whose nodes are many and whose rows are labelled rather than listed.

and one builder per shape of histogram, chosen by the learner:

* a leaf, compact ``(n_cells, C)`` (:mod:`.leaf`: directly, or a parent minus its smaller
  child) — the vector-leaf trees, local or on row blocks; integer cells for quantized
  channels (:mod:`rebelboost.search.quantize`) go through the same dense kernel;
* a full grid ``(n_features, n_bins_total, C)`` (:mod:`.grid`), grown by ranges of rows —
  QuickBoost's prefixes;
* a layer ``(n_nodes, n_features, n_bins_total, C)`` (:mod:`.layer`).

Exactness, the same everywhere: every cell adds its rows in a fixed order starting from +0.0;
threads split features, never rows. So a histogram's bits do not depend on the thread count,
and the exhaustive and pruned searches agree bit for bit.
"""

from .dense import add_rows
from .grid import accumulate_histogram, build_histogram
from .layer import BinColumns, bin_columns, column_histograms, node_totals, split_node
from .leaf import big_histograms, build_leaf_histogram, feature_cells, subtract_histogram
from .pool import HistogramPool
from .sparse import SparseBins, add_entries, fill_default_bins, row_totals, sparse_bins

__all__ = [
    "BinColumns",
    "HistogramPool",
    "SparseBins",
    "accumulate_histogram",
    "add_entries",
    "add_rows",
    "big_histograms",
    "bin_columns",
    "build_histogram",
    "build_leaf_histogram",
    "column_histograms",
    "feature_cells",
    "fill_default_bins",
    "node_totals",
    "row_totals",
    "sparse_bins",
    "split_node",
    "subtract_histogram",
]
