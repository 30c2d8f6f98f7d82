"""``RebelClassifier``: multi-class cost-sensitive boosting with binary weak learners.

The model is ``H(x) = sum_t f_t(x) a_t`` with ``f_t`` a decision tree (or stump) emitting
+-1 and ``a_t`` a free K-vector; the prediction is ``argmax_k H_k(x)`` (with the calibrated
or paper subcosts an estimate of the minimum-risk class under the training costs), or, on the
posterior route, the class of least expected cost under temperature-scaled posteriors
(:mod:`rebelboost.costs`).
"""

from __future__ import annotations

import numbers
import sys
import warnings
from collections.abc import Iterator

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import train_test_split
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..binning import Binner
from ..callbacks import IterationInfo, run_callbacks
from ..costs import (
    COST_STRATEGIES,
    choose_route,
    decision_codes,
    proba_from_scores,
    resolve_costs,
    row_costs,
)
from ..learners.rebel_tree import FittedLearner, constant_learner, grow_rebel_tree
from ..learners.similarity import (
    SimilarityArrays,
    fit_follow_up,
    fit_similarity,
    resolve_coincident,
)
from ..learners.tree import TreeArrays
from ..losses.rebel import SUBCOSTS, RebelLoss
from ..search.columns import bin_columns
from ..search.histogram import HistogramPool, sparse_bins
from ..search.splits import is_better
from ..validation import check_cost_matrix, check_fit_input
from ._threads import numba_threads


