"""``MCBoostClassifier``: CD-MCBoost and GD-MCBoost (Saberian and Vasconcelos, NIPS 2011).

The predictor ``f(x) in R^(K-1)`` is scored against the simplex codewords ``y_k``; the
prediction is ``argmax_k <f(x), y_k>``. CD-MCBoost adds ``alpha g(x) 1_j`` per iteration (``g``
a +-1 stump or tree fitted to component ``j`` of the risk gradient, components visited in
turn); GD-MCBoost adds ``alpha g(x)`` with ``g`` a tree whose leaves emit codewords, fitted to
the whole gradient. Both take ``alpha`` by an exact line search of the risk.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..learners.codeword_tree import codeword_tree
from ..learners.hamming_tree import free_sign_tree, signed_cost_channels
from ..losses.mcboost import MCBoostLoss, simplex_codewords
from ._base import LeafScoreClassifier
from ._threads import numba_threads


class MCBoostClassifier(LeafScoreClassifier):
    """Multi-class boosting with simplex codewords and the MCBoost margin loss.

    Parameters
    ----------
    n_estimators : int, default=100
        Boosting iterations (weak learners).
    algorithm : {'cd', 'gd'}, default='cd'
        'cd': CD-MCBoost, one predictor component per iteration (cycling ``j = t mod (K-1)``)
        with a binary +-1 weak learner; 'gd': GD-MCBoost, all components at once with a
        multi-class tree whose leaves emit codewords.
    max_depth : int, default=1
        Depth of the weak learners (1: stumps; the paper's Table 2 uses 2 for 'gd').
        Binary learners have free leaf signs, so depth 1 covers both stump polarities and the
        constant learners.
    max_bins : int, default=255
    random_state : int, RandomState instance or None, default=None
    n_jobs : int or None, default=None
    verbose : int, default=0

    Attributes
    ----------
    classes_, n_features_in_, trees_, leaf_scores_, stage_ends_, feature_importances_
    codewords_ : ndarray of shape (n_classes, n_classes - 1)
        The simplex vertices; row k is class ``classes_[k]``'s codeword.
    components_ : ndarray of shape (n_estimators_,)
        CD: the component each iteration updated; GD: -1.
    alphas_ : ndarray of shape (n_estimators_,)
    train_loss_ : ndarray of shape (n_estimators_,)
        Risk (mean loss (15), ``n_classes`` at f = 0) after each iteration.
    """

    _parameter_constraints: dict = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "algorithm": [StrOptions({"cd", "gd"})],
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both")],
        "max_bins": [Interval(numbers.Integral, 2, 255, closed="both")],
        "random_state": ["random_state"],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
    }
    _extra_arrays = ("codewords", "components", "alphas", "feature_importances")

    def __init__(self, n_estimators: int = 100, *, algorithm: str = "cd", max_depth: int = 1,
                 max_bins: int = 255, random_state=None, n_jobs: int | None = None,
                 verbose: int = 0):
        self.n_estimators = n_estimators
        self.algorithm = algorithm
        self.max_depth = max_depth
        self.max_bins = max_bins
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None) -> MCBoostClassifier:
        """Run ``n_estimators`` iterations of CD- or GD-MCBoost on (X, y)."""
        X, codes, sample_weight = self._fit_input(X, y, sample_weight)
        k = len(self.classes_)
        depth = int(self.max_depth)
        data = self._bins(X, sample_weight, self._rng(self.random_state))
        codewords = simplex_codewords(k)
        gram = codewords @ codewords.T
        loss = MCBoostLoss(codes, codewords, sample_weight)
        n = X.shape[0]
        scores = np.zeros((n, k))  # s_k = <f, y_k>
        trees, leaf_scores, components, alphas, train_loss = [], [], [], [], []
        importances = np.zeros(X.shape[1])
        with numba_threads(self.n_jobs):
            for it in range(self.n_estimators):
                terms = loss.terms(scores)
                grad = loss.gradient(terms)
                if self.algorithm == "cd":
                    j = it % (k - 1)
                    channels = signed_cost_channels(grad[:, j])
                    tree, g = free_sign_tree(data, channels, depth)
                    alpha = loss.component_step(terms, g, j)
                    table = alpha * tree.leaf_value[0][:, None] * codewords[:, j][None, :]
                    scores += alpha * g[:, None] * codewords[:, j][None, :]
                else:
                    j = -1
                    tree, leaf_class, row_class = codeword_tree(data, grad, codewords, depth)
                    alpha = loss.codeword_step(terms, row_class)
                    table = alpha * gram[leaf_class]  # leaf l adds alpha <y_k, y_leaf>
                    scores += alpha * gram[row_class]
                for f in tree.feature[0][tree.feature[0] >= 0]:
                    importances[f] += abs(alpha)
                trees.append(tree)
                leaf_scores.append(table)
                components.append(j)
                alphas.append(alpha)
                train_loss.append(loss.risk(scores))
                self._report(it, train_loss[-1])
        self._set_model(trees, leaf_scores, depth, list(range(1, len(trees) + 1)))
        self.codewords_ = codewords
        self.components_ = np.asarray(components, dtype=np.int64)
        self.alphas_ = np.asarray(alphas, dtype=np.float64)
        self.train_loss_ = np.asarray(train_loss)
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances
        return self

    def predict_proba(self, X) -> np.ndarray:
        """``softmax_k <f(x), y_k>``: the loss is Bayes consistent with
        ``<f*(x), y_k> = log P(y_k | x) + c`` (the paper's (17))."""
        return _softmax(self._scores(X))

    def staged_predict_proba(self, X):
        for scores in self._staged_scores(X):
            yield _softmax(scores)


def _softmax(scores: np.ndarray) -> np.ndarray:
    z = scores - scores.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)
