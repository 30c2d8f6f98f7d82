"""The report's "Why these decisions" section: a few rows of the data, each decision explained
per feature (:func:`rebelboost.explain.explain_decision`), worded for a domain expert."""

from __future__ import annotations

from html import escape

import numpy as np

from ..explain import ContributionsUnavailable, explain_decision

TOP_EFFECTS = 6  # features listed per row


def example_rows(model, X, y) -> list[tuple[int, str]]:
    """Up to three (row, why it was picked): the first row, the first one the costs moved
    away from the most probable class, and the first one decided wrongly."""
    predicted = model.predict(X)
    picks = [(0, "the first row")]
    if getattr(model, "decisions_", None) is not None:  # decisions other than the classes
        return picks
    if not model.decides_by_argmax_ and hasattr(model, "predict_proba"):
        likeliest = model.classes_[np.argmax(model.predict_proba(X), axis=1)]
        moved = np.flatnonzero(predicted != likeliest)
        if len(moved):
            picks.append((int(moved[0]), "the costs chose other than the most probable class"))
    wrong = np.flatnonzero(predicted != np.asarray(y))
    if len(wrong):
        picks.append((int(wrong[0]), "a wrong decision"))
    seen: set[int] = set()
    return [(i, why) for i, why in picks if not (i in seen or seen.add(i))]


def decisions_section(model, X, y) -> str:
    """HTML: for each example row, the decision, its runner-up and the features behind it."""
    try:
        row = X.iloc.__getitem__ if hasattr(X, "iloc") else X.__getitem__  # frames by position
        rows = [(i, why, explain_decision(model, row(i))) for i, why in example_rows(model, X, y)]
    except ContributionsUnavailable as exc:
        return f"<p>Per-feature explanations are not available: {escape(str(exc))}</p>"
    intro = ("<p>For a few rows of the data: the decision taken, the runner-up, and how far "
             "each of the row's values moved the decision's lead over the runner-up away from "
             "that of a typical case (the model's mean scores over its training rows). The "
             "amounts are exact per-feature contributions (path-dependent TreeSHAP) and add "
             "up to the change in the lead.</p>")
    parts = [intro]
    for i, picked, why in rows:
        parts.append(f"<h3>Row {i} ({escape(picked)}; true class {escape(str(y[i]))})</h3>")
        parts.append(f"<pre class=\"why\">{escape(why.__str__(top=TOP_EFFECTS))}</pre>")
    return "".join(parts)
