"""Boosting losses: per-sample weights from scores, channels for the search, step vectors."""

from .rebel import RebelLoss, step_vector, subcosts

__all__ = ["RebelLoss", "step_vector", "subcosts"]
