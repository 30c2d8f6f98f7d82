"""Data sets: the bundled demo set and synthetic generators for tests and reproductions."""

from .benchmark_sets import load_benchmark
from .bundled import load_pendigits
from .synthetic import make_spiral

__all__ = ["load_benchmark", "load_pendigits", "make_spiral"]
