"""The binned training data every tree learner grows on, built once per fit.

:class:`BinnedData` holds the fitted :class:`~rebelboost.binning.Binner` (its thresholds turn
bins back into raw split values), the row-major bins, their feature-major copy for the layer
histograms (:class:`~.histograms.BinColumns`), optionally the row-wise sparse layout QuickBoost's
prefixes read (:class:`~.histograms.SparseBins`), and the bin metadata every split search needs
(:class:`~rebelboost.binning.BinLayout`). Other data (a validation set) is binned with the same
thresholds by :meth:`BinnedData.bin`.
"""

from __future__ import annotations

import numpy as np

from ..binning import BinLayout, Binner, as_float
from .histograms.layer import BinColumns, bin_columns
from .histograms.sparse import SparseBins, entry_share, sparse_bins


class BinnedData:
    """Training rows binned by ``binner`` (fitted), in the layouts the searches read.

    ``row_layout`` also builds the row-wise sparse entries (only QuickBoost reads them).
    """

    def __init__(self, binner: Binner, bins: np.ndarray, row_layout: bool = False):
        bins = np.ascontiguousarray(bins)
        if bins.dtype != np.uint8 or bins.ndim != 2:
            raise TypeError(f"bins must be a 2-d uint8 array, got {bins.dtype} with "
                            f"{bins.ndim} dims")
        if not hasattr(binner, "thresholds_"):
            raise ValueError("the binner is not fitted")
        if bins.shape[1] != len(binner.thresholds_):
            raise ValueError(f"bins have {bins.shape[1]} features, the binner "
                             f"{len(binner.thresholds_)}")
        self.binner = binner
        self.bins = bins
        self.layout: BinLayout = binner.layout
        self.cell_offsets = self.layout.cell_offsets()  # of the compact leaf histograms
        self._columns: BinColumns | None = None
        self.sparse: SparseBins | None = sparse_bins(bins) if row_layout else None

    @classmethod
    def fit(cls, X: np.ndarray, sample_weight: np.ndarray | None = None, max_bins: int = 255,
            random_state=0, row_layout: bool = False,
            categorical: np.ndarray | None = None,
            labels: np.ndarray | None = None, min_data_in_bin: int = 1) -> BinnedData:
        """Bin ``X`` with thresholds from its rows of positive weight (a zero weight equals
        removal); ``random_state`` seeds the binner's subsample; ``categorical`` marks the
        features holding category codes and ``labels`` (class codes) group the levels of
        those with more than ``max_bins`` (:meth:`Binner.fit`); ``min_data_in_bin``: a
        numeric feature gets at most one bin per this many rows (:class:`Binner`)."""
        X = as_float(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d, got {X.ndim} dims")
        binner = Binner(max_bins, random_state=random_state, min_data_in_bin=min_data_in_bin)
        fit_rows = X
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != (X.shape[0],):
                raise ValueError("sample_weight must have one entry per row of X")
            positive = sample_weight > 0
            if not positive.all():  # (no copy of X when every row counts)
                fit_rows = X[positive]
                labels = None if labels is None else np.asarray(labels)[positive]
        if fit_rows.shape[0] == 0:
            raise ValueError("no rows of positive weight to place the bin thresholds")
        binner.fit(fit_rows, categorical, labels)
        return cls(binner, binner.transform(X), row_layout)

    @property
    def entry_fraction(self) -> float:
        """The share of (row, feature) cells a histogram adds one by one: 1 for dense bins;
        for sparse ones the entries outside the default bins (the rest comes from the totals).
        Histogram sizes are weighed by it where threads must pay for their start."""
        if self.sparse is None:
            return 1.0
        return entry_share(len(self.sparse.entries), *self.bins.shape)

    @property
    def columns(self) -> BinColumns:
        """The feature-major copy the layer histograms read, built on first use (leaf-wise
        growth reads the row-major bins only)."""
        if self._columns is None:
            self._columns = bin_columns(self.bins)
        return self._columns

    @property
    def n_samples(self) -> int:
        return self.bins.shape[0]

    @property
    def n_features(self) -> int:
        return self.bins.shape[1]

    def bin(self, X: np.ndarray) -> np.ndarray:
        """Bins of other rows (a validation set) under the training thresholds."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have {self.n_features} columns, got shape {X.shape}")
        return self.binner.transform(X)

    def threshold(self, feature: int, bin_index: int) -> float:
        """Raw split value of ``bin <= bin_index`` (see :meth:`Binner.threshold`)."""
        return self.binner.threshold(feature, bin_index)
