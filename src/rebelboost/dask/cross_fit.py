"""The cost route of a distributed fit, chosen as the local fit chooses it: cross-fitted on
the workers.

The client holds each row's class code and weight (two numbers a row) to deal the folds and
fit the calibration map; everything else stays with the workers. Each fold model is a
distributed fit on the partitions' rows outside its fold (selected where they lie), and
scores the rows of its fold there. With the same folds, fold models and scores as a local
fit's, the calibration and the guard's choice are the local fit's
(:mod:`rebelboost.ensemble._cost_route`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..blocks import tasks as part_fn
from ..calibration import median_margin
from ..costs import check_sample_cost
from ..ensemble._cost_route import (
    RouteChoice,
    assemble_scores,
    choose_route,
    fold_estimator,
    route_folds,
)


def choose_route_on_workers(model, cluster, raw: list, facts: list, rng,
                            has_cost: bool = False) -> RouteChoice:
    """:func:`~rebelboost.ensemble._cost_route.choose_route` for ``model`` (its costs and
    size-dependent parameters set) on the checked partitions ``raw``; ``has_cost``: they
    hold per-row costs (whose class means may be 0-1 costs while the rows' costs are not)."""
    cost, k = model.cost_matrix_, len(model.classes_)
    neutral = not has_cost and np.array_equal(cost, 1.0 - np.eye(k))
    if model.decisions_ is None and (model.cost_strategy == "loss" or neutral):
        return RouteChoice("loss", "loss")  # (no fold models: nothing to gather)
    pieces = cluster.gather(cluster.map(part_fn.codes_and_weights, raw, model.classes_))
    codes = np.concatenate([c for c, _, _ in pieces]).astype(np.intp)
    weight = np.concatenate([w for _, w, _ in pieces])
    sample_cost = None
    if pieces[0][2] is not None:  # per-row costs: the guard weighs the routes by them
        sample_cost = check_sample_cost(np.concatenate([c for *_, c in pieces]), codes, k,
                                        None if model.decisions_ is None
                                        else len(model.decisions_))
    sizes = [f["n_rows"] for f in facts]
    out_of_fold = functools.partial(_out_of_fold_scores, cluster, raw, sizes)
    folds = route_folds(model, codes, sample_cost, rng)
    return choose_route(model, None, codes, weight, sample_cost, folds, out_of_fold)


def _out_of_fold_scores(cluster, raw: list, sizes: list[int], model, X, codes, sample_weight,
                        folds, params: dict, sample_cost=None):
    """:func:`~rebelboost.ensemble._cost_route.out_of_fold_scores` on the workers: the
    fold models one after the other, each a distributed fit, their scores divided by their
    median margin on their training rows as there."""
    starts = np.cumsum([0, *sizes])
    bounds = list(zip(starts[:-1], starts[1:], strict=True))
    fold_ids, fitted = np.unique(folds), []
    for f in fold_ids:
        train = folds != f
        fold_model = fold_estimator(model, params, int(train.sum()), len(codes))
        picked = [cluster.submit(part_fn.select_rows, part, train[a:b], model.classes_)
                  for part, (a, b) in zip(raw, bounds, strict=True)]
        x_parts, y_parts, w_parts, c_parts = cluster.unpack(picked, 4)
        if sample_cost is None:  # (the fold model is cost-neutral)
            c_parts = [None] * len(raw)
        fold_model._fit_parts(cluster, x_parts, y_parts, w_parts, c_parts,
                              list(range(model.n_features_in_)))
        local = fold_model.to_local()
        # its scores are sized on the rows it trained on, as a local fold model's: without
        # those its early stopping held out
        fitted_on = train.copy()
        held = fold_model.__dict__.pop("_held_out", None)
        if held is not None:
            fitted_on[np.flatnonzero(train)[held]] = False
        pieces = list(zip(raw, bounds, strict=True))  # (both kinds of task submitted at once)
        got = [cluster.submit(part_fn.fold_scores, part, ~train[a:b], local)
               for part, (a, b) in pieces]
        margins = [cluster.submit(part_fn.score_margins, part, fitted_on[a:b], local)
                   for part, (a, b) in pieces]
        got, margins = cluster.gather(got), cluster.gather(margins)
        scale = median_margin(np.concatenate(margins))
        fitted.append((np.unique(codes[train]), np.concatenate(got) / scale))
    return assemble_scores(fitted, fold_ids, folds, codes, model.cost_matrix_.shape[0])
