"""The report's "Cost decisions" section: how a cost-sensitive model decides and why.

The route (minimum expected cost, the most probable class, or the cost-sensitive loss), the
calibration map behind ``predict_proba``, and the out-of-fold evidence the guard compared.
"""

from __future__ import annotations

from html import escape

import numpy as np

ROUTE_NAMES = {"min_risk": "minimum expected cost under the calibrated probabilities",
               "argmax": "the most probable class (taken as certain)",
               "loss": "the largest score of the model trained on the cost-sensitive loss"}


def cost_route_section(model) -> str:
    evidence = getattr(model, "cost_evidence_", {}) or {}
    facts = [("decides by", ROUTE_NAMES.get(model.cost_route_, model.cost_route_)),
             ("trained", "cost-neutrally" if model.cost_strategy_ == "posterior"
              else "on the cost-sensitive loss"),
             ("calibration", f"{model.calibration_.kind}, temperature "
              f"{model.calibration_.temperature:.4g}")]
    if "final_margin" in evidence:
        facts.append(("sized", f"fitted on the fold models' scores over their median margin, "
                      f"at temperature {evidence['margin_temperature']:.4g} there; the final "
                      f"model's median margin is {evidence['final_margin']:.4g}"))
    if "threshold" in evidence:
        facts.append(("threshold", f"predicts {model.classes_[1]!s} when its probability "
                      f"exceeds {evidence['threshold']:.4g}"))
    if "n_folds" in evidence:
        facts.append(("evidence", f"{evidence['n_folds']}-fold out-of-fold decisions on "
                      f"{evidence['n_rows']} training rows"))
    if evidence.get("reason"):
        facts.append(("note", evidence["reason"]))
    if "shape" in evidence:
        facts.append(("trees", shape_sentence(evidence["shape"])))
    html = _rows_table(["", ""], facts, "cost-route")
    costs = evidence.get("route_costs", {})
    if costs:
        against = evidence.get("against_argmax", {})
        rows = []
        for route, value in costs.items():
            diff = against.get(route)
            rows.append((route, f"{value:.4g}", "–" if diff is None else
                         f"{diff['mean_difference']:+.4g} ± {diff['standard_error']:.2g}",
                         "kept" if route == model.cost_route_ else ""))
        html += ('<p class="note">Out-of-fold mean cost of each rule (each training row decided'
                 " by a model fitted without it). A rule replaces argmax only when it is "
                 f"cheaper by more than {evidence.get('margin_standard_errors', 0.5)} "
                 "standard errors of the paired per-row difference.</p>"
                 + _rows_table(["rule", "mean cost", "difference from argmax", ""], rows,
                               "route-costs"))
    losses = evidence.get("log_loss", {})
    if losses:
        html += ('<p class="note">Cross-fitted log-loss of each calibration map.</p>'
                 + _rows_table(["map", "log-loss"], [(k, f"{v:.4g}") for k, v in losses.items()
                                                     if np.isfinite(v)], "calibration-maps"))
    return html


def shape_sentence(shape: dict) -> str:
    """Which tree shape a cost route kept, on what out-of-fold evidence (``cost_evidence_
    ['shape']``)."""
    smooth = shape["smooth_params"]
    costs = shape["route_cost"]
    kept = ("the smooth shape" if shape["chosen"] == "smooth" else "the small-data shape")
    return (f"{kept}: out-of-fold route cost {costs['smooth']:.4g} with "
            f"{smooth['n_estimators']} trees of up to {smooth['max_leaves']} leaves of "
            f"{smooth['min_samples_leaf']}+ rows at rate {smooth['learning_rate']:g}, "
            f"{costs['defaults']:.4g} with the small-data shape (difference "
            f"{shape['mean_difference']:+.3g} ± {shape['standard_error']:.2g}; the smooth "
            "shape is taken beyond the guard's margin)")


def _rows_table(head, rows, table_id: str) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f'<table id="{table_id}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'
