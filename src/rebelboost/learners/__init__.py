"""Weak learners: each turns one iteration's weights into a fitted f(x) and its step."""

from .rebel_tree import FittedLearner, constant_learner, grow_rebel_tree
from .tree import TreeArrays

__all__ = ["FittedLearner", "TreeArrays", "constant_learner", "grow_rebel_tree"]
