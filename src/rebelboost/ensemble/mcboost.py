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

from ..engine import Stage
from ..io import corrupt, float_array, int_array
from ..learners.codeword_tree import codeword_tree
from ..learners.hamming_tree import free_sign_tree, signed_cost_channels
from ..losses.mcboost import MCBoostLoss, simplex_codewords
from ..search.binned import BinnedData
from ._base import BoostedClassifier
from ._loop_params import LOOP_CONSTRAINTS, document_loop
from ._tree_booster import TreeBooster


@document_loop
class MCBoostClassifier(BoostedClassifier):
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
{loop}

    Attributes
    ----------
    classes_, n_features_in_, model_, n_estimators_, validation_loss_, best_iteration_
    trees_, leaf_scores_, stage_ends_, feature_importances_
    codewords_ : ndarray of shape (n_classes, n_classes - 1)
        The simplex vertices; row k is class ``classes_[k]``'s codeword.
    components_ : ndarray of shape (n_estimators_,)
        CD: the component each iteration updated; GD: -1.
    alphas_ : ndarray of shape (n_estimators_,)
    init_loss_ : float
        Risk at f = 0 (``n_classes``).
    train_loss_ : ndarray of shape (n_estimators_,)
        Risk (mean loss (15)) after each iteration.
    """

    _parameter_constraints: dict = {
        **LOOP_CONSTRAINTS,
        "algorithm": [StrOptions({"cd", "gd"})],
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both")],
    }
    _fitted_fields = ("codewords", "components", "alphas")

    def __init__(self, n_estimators: int = 100, *, algorithm: str = "cd", max_depth: int = 1,
                 max_bins: int = 255, learning_rate: float = 1.0, target_loss=None,
                 early_stopping: bool | str = False, validation_metric: str = "cost",
                 validation_fraction: float = 0.1, n_iter_no_change: int = 50,
                 tol: float = 1e-7, random_state=None, n_jobs: int | None = None,
                 verbose: int = 0):
        self.n_estimators = n_estimators
        self.algorithm = algorithm
        self.max_depth = max_depth
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
        data = BinnedData.fit(X, sample_weight, self.max_bins, rng.randint(2**31))
        self.codewords_ = simplex_codewords(len(self.classes_))
        return _MCBooster(data, codes, self.codewords_, sample_weight,
                          int(self.max_depth), self.algorithm, validation, self.learning_rate)

    def _set_records(self, records, n_kept, booster) -> None:
        self.components_ = np.asarray([r["component"] for r in records[:n_kept]], np.int64)
        self.alphas_ = np.asarray([r["alpha"] for r in records[:n_kept]], np.float64)

    def _read_fitted(self, fitted: dict, k: int, d: int) -> None:
        super()._read_fitted(fitted, k, d)
        n = self.n_estimators_
        self.codewords_ = float_array(fitted["codewords"], (k, k - 1), "codewords")
        if not np.allclose(self.codewords_, simplex_codewords(k), rtol=0, atol=1e-12):
            raise corrupt("codewords are not the simplex vertices")
        self.components_ = int_array(fitted["components"], (n,), "components", -1, k - 1)
        self.alphas_ = float_array(fitted["alphas"], (n,), "alphas")
        if not np.isfinite(self.alphas_).all():
            raise corrupt("non-finite alphas")

    def predict_proba(self, X, *, start: int = 0, stop: int | None = None) -> np.ndarray:
        """``softmax_k <f(x), y_k>``: the loss is Bayes consistent with
        ``<f*(x), y_k> = log P(y_k | x) + c`` (the paper's (17))."""
        return _softmax(self._scores(X, start, stop))

    def staged_predict_proba(self, X, *, start: int = 0, stop: int | None = None):
        for scores in self._staged_scores(X, start, stop):
            yield _softmax(scores)


class _MCBooster(TreeBooster):
    """The MCBoost risk with CD (one component, +-1 trees) or GD (codeword trees) steps; the
    training scores are ``s_k = <f, y_k>``."""

    def __init__(self, data, codes, codewords, sample_weight, depth, algorithm, validation,
                 learning_rate):
        self.algorithm = algorithm
        self.codewords = codewords
        self.gram = codewords @ codewords.T
        self.loss = MCBoostLoss(codes, codewords, sample_weight)
        val_loss = (MCBoostLoss(validation.codes, codewords, validation.sample_weight)
                    if validation is not None else None)
        super().__init__(data, depth, learning_rate, codewords.shape[0], self.loss.risk,
                         val_loss.risk if val_loss is not None else None)

    def fit_stage(self, iteration: int) -> Stage:
        loss, k = self.loss, self.scores.shape[1]
        terms = loss.terms(self.scores)
        grad = loss.gradient(terms)
        if self.algorithm == "cd":
            j = iteration % (k - 1)
            channels = signed_cost_channels(grad[:, j])
            tree, g = free_sign_tree(self.data, channels, self.depth)
            alpha = self.learning_rate * loss.component_step(terms, g, j)
            table = alpha * tree.leaf_value[0][:, None] * self.codewords[:, j][None, :]
            self.scores += alpha * g[:, None] * self.codewords[:, j][None, :]
        else:
            j = -1
            tree, leaf_class, row_class = codeword_tree(self.data, grad, self.codewords,
                                                        self.depth)
            alpha = self.learning_rate * loss.codeword_step(terms, row_class)
            table = alpha * self.gram[leaf_class]  # leaf l adds alpha <y_k, y_leaf>
            self.scores += alpha * self.gram[row_class]
        gains = [(int(f), abs(alpha)) for f in tree.features_used(0)]
        return Stage(tree, table[None], loss.risk(self.scores), gains,
                     {"component": j, "alpha": alpha})


def _softmax(scores: np.ndarray) -> np.ndarray:
    z = scores - scores.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)
