"""Moved to :mod:`rebelboost.parallel`; kept until the ensemble modules import from there."""
from ..parallel import numba_threads  # noqa: F401
