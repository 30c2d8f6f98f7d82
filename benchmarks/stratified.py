"""Stratified subsamples for the cost benchmarks (``bench_cost.py``, ``cost_suite.py``)."""

from __future__ import annotations

import numpy as np


def subsample(y: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """About n rows, each class in proportion but with at least min(its count, 10) rows."""
    if n >= len(y):
        return np.arange(len(y))
    keep = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        take = max(int(round(n * len(rows) / len(y))), min(len(rows), 10))
        keep.append(rng.choice(rows, size=take, replace=False))
    return np.sort(np.concatenate(keep))
