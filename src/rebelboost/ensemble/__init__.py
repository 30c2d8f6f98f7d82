"""scikit-learn estimators built on the shared search engine."""

from .adaboost_mh import AdaBoostMHClassifier
from .mcboost import MCBoostClassifier
from .one_vs_all import OneVsAllAdaBoostClassifier
from .rebel import RebelClassifier

__all__ = [
    "AdaBoostMHClassifier",
    "MCBoostClassifier",
    "OneVsAllAdaBoostClassifier",
    "RebelClassifier",
]
