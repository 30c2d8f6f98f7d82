"""Data sets: the bundled demo set and synthetic generators for tests and reproductions."""

from .bundled import load_pendigits
from .synthetic import make_spiral

__all__ = ["load_pendigits", "make_spiral"]
