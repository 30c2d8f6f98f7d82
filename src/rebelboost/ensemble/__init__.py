"""scikit-learn estimators: boosters on the shared engine, and the model-file loader."""

from __future__ import annotations

from ..io import read_document
from ._base import BoostedClassifier
from .adaboost_mh import AdaBoostMHClassifier
from .mcboost import MCBoostClassifier
from .one_vs_all import OneVsAllAdaBoostClassifier
from .rebel import RebelClassifier

ESTIMATORS: dict[str, type[BoostedClassifier]] = {
    cls.__name__: cls
    for cls in (AdaBoostMHClassifier, MCBoostClassifier, OneVsAllAdaBoostClassifier,
                RebelClassifier)
}


def load_model(path) -> BoostedClassifier:
    """Read any rebelboost model file (every released format version); a bad file raises
    ``ValueError``."""
    doc = read_document(path)
    name = doc.get("estimator")
    cls = ESTIMATORS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"model file holds an unknown estimator {doc.get('estimator')!r}")
    return cls.from_dict(doc)


__all__ = [
    "AdaBoostMHClassifier",
    "BoostedClassifier",
    "MCBoostClassifier",
    "OneVsAllAdaBoostClassifier",
    "RebelClassifier",
    "load_model",
]