class RebelClassifier(ClassifierMixin, BaseEstimator):
    """REBEL boosting (Appel, Burgos-Artizzu and Perona, 2016) with stumps or trees.

    Parameters
    ----------
    n_estimators : int, default=100
        Number of boosting iterations (weak learners, the constant learner included).
    weak_learner : {'tree', 'stump', 'similarity'}, default='tree'
        'tree' grows depth-``max_depth`` trees layer by layer; 'stump' is depth 1;
        'similarity' uses localized similarities (Appel & Perona 2017), which compare a query
        with one or two training points and drive the training error to zero on any data set.
    max_depth : int, default=2
        Depth of the trees (ignored for stumps).
    cost_matrix : array-like of shape (n_classes, n_classes), default=None
        ``cost_matrix[i, j]`` is the cost of predicting class ``classes_[j]`` when the truth is
        ``classes_[i]``: non-negative, zero diagonal. None means 0-1 cost (or per-sample
        costs, see ``fit``).
    subcosts : {'calibrated', 'paper', 'thesis'}, default='thesis'
        How each sample's cost row enters the loss on the 'loss' route
        (:mod:`rebelboost.losses.rebel`). All three bound the cost and agree for two classes
        and 0-1 costs; for K >= 3 only 'calibrated' and 'paper' have the least-risk class as
        the population minimiser's argmax. Yet 'thesis' had the lower mean test cost on 4 of 7
        data sets with 200 depth-3 trees (pendigits, letter, optdigits, shuttle) and on the
        REBEL paper's stump protocol (BENCHMARKS.md, REPRODUCTIONS.md): the calibrated optima
        are finite score vectors, so boosting chases soft targets instead of margins.
    cost_strategy : {'posterior', 'loss', 'auto'}, default='posterior'
        'posterior' trains cost-neutrally, fits a temperature on ``validation_fraction`` of
        the rows (a second fit, then the model is refitted on all rows) and predicts
        ``argmin_k (predict_proba @ cost_matrix_)_k``; 'loss' trains on the cost-sensitive
        loss and predicts ``argmax H`` (one fit); 'auto' fits both on a split and keeps the
        route of lower held-out mean cost (three fits). 'posterior' is the default: of the
        three it had the lowest mean test cost on 4 of 7 data sets and was within 0.0002 of
        'auto' on the other 3, at two thirds of its work (BENCHMARKS.md).
        Ignored under 0-1 costs, where the routes agree.
    max_bins : int, default=255
        Value bins per feature for the split search (plus one bin for missing values).
    similarity_mode : {'two-point', 'one-point'}, default='two-point'
        'one-point' restricts the similarity search to one-point learners (the paper's ablation).
    scaling : {'standard', 'minmax'} or None, default='standard'
        How features are scaled before distances are taken (similarity learners only):
        zero mean and unit variance, or [0, 1] ranges, or raw (best when all features share
        a unit, such as pixels). Training sets of 10 million entries or more are searched in
        float32.
    target_loss : 'auto', float or None, default=None
        Stop once the training loss falls below this value ('auto': ``1 / n_samples``, the
        similarity paper's rule, below which the training error is zero); ``n_estimators``
        stays the cap.
    quickboost : bool, default=False
        Prune features early in each split search (QuickBoost, Appel 2017). The model is the
        same bit for bit either way; only the work (``histogram_updates_``) differs. Off by
        default: after a few dozen iterations the features' scores differ by less than the
        bound can resolve without ~99% of the weight, so on the data measured it costs
        0.96-1.63x the histogram updates and 3-10x the time per iteration (BENCHMARKS.md).
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training set (stratified), stop when the
        validation loss has not improved by ``tol`` (relative) for ``n_iter_no_change``
        iterations, and keep the model at its best iteration.
    validation_fraction : float, default=0.1
    n_iter_no_change : int, default=10
    tol : float, default=1e-7
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split and the binning subsample.
    n_jobs : int or None, default=None
        Threads for the histogram kernels; None or -1 uses all cores.
    verbose : int, default=0
        Print progress every ``verbose`` iterations.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    cost_matrix_ : ndarray of shape (n_classes, n_classes)
        The cost matrix; with ``sample_cost`` the mean cost row of each true class.
    cost_strategy_ : {'loss', 'posterior'}
        The route taken ('loss' whenever the costs are 0-1).
    temperature_ : float
        Divides the scores in ``predict_proba`` (1 unless on the posterior route).
    route_costs_ : dict
        Held-out mean cost of each route when ``cost_strategy='auto'`` (else empty).
    trees_ : TreeArrays
        The weak learners, stacked.
    vectors_ : ndarray of shape (n_estimators_, n_classes)
        The step vector ``a_t`` of each learner.
    n_estimators_ : int
    train_loss_ : ndarray of shape (n_estimators_,)
        Training loss after each iteration (``init_loss_`` before the first).
    validation_loss_ : ndarray or None
        Validation loss after each iteration when early stopping is on.
    best_iteration_ : int or None
        Number of iterations kept by early stopping.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Share of the total training-loss reduction won by splits on each feature.
    histogram_updates_ : ndarray of shape (n_iterations,)
        Row x feature histogram accumulations spent by each iteration's split searches (every
        iteration run, including those dropped by early stopping).
    """

    _parameter_constraints: dict = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "weak_learner": [StrOptions({"tree", "stump", "similarity"})],
        "similarity_mode": [StrOptions({"two-point", "one-point"})],
        "scaling": [StrOptions({"standard", "minmax"}), None],
        "target_loss": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither"),
                        None],
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both")],
        "cost_matrix": ["array-like", None],
        "subcosts": [StrOptions(set(SUBCOSTS))],
        "cost_strategy": [StrOptions(set(COST_STRATEGIES))],
        "max_bins": [Interval(numbers.Integral, 2, 255, closed="both")],
        "quickboost": ["boolean"],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_estimators: int = 100,
        *,
        weak_learner: str = "tree",
        max_depth: int = 2,
        cost_matrix=None,
        subcosts: str = "thesis",
        cost_strategy: str = "posterior",
        max_bins: int = 255,
        similarity_mode: str = "two-point",
        scaling: str | None = "standard",
        target_loss=None,
        quickboost: bool = False,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 10,
        tol: float = 1e-7,
        random_state=None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ):
        self.n_estimators = n_estimators
        self.weak_learner = weak_learner
        self.max_depth = max_depth
        self.cost_matrix = cost_matrix
        self.subcosts = subcosts
        self.cost_strategy = cost_strategy
        self.max_bins = max_bins
        self.similarity_mode = similarity_mode
        self.scaling = scaling
        self.target_loss = target_loss
        self.quickboost = quickboost
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.weak_learner != "similarity"
        return tags

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y, sample_weight=None, callbacks=None,
            sample_cost=None) -> RebelClassifier:
        """Boost ``n_estimators`` weak learners on (X, y).

        ``sample_cost`` (n_samples, n_classes), instead of ``cost_matrix``, gives each sample
        its own costs: row n is the cost of predicting each class for sample n (zero at its
        true class, non-negative, not all zero). The 'loss' route trains on them row by row;
        the 'posterior' route sees them only through ``cost_matrix_``, their class means.

        ``callbacks`` is a list of callables, each called with an
        :class:`~rebelboost.callbacks.IterationInfo` after every iteration; one returning
        ``True`` stops training there.
        """
        X, codes, sample_weight = check_fit_input(self, X, y, sample_weight)
        n_classes = len(self.classes_)
        self.cost_matrix_, sample_cost = resolve_costs(self.cost_matrix, sample_cost, codes,
                                                       n_classes)

        rng = np.random.RandomState(
            self.random_state if not isinstance(self.random_state, np.random.RandomState)
            else self.random_state.randint(2**31)
        )
        self.cost_strategy_, self.temperature_, self.route_costs_ = choose_route(
            self, X, codes, sample_weight, sample_cost, rng)
        loss_cost = self.cost_matrix_
        if self.cost_strategy_ == "posterior":
            loss_cost, sample_cost = check_cost_matrix(None, n_classes), None
        X_val = codes_val = w_val = cost_val = None
        if self.early_stopping:
            X, X_val, codes, codes_val, sample_weight, w_val, sample_cost, cost_val = (
                self._validation_split(X, codes, sample_weight, sample_cost, rng))

        if self.weak_learner == "similarity":
            family = _SimilarityFamily(self, X, codes, sample_weight)
            codes = family.codes
        else:
            family = _TreeFamily(self, X, sample_weight, rng)
        X_val = family.features(X_val) if X_val is not None else None
        loss = RebelLoss(loss_cost, codes, sample_weight, self.subcosts, sample_cost)
        val_loss = (RebelLoss(loss_cost, codes_val, w_val, self.subcosts, cost_val)
                    if X_val is not None else None)
        target = self.target_loss
        if target == "auto":
            target = 1.0 / X.shape[0]

        scores = np.zeros((X.shape[0], n_classes))
        val_scores = np.zeros((X_val.shape[0], n_classes)) if X_val is not None else None
        self.init_loss_ = loss.loss(scores)
        learners, vectors, train_loss, val_losses, updates = [], [], [], [], []
        importances = np.zeros(X.shape[1])
        best, best_val, since_best = 0, np.inf, 0
        channels, scale, _ = loss.weights_and_loss(scores)
        with numba_threads(self.n_jobs, blas_threads=family.blas_threads):
            for it in range(self.n_estimators):
                learner, work = family.fit(channels)
                updates.append(work)
                scores += learner.output[:, None] * learner.vector
                learners.append(learner.arrays)
                vectors.append(learner.vector)
                for f, gain in learner.gains:
                    importances[f] += gain * scale
                channels, scale, new_loss = loss.weights_and_loss(scores)  # the next iteration's
                train_loss.append(new_loss)
                val_cost = None
                if val_loss is not None:
                    val_scores += learner.arrays.outputs(X_val)[:, :1] * learner.vector
                    val_losses.append(val_loss.loss(val_scores))
                    if val_losses[-1] < best_val * (1 - self.tol):
                        best, best_val, since_best = it + 1, val_losses[-1], 0
                    else:
                        since_best += 1
                    val_rows = row_costs(loss_cost, codes_val, cost_val)
                    val_cost = _mean_cost(val_rows, w_val, np.argmax(val_scores, axis=1))
                self._report(it, train_loss, val_losses)
                info = IterationInfo(it + 1, self.n_estimators, train_loss[-1],
                                     val_losses[-1] if val_losses else None, val_cost)
                if run_callbacks(callbacks, info):
                    if val_loss is None:
                        best = it + 1
                    break
                if val_loss is not None and since_best >= self.n_iter_no_change:
                    break
                if target is not None and train_loss[-1] < target:
                    break

        keep = best if val_loss is not None else len(learners)
        self.learners_ = family.stack(learners[:keep])
        self.vectors_ = np.asarray(vectors[:keep]).reshape(keep, n_classes)
        self.n_estimators_ = keep
        self.train_loss_ = np.asarray(train_loss[:keep])
        self.validation_loss_ = np.asarray(val_losses) if val_loss is not None else None
        self.best_iteration_ = best if val_loss is not None else None
        total = importances.sum()
        self.feature_importances_ = importances / total if total > 0 else importances
        self.histogram_updates_ = np.asarray(updates, dtype=np.int64)
        return self

    @property
    def trees_(self) -> TreeArrays:
        """The weak learners of a tree or stump model, stacked."""
        check_is_fitted(self)
        if not isinstance(self.learners_, TreeArrays):
            raise AttributeError("a similarity model has no trees_; see learners_")
        return self.learners_

    def _validation_split(self, X, codes, sample_weight, sample_cost, rng):
        counts = np.bincount(codes)
        n_val = int(np.ceil(self.validation_fraction * len(codes)))
        stratify = codes if counts.min() >= 2 and n_val >= len(counts) else None
        arrays = [X, codes, sample_weight] + ([sample_cost] if sample_cost is not None else [])
        parts = train_test_split(*arrays, test_size=self.validation_fraction,
                                 stratify=stratify, random_state=rng)
        X, X_val, codes, codes_val, w, w_val = parts[:6]
        cost, cost_val = parts[6:] if sample_cost is not None else (None, None)
        if len(np.unique(codes)) < 2:
            raise ValueError("the validation split left fewer than 2 classes for training")
        if w_val.sum() <= 0:
            raise ValueError("the validation split has zero total sample weight")
        return X, X_val, codes, codes_val, w, w_val, cost, cost_val

    def _report(self, it, train_loss, val_losses) -> None:
        if not self.verbose or (it + 1) % int(self.verbose):
            return
        line = f"[{it + 1:5d}] train loss {train_loss[-1]:.6g}"
        if val_losses:
            line += f"  validation loss {val_losses[-1]:.6g}"
        print(line, file=sys.stderr)

    # --------------------------------------------------------------- prediction

    def _check_X(self, X) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(
            self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False
        )

    def _features(self, X: np.ndarray) -> np.ndarray:
        """The inputs the weak learners read: scaled for similarities, raw for trees."""
        if getattr(self, "scaling_", None) is None:
            return X
        if np.isnan(X).any():
            raise ValueError("X contains NaN; similarity models need complete rows (impute first)")
        offset, scale = self.scaling_
        return (X - offset) / scale

    def _raw_scores(self, X) -> np.ndarray:
        """``H(x)``, shape (n_samples, n_classes)."""
        scores = None
        for outputs, vectors in self._output_blocks(X):
            part = outputs @ vectors
            scores = part if scores is None else scores + part
        return scores

    def _staged_raw_scores(self, X) -> Iterator[np.ndarray]:
        scores = None
        for outputs, vectors in self._output_blocks(X):
            if scores is None:
                scores = np.zeros((outputs.shape[0], len(self.classes_)))
            for t in range(outputs.shape[1]):
                scores += outputs[:, t : t + 1] * vectors[t]
                yield scores.copy()

    def _output_blocks(self, X) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(f_t(X) for a block of learners, their vectors)``, in order.

        Blocks keep the (n_samples x learners) output matrix near 2**22 entries, so a model
        of 20,000 similarities scores MNIST's test set in ~100 MB instead of gigabytes.
        """
        X = self._features(self._check_X(X))
        size = max(1, _OUTPUT_BLOCK_ENTRIES // max(X.shape[0], 1))
        for start in range(0, max(self.n_estimators_, 1), size):
            stop = min(start + size, self.n_estimators_)
            block = self.learners_.take(slice(start, stop))
            yield block.outputs(X), self.vectors_[start:stop]

    def _decision(self, scores: np.ndarray) -> np.ndarray:
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def decision_function(self, X) -> np.ndarray:
        """Scores ``H(x)`` (n_samples, n_classes); for two classes ``H_1 - H_0``."""
        return self._decision(self._raw_scores(X))

    def staged_decision_function(self, X) -> Iterator[np.ndarray]:
        for scores in self._staged_raw_scores(X):
            yield self._decision(scores)

    def predict(self, X) -> np.ndarray:
        """``argmax_k H_k(x)``, or on the posterior route the least expected cost class."""
        codes = decision_codes(self, self._raw_scores(X))  # checks that the model is fitted
        return self.classes_[codes]

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        for scores in self._staged_raw_scores(X):
            yield self.classes_[decision_codes(self, scores)]

    def predict_proba(self, X) -> np.ndarray:
        """``sigmoid(2 H / temperature_)`` renormalised over classes.

        For a model trained cost-neutrally (0-1 costs, or the posterior route) this estimates
        the posterior; for one trained on the cost-sensitive loss it is a score, not a
        posterior (its argmax need not be ``predict``).
        """
        return proba_from_scores(self._raw_scores(X), self._temperature())

    def staged_predict_proba(self, X) -> Iterator[np.ndarray]:
        for scores in self._staged_raw_scores(X):
            yield proba_from_scores(scores, self._temperature())

    def _temperature(self) -> float:
        return getattr(self, "temperature_", 1.0)  # model files from before issue 15 have none

    def expected_cost(self, X) -> np.ndarray:
        """``predict_proba(X) @ cost_matrix_``: each class's expected cost under the model's
        posteriors.

        An estimate of the risk only when ``predict_proba`` estimates posteriors (0-1 costs
        or ``cost_strategy_ == 'posterior'``, where ``predict`` is its argmin); for a model
        trained on the cost-sensitive loss it is a heuristic score.
        """
        return self.predict_proba(X) @ self.cost_matrix_

    def cost_score(self, X, y) -> float:
        """Mean cost of the predictions on (X, y) under ``cost_matrix_`` (lower is better)."""
        from ..metrics import mean_cost

        return mean_cost(y, self.predict(X), self.cost_matrix_, self.classes_)

    # --------------------------------------------------------------- model files

    def save(self, path) -> None:
        """Write the fitted model to a JSON model file (see :mod:`rebelboost.io`)."""
        from ..io import save_model

        save_model(self, path)

    @classmethod
    def load(cls, path) -> RebelClassifier:
        """Read a model file written by :meth:`save`."""
        from ..io import load_model

        model = load_model(path)
        if not isinstance(model, cls):
            raise ValueError(f"{path} holds a {type(model).__name__}, not a {cls.__name__}")
        return model

    def explain(self, x, top: int = 10, feature_names=None):
        """The largest contributions of single learners to the prediction for one row."""
        from ..explain import explain_prediction

        return explain_prediction(self, x, top=top, feature_names=feature_names)


def _mean_cost(rows, sample_weight, predicted_codes) -> float:
    """Weighted mean of each sample's cost row at its predicted class code."""
    costs = rows[np.arange(len(predicted_codes)), predicted_codes]
    return float(np.average(costs, weights=sample_weight))


