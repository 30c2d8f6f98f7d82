"""The split-search engine: histograms over per-sample channels and pluggable split scores."""

from .histogram import SparseBins, build_histogram, partition_rows, sparse_bins
from .quickboost import SearchResult, heaviest_first, quickboost_split, visiting_order
from .splits import Split, best_split, best_split_per_feature, rebel_score, sign_cost_score

__all__ = [
    "SearchResult",
    "SparseBins",
    "Split",
    "best_split",
    "best_split_per_feature",
    "build_histogram",
    "heaviest_first",
    "partition_rows",
    "quickboost_split",
    "rebel_score",
    "sign_cost_score",
    "sparse_bins",
    "visiting_order",
]
