"""How a REBEL estimator's fit takes its costs: resolved, a decision route chosen by
cross-fitting (:mod:`._cost_route`), and the rows' training costs for the booster."""

from __future__ import annotations

import copy
from functools import partial

import numpy as np

from ..calibration import row_margins
from ..costs import resolve_costs
from ..validation import check_cost_matrix
from ._cost_route import (
    choose_route,
    choose_route_alongside,
    route_folds,
    scale_to_final,
)
from ._size_defaults import smooth_alternative


class CostFitting:
    """Mixin of :class:`~rebelboost.ensemble.BoostedClassifier` subclasses with a
    ``cost_matrix``, ``decisions`` and ``cost_strategy``: fitted ``cost_matrix_``,
    ``decisions_`` and the route's attributes (:class:`._cost_route.RouteChoice`)."""

    def _fit_costs(self, X, codes, sample_weight, rng, sample_cost=None,
                   may_train_twice=False) -> np.ndarray:
        k = len(self.classes_)
        for left in ("_pending_route", "_scale_pending"):  # (a fit that failed left them)
            self.__dict__.pop(left, None)
        self.cost_matrix_, self.decisions_, sample_cost = resolve_costs(
            self.cost_matrix, sample_cost, codes, k, self.classes_, self.decisions)
        folds = route_folds(self, codes, sample_cost, rng)
        if (folds is not None and self.cost_strategy == "posterior"
                and (may_train_twice or smooth_alternative(self, len(codes)) is None)):
            # trained cost-neutrally whatever the guard picks: the fit runs beside the fold
            # models (_train), which choose how it decides. Where they may choose the
            # model's shape too, it runs with the defaults' shape (which they keep on most
            # data) and trains again if they choose the other; with a callback or a printout,
            # which would see the discarded run, it is trained after them instead
            self._pending_route = (X, codes, sample_weight, sample_cost, folds)
            self.cost_strategy_ = "posterior"
        else:
            choose_route(self, X, codes, sample_weight, sample_cost, folds).set_on(self)
        if self.cost_strategy_ == "posterior":
            return check_cost_matrix(None, k)[codes]  # trained cost-neutrally
        return self.cost_matrix_[codes] if sample_cost is None else sample_cost

    def _booster_factory(self, X, codes, sample_weight, cost_rows, rng, validation):
        pending = self.__dict__.get("_pending_route")
        if pending is None or smooth_alternative(self, len(pending[1])) is None:
            return None
        state = copy.deepcopy(rng)
        return lambda: self._make_booster(X, codes, sample_weight, cost_rows,
                                          copy.deepcopy(state), validation)

    def _train(self, train, booster, rebuild):
        pending = self.__dict__.pop("_pending_route", None)
        if pending is None:
            return train(self.n_jobs, booster), booster
        choice, result = choose_route_alongside(self, *pending, partial(train, booster=booster))
        choice.set_on(self)
        if choice.params:  # the folds chose the other shape: the run beside them is discarded
            booster = rebuild()
            result = train(self.n_jobs, booster)
        return result, booster

    def _after_training(self, X, training_scores) -> None:
        if self.__dict__.pop("_scale_pending", False):  # the map waits for the final model
            with self._threads(X):
                scale_to_final(self, row_margins(training_scores()))

    def _cost_matrix(self) -> np.ndarray:
        return self.cost_matrix_

    def _trained_costs(self, codes) -> np.ndarray:
        k = len(self.classes_)
        return (self.cost_matrix_ if self.cost_strategy_ == "loss" else 1 - np.eye(k))[codes]
