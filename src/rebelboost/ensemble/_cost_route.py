"""How a cost-sensitive REBEL model decides: cross-fitted calibration and a guard.

Every training row gets an out-of-fold score from one of ``cost_cv`` cost-neutral fold models
(stratified folds; a class with fewer rows than folds is spread over as many folds as it has
rows). A calibration map is fitted on all of those scores (:mod:`rebelboost.calibration`), and
the guard compares, by out-of-fold mean cost, the calibrated minimum-risk rule with plain
argmax (and, for ``cost_strategy='auto'``, the cost-sensitive loss, cross-fitted the same
way). The caller fits its final model on every row: no row is lost to calibration. A
'posterior' model trains cost-neutrally whatever the guard picks, so its final fit runs
beside the fold models (:func:`choose_route_alongside`) instead of after them.

Where the model takes the small-data shape from its defaults alone, the fold models of a
smoother shape (LightGBM's defaults, :data:`._size_defaults.SMOOTH_SHAPE`) are fitted on the
same folds too; where their route costs less out of fold (by the guard's margin, below) it
is the route, and the final model takes their parameters (``RouteChoice.params``): sharp
trees on coded data, smooth ones on smooth data.

The calibration map is fitted on scores of one size: each fold model's out-of-fold scores
divided by its own median in-sample margin (:func:`~rebelboost.calibration.median_margin`:
the gap between a training row's two largest class scores), and the final model's map is
that one at a temperature multiplied by the final model's own (:func:`scale_to_final`).
Boosting at rate 1 leaves models of different sizes of data with scores of different sizes
(fold models that separate their 2/3 of the rows, a final model that cannot separate them
all), and a map fitted on the fold models' scale would soften or sharpen the final model's
posteriors wrongly (BENCHMARKS.md, issue 29, stop 38).

A rule replaces argmax only when it is cheaper out of fold by more than :data:`MARGIN_SE`
standard errors of the paired per-row cost difference (a one-sided paired z-test), so that
noise on a small set does not pick a rule that costs more than doing nothing. The fold
models are fitted side by side on threads when ``n_jobs`` allows.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
from sklearn.base import clone

from ..calibration import CalibrationMap, fit_calibration, median_margin, row_margins
from ..costs import binary_threshold, certain_codes, min_risk_codes, row_costs
from ..parallel import blas_threads_held, numba_threads, resolve_n_jobs
from ._size_defaults import smooth_alternative

# A rule must beat the one kept by this many standard errors. Chosen on all 480 cases of the
# 16 smallest suite sets x 6 cost matrices x 5 seeds (benchmarks/cost_guard_sweep.py, which
# replays the guard at margins 0-3 on the same out-of-fold evidence): test cases above 1.05 x
# argmax fell 48, 40, 27, 14, 9, 2, 1 at margins 0, 0.5, ..., 3 while the mean cost over
# argmax's rose 0.674, 0.684, 0.707, 0.730, 0.757, 0.788, 0.835 (geometric mean over sets);
# 2.0 is where most remaining cases are one test row's decision (a 2.3% one-sided level).
MARGIN_SE = 2.0
SMALL_FOLD_LEAVES = 10  # a fold of fewer rows than this many leaves gets smaller leaves


@dataclass
class RouteChoice:
    """What ``fit`` keeps: how the final model trains (``strategy``: 'posterior' is
    cost-neutral, 'loss' on the costs; ``params``: the sized parameters of the shape chosen
    out of fold, empty to keep the resolved ones), how it decides (``route``), its
    calibration, each route's out-of-fold mean cost and the evidence behind the choice."""

    strategy: str
    route: str
    calibration: CalibrationMap = field(default_factory=CalibrationMap)
    route_costs: dict = field(default_factory=dict)
    evidence: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    row_costs: np.ndarray | None = field(default=None, repr=False)  # (the route's, out of fold)
    on_margins: bool = False  # calibrated on margin-scaled scores: scale_to_final after the fit

    def set_on(self, model) -> None:
        """The model's fitted attributes of this choice (``resolved_params_`` updated with
        ``params``). A map fitted on margin-scaled scores waits for the final model
        (``model._scale_pending``; :func:`scale_to_final`)."""
        if self.params:
            model.resolved_params_ = {**model.resolved_params_, **self.params}
        model.cost_strategy_, model.cost_route_ = self.strategy, self.route
        model.calibration_, model.temperature_ = self.calibration, self.calibration.temperature
        model.route_costs_, model.cost_evidence_ = self.route_costs, self.evidence
        model._scale_pending = self.on_margins


