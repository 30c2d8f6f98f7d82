"""Explanations: a prediction is a sum of simple tests, so list the ones that decided it.

For one row ``x`` with scores ``H(x) = sum_t h_t(x)`` (``h_t`` the K class scores learner ``t``
adds: ``f_t(x) a_t`` for REBEL), predicted class ``k`` and runner-up ``j``, learner ``t`` adds
``h_t(x)[k] - h_t(x)[j]`` to the margin by which ``k`` beats ``j``. The margin is exactly the
sum of these terms, so the largest ones explain the decision. Every booster is explained so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Term:
    """One weak learner's part in a prediction."""

    learner: int  # 1-based position in the sum, as in the report
    rule: str  # the tests the row passed, e.g. "x3 <= 0.5 and x7 > 2"
    contribution: float  # the learner's score for the predicted class
    margin: float  # its score for the predicted class minus the runner-up's


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


def explain_prediction(model, x, top: int = 10, feature_names=None) -> Explanation:
    """Explain ``model``'s prediction for the single row ``x``.

    ``feature_names`` overrides the names learnt from a DataFrame (default ``x0, x1, ...``).
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model)
    if hasattr(x, "to_numpy"):  # a DataFrame row or a one-row frame
        x = x.to_numpy()
    X = np.asarray(x, dtype=np.float64).reshape(1, -1)
    if X.shape[1] != model.n_features_in_:
        raise ValueError(f"x has {X.shape[1]} features; the model expects {model.n_features_in_}")
    if np.isinf(X).any():
        raise ValueError("x contains infinity")
    contributions = model.model_.contributions(X[0])  # (T, K)
    scores = contributions.sum(axis=0)
    order = np.argsort(-scores, kind="stable")
    k, j = int(order[0]), int(order[1])
    names = ([str(n) for n in feature_names] if feature_names is not None
             else model.feature_names())
    learners = model.model_.learners
    margins = contributions[:, k] - contributions[:, j]
    feature_margins: dict[str, float] = {}
    terms = []
    for t in np.argsort(-np.abs(margins), kind="stable"):
        rule, used = learners.rule(int(t), X[0], names, model.classes_.tolist())
        for f in used:
            feature_margins[names[f]] = feature_margins.get(names[f], 0.0) + margins[t] / len(used)
        if len(terms) < top:
            terms.append(Term(int(t) + 1, rule, float(contributions[t, k]), float(margins[t])))
    classes = model.classes_.tolist()
    return Explanation(
        classes[k], classes[j], scores, float(scores[k] - scores[j]), terms,
        feature_margins,
    )
