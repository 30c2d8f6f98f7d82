"""scikit-learn estimators built on the shared search engine."""

from .rebel import RebelClassifier

__all__ = ["RebelClassifier"]