def scale_to_final(model, in_sample_margins: np.ndarray) -> None:
    """Set ``model``'s calibration for its final model, whose row margins on its own
    training rows are ``in_sample_margins`` (:func:`~rebelboost.calibration.row_margins`):
    the map fitted on margin-scaled out-of-fold scores at its temperature times the final
    model's median margin (the same map on the final model's scaled scores); the evidence
    records both. (Called once, where the choice left ``model._scale_pending``.)"""
    scale = median_margin(in_sample_margins)
    calibration = model.calibration_
    model.calibration_ = replace(calibration, temperature=calibration.temperature * scale)
    model.temperature_ = model.calibration_.temperature
    model.cost_evidence_ = {**model.cost_evidence_, "final_margin": scale,
                            "temperature": model.temperature_,
                            "margin_temperature": calibration.temperature}


def fold_assignment(codes: np.ndarray, n_folds: int, rng: np.random.RandomState) -> np.ndarray:
    """A fold per row, stratified: each class's rows, shuffled, dealt round the folds in turn
    (continuing where the previous class stopped, so fold sizes differ by at most one)."""
    order = np.concatenate([rng.permutation(np.flatnonzero(codes == c))
                            for c in rng.permutation(np.unique(codes))])
    folds = np.empty(len(codes), dtype=np.intp)
    folds[order] = np.arange(len(codes)) % n_folds
    return folds


