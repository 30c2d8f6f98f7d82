"""The split-search engine: histograms over per-sample channels and pluggable split scores."""

from .histogram import build_histogram, partition_rows
from .splits import Split, best_split, best_split_per_feature, rebel_score, sign_cost_score

__all__ = [
    "Split",
    "best_split",
    "best_split_per_feature",
    "build_histogram",
    "partition_rows",
    "rebel_score",
    "sign_cost_score",
]
