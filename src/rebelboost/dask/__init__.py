"""Distributed training on Dask (``pip install rebelboost[dask]``): the same model from
data spread over many machines. See :class:`DaskRebelClassifier`."""

try:
    import dask  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
    raise ImportError("rebelboost.dask needs Dask: pip install 'rebelboost[dask]'") from exc

from .estimator import DaskRebelClassifier

__all__ = ["DaskRebelClassifier"]
