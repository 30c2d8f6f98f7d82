"""The learner kinds a model can hold, by the name their model files give them.

A learner kind is a stack of T fitted weak learners that can route rows (``route``, and the
fused ``accumulate``), describe itself (``rule`` for one row, ``regions`` for the report), give
its per-slot outputs (``slot_outputs``), be sliced and stacked, and write and check its own
model-file section (``to_dict`` / ``from_dict``). A new kind is one module plus an entry here.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..io import corrupt
from .leaf_tree import LeafTreeArrays
from .similarity import SimilarityArrays
from .tree import TreeArrays


class LearnerStack(Protocol):
    kind_name: str

    def __len__(self) -> int: ...
    @property
    def n_slots(self) -> int: ...
    def route(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]: ...
    def accumulate(self, X: np.ndarray, values: np.ndarray, out: np.ndarray) -> None: ...
    def take(self, index) -> LearnerStack: ...
    def slot_outputs(self) -> np.ndarray: ...
    def rule(self, t: int, x: np.ndarray, names: list[str], classes) -> tuple[str, list]: ...
    def regions(self, t: int, names: list[str], classes, output=int) -> list: ...
    def features_used(self, t: int) -> np.ndarray: ...
    def to_dict(self) -> dict: ...


LEARNER_KINDS: dict[str, type] = {
    TreeArrays.kind_name: TreeArrays,
    LeafTreeArrays.kind_name: LeafTreeArrays,
    SimilarityArrays.kind_name: SimilarityArrays,
}


def learners_from_dict(doc, n_features: int, n_classes: int) -> LearnerStack:
    """The learner stack a model file's ``learners`` section describes (ValueError if bad)."""
    kind = doc.get("type") if isinstance(doc, dict) else None
    if not isinstance(kind, str) or kind not in LEARNER_KINDS:
        raise corrupt(f"unknown learner type {kind!r}")
    cls = LEARNER_KINDS[kind]
    try:
        return cls.from_dict(doc, n_features, n_classes)
    except KeyError as exc:
        raise corrupt(f"learners lack {exc}") from None
    except (TypeError, OverflowError) as exc:
        raise corrupt(f"learners: {type(exc).__name__}: {exc}") from None