class _TreeFamily:
    """Trees or stumps on binned features; each iteration also tries the constant learner."""

    blas_threads = 1  # the histogram kernels do the parallel work

    def __init__(self, model: RebelClassifier, X, sample_weight, rng):
        self.depth = 1 if model.weak_learner == "stump" else int(model.max_depth)
        self.quickboost = bool(model.quickboost)
        self.binner = Binner(model.max_bins, random_state=rng.randint(2**31))
        # Thresholds come from the samples that count, so a zero weight equals removal.
        self.bins = self.binner.fit(X[sample_weight > 0]).transform(X)
        self.columns = bin_columns(self.bins)
        # QuickBoost's prefixes read rows: a row-wise copy of the sparse entries speeds them up.
        self.sparse = sparse_bins(self.bins) if self.quickboost else None
        self.pool = HistogramPool()
        model.scaling_ = None

    def features(self, X):
        return X

    def fit(self, channels) -> tuple[FittedLearner, int]:
        """The tree or the constant learner, whichever leaves the lower loss; and the work."""
        bias = constant_learner(channels.sum(axis=0), channels.shape[0], self.depth)
        tree = grow_rebel_tree(self.bins, channels, self.binner, self.depth,
                               quickboost=self.quickboost, columns=self.columns,
                               sparse=self.sparse, pool=self.pool)
        work = tree.histogram_updates if tree is not None else 0
        return (bias if tree is None or is_better(bias.loss, tree.loss) else tree), work

    def stack(self, learners) -> TreeArrays:
        return TreeArrays.stack(learners, self.depth)


