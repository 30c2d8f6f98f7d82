"""Distributed training on Dask (``pip install rebelboost[dask]``): the same model from
data spread over many machines. See :class:`DaskRebelClassifier`."""

from .estimator import DaskRebelClassifier

__all__ = ["DaskRebelClassifier"]
