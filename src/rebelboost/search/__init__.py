"""The split-search engine: binned data, histograms over per-sample channels, split scores."""

from .binned import BinnedData
from .histograms import SparseBins, build_histogram, sparse_bins
from .quickboost import SearchResult, heaviest_first, quickboost_split, visiting_order
from .scores import SplitScore, codeword_score, mh_stump_score, rebel_score, sign_cost_score
from .splits import Split, best_split, best_split_per_feature

__all__ = [
    "BinnedData",
    "SearchResult",
    "SparseBins",
    "Split",
    "SplitScore",
    "best_split",
    "best_split_per_feature",
    "build_histogram",
    "codeword_score",
    "heaviest_first",
    "mh_stump_score",
    "quickboost_split",
    "rebel_score",
    "sign_cost_score",
    "sparse_bins",
    "visiting_order",
]
