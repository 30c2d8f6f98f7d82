"""``AdaBoostMHClassifier``: AdaBoost.MH with factorized stumps / Hamming trees (Kégl 2014).

The model is ``f(x) = sum_t alpha_t v_t phi_t(x)`` with ``phi_t`` a +-1 stump or tree and
``v_t in {-1, +1}^K`` (``factorized=True``), or, for the original one-against-all base
classifiers of Schapire and Singer, ``f(x) = sum_t alpha_t (phi_t1(x), ..., phi_tK(x))``
(``factorized=False``: K trees per iteration). The prediction is ``argmax_l f_l(x)``.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..engine import Stage
from ..io import corrupt, float_array
from ..learners.hamming_tree import factorized_learner, unfactorized_learners
from ..losses.adaboost_mh import AdaBoostMHLoss
from ..search.binned import BinnedData
from ._base import BoostedClassifier
from ._loop_params import LOOP_CONSTRAINTS, document_loop
from ._tree_booster import TreeBooster


@document_loop
class AdaBoostMHClassifier(BoostedClassifier):
    """AdaBoost.MH (Schapire and Singer 1999) with factorized base classifiers (Kégl 2014).

    Parameters
    ----------
    n_estimators : int, default=100
        Boosting iterations.
    weak_learner : {'stump', 'tree'}, default='stump'
        'stump': the multi-class decision stump of Kégl's Appendix C (the constant classifier
        is a candidate too); 'tree': Hamming trees of depth ``max_depth`` (root = that stump,
        the layers below grown with the vote vector held fixed, one vote vector per tree).
    max_depth : int, default=2
        Depth of the trees (ignored for stumps).
    factorized : bool, default=True
        False uses the original one-against-all base classifiers: K independent +-1 trees per
        iteration (one per class, free leaf signs) sharing one coefficient.
    max_bins : int, default=255
        Value bins per feature for the split search (plus one bin for missing values).
{loop}

    Attributes
    ----------
    classes_, n_features_in_, model_, n_estimators_, validation_loss_, best_iteration_
    trees_ : TreeArrays
        The base classifiers' ``phi`` (K per iteration when ``factorized=False``).
    leaf_scores_ : ndarray of shape (n_trees, 2**depth, n_classes)
        Class scores each leaf adds (``alpha * phi_leaf * v``).
    stage_ends_ : ndarray of shape (n_estimators_,)
    votes_ : ndarray of shape (n_estimators_, n_classes)
        Vote vectors (all ones when ``factorized=False``).
    alphas_ : ndarray of shape (n_estimators_,)
    edges_ : ndarray of shape (n_estimators_,)
        Edge ``gamma_t`` of each base classifier (weights summing to one).
    init_loss_ : float
        Weighted exponential risk (3) before the first iteration (1).
    train_loss_ : ndarray of shape (n_estimators_,)
        Weighted exponential risk (3) after each iteration.
    feature_importances_ : ndarray of shape (n_features_in_,)
    """

    _parameter_constraints: dict = {
        **LOOP_CONSTRAINTS,
        "weak_learner": [StrOptions({"tree", "stump"})],
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both")],
        "factorized": ["boolean"],
    }
    _fitted_fields = ("votes", "alphas", "edges")

    def __init__(self, n_estimators: int = 100, *, weak_learner: str = "stump",
                 max_depth: int = 2, factorized: bool = True, max_bins: int = 255,
                 learning_rate: float = 1.0, target_loss=None, early_stopping: bool | str = False,
                 validation_metric: str = "cost", validation_fraction: float = 0.1,
                 n_iter_no_change: int = 50, tol: float = 1e-7, random_state=None,
                 n_jobs: int | None = None, verbose: int = 0):
        self.n_estimators = n_estimators
        self.weak_learner = weak_learner
        self.max_depth = max_depth
        self.factorized = factorized
        self.max_bins = max_bins
        self.learning_rate = learning_rate
        self.target_loss = target_loss
        self.early_stopping = early_stopping
        self.validation_metric = validation_metric
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _make_booster(self, X, codes, sample_weight, cost_rows, rng, validation):
        depth = 1 if self.weak_learner == "stump" else int(self.max_depth)
        data = BinnedData.fit(X, sample_weight, self.max_bins, rng.randint(2**31))
        return _MHBooster(data, codes, len(self.classes_), sample_weight, depth,
                          self.factorized, validation, self.learning_rate)

    def _set_records(self, records, n_kept, booster) -> None:
        k = len(self.classes_)
        kept = records[:n_kept]
        self.votes_ = np.asarray([r["votes"] for r in kept]).reshape(n_kept, k)
        self.alphas_ = np.asarray([r["alpha"] for r in kept], dtype=np.float64)
        self.edges_ = np.asarray([r["edge"] for r in kept], dtype=np.float64)

    def _read_fitted(self, fitted: dict, k: int, d: int) -> None:
        super()._read_fitted(fitted, k, d)
        n = self.n_estimators_
        self.votes_ = float_array(fitted["votes"], (n, k), "votes")
        self.alphas_ = float_array(fitted["alphas"], (n,), "alphas")
        self.edges_ = float_array(fitted["edges"], (n,), "edges")
        if not all(np.isfinite(a).all() for a in (self.votes_, self.alphas_, self.edges_)):
            raise corrupt("non-finite votes, alphas or edges")


class _MHBooster(TreeBooster):
    """AdaBoost.MH's exponential risk with factorized (or per-class) +-1 trees."""

    def __init__(self, data, codes, k, sample_weight, depth, factorized, validation,
                 learning_rate):
        self.factorized = factorized
        self.loss = AdaBoostMHLoss(codes, k, sample_weight)
        val_loss = (AdaBoostMHLoss(validation.codes, k, validation.sample_weight)
                    if validation is not None else None)
        super().__init__(data, depth, learning_rate, k, self.loss.risk,
                         val_loss.risk if val_loss is not None else None)

    def fit_stage(self, iteration: int) -> Stage:
        loss, k = self.loss, self.scores.shape[1]
        w = loss.weights(self.scores)
        if self.factorized:
            learner = factorized_learner(self.data, loss, w, self.depth)
            learner.alpha *= self.learning_rate
            self.scores += learner.alpha * learner.phi[:, None] * learner.votes
            return Stage(learner.tree, learner.leaf_scores()[None], loss.risk(self.scores),
                         list(learner.gains),
                         {"votes": learner.votes, "alpha": learner.alpha, "edge": learner.edge})
        class_trees, phis, alpha = unfactorized_learners(self.data, loss, w, self.depth)
        alpha *= self.learning_rate
        values = np.zeros((k, 2**self.depth, k))
        gains = []
        for c, tree in enumerate(class_trees):
            values[c, :, c] = alpha * tree.leaf_value[0]
            gains += [(int(f), 1.0) for f in tree.features_used(0)]
        self.scores += alpha * phis
        return Stage(self.stack(class_trees), values, loss.risk(self.scores),
                     gains, {"votes": np.ones(k), "alpha": alpha,
                             "edge": float((w * loss.y * phis).sum())})
