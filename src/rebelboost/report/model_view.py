"""What a report says about a fitted model itself: its summary and its weak learners, read the
same way for REBEL (``learners_`` and ``vectors_``) and for the leaf-score boosters
(``trees_`` and ``leaf_scores_``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..explain import _feature_names
from ..learners.tree import TreeArrays


@dataclass
class LearnerView:
    """One weak learner as the report lists it.

    ``branches`` pairs each reachable region of the input space (in words) with the learner's
    output there; ``vectors`` holds the class vector the output multiplies (one row), or, for
    trees whose leaves add unrelated class scores (GD-MCBoost), one row per branch.
    """

    index: int  # 1-based position in the sum
    iteration: int  # boosting iteration (one-vs-all fits K trees per iteration)
    branches: list[tuple[str, str]]
    vectors: np.ndarray


def cost_matrix_of(model) -> tuple[np.ndarray, bool]:
    """The model's cost matrix and whether it was trained with it (else the 0-1 cost)."""
    cost = getattr(model, "cost_matrix_", None)
    if cost is not None:
        return np.asarray(cost, dtype=float), True
    k = len(model.classes_)
    return 1.0 - np.eye(k), False


def summary_facts(model) -> list[tuple[str, str]]:
    """(name, value) lines for the model summary."""
    facts = [("estimator", type(model).__name__),
             ("classes", f"{len(model.classes_)}: " + ", ".join(map(str, model.classes_))),
             ("features", str(model.n_features_in_)),
             ("boosting iterations", str(model.n_estimators_))]
    if hasattr(model, "stage_ends_") and len(model.trees_) != model.n_estimators_:
        facts.append(("weak learners (trees)", str(len(model.trees_))))
    if getattr(model, "init_loss_", None) is not None:
        facts.append(("loss before the first iteration", f"{model.init_loss_:.6g}"))
    if len(model.train_loss_):
        facts.append(("final training loss", f"{model.train_loss_[-1]:.6g}"))
    if getattr(model, "best_iteration_", None) is not None:
        facts.append(("best validation iteration (kept)", str(model.best_iteration_)))
    if getattr(model, "n_relabeled_", 0):
        facts.append(("coincident training rows relabelled", str(model.n_relabeled_)))
    return facts


def learner_views(model) -> list[LearnerView]:
    """Every weak learner of ``model`` in the order it was added."""
    classes = model.classes_.tolist()
    if hasattr(model, "vectors_"):  # REBEL: H(x) = sum_t f_t(x) a_t
        learners = model.learners_
        if isinstance(learners, TreeArrays):
            names = _feature_names(model)
            return [LearnerView(t + 1, t + 1, _tree_branches(
                        learners, t, names, lambda leaf, t=t: f"{learners.leaf_value[t, leaf]:+g}"),
                    model.vectors_[t:t + 1]) for t in range(len(learners))]
        return [LearnerView(t + 1, t + 1,
                            [(learners.describe(t, classes), "f in [-1, 1]")],
                            model.vectors_[t:t + 1]) for t in range(len(learners))]
    names = _feature_names(model)
    trees, scores = model.trees_, model.leaf_scores_
    iterations = np.searchsorted(model.stage_ends_, np.arange(len(trees)), side="right") + 1
    views = []
    for t in range(len(trees)):
        leaves = [leaf for _, leaf in _tree_branches(trees, t, names, int)]
        signs, vector = _factor(scores[t][leaves])
        if signs is None:  # leaves add unrelated class scores: list them per leaf
            branches = _tree_branches(trees, t, names, lambda leaf: f"leaf {leaf}")
        else:
            sign = dict(zip(leaves, signs, strict=True))
            branches = _tree_branches(trees, t, names, lambda leaf, sign=sign: f"{sign[leaf]:+g}")
            vector = vector[None, :]
        views.append(LearnerView(t + 1, int(iterations[t]), branches, vector))
    return views


def _tree_branches(trees: TreeArrays, t: int, names: list[str],
                   output: Callable[[int], object]) -> list[tuple[str, object]]:
    """(tests in words, ``output(leaf)``) for the reachable regions of tree ``t``, left to
    right; sibling regions with equal outputs are merged (a constant learner reads "always")."""
    feature, threshold, missing_left = trees.feature[t], trees.threshold[t], trees.missing_left[t]
    n_internal = feature.shape[0]

    def walk(node: int, tests: list[str]) -> list[tuple[list[str], object]]:
        if node >= n_internal:
            return [(tests, output(node - n_internal))]
        f = int(feature[node])
        if f < 0:  # passes everything left
            return walk(2 * node + 1, tests)
        name, thr = names[f], f"{threshold[node]:.6g}"
        left = walk(2 * node + 1, [*tests, f"{name} <= {thr}"
                                   + (" (or missing)" if missing_left[node] else "")])
        right = walk(2 * node + 2, [*tests, f"{name} > {thr}"
                                    + ("" if missing_left[node] else " (or missing)")])
        if len(left) == len(right) == 1 and left[0][1] == right[0][1]:
            return [(tests, left[0][1])]
        return left + right

    return [(" and ".join(tests) if tests else "always", out) for tests, out in walk(0, [])]


def _factor(leaf_scores: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """Write leaf score vectors as ``s_leaf * v`` with ``s_leaf = +-1`` where they are so.

    AdaBoost.MH, CD-MCBoost and one-vs-all leaves are; GD-MCBoost's codeword leaves are not
    (then ``(None, leaf_scores)``).
    """
    vector = leaf_scores[np.argmax(np.abs(leaf_scores).sum(axis=1))]
    scale = max(float(np.abs(vector).max()), 1e-300)
    signs = []
    for row in leaf_scores:
        if np.allclose(row, vector, rtol=1e-9, atol=1e-12 * scale):
            signs.append(1.0)
        elif np.allclose(row, -vector, rtol=1e-9, atol=1e-12 * scale):
            signs.append(-1.0)
        else:
            return None, leaf_scores
    return np.array(signs), vector
