"""``OneVsAllAdaBoostClassifier``: K binary discrete AdaBoost classifiers, class k against rest.

Classifier k boosts ``F_k(x) = sum_t alpha_tk phi_tk(x)`` with +-1 stumps (or trees) on the
labels ``y_ik = +1`` if sample i is of class k, else -1; each has its own exponential loss and
weights. The prediction is ``argmax_k F_k(x)``. One boosting round fits one learner for every
class, so ``n_estimators`` rounds give ``K * n_estimators`` learners (the MCBoost paper's Table 1
budget: 20 rounds per class).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval

from ..learners.hamming_tree import free_sign_tree, signed_cost_channels
from ..losses.adaboost_mh import binary_alpha, sign_labels
from ._base import LeafScoreClassifier
from ._threads import numba_threads


class OneVsAllAdaBoostClassifier(LeafScoreClassifier):
    """One-vs-all discrete AdaBoost with stumps (free leaf signs: both polarities and the
    constant learners are candidates), all K problems on the shared histogram engine.

    Parameters
    ----------
    n_estimators : int, default=20
        Boosting rounds per class.
    max_depth : int, default=1
        Depth of the +-1 weak learners (1: stumps).
    max_bins : int, default=255
    random_state : int, RandomState instance or None, default=None
    n_jobs : int or None, default=None
    verbose : int, default=0

    Attributes
    ----------
    classes_, n_features_in_, trees_, leaf_scores_, stage_ends_, feature_importances_
    alphas_ : ndarray of shape (n_estimators_, n_classes)
    train_loss_ : ndarray of shape (n_estimators_,)
        Sum over classes of each binary problem's exponential loss (each starts at 1).
    class_train_loss_ : ndarray of shape (n_estimators_, n_classes)
    """

    _parameter_constraints: dict = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both")],
        "max_bins": [Interval(numbers.Integral, 2, 255, closed="both")],
        "random_state": ["random_state"],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
    }
    _extra_arrays = ("alphas", "class_train_loss", "feature_importances")

    def __init__(self, n_estimators: int = 20, *, max_depth: int = 1, max_bins: int = 255,
                 random_state=None, n_jobs: int | None = None, verbose: int = 0):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None) -> OneVsAllAdaBoostClassifier:
        """Boost one binary AdaBoost per class for ``n_estimators`` rounds."""
        X, codes, sample_weight = self._fit_input(X, y, sample_weight)
        k = len(self.classes_)
        depth = int(self.max_depth)
        data = self._bins(X, sample_weight, self._rng(self.random_state))
        ysign = sign_labels(codes, k)
        sw = sample_weight / sample_weight.sum()
        log_sw = np.log(np.maximum(sw, np.finfo(float).tiny))
        scores = np.zeros((X.shape[0], k))
        trees, leaf_scores, stage_ends, alphas, class_loss = [], [], [], [], []
        importances = np.zeros(X.shape[1])
        with numba_threads(self.n_jobs):
            for it in range(self.n_estimators):
                z = log_sw[:, None] - ysign * scores
                z[sw == 0] = -np.inf
                round_alpha = np.zeros(k)
                for c in range(k):
                    w = np.exp(z[:, c] - z[:, c].max())
                    w /= w.sum()
                    u = w * ysign[:, c]
                    tree, phi = free_sign_tree(data, signed_cost_channels(u), depth)
                    alpha = binary_alpha(float((u * phi).sum()), 1.0)
                    table = np.zeros((2**depth, k))
                    table[:, c] = alpha * tree.leaf_value[0]
                    scores[:, c] += alpha * phi
                    trees.append(tree)
                    leaf_scores.append(table)
                    round_alpha[c] = alpha
                    for f in tree.feature[0][tree.feature[0] >= 0]:
                        importances[f] += alpha
                stage_ends.append(len(trees))
                alphas.append(round_alpha)
                z = log_sw[:, None] - ysign * scores
                z[sw == 0] = -np.inf
                m = z.max(axis=0)
                class_loss.append(np.exp(m) * np.exp(z - m).sum(axis=0))
                self._report(it, float(class_loss[-1].sum()))
        self._set_model(trees, leaf_scores, depth, stage_ends)
        self.alphas_ = np.asarray(alphas).reshape(len(stage_ends), k)
        self.class_train_loss_ = np.asarray(class_loss).reshape(len(stage_ends), k)
        self.train_loss_ = self.class_train_loss_.sum(axis=1)
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances
        return self
