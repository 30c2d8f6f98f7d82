"""rebelboost: multi-class, cost-sensitive boosting that is accurate, fast and white-box."""

from .ensemble import (
    AdaBoostMHClassifier,
    MCBoostClassifier,
    OneVsAllAdaBoostClassifier,
    RebelClassifier,
)
from .io import load_model
from .metrics import mean_cost

__version__ = "0.1.0"
__all__ = [
    "AdaBoostMHClassifier",
    "MCBoostClassifier",
    "OneVsAllAdaBoostClassifier",
    "RebelClassifier",
    "__version__",
    "load_model",
    "mean_cost",
]
