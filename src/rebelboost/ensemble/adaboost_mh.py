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

from ..learners.hamming_tree import factorized_learner, unfactorized_learners
from ..losses.adaboost_mh import AdaBoostMHLoss
from ._base import LeafScoreClassifier
from ._threads import numba_threads


class AdaBoostMHClassifier(LeafScoreClassifier):
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
    random_state : int, RandomState instance or None, default=None
        Seeds the binning subsample.
    n_jobs : int or None, default=None
        Threads for the histogram kernels; None or -1 uses all cores.
    verbose : int, default=0
        Print the training risk every ``verbose`` iterations.

    Attributes
    ----------
    classes_, n_features_in_
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
    train_loss_ : ndarray of shape (n_estimators_,)
        Weighted exponential risk (3) after each iteration (1 before the first).
    feature_importances_ : ndarray of shape (n_features_in_,)
    """

    _parameter_constraints: dict = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "weak_learner": [StrOptions({"tree", "stump"})],
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both")],
        "factorized": ["boolean"],
        "max_bins": [Interval(numbers.Integral, 2, 255, closed="both")],
        "random_state": ["random_state"],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
    }
    _extra_arrays = ("votes", "alphas", "edges", "feature_importances")

    def __init__(self, n_estimators: int = 100, *, weak_learner: str = "stump",
                 max_depth: int = 2, factorized: bool = True, max_bins: int = 255,
                 random_state=None, n_jobs: int | None = None, verbose: int = 0):
        self.n_estimators = n_estimators
        self.weak_learner = weak_learner
        self.max_depth = max_depth
        self.factorized = factorized
        self.max_bins = max_bins
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None) -> AdaBoostMHClassifier:
        """Run ``n_estimators`` iterations of AdaBoost.MH on (X, y)."""
        X, codes, sample_weight = self._fit_input(X, y, sample_weight)
        k = len(self.classes_)
        depth = 1 if self.weak_learner == "stump" else int(self.max_depth)
        data = self._bins(X, sample_weight, self._rng(self.random_state))
        loss = AdaBoostMHLoss(codes, k, sample_weight)
        scores = np.zeros((X.shape[0], k))
        trees, leaf_scores, stage_ends = [], [], []
        votes, alphas, edges, train_loss = [], [], [], []
        importances = np.zeros(X.shape[1])
        with numba_threads(self.n_jobs):
            for it in range(self.n_estimators):
                w = loss.weights(scores)
                if self.factorized:
                    learner = factorized_learner(data, loss, w, depth)
                    trees.append(learner.tree)
                    leaf_scores.append(learner.leaf_scores())
                    scores += learner.alpha * learner.phi[:, None] * learner.votes
                    votes.append(learner.votes)
                    alphas.append(learner.alpha)
                    edges.append(learner.edge)
                    for f, gain in learner.gains:
                        importances[f] += gain
                else:
                    class_trees, phis, alpha = unfactorized_learners(data, loss, w, depth)
                    for c, tree in enumerate(class_trees):
                        table = np.zeros((2**depth, k))
                        table[:, c] = alpha * tree.leaf_value[0]
                        trees.append(tree)
                        leaf_scores.append(table)
                        for f in tree.feature[0][tree.feature[0] >= 0]:
                            importances[f] += 1.0
                    scores += alpha * phis
                    votes.append(np.ones(k))
                    alphas.append(alpha)
                    edges.append(float((w * loss.y * phis).sum()))
                stage_ends.append(len(trees))
                train_loss.append(loss.risk(scores))
                self._report(it, train_loss[-1])
        self._set_model(trees, leaf_scores, depth, stage_ends)
        self.votes_ = np.asarray(votes).reshape(len(stage_ends), k)
        self.alphas_ = np.asarray(alphas, dtype=np.float64)
        self.edges_ = np.asarray(edges, dtype=np.float64)
        self.train_loss_ = np.asarray(train_loss)
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances
        return self
