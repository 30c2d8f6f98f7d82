"""Explanations: a prediction is a sum of simple tests, so list the ones that decided it.

For one row ``x`` with scores ``H(x) = sum_t h_t(x)`` (``h_t`` the K class scores learner ``t``
adds: ``f_t(x) a_t`` for REBEL), predicted class ``k`` and runner-up ``j``, learner ``t`` adds
``h_t(x)[k] - h_t(x)[j]`` to the margin by which ``k`` beats ``j``. The margin is exactly the
sum of these terms, so the largest ones explain the decision. Every booster is explained so.

Tree models also say *why this decision* (:func:`explain_decision`), per feature, from the
exact contributions (:mod:`rebelboost.contributions`): what each decision is expected to cost,
the runner-up, and how far each of the row's values moved the decision's lead over the
runner-up away from that of a typical case (the contributions' bias).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class ContributionsUnavailable(ValueError):
    """The model cannot give exact per-feature contributions (and says why)."""


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
    decision: DecisionExplanation | None = None  # why this decision (tree models)

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
        if self.decision is not None:
            lines.append(str(self.decision))
        return "\n".join(lines)


def explain_prediction(model, x, top: int = 10, feature_names=None) -> Explanation:
    """Explain ``model``'s prediction for the single row ``x``.

    ``feature_names`` overrides the names learnt from a DataFrame (default ``x0, x1, ...``).
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model)
    X = np.asarray(model.encode_row(x), dtype=np.float64).reshape(1, -1)
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
    categories = getattr(model, "categories_", None)  # categorical tests name their values
    extra = {} if categories is None else {"categories": categories}
    margins = contributions[:, k] - contributions[:, j]
    feature_margins: dict[str, float] = {}
    terms = []
    for t in np.argsort(-np.abs(margins), kind="stable"):
        rule, used = learners.rule(int(t), X[0], names, model.classes_.tolist(), **extra)
        for f in used:
            feature_margins[names[f]] = feature_margins.get(names[f], 0.0) + margins[t] / len(used)
        if len(terms) < top:
            terms.append(Term(int(t) + 1, rule, float(contributions[t, k]), float(margins[t])))
    classes = model.classes_.tolist()
    try:
        decision = explain_decision(model, x, feature_names=names)
    except ContributionsUnavailable:  # similarity learners, files without covers
        decision = None
    return Explanation(
        classes[k], classes[j], scores, float(scores[k] - scores[j]), terms,
        feature_margins, decision,
    )


# ------------------------------------------------------------------ why this decision

_QUADRATURE = np.polynomial.legendre.leggauss(96)  # nodes on [-1, 1] and their weights


@dataclass
class FeatureEffect:
    """How far one of the row's values moved the decision's lead over the runner-up."""

    feature: str
    value: float | str  # the row's value (NaN: missing; a categorical value: its text)
    effect: float  # > 0: towards the decision, < 0: towards the runner-up


@dataclass
class DecisionExplanation:
    """Why a model took its decision for one row, per feature (:func:`explain_decision`).

    ``lead`` is how far the decision is ahead of the runner-up (by expected cost: the
    runner-up's minus the decision's; by score: the decision's minus the runner-up's).
    ``baseline_lead`` is the same for a typical case, the model's mean scores over its
    training rows (the contributions' bias); ``effects`` (every feature, largest first) sum to
    ``lead - baseline_lead``, up to ``residual`` (numerical integration, ~1e-12).
    """

    decision: object
    runner_up: object
    by_cost: bool  # decided by least expected cost (else by the largest score)
    expected_costs: dict | None  # decision -> expected cost (cost rule)
    probabilities: dict | None  # class -> probability (models with probabilities)
    lead: float
    baseline_lead: float
    effects: list[FeatureEffect]
    residual: float

    def __str__(self, top: int = 5) -> str:
        d, r = repr(self.decision), repr(self.runner_up)
        if self.by_cost:
            costs = ", ".join(f"{n!r} {v:.4g}" for n, v in self.expected_costs.items())
            lines = [f"Why {d}: of the possible decisions it has the least expected cost "
                     "(the cost of each possible truth, weighted by its probability).",
                     f"  expected cost of each decision: {costs}",
                     f"  {d} is cheaper than the runner-up {r} by {self.lead:.4g}."]
            typical = (f"cost {abs(self.baseline_lead):.4g} "
                       f"{'less' if self.baseline_lead > 0 else 'more'} than {r}")
        else:
            lines = [f"Why {d}: it has the largest score (the model's evidence for each "
                     f"class); it leads the runner-up {r} by {self.lead:.4g}."]
            typical = (f"be {'ahead of' if self.baseline_lead > 0 else 'behind'} {r} by "
                       f"{abs(self.baseline_lead):.4g}")
        if self.probabilities is not None:
            lines.insert(1, "  probability of each class: " + ", ".join(
                f"{n!r} {v:.1%}" for n, v in self.probabilities.items()))
        lines.append(f"  For a typical case (before this row's values are read) {d} would "
                     f"{typical}; this row's values moved the lead by "
                     f"{self.lead - self.baseline_lead:+.4g}:")
        for e in self.effects[:top]:
            value = (f"= {e.value}" if isinstance(e.value, str)
                     else "is missing" if np.isnan(e.value) else f"= {e.value:.6g}")
            towards = d if e.effect >= 0 else r
            lines.append(f"    {e.feature} {value}: {e.effect:+.4g} (towards {towards})")
        rest = self.effects[top:]
        if rest:
            lines.append(f"    the other {len(rest)} features together: "
                         f"{sum(e.effect for e in rest):+.4g}")
        return "\n".join(lines)