def out_of_fold_scores(model, X, codes, sample_weight, folds, params: dict,
                       sample_cost=None, alongside=None, queued=()):
    """``(scores, unseen)``: each row's class scores from the model fitted without its fold,
    divided by that model's median margin on its training rows, and whether the row's
    class was absent from them. ``alongside``: a callable of a thread count run as one
    more task (the final model's fit; on threads, started first, so that the caller's
    calibration of the scores runs while it finishes; on one, run by ``wait``); then
    ``((scores, unseen), wait, later)``, ``wait()`` its result and ``later`` a callable per
    parameter set of ``queued`` (another shape's fold models, fitted on the same folds and
    queued after these folds) giving their ``(scores, unseen)``.

    A class a fold model never saw gets, in each row, the lowest score of the classes it
    did see (as unlikely as the least likely one) rather than a made-up extreme. A fold
    of fewer than ``SMALL_FOLD_LEAVES`` leaves' worth of rows has its ``min_samples_leaf``
    shrunk with its share of the rows, so that its trees are as fine, relative to its data,
    as the final model's: a 28-row fold with the final model's 20-row leaves could not split
    at all, and its scores would say nothing about the final model's. Larger folds keep the
    final model's leaves (smaller ones cost 2.3x the fit time on vehicle's 395-row folds).

    The folds are fitted side by side on threads when the model's ``n_jobs`` allows more
    than one (the threads shared out among them); each fold's result does not depend on
    which thread fits it, so the scores equal the serial ones. Even the smallest sets gain:
    their fits run in one compiled call that holds no lock on the interpreter
    (:mod:`._compiled_stages`; BENCHMARKS.md, "Boosting in one compiled call").
    """
    fold_ids = np.unique(folds)
    n_jobs = resolve_n_jobs(model.get_params().get("n_jobs"))
    extra = [] if alongside is None else [alongside]
    k = model.cost_matrix_.shape[0]
    shapes = [params, *queued]
    workers = min(n_jobs, len(fold_ids) * len(shapes) + len(extra))
    threads = max(1, n_jobs // workers)  # each task's share of the threads

    def fit_fold(shape, f):
        train = folds != f
        fold_model = fold_estimator(model, {**shape, "n_jobs": threads} if workers > 1
                                    else shape, int(train.sum()), len(codes))
        kwargs = {} if sample_cost is None else {"sample_cost": sample_cost[train]}
        scale = median_margin(row_margins(fold_model._fit_scorer(
            X[train], codes[train], sample_weight[train], **kwargs)))
        with numba_threads(threads, blas_threads=None):
            got = fold_model.model_.scores(fold_model.encode(X[folds == f]))
        return fold_model.classes_, got / scale

    def assemble(fitted):
        return assemble_scores(fitted, fold_ids, folds, codes, k)

    tasks = [[partial(fit_fold, shape, f) for f in fold_ids] for shape in shapes]
    if workers == 1:
        scores = assemble([task() for task in tasks[0]])
        if alongside is None:
            return scores
        later = [partial(lambda ts: assemble([task() for task in ts]), ts) for ts in tasks[1:]]
        return scores, partial(alongside, threads), later
    # (a pool that waits on its tasks, not one that polls: a small set's fold takes a few
    # milliseconds.) The final fit, the longest task, goes in first, so that no thread
    # waits alone on it at the end: the calibration, which waits for the folds, runs beside
    # it (0.945x the route's wall time of final-fit-last, median of 19 small sets at 2
    # threads, benchmarks/cost_fit_time_ab.sh)
    pool = ThreadPoolExecutor(workers)
    final = None if alongside is None else pool.submit(alongside, threads)
    runs = [[pool.submit(task) for task in ts] for ts in tasks]
    try:
        scores = assemble([run.result() for run in runs[0]])
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise
    if final is None:
        pool.shutdown()
        return scores

    def wait():
        try:
            return final.result()
        finally:
            pool.shutdown()

    later = [partial(lambda rs: assemble([run.result() for run in rs]), rs) for rs in runs[1:]]
    return scores, wait, later


def fold_estimator(model, params: dict, n_train: int, n_rows: int):
    """The unfitted fold model of ``model`` (with ``params``) for ``n_train`` of its
    ``n_rows`` rows: the final model's size-dependent parameters, not the fold's, and
    smaller leaves for a small fold (see :func:`out_of_fold_scores`)."""
    params = {**model.resolved_params_, **params}
    mask = getattr(model, "is_categorical_", None)
    if mask is not None:  # X holds category codes already: the folds split them as sets
        params["categorical_features"] = mask
    leaf = params.get("min_samples_leaf", model.get_params().get("min_samples_leaf"))
    if leaf is not None and n_train < SMALL_FOLD_LEAVES * leaf:
        params["min_samples_leaf"] = max(1, round(leaf * (n_train / n_rows)))
    return clone(model).set_params(**params)  # (one set_params: each reads every parameter)


def assemble_scores(fitted: list, fold_ids, folds: np.ndarray, codes: np.ndarray,
                    n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`out_of_fold_scores`' result from each fold's ``(classes present, scores of its
    held-out rows)``."""
    scores = np.empty((len(codes), n_classes))
    unseen = np.zeros(len(codes), dtype=bool)
    for f, (present, got) in zip(fold_ids, fitted, strict=True):
        test = folds == f
        scores[test] = got.min(axis=1, keepdims=True)
        scores[np.ix_(test, present)] = got
        unseen[test] = ~np.isin(codes[test], present)
    return scores, unseen


def route_folds(model, codes, sample_cost, rng) -> np.ndarray | None:
    """The fold of every row for the route's fold models, dealt from ``rng`` (None: the
    route takes no fold model: a cost-neutral problem, or ``cost_strategy='loss'``)."""
    if model.decisions_ is not None and model.cost_strategy == "loss":
        raise ValueError("cost_strategy='loss' trains one score per class; decisions "
                         "need cost_strategy='posterior' or 'auto'")
    cost = model.cost_matrix_
    neutral = (sample_cost is None and model.decisions_ is None
               and np.array_equal(cost, 1.0 - np.eye(cost.shape[0])))
    if neutral or model.cost_strategy == "loss":
        return None
    return fold_assignment(codes, model.cost_cv, rng)


def choose_route(model, X, codes, sample_weight, sample_cost, folds,
                 out_of_fold=None) -> RouteChoice:
    """The decision route for ``model`` (its ``cost_matrix_`` and ``decisions_`` set) on the
    folds :func:`route_folds` dealt.

    Cost-neutral problems and ``cost_strategy='loss'`` take no extra fit. ``out_of_fold``:
    how the fold models are fitted and scored (:func:`out_of_fold_scores`' signature; a
    distributed fit fits them on its workers).
    """
    return _choose(model, X, codes, sample_weight, sample_cost, folds, out_of_fold)[0]


def choose_route_alongside(model, X, codes, sample_weight, sample_cost, folds, train
                           ) -> tuple[RouteChoice, object]:
    """:func:`choose_route` with ``train(n_jobs)``, the final model's cost-neutral fit, run
    beside the fold models and the calibration; ``(choice, train's result)``. For ``cost_strategy=
    'posterior'``, whose final model does not depend on the choice."""
    if model.cost_strategy != "posterior":
        raise ValueError("only a 'posterior' model's final fit can run beside its folds")
    return _choose(model, X, codes, sample_weight, sample_cost, folds, None, train)


def _choose(model, X, codes, sample_weight, sample_cost, folds, out_of_fold, alongside=None
            ) -> tuple[RouteChoice, object]:
    """(:func:`choose_route`'s choice, ``alongside(n_jobs)``'s result or None). BLAS runs on
    one thread throughout, held by this thread (:func:`.parallel.blas_threads_held`): the
    fold models, the final fit and the calibration run beside each other, each with its
    share of the threads, and none changes the count under another's products."""
    with blas_threads_held(1):
        return _choose_held(model, X, codes, sample_weight, sample_cost, folds, out_of_fold,
                            alongside)


def _choose_held(model, X, codes, sample_weight, sample_cost, folds, out_of_fold, alongside
                 ) -> tuple[RouteChoice, object]:
    out_of_fold = out_of_fold_scores if out_of_fold is None else out_of_fold
    if folds is None:
        return RouteChoice("loss", "loss"), _run(alongside, model)
    n_folds = model.cost_cv
    short = [f for f in range(n_folds) if len(np.unique(codes[folds != f])) < 2]
    if len(codes) < 2 * n_folds or short:
        return RouteChoice("posterior", "min_risk", evidence={
            "reason": f"{len(codes)} rows are too few to cross-fit {n_folds} folds with two "
                      "classes in each: uncalibrated minimum risk"}), _run(alongside, model)
    neutral_params = {"cost_strategy": "loss", "cost_matrix": None, "decisions": None}
    if alongside is None:
        scores, unseen = out_of_fold(model, X, codes, sample_weight, folds, neutral_params)
        return _decide_shape_and_route(model, X, codes, sample_weight, sample_cost, folds,
                                       out_of_fold, scores, unseen, neutral_params), None
    alternative = smooth_alternative(model, len(codes))
    queued = [] if alternative is None else [{**neutral_params, **alternative}]
    (scores, unseen), wait, later = out_of_fold(model, X, codes, sample_weight, folds,
                                                neutral_params, alongside=alongside,
                                                queued=queued)
    queued_out_of_fold = out_of_fold
    if queued:  # (the smooth shape's folds, fitted in the same pool, are taken from it)
        def queued_out_of_fold(model, X, codes, sample_weight, folds, params, *args):
            return later[0]() if params == queued[0] else out_of_fold(
                model, X, codes, sample_weight, folds, params, *args)
    try:  # (the final fit may still be running: the calibration runs beside it)
        choice = _decide_shape_and_route(model, X, codes, sample_weight, sample_cost, folds,
                                         queued_out_of_fold, scores, unseen, neutral_params)
    finally:
        trained = wait()
    return choice, trained


def _decide_shape_and_route(model, X, codes, sample_weight, sample_cost, folds, out_of_fold,
                            scores, unseen, neutral_params) -> RouteChoice:
    """:func:`_decide` on the out-of-fold scores of the model's shape, or (where
    :func:`._size_defaults.smooth_alternative` offers one) of the smooth shape's fold
    models, fitted on the same folds, where its route costs less out of fold by more than
    :data:`MARGIN_SE` standard errors of the per-row difference (the guard's test)."""
    choice = _decide(model, X, codes, sample_weight, sample_cost, folds, out_of_fold, scores,
                     unseen)
    alternative = smooth_alternative(model, len(codes))
    if alternative is None:
        return choice
    smooth_scores, smooth_unseen = out_of_fold(model, X, codes, sample_weight, folds,
                                               {**neutral_params, **alternative})
    smooth = _decide(model, X, codes, sample_weight, sample_cost, folds, out_of_fold,
                     smooth_scores, smooth_unseen, alternative)
    mean, se = paired_difference(smooth.row_costs, choice.row_costs, sample_weight)
    errors = {shape: float(np.average(np.argmax(s, axis=1) != codes, weights=sample_weight))
              for shape, s in (("defaults", scores), ("smooth", smooth_scores))}
    evidence = {"route_cost": {"defaults": choice.route_costs[choice.route],
                               "smooth": smooth.route_costs[smooth.route]},
                "mean_difference": mean, "standard_error": se, "out_of_fold_error": errors,
                "smooth_params": alternative}
    if mean < -MARGIN_SE * se:
        choice = smooth
        choice.params = alternative
    choice.evidence["shape"] = {"chosen": "smooth" if choice.params else "defaults",
                                **evidence}
    return choice


def _decide(model, X, codes, sample_weight, sample_cost, folds, out_of_fold, scores, unseen,
            shape_params: dict | None = None) -> RouteChoice:
    """The route chosen on the out-of-fold ``scores`` (:func:`_choose`) of fold models with
    ``shape_params`` (the loss route's are fitted with them too)."""
    cost = model.cost_matrix_
    n_folds = model.cost_cv
    calibration, proba, evidence = fit_calibration(scores, codes, sample_weight,
                                                   np.where(unseen, -1, folds))
    picks = {"argmax": certain_codes(np.argmax(scores, axis=1), cost),
             "min_risk": min_risk_codes(proba, cost)}
    if model.cost_strategy == "auto" and model.decisions_ is None and not unseen.any():
        loss_scores, _ = out_of_fold(model, X, codes, sample_weight, folds,
                                     {"cost_strategy": "loss", **(shape_params or {})},
                                     sample_cost)
        picks["loss"] = np.argmax(loss_scores, axis=1)
    rows = row_costs(cost, codes, sample_cost)
    per_row = {route: rows[np.arange(len(codes)), pick] for route, pick in picks.items()}
    route, comparisons = guard(per_row, sample_weight)
    route_costs = {r: float(np.average(c, weights=sample_weight)) for r, c in per_row.items()}
    evidence.update(n_folds=n_folds, n_rows=len(codes), rows_of_unseen_class=int(unseen.sum()),
                    temperature=calibration.temperature, route_costs=route_costs,
                    against_argmax=comparisons, margin_standard_errors=MARGIN_SE)
    if route == "min_risk" and binary_threshold(cost) is not None:
        evidence["threshold"] = binary_threshold(cost)  # on predict_proba[:, 1]
    if route == "loss":
        return RouteChoice("loss", "loss", CalibrationMap(), route_costs, evidence,
                           row_costs=per_row[route])
    return RouteChoice("posterior", route, calibration, route_costs, evidence,
                       row_costs=per_row[route], on_margins=True)


def _run(train, model):
    """``train``'s result on all of the model's threads (None without one)."""
    return None if train is None else train(model.get_params().get("n_jobs"))


def guard(per_row: dict, sample_weight) -> tuple[str, dict]:
    """``(route, comparisons)``: argmax unless a rule (min_risk, then loss) is cheaper than
    the one kept by more than :data:`MARGIN_SE` standard errors of the per-row difference.

    ``comparisons`` holds each rule's mean paired difference from argmax and its standard
    error (negative: cheaper than argmax).
    """
    best, comparisons = "argmax", {}
    for route in ("min_risk", "loss"):
        if route not in per_row:
            continue
        mean, se = paired_difference(per_row[route], per_row["argmax"], sample_weight)
        comparisons[route] = {"mean_difference": mean, "standard_error": se}
        mean, se = paired_difference(per_row[route], per_row[best], sample_weight)
        if mean < -MARGIN_SE * se:
            best = route
    return best, comparisons


def paired_difference(a: np.ndarray, b: np.ndarray, sample_weight) -> tuple[float, float]:
    """The weighted mean of the per-row difference ``a - b`` and its standard error."""
    w = np.asarray(sample_weight, dtype=np.float64)
    w = w / w.sum()
    diff = np.asarray(a, dtype=np.float64) - b
    mean = float(w @ diff)
    return mean, float(np.sqrt(w @ (diff - mean) ** 2 / max(len(w) - 1, 1)))
