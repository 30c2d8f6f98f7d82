"""A REBEL model's cost state in its model file: the cost matrix, decisions, route,
calibration map and the evidence behind the route (format 3, :mod:`rebelboost.io`)."""

from __future__ import annotations

import json

from ..calibration import CalibrationMap
from ..costs import ROUTES, check_costs
from ..io import corrupt, float_array


def write_cost_state(model, fitted: dict) -> None:
    """Add the cost fields to a model file's ``fitted`` section (``cost_matrix`` is there)."""
    decisions = getattr(model, "decisions_", None)
    fitted["decisions"] = None if decisions is None else [str(d) for d in decisions]
    fitted["cost_strategy"] = model.cost_strategy_
    fitted["cost_route"] = getattr(model, "cost_route_", "loss")
    calibration = getattr(model, "calibration_", None)
    if calibration is None:
        calibration = CalibrationMap("temperature", model.temperature_)
    fitted["calibration"] = calibration.to_dict()
    fitted["route_costs"] = {k: float(v) for k, v in model.route_costs_.items()}
    fitted["cost_evidence"] = json.loads(json.dumps(getattr(model, "cost_evidence_", {})))


def read_cost_state(model, fitted: dict, k: int) -> None:
    """Set and check the cost attributes from a format-3 ``fitted`` section."""
    decisions = fitted["decisions"]
    if decisions is not None and (not isinstance(decisions, list)
                                  or not all(isinstance(d, str) for d in decisions)):
        raise corrupt("decisions is not a list of names")
    cost = float_array(fitted["cost_matrix"], None, "cost matrix")
    try:
        model.cost_matrix_, model.decisions_ = check_costs(cost, decisions, k)
    except ValueError as exc:
        raise corrupt(f"cost matrix: {exc}") from None
    strategy, route = fitted["cost_strategy"], fitted["cost_route"]
    if strategy not in ("loss", "posterior"):
        raise corrupt(f"cost_strategy {strategy!r} is not 'loss' or 'posterior'")
    if route not in ROUTES or (route == "loss") != (strategy == "loss"):
        raise corrupt(f"cost_route {route!r} does not go with cost_strategy {strategy!r}")
    if decisions is not None and route == "loss":
        raise corrupt("a model with decisions cannot decide by the loss route")
    try:
        model.calibration_ = CalibrationMap.from_dict(fitted["calibration"], k)
    except ValueError as exc:
        raise corrupt(str(exc)) from None
    route_costs = fitted["route_costs"]
    if not isinstance(route_costs, dict) or not all(
            key in ROUTES + ("posterior",) and type(v) in (int, float)
            for key, v in route_costs.items()):
        raise corrupt("route_costs is not a map of route to cost")
    evidence = fitted["cost_evidence"]
    if not isinstance(evidence, dict):
        raise corrupt("cost_evidence is not an object")
    model.cost_strategy_, model.cost_route_ = strategy, route
    model.temperature_ = model.calibration_.temperature
    model.route_costs_ = {key: float(v) for key, v in route_costs.items()}
    model.cost_evidence_ = evidence

