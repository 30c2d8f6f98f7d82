"""Explanations: a prediction is a sum of simple tests, so list the ones that decided it.

For one row ``x`` with scores ``H(x) = sum_t f_t(x) a_t``, predicted class ``k`` and runner-up
``j``, learner ``t`` adds ``f_t(x) (a_t[k] - a_t[j])`` to the margin by which ``k`` beats ``j``.
The margin is exactly the sum of these terms, so the largest ones explain the decision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Term:
    """One weak learner's part in a prediction."""

    learner: int
    rule: str  # the tests the row passed, e.g. "x3 <= 0.5 and x7 > 2"
    output: float  # f_t(x)
    contribution: float  # f_t(x) * a_t[predicted]
    margin: float  # f_t(x) * (a_t[predicted] - a_t[runner_up])


@dataclass
class Explanation:
    predicted: object
    runner_up: object
    scores: np.ndarray  # H(x) per class
    margin: float  # H_predicted - H_runner_up
    terms: list[Term]  # largest |margin| first
    feature_margins: dict[str, float]  # margin summed per feature (a rule's share split evenly)

    def __str__(self) -> str:
        lines = [
            f"predicted {self.predicted!r} over runner-up {self.runner_up!r} "
            f"by margin {self.margin:.4g} = the sum of every learner's term; the largest "
            f"{len(self.terms)}:",
            "  margin   learner  rule",
        ]
        lines += [f"  {t.margin:+8.4f}  #{t.learner:<6d} {t.rule}" for t in self.terms]
        top = sorted(self.feature_margins.items(), key=lambda kv: -abs(kv[1]))[:5]
        if top:  # similarity learners read whole rows, not single features
            lines.append("  by feature: " + ", ".join(f"{n} {v:+.3f}" for n, v in top))
        return "\n".join(lines)


def _feature_names(model) -> list[str]:
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        return [str(n) for n in names]
    return [f"x{j}" for j in range(model.n_features_in_)]


def _path(trees, t: int, x: np.ndarray, names: list[str]) -> tuple[str, list[int]]:
    """The tests row ``x`` passes in tree ``t``, as text, and the features they read."""
    feature, threshold, missing_left = trees.feature[t], trees.threshold[t], trees.missing_left[t]
    node, tests, used = 0, [], []
    while node < feature.shape[0]:
        f = int(feature[node])
        if f < 0:
            node = 2 * node + 1
            continue
        v = x[f]
        if np.isnan(v):
            left = bool(missing_left[node])
            tests.append(f"{names[f]} is missing")
        else:
            left = bool(v <= threshold[node])
            tests.append(f"{names[f]} {'<=' if left else '>'} {threshold[node]:.6g}")
        used.append(f)
        node = 2 * node + 1 if left else 2 * node + 2
    return (" and ".join(tests) if tests else "always (bias)"), used


def explain_prediction(model, x, top: int = 10, feature_names=None) -> Explanation:
    """Explain ``model``'s prediction for the single row ``x``.

    ``feature_names`` overrides the names learnt from a DataFrame (default ``x0, x1, ...``).
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model)
    X = np.asarray(x, dtype=np.float64).reshape(1, -1)
    if X.shape[1] != model.n_features_in_:
        raise ValueError(f"x has {X.shape[1]} features; the model expects {model.n_features_in_}")
    if np.isinf(X).any():
        raise ValueError("x contains infinity")
    learners = model.learners_
    outputs = learners.outputs(model._features(X))[0]
    scores = outputs @ model.vectors_
    order = np.argsort(-scores, kind="stable")
    k, j = int(order[0]), int(order[1])
    names = [str(n) for n in feature_names] if feature_names is not None else _feature_names(model)
    margins = outputs * (model.vectors_[:, k] - model.vectors_[:, j])
    feature_margins: dict[str, float] = {}
    terms = []
    for t in np.argsort(-np.abs(margins), kind="stable"):
        if hasattr(learners, "describe"):  # similarities compare with training rows
            rule, used = learners.describe(int(t), model.classes_.tolist()), []
        else:
            rule, used = _path(learners, int(t), X[0], names)
        for f in used:
            feature_margins[names[f]] = feature_margins.get(names[f], 0.0) + margins[t] / len(used)
        if len(terms) < top:
            terms.append(Term(int(t), rule, float(outputs[t]),
                              float(outputs[t] * model.vectors_[t, k]), float(margins[t])))
    classes = model.classes_.tolist()
    return Explanation(
        classes[k], classes[j], scores, float(scores[k] - scores[j]), terms,
        feature_margins,
    )
