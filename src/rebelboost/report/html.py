"""The report page: one HTML5 file with inline CSS, JS and figures; every text taken from the
model or the data is escaped."""

from __future__ import annotations

from html import escape

import numpy as np

from . import figures
from .cost_view import cost_route_section
from .decisions import decisions_section
from .evaluation import Evaluation, evaluate, exit_tradeoff, reliability
from .model_view import LearnerView, cost_matrix_of, learner_views, summary_facts

TOP_FEATURES = 20
MIN_TRADEOFF_ROWS = 40  # rows of data for the soft-cascade trade-off (half calibrate)
PAGE_SIZE = 50  # learners shown at first and added by each "show more"

_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { background: #24364b; color: #fff; padding: 1em 2em; }
header h1 { margin: 0 0 .3em; font-size: 1.5em; }
nav a { color: #cfe0f5; margin-right: 1em; }
main { padding: 0 2em 3em; max-width: 1200px; }
section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: .5em 1.5em 1em;
          margin-top: 1.5em; }
h2 { border-bottom: 1px solid #eee; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ddd; padding: .2em .6em; text-align: right; vertical-align: top; }
th { background: #f0f3f7; }
td.text, th.text { text-align: left; }
figure { margin: .5em 0; }
figure img { max-width: 100%; height: auto; }
figcaption, .note { color: #555; font-size: .9em; }
.columns { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
ul.rule { list-style: none; margin: 0; padding: 0; text-align: left; }
ul.rule li { white-space: nowrap; }
.out { font-weight: bold; }
#learner-table td { font-family: ui-monospace, monospace; font-size: .85em; }
.controls { display: flex; gap: 1em; align-items: center; margin: .5em 0; }
#learner-filter { width: 22em; padding: .3em; }
"""

_JS = """
(function () {
  "use strict";
  var table = document.getElementById("learner-table");
  var step = Number(table.dataset.pageSize), limit = step;
  var input = document.getElementById("learner-filter");
  var more = document.getElementById("learner-more");
  var status = document.getElementById("learner-status");
  var rows = Array.prototype.slice.call(
    table.querySelectorAll("tbody tr"));
  var texts = rows.map(function (row) {
    return row.querySelector(".search").textContent.toLowerCase();
  });
  function update() {
    var query = input.value.trim().toLowerCase(), matching = 0;
    rows.forEach(function (row, i) {
      var hit = !query || texts[i].indexOf(query) !== -1;
      if (hit) { matching += 1; }
      row.hidden = !(hit && matching <= limit);
    });
    status.textContent = "showing " + Math.min(matching, limit) + " of " + matching +
      " matching learners (" + rows.length + " in all)";
    more.hidden = matching <= limit;
  }
  input.addEventListener("input", function () { limit = step; update(); });
  more.addEventListener("click", function () { limit += step; update(); });
  update();
})();
"""


def render_report(model, X, y, *, title: str | None = None, X_train=None, y_train=None) -> str:
    """The whole page as a string (see :func:`rebelboost.report.write_report`)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model)
    cost, cost_sensitive = cost_matrix_of(model)
    test = evaluate(model, X, y, cost)
    train = evaluate(model, X_train, y_train, cost) if X_train is not None else None
    labels = [str(c) for c in model.classes_]
    columns = [str(d) for d in model.decision_labels_]
    title = title or f"{type(model).__name__} report"
    sections = [
        ("summary", "Model", _summary(model, labels, columns, cost, cost_sensitive)),
        ("curves", "Training curves", _curves(model)),
        ("evaluation", "Results on the data",
         _evaluation(test, train, labels, columns,
                     np.array_equal(cost, 1.0 - np.eye(len(labels), len(columns))))),
        ("importances", "Feature importances", _importances(model)),
    ]
    if getattr(model, "cost_route_", None) is not None and cost_sensitive:
        sections.insert(1, ("route", "Cost decisions", cost_route_section(model)))
    categorical = getattr(model, "is_categorical_", None)  # (no plane to draw over)
    if (model.n_features_in_ == 2 and columns == labels
            and (categorical is None or not categorical.any())):
        sections.append(("boundary", "Decision boundary", _figure(
            figures.decision_boundary(model, X, y),
            "decision boundary", "Predicted class over the plane; the points are the data.")))
    if hasattr(model, "predict_proba"):
        sections.append(("reliability", "Probability calibration", _reliability(model, X, y)))
    sections.append(("why", "Why these decisions", decisions_section(model, X, y)))
    sections.append(("exit", "Learners needed per row", _learners_needed(model, X)))
    sections.append(("learners", "Weak learners", _learners(model, labels)))
    nav = "".join(f'<a href="#{sid}">{escape(name)}</a>' for sid, name, _ in sections)
    body = "".join(f'<section id="{sid}"><h2>{escape(name)}</h2>{content}</section>'
                   for sid, name, content in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><header><h1>{escape(title)}</h1><nav>{nav}</nav></header>"
        f"<main>{body}</main><script>{_JS}</script></body></html>\n"
    )


# ------------------------------------------------------------------ pieces


def _num(value: float, digits: int = 4) -> str:
    return "–" if not np.isfinite(value) else f"{value:.{digits}g}"


def _table(head: list[str], rows: list[list[str]], *, row_heads: bool = False,
           table_id: str | None = None) -> str:
    """A table of plain-text cells (escaped here); the first column is text."""
    ident = f' id="{table_id}"' if table_id else ""
    th = "".join(f'<th class="text">{escape(h)}</th>' if i == 0 else f"<th>{escape(h)}</th>"
                 for i, h in enumerate(head))
    lines = []
    for row in rows:
        first = "th" if row_heads else "td"
        cells = f'<{first} class="text">{escape(row[0])}</{first}>'
        cells += "".join(f"<td>{escape(c)}</td>" for c in row[1:])
        lines.append(f"<tr>{cells}</tr>")
    return f"<table{ident}><thead><tr>{th}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def _figure(uri: str, alt: str, caption: str) -> str:
    return (f'<figure><img src="{uri}" alt="{escape(alt)}">'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def _summary(model, labels: list[str], columns: list[str], cost: np.ndarray,
             cost_sensitive: bool) -> str:
    facts = _table(["", ""], [[name, value] for name, value in summary_facts(model)],
                   row_heads=True)
    params = _table(["parameter", "value"],
                    [[name, repr(value)] for name, value in sorted(model.get_params().items())])
    note = ("cost_matrix[i, j]: the cost of predicting column j when the truth is row i."
            if cost_sensitive else
            "This estimator is not cost-sensitive: the results below use the 0-1 cost.")
    matrix = _table(["true \\ predicted", *columns],
                    [[label, *(_num(v) for v in row)] for label, row in zip(labels, cost,
                                                                             strict=True)],
                    row_heads=True, table_id="cost-matrix")
    return (f'<div class="columns"><div><h3>Summary</h3>{facts}</div>'
            f"<div><h3>Parameters</h3>{params}</div></div>"
            f'<h3>Cost matrix</h3><p class="note">{escape(note)}</p>{matrix}')


def _curves(model) -> str:
    has_validation = getattr(model, "validation_loss_", None) is not None
    caption = "The loss the booster minimises, after each iteration" + (
        ", on the training rows and on the held-out validation rows." if has_validation
        else ", on the training rows.")
    return _figure(figures.training_curves(model), "training curves", caption)


def _evaluation(test: Evaluation, train: Evaluation | None, labels: list[str],
                columns: list[str], zero_one: bool) -> str:
    rows = [["given data", str(test.n_samples), _num(test.error), _num(test.mean_cost)]]
    if train is not None:
        rows.append(["training data", str(train.n_samples), _num(train.error),
                     _num(train.mean_cost)])
    overall = _table(["data", "rows", "error", "mean cost"], rows)
    confusion = _table(["true \\ predicted", *columns],
                       [[label, *map(str, row)] for label, row in zip(labels, test.confusion,
                                                                      strict=True)],
                       row_heads=True, table_id="confusion-table")
    per_class = _table(
        ["class", "rows", "predicted as", "error", "mean cost"],
        [[label, str(n), str(p), _num(e), _num(c)] for label, n, p, e, c in zip(
            labels, test.class_counts, test.confusion.sum(axis=0) if columns == labels
            else ["–"] * len(labels), test.class_error,
            test.class_cost, strict=True)],
        table_id="per-class-table")
    curves = {"error": test.staged_error}
    if train is not None:
        curves["training error"] = train.staged_error
    if not zero_one:  # else the cost curves repeat the error curves
        curves["mean cost"] = test.staged_cost
        if train is not None:
            curves["training mean cost"] = train.staged_cost
    labelled = columns == labels  # else decisions: no error, only cost
    if not labelled:
        curves = {name: values for name, values in curves.items() if "cost" in name}
    staged, what = (test.staged_error, "error") if labelled else (test.staged_cost, "mean cost")
    best = int(np.argmin(staged))
    staged_note = (f"Lowest {what} on the given data: {_num(staged[best])} after "
                   f"iteration {best + 1} of {len(test.staged_error)}.")
    return (
        overall
        + '<div id="confusion"><h3>Confusion matrix</h3><div class="columns">'
        + f"<div>{confusion}</div>"
        + (_figure(figures.confusion(test.confusion, labels), "confusion matrix",
                   "Rows: true class; columns: predicted class.") if columns == labels else "")
        + "</div></div>"
        + f'<div id="per-class"><h3>Per class</h3>{per_class}</div>'
        + '<div id="staged"><h3>Error per iteration</h3>'
        + _figure(figures.error_curves(curves), "error per iteration",
                  "Error (and mean cost) of the model cut after each iteration "
                  "(staged_predict).")
        + f'<p class="note">{escape(staged_note)}</p></div>'
    )


def _reliability(model, X, y) -> str:
    rel = reliability(model, X, y)
    note = (f"Expected calibration error {_num(rel.ece)}: the row-weighted mean gap between "
            "accuracy and predicted probability over 15 equal-width bins of the top class's "
            "predicted probability.")
    cost, _ = cost_matrix_of(model)
    zero_one = np.array_equal(cost, 1.0 - np.eye(len(model.classes_)))
    if not zero_one and getattr(model, "cost_strategy_", None) == "loss":
        note += (" This model was trained on the cost-sensitive loss: its predict_proba is a "
                 "score, not an estimate of the posterior.")
    return (_figure(figures.reliability(rel.confidence, rel.accuracy, rel.counts),
                    "reliability diagram", "Predicted probability of the top class against "
                    "how often that class is right, per bin.")
            + f'<p class="note" id="ece">{escape(note)}</p>')


def _learners_needed(model, X) -> str:
    """How many learners ``predict(X, early_exit='exact')`` evaluates per row of the data."""
    from ..learners.leaf_tree import LeafTreeArrays
    from ..learners.tree import TreeArrays

    n_learners = len(model.model_.learners)
    if (not isinstance(model.model_.learners, (TreeArrays, LeafTreeArrays))
            or not model.decides_by_argmax_):
        return ('<p class="note">Exact early exit applies to tree models that predict the '
                "class of largest score; this model evaluates every one of its "
                f"{n_learners} learners for every row.</p>")
    X = model.encode(X)
    _, used = model.model_.predict_codes(X, early_exit="exact")
    share = used / max(n_learners, 1)
    rows = [[name, _num(float(value))] for name, value in (
        ("mean share of learners", share.mean()),
        ("median share", np.median(share)),
        ("90th percentile", np.quantile(share, 0.9)),
        ("rows that stopped early", np.mean(used < n_learners)),
    )]
    note = (f"With predict(X, early_exit='exact') a row stops adding learners once its leading "
            f"class cannot be overtaken by what the remaining ones can add; the labels equal "
            f"full evaluation. Of this model's {n_learners} learners, on the given data:")
    page = (f'<p class="note">{escape(note)}</p>'
            + _table(["", "value"], rows, table_id="exit-table"))
    if len(X) < MIN_TRADEOFF_ROWS:
        return page + (f'<p class="note">The accuracy/speed trade-off of soft cascades needs '
                       f"at least {MIN_TRADEOFF_ROWS} rows (half to calibrate them).</p>")
    points = exit_tradeoff(model, X)
    note = ("Soft cascades (thesis ch. 2) stop a row once its lead over the runner-up passes "
            "a threshold; the thresholds were calibrated on the even rows of the data to keep "
            "the given share of full evaluation's labels there, and are measured here on the "
            "odd rows, beside the exact exit.")
    table = _table(["", "labels equal to full evaluation", "share of learners evaluated"],
                   [[p.label, _num(p.agreement), _num(p.share)] for p in points],
                   table_id="tradeoff-table")
    return (page + f'<p class="note">{escape(note)}</p><div class="columns"><div>{table}'
            "</div>" + _figure(figures.exit_tradeoff(points), "exit trade-off",
                               "Agreement with full evaluation against the work done.")
            + "</div>")


def _importances(model) -> str:
    values = np.asarray(model.feature_importances_, dtype=float)
    if not np.any(values > 0):
        return ('<p class="note">No feature importances: this model\'s weak learners do not '
                "split on single features (localized similarities compare whole rows).</p>")
    names = model.feature_names()
    order = np.argsort(-values, kind="stable")[:TOP_FEATURES]
    table = _table(["feature", "importance"], [[names[j], _num(values[j])] for j in order],
                   table_id="importance-table")
    return (f'<div class="columns"><div>{table}</div>'
            + _figure(figures.importances(values, names, TOP_FEATURES), "feature importances",
                      f"The top {len(order)} features by share of the loss reduction won by "
                      "their splits.")
            + "</div>")


def _learners(model, labels: list[str]) -> str:
    views = learner_views(model)
    scale = max((float(np.abs(v.vectors).max()) for v in views), default=0.0) or 1.0
    head = "".join(f"<th>{escape(label)}</th>" for label in labels)
    rows = "".join(_learner_row(v, scale) for v in views)
    intro = ("The model's scores are the sum over weak learners of the class scores each "
             "adds, and it predicts the class with the largest score. Each row is one weak "
             "learner: the regions of the input space it tells apart with its output f(x) "
             "there, times the vector on the right (one entry per class; green adds to a "
             "class's score when f(x) > 0, red subtracts), or, where its regions add unrelated "
             "class scores, one line of scores per region.")
    return (
        f'<p class="note">{escape(intro)}</p>'
        '<div class="controls"><input type="search" id="learner-filter" '
        'placeholder="filter by rule, e.g. a feature name" aria-label="filter learners">'
        '<span id="learner-status"></span></div>'
        f'<table id="learner-table" data-page-size="{PAGE_SIZE}">'
        "<thead><tr><th>#</th><th>iteration</th>"
        f'<th class="text">rule and output f(x)</th>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        '<button type="button" id="learner-more" hidden>show more</button>'
    )


def _learner_row(view: LearnerView, scale: float) -> str:
    items = "".join(f'<li>{escape(rule)} &rarr; <span class="out">{escape(out)}</span></li>'
                    for rule, out in view.branches)
    cells = "".join(
        "<td>" + "<br>".join(_vector_cell(v, scale) for v in column) + "</td>"
        for column in view.vectors.T
    )
    return (f"<tr><td>{view.index}</td><td>{view.iteration}</td>"
            f'<td class="text search"><ul class="rule">{items}</ul></td>{cells}</tr>')


def _vector_cell(value: float, scale: float) -> str:
    """A vector entry on a green (positive) or red (negative) background by its size."""
    alpha = min(abs(value) / scale, 1.0) * 0.6
    rgb = "44,160,44" if value > 0 else "214,39,40"
    return f'<span style="background: rgba({rgb},{alpha:.2f})">{_num(value)}</span>'
