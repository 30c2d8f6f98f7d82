"""rebelboost: multi-class, cost-sensitive boosting that is accurate, fast and white-box."""

from ._version import __version__
from .ensemble import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
    load_model,
)
from .metrics import mean_cost

__all__ = [
    "AdaBoostMHClassifier",
    "MCBoostClassifier",
    "OneVsAllAdaBoostClassifier",
    "RebelClassifier",
    "__version__",
    "load_model",
    "mean_cost",
]