def explain_decision(model, x, feature_names=None) -> DecisionExplanation:
    """Why ``model`` (a tree model) took its decision for the single row ``x``.

    A decision by the largest score (``argmax H``): feature ``i`` moves the lead by its exact
    contributions ``phi_i[decision] - phi_i[runner-up]``. A decision by least expected cost
    (``argmin p(H) @ C``, generic over a K x M cost matrix): the lead ``g(H) = (p(H) @ C)
    [runner-up] - (p(H) @ C)[decision]`` is not linear in the scores, so it is split along
    the straight path of scores from the typical case ``H0`` to ``H(x)`` (Aumann-Shapley):
    feature ``i`` gets ``phi_i . integral_0^1 grad g(H0 + s (H(x) - H0)) ds``, and the
    effects sum to ``g(H(x)) - g(H0)``. Raises :class:`ContributionsUnavailable` for models
    without exact contributions.
    """
    raw = _one_row(model, x)
    X = np.asarray(model.encode_row(x), dtype=np.float64).reshape(1, -1)
    phi = model.contributions(raw)[0]  # (d + 1, K), the bias last
    scores, base = phi.sum(axis=0), phi[-1]
    names = ([str(n) for n in feature_names] if feature_names is not None
             else model.feature_names())
    classes = model.classes_.tolist()
    probabilities = (dict(zip(classes, model.predict_proba(raw)[0].tolist(), strict=True))
                     if hasattr(model, "predict_proba") else None)
    if model.decides_by_argmax_:
        k, j = np.argsort(-scores, kind="stable")[:2]
        lead, baseline = scores[k] - scores[j], base[k] - base[j]
        effects, expected, labels = phi[:-1, k] - phi[:-1, j], None, classes
    else:
        from .costs import proba_from_scores

        calibration = getattr(model, "calibration_", None)
        tempered = calibration is None or calibration.kind == "temperature"
        cost, temperature = np.asarray(model.cost_matrix_), model.temperature_
        proba = ((lambda h: proba_from_scores(h, temperature)) if tempered
                 else calibration.proba)
        decisions = getattr(model, "decisions_", None)
        labels = classes if decisions is None else list(decisions)
        expected_costs = proba(scores[None])[0] @ cost
        k, j = np.argsort(expected_costs, kind="stable")[:2]
        w = cost[:, j] - cost[:, k]
        lead = expected_costs[j] - expected_costs[k]
        baseline = proba(base[None])[0] @ w
        nodes, weights = _QUADRATURE
        path = base + (nodes[:, None] + 1) / 2 * (scores - base)
        gradient = (_lead_gradient(path, temperature, w) if tempered
                    else _numeric_lead_gradient(proba, path, w))
        effects = phi[:-1] @ (weights / 2 @ gradient)
        expected = dict(zip(labels, expected_costs.tolist(), strict=True))
    order = np.argsort(-np.abs(effects), kind="stable")
    return DecisionExplanation(
        labels[k], labels[j], not model.decides_by_argmax_, expected, probabilities,
        float(lead), float(baseline),
        [FeatureEffect(names[i], _shown(model, i, X[0, i]), float(effects[i])) for i in order],
        float(lead - baseline - effects.sum()))


def _one_row(model, x):
    """Row ``x`` as a one-row input of the estimator (a DataFrame with the fitted names when
    the model has them, so categorical values reach its encoder as they are)."""
    if hasattr(x, "to_frame") and hasattr(x, "index"):  # a pandas Series
        return x.to_frame().T.infer_objects()
    if hasattr(x, "iloc"):  # a one-row DataFrame
        return x
    row = np.asarray(x, dtype=object).reshape(1, -1)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        import pandas as pd

        return pd.DataFrame(row, columns=list(names)).infer_objects()
    if getattr(model, "categories_", None) is None:
        return row.astype(np.float64)
    return row


def _shown(model, feature: int, code: float) -> float | str:
    """A row's entry as the user gave it: a categorical feature's value, else the number."""
    levels = (getattr(model, "categories_", None) or [None] * (feature + 1))[feature]
    if levels is None or np.isnan(code):
        return float(code)
    value = levels[int(code)]
    return f"{value:g}" if isinstance(value, float) else str(value)


def _numeric_lead_gradient(proba, scores: np.ndarray, w: np.ndarray) -> np.ndarray:
    """d/dH of ``proba(H) @ w`` by central differences, for calibration maps beyond a
    temperature (vector or matrix scaling), whose gradient has no closed form here."""
    step = 1e-6 * np.maximum(1.0, np.abs(scores))
    grad = np.empty_like(scores)
    for c in range(scores.shape[1]):
        up, down = scores.copy(), scores.copy()
        up[:, c] += step[:, c]
        down[:, c] -= step[:, c]
        grad[:, c] = (proba(up) @ w - proba(down) @ w) / (2 * step[:, c])
    return grad


def _lead_gradient(scores: np.ndarray, temperature: float, w: np.ndarray) -> np.ndarray:
    """d/dH of ``p(H) @ w`` for rows of scores H, with ``p = s / sum(s)``, ``s_k =
    max(sigmoid(2 H_k / T), tiny)`` (:func:`rebelboost.costs.proba_from_scores`)."""
    from scipy.special import expit

    s = expit(scores * (2.0 / temperature))
    floored = s < np.finfo(float).tiny
    s = np.maximum(s, np.finfo(float).tiny)
    ds = np.where(floored, 0.0, (2.0 / temperature) * s * (1.0 - s))
    total = s.sum(axis=1, keepdims=True)
    p = s / total
    return ds * (w - (p @ w)[:, None]) / total
