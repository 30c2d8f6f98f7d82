"""What a report says about a fitted model itself: its summary and its weak learners, read the
same way for every booster from its additive model (``model_``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
    if len(model.model_.learners) != model.n_estimators_:
        facts.append(("weak learners", str(len(model.model_.learners))))
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
    classes, names = model.classes_.tolist(), model.feature_names()
    learners, values = model.model_.learners, model.model_.values
    iterations = np.searchsorted(model.model_.stage_ends, np.arange(len(learners)),
                                 side="right") + 1
    categories = getattr(model, "categories_", None)  # categorical tests name their values
    extra = {} if categories is None else {"categories": categories}
    views = []
    for t in range(len(learners)):
        slots = [slot for _, slot in learners.regions(t, names, classes, **extra)]
        signs, vector = _factor(values[t][slots])
        if learners.weighted_output:  # a similarity: f(x) in [-1, 1] times one vector
            branches = [(text, "f in [-1, 1]") for text, _ in learners.regions(t, names, classes)]
            vector = values[t, :1]
        elif signs is None:  # slots add unrelated class scores: list them per region
            branches = learners.regions(t, names, classes, lambda leaf: f"leaf {leaf}",
                                        **extra)
        else:
            sign = dict(zip(slots, signs, strict=True))
            branches = learners.regions(t, names, classes,
                                        lambda s, sign=sign: f"{sign[s]:+g}", **extra)
            vector = vector[None, :]
        views.append(LearnerView(t + 1, int(iterations[t]), branches, vector))
    return views


def _factor(leaf_scores: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """Write leaf score vectors as ``s_leaf * v`` with ``s_leaf = +-1`` where they are so.

    REBEL, AdaBoost.MH, CD-MCBoost and one-vs-all leaves are; GD-MCBoost's codeword leaves are
    not (then ``(None, leaf_scores)``).
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
