"""How a REBEL estimator's fit takes its costs: resolved, a decision route chosen by
cross-fitting (:mod:`._cost_route`), and the rows' training costs for the booster."""

from __future__ import annotations

import numpy as np

from ..costs import resolve_costs
from ..validation import check_cost_matrix
from ._cost_route import choose_route, choose_route_alongside, route_folds
from ._size_defaults import smooth_alternative


class CostFitting:
    """Mixin of :class:`~rebelboost.ensemble.BoostedClassifier` subclasses with a
    ``cost_matrix``, ``decisions`` and ``cost_strategy``: fitted ``cost_matrix_``,
    ``decisions_`` and the route's attributes (:class:`._cost_route.RouteChoice`)."""

    def _fit_costs(self, X, codes, sample_weight, rng, sample_cost=None) -> np.ndarray:
        k = len(self.classes_)
        self.__dict__.pop("_pending_route", None)  # (a fit that failed before _train left it)
        self.cost_matrix_, self.decisions_, sample_cost = resolve_costs(
            self.cost_matrix, sample_cost, codes, k, self.classes_, self.decisions)
        folds = route_folds(self, codes, sample_cost, rng)
        if (folds is not None and self.cost_strategy == "posterior"
                and smooth_alternative(self, len(codes)) is None):
            # trained cost-neutrally whatever the guard picks: the fit runs beside the fold
            # models (_train), which choose how it decides (not where the folds may choose
            # the model's shape too: it is trained after them)
            self._pending_route = (X, codes, sample_weight, sample_cost, folds)
            self.cost_strategy_ = "posterior"
        else:
            choose_route(self, X, codes, sample_weight, sample_cost, folds).set_on(self)
        if self.cost_strategy_ == "posterior":
            return check_cost_matrix(None, k)[codes]  # trained cost-neutrally
        return self.cost_matrix_[codes] if sample_cost is None else sample_cost

    def _train(self, train):
        pending = self.__dict__.pop("_pending_route", None)
        if pending is None:
            return train(self.n_jobs)
        choice, result = choose_route_alongside(self, *pending, train)
        choice.set_on(self)
        return result

    def _cost_matrix(self) -> np.ndarray:
        return self.cost_matrix_

    def _trained_costs(self, codes) -> np.ndarray:
        k = len(self.classes_)
        return (self.cost_matrix_ if self.cost_strategy_ == "loss" else 1 - np.eye(k))[codes]
