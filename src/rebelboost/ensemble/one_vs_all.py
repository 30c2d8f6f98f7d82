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

from ..engine import Stage
from ..io import corrupt, float_array
from ..learners.hamming_tree import free_sign_tree, signed_cost_channels
from ..losses.adaboost_mh import binary_alpha, sign_labels
from ..search.binned import BinnedData
from ._base import BoostedClassifier
from ._loop_params import LOOP_CONSTRAINTS, document_loop
from ._tree_booster import TreeBooster


@document_loop
class OneVsAllAdaBoostClassifier(BoostedClassifier):
    """One-vs-all discrete AdaBoost with stumps (free leaf signs: both polarities and the
    constant learners are candidates), all K problems on the shared histogram engine.

    Parameters
    ----------
    n_estimators : int, default=20
        Boosting rounds per class.
    max_depth : int, default=1
        Depth of the +-1 weak learners (1: stumps).
    max_bins : int, default=255
{loop}

    Attributes
    ----------
    classes_, n_features_in_, model_, n_estimators_, validation_loss_, best_iteration_
    trees_, leaf_scores_, stage_ends_, feature_importances_
    alphas_ : ndarray of shape (n_estimators_, n_classes)
    init_loss_ : float
        ``n_classes``: each binary problem's exponential loss starts at 1.
    train_loss_ : ndarray of shape (n_estimators_,)
        Sum over classes of each binary problem's exponential loss.
    class_train_loss_ : ndarray of shape (n_estimators_, n_classes)
    """

    _parameter_constraints: dict = {
        **LOOP_CONSTRAINTS,
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both")],
    }
    _fitted_fields = ("alphas", "class_train_loss")

    def __init__(self, n_estimators: int = 20, *, max_depth: int = 1, max_bins: int = 255,
                 learning_rate: float = 1.0, target_loss=None, early_stopping: bool | str = False,
                 validation_metric: str = "cost", validation_fraction: float = 0.1,
                 n_iter_no_change: int = 50, tol: float = 1e-7, random_state=None,
                 n_jobs: int | None = None, verbose: int = 0):
        self.n_estimators = n_estimators
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
        return _OneVsAllBooster(data, codes, len(self.classes_), sample_weight,
                                int(self.max_depth), validation, self.learning_rate)

    def _set_records(self, records, n_kept, booster) -> None:
        k = len(self.classes_)
        kept = records[:n_kept]
        self.alphas_ = np.asarray([r["alphas"] for r in kept]).reshape(n_kept, k)
        self.class_train_loss_ = np.asarray([r["class_loss"] for r in kept]).reshape(n_kept, k)

    def _read_fitted(self, fitted: dict, k: int, d: int) -> None:
        super()._read_fitted(fitted, k, d)
        n = self.n_estimators_
        self.alphas_ = float_array(fitted["alphas"], (n, k), "alphas")
        self.class_train_loss_ = float_array(fitted["class_train_loss"], (n, k),
                                             "class_train_loss")
        if not (np.isfinite(self.alphas_).all() and np.isfinite(self.class_train_loss_).all()):
            raise corrupt("non-finite alphas or class losses")


class _ClassLosses:
    """Each class's binary exponential loss (normalised weights) at given scores."""

    def __init__(self, codes, k, sample_weight):
        self.ysign = sign_labels(codes, k)
        self.sw = sample_weight / sample_weight.sum()
        self.log_sw = np.log(np.maximum(self.sw, np.finfo(float).tiny))

    def log_terms(self, scores):
        z = self.log_sw[:, None] - self.ysign * scores
        z[self.sw == 0] = -np.inf
        return z

    def __call__(self, scores) -> np.ndarray:
        z = self.log_terms(scores)
        m = z.max(axis=0)
        return np.exp(m) * np.exp(z - m).sum(axis=0)

    def risk(self, scores) -> float:
        """The sum of the class losses."""
        return float(self(scores).sum())


class _OneVsAllBooster(TreeBooster):
    """K binary AdaBoosts, class k against the rest, one +-1 tree per class per round."""

    def __init__(self, data, codes, k, sample_weight, depth, validation, learning_rate):
        self.losses = _ClassLosses(codes, k, sample_weight)
        val_losses = (_ClassLosses(validation.codes, k, validation.sample_weight)
                      if validation is not None else None)
        super().__init__(data, depth, learning_rate, k, self.losses.risk,
                         val_losses.risk if val_losses is not None else None)

    def fit_stage(self, iteration: int) -> Stage:
        k = self.scores.shape[1]
        z = self.losses.log_terms(self.scores)
        ysign = self.losses.ysign
        values = np.zeros((k, 2**self.depth, k))
        trees, gains, round_alpha = [], [], np.zeros(k)
        for c in range(k):
            w = np.exp(z[:, c] - z[:, c].max())
            w /= w.sum()
            u = w * ysign[:, c]
            tree, phi = free_sign_tree(self.data, signed_cost_channels(u), self.depth)
            alpha = self.learning_rate * binary_alpha(float((u * phi).sum()), 1.0)
            values[c, :, c] = alpha * tree.leaf_value[0]
            self.scores[:, c] += alpha * phi
            trees.append(tree)
            round_alpha[c] = alpha
            gains += [(int(f), alpha) for f in tree.features_used(0)]
        class_loss = self.losses(self.scores)
        return Stage(self.stack(trees), values, float(class_loss.sum()),
                     gains, {"alphas": round_alpha, "class_loss": class_loss})