_OUTPUT_BLOCK_ENTRIES = 2**22  # weak-learner outputs held at once when scoring
_FLOAT32_ENTRIES = 10_000_000  # training matrices this large are searched in float32


class _SimilarityFamily:
    """Localized similarities on scaled features (the constant learner is in their search)."""

    blas_threads = None  # the search's matrix products are BLAS's parallel work

    def __init__(self, model: RebelClassifier, X, codes, sample_weight):
        if np.isnan(X).any():
            raise ValueError(
                "X contains NaN; localized similarities need complete rows (impute first, or "
                "use weak_learner='tree', which learns where missing values go)"
            )
        if model.scaling == "standard":
            offset, scale = X.mean(axis=0), X.std(axis=0)
        elif model.scaling == "minmax":
            offset, scale = X.min(axis=0), X.max(axis=0) - X.min(axis=0)
        else:
            offset, scale = np.zeros(X.shape[1]), np.ones(X.shape[1])
        scale = np.where(scale > 0, scale, 1.0)
        model.scaling_ = self.scaling = (offset, scale)
        # Large data is searched in float32: the matrix products that dominate the search then
        # move half the bytes (MNIST: ~2x faster). Coincidence and norms are taken on the very
        # array the search reads, so rows that float32 merges are treated as coincident.
        dtype = np.float32 if X.size >= _FLOAT32_ENTRIES else np.float64
        self.X = np.ascontiguousarray((X - offset) / scale, dtype=dtype)
        self.sq_norms = np.einsum("ij,ij->i", self.X, self.X, dtype=np.float64)
        self.one_point_only = model.similarity_mode == "one-point"
        self.follow_up = None  # see fit
        self.codes, changed = resolve_coincident(self.X, codes, model.cost_matrix_, sample_weight)
        model.n_relabeled_ = changed
        if changed:
            warnings.warn(
                f"{changed} training rows coincide with rows of another class; they were "
                "relabelled to their group's least-cost class so that the training error can "
                "reach zero (n_relabeled_)", UserWarning, stacklevel=3,
            )

    def features(self, X):
        offset, scale = self.scaling
        return (X - offset) / scale

    def fit(self, channels):
        """This iteration's learner. After a constant step, the learner its search ranked best
        for the weights that step leaves is taken without a new search (fit_follow_up)."""
        fit = fit_follow_up(self.follow_up, channels) if self.follow_up is not None else None
        if fit is None:
            fit = fit_similarity(self.X, self.sq_norms, channels,
                                 one_point_only=self.one_point_only)
        self.follow_up = fit.follow_up
        arrays = fit.arrays
        for index, label in ((arrays.first_index, arrays.first_class),
                             (arrays.second_index, arrays.second_class)):
            label[:] = np.where(index >= 0, self.codes[np.maximum(index, 0)], -1)
        return fit, 0

    def stack(self, learners) -> SimilarityArrays:
        return SimilarityArrays.stack(learners, self.X.shape[1])
