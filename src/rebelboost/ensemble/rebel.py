"""``RebelClassifier``: multi-class cost-sensitive boosting with binary weak learners.

The model is ``H(x) = sum_t f_t(x) a_t`` with ``f_t`` a decision tree (or stump) emitting
+-1, or a localized similarity, and ``a_t`` a free K-vector; the prediction is
``argmax_k H_k(x)``, or with costs the decision its route (``cost_route_``) picks: the least
expected cost under cross-fitted calibrated posteriors, unless out-of-fold costs say argmax
is cheaper (:mod:`rebelboost.ensemble._cost_route`). The booster here is REBEL's
loss driving one of the weak learners of :mod:`rebelboost.learners.rebel_learners`; the loop,
prediction and files are shared (:mod:`rebelboost.ensemble._base`).
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, Options, StrOptions

from ..costs import COST_STRATEGIES, decision_codes, proba_from_scores, route_of
from ..io import corrupt, float_array
from ..learners.leaf_tree import LeafTreeArrays
from ..learners.rebel_learners import REBEL_LEARNERS, LearnerOptions
from ..learners.vector_tree import SAMPLINGS, VectorTreeOptions
from ..losses.rebel import SUBCOSTS
from ._base import BoostedClassifier
from ._categorical_input import CategoricalInput
from ._cost_fitting import CostFitting
from ._cost_state import read_cost_state, write_cost_state
from ._loop_params import LOOP_CONSTRAINTS, document_loop
from ._rebel_booster import RebelBooster
from ._size_defaults import category_minimum, resolve_size_params


@document_loop(own=("learning_rate",))
class RebelClassifier(CostFitting, CategoricalInput, BoostedClassifier):
    """REBEL boosting (Appel, Burgos-Artizzu and Perona, 2016) with stumps or trees.

    Parameters
    ----------
    n_estimators : int or None, default=None
        Number of boosting iterations (weak learners, the constant learner included). None:
        100, or 500 for 'vector_tree' on at most 1,000 training rows (small data, below).
    weak_learner : {'vector_tree', 'tree', 'stump', 'similarity'}, default='vector_tree'
        'tree' grows the paper's binary trees (``f(x) = +-1`` times one step vector) of depth
        ``max_depth`` layer by layer; 'stump' is depth 1; 'vector_tree' grows trees leaf by
        leaf (LightGBM's order) up to ``max_leaves`` leaves, each leaf with its own
        closed-form K-vector, so one tree does the work of LightGBM's K trees per round
        (:mod:`rebelboost.learners.vector_tree`); 'similarity' uses localized similarities
        (Appel & Perona 2017), which compare a query with one or two training points and
        drive the training error to zero on any data set.
    learning_rate : float or None, default=None
        Shrinkage: every step is multiplied by it (LightGBM's ``learning_rate``). None: 0.3
        for 'vector_tree' (1 on at most 1,000 rows), 1 for the paper's learners (their
        closed-form steps); BENCHMARKS.md (issue 16) compares 0.5 with the default.
    max_depth : int or None, default=None
        Depth limit of the trees; -1: no limit (LightGBM's convention; 'vector_tree' only).
        None means 2 for 'tree', and for 'vector_tree' 2 on at most 1,000 training rows,
        else no limit (ignored for stumps and similarities).
    max_leaves : int or None, default=None
        'vector_tree' only: leaves per tree (LightGBM's ``num_leaves``). None: 31, or 63
        above 10,000 training rows (large data, :mod:`._size_defaults`).
    min_samples_leaf : int or None, default=None
        'vector_tree' only: the least sample weight (the number of rows when unweighted) of
        the sampled training rows a leaf may hold (LightGBM's ``min_child_samples``); a
        weight of 2 counts as a repeated row. None: 10 (not LightGBM's 20: better on the
        suite's small sets, BENCHMARKS.md, issue 28), or 1 on at most 1,000 rows.

        **Small data** (at most 1,000 training rows, :mod:`._size_defaults`): the parameters
        left at None give the paper's shape with vector leaves, 500 depth-2 trees at rate 1,
        leaves of any size: on the suite's 17 sets of that size (5 seeds) it erred less than
        the larger trees on 11, more on 4. ``resolved_params_``: what a fit used.
    leaf_smoothing : float, default=1.0
        'vector_tree' only: pseudo-rows of the average weight added to both sides of each
        leaf's class sums before its step is solved; shrinks the steps of small leaves
        towards 0 (never past the exact step, so the loss still cannot rise).
    subsample : float, default=1.0
        'vector_tree' only: fraction of the training rows each tree is grown on (LightGBM's
        ``bagging_fraction`` with ``bagging_freq=1``); every row still gets the tree's step.
    sampling : {'uniform', 'goss'}, default='uniform'
        How ``subsample < 1`` draws rows: uniformly, or as LightGBM's GOSS by REBEL weight
        (the heaviest two thirds of the budget, plus a uniform third of the rest scaled up to
        keep every sum unbiased).
    colsample_bytree : float, default=1.0
        'vector_tree' only: fraction of the features each tree may split on (LightGBM's
        ``feature_fraction``).
    histogram_bits : int or None, default=None
        'vector_tree' only: None sums float64 weights for split search; 2-16 quantizes each
        tree's weights to that many bits (stochastic rounding from ``random_state``) and sums
        integers (LightGBM's ``use_quantized_grad``); leaf vectors still use exact sums.
    cost_matrix : array-like of shape (n_classes, n_classes) or (n_classes, M), default=None
        ``cost_matrix[i, j]`` is the cost of predicting class ``classes_[j]`` (or taking
        decision ``decisions[j]``) when the truth is ``classes_[i]``: non-negative, finite; a
        zero diagonal for K x K without ``decisions``. None means 0-1 cost (or per-sample
        costs, see ``fit``).
    decisions : list of str or None, default=None
        Names of the M columns of ``cost_matrix`` when the decisions are not the class labels
        (e.g. the labels plus ``'refer'``): ``predict`` then returns these names,
        ``expected_cost`` has M columns; ``predict_proba`` stays over the classes.
    subcosts : {'calibrated', 'paper', 'thesis'}, default='thesis'
        How each sample's cost row enters the loss on the 'loss' route
        (:mod:`rebelboost.losses.rebel`). All three bound the cost and agree for two classes
        and 0-1 costs; for K >= 3 only 'calibrated' and 'paper' have the least-risk class as
        the population minimiser's argmax. Yet 'thesis' had the lower mean test cost on 4 of 7
        sets with 200 depth-3 binary trees and on the REBEL paper's stump protocol; with the
        default vector-leaf trees 'calibrated' had it on 4 of 7 (BENCHMARKS.md). The default
        route, 'posterior', uses neither.
    cost_strategy : {'posterior', 'loss', 'auto'}, default='posterior'
        'posterior' trains cost-neutrally: ``cost_cv`` fold models give every training row an
        out-of-fold score, a calibration map (temperature, or vector/matrix scaling where it
        is better out of fold) is fitted on all of them (each fold model's scores over its
        median margin on its training rows; the final model's map takes its own: models fitted
        on different numbers of rows score on different scales), and the model fitted on all rows
        (beside the fold models) predicts ``argmin_m (predict_proba @ cost_matrix_)_m``
        unless it was not cheaper out of fold than plain argmax by 2 standard errors (the
        guard; ``cost_route_``, ``cost_evidence_``). Where the small-data shape comes from
        the defaults alone (at most 1,000 rows, every sized parameter None), fold models of
        a smooth shape (LightGBM's defaults: 100 trees of 31 leaves at rate 0.1, leaves of
        20 rows) are fitted on the same folds, and where that shape's route costs less out
        of fold by the guard's 2 standard errors, it decides and the final model takes its
        parameters (``cost_evidence_['shape']``, ``resolved_params_``; the fit beside the
        folds, with the defaults' shape, is then discarded and the final model trained
        after them). 'loss'
        trains on the cost-sensitive loss and predicts ``argmax H`` (one fit, K x K only);
        'auto' also cross-fits the loss route and lets the guard choose among all three.
        Ignored under 0-1 costs, where the routes agree.
    cost_cv : int, default=3
        Folds of the cross-fitting ('posterior' and 'auto'): the fit costs ``cost_cv`` fold
        fits on ``(cost_cv - 1) / cost_cv`` of the rows (in parallel threads, sharing
        ``n_jobs``) plus the final fit. 2 folds did as well on the 16 smallest suite sets
        but cost more on 14 of 24 known mixtures of 1000 rows, up to 1.21x (BENCHMARKS.md).
    categorical_features : 'from_dtype', list of names or indices, bool mask or None, \
default='from_dtype'
        Columns split by sets of categories (vector trees only), as scikit-learn's
        ``HistGradientBoostingClassifier``: 'from_dtype' takes pandas ``category``,
        ``object`` and ``string`` columns (and text columns of a numpy array); names,
        indices or a mask are exactly the categorical columns (a text column they leave out
        is an error at fit; the command line always adds text columns). A category is
        known by its value, never by a pandas code: ``categories_`` holds each column's
        sorted training values. A missing value or a category unseen in training goes where
        the split sends missing values. Up to ``max_bins`` categories each get a bin; beyond
        that, categories of alike class mixes share one. Splits send a set of categories
        left: prefixes of the categories' order along the first principal axis of their
        class steps, and of the values' own order.
    max_bins : int or None, default=None
        Value bins per feature for the split search (plus one bin for missing values). None:
        127 for 'vector_tree' on at most 10,000 training rows (there a leaf's split scan is
        most of a fit and scores every bin; on the 13 suite sets it changes, 127 bins erred
        less on 8 and more on 5, in 0.74x the fit CPU time), else 255 (LightGBM's
        ``max_bin``).
    min_data_in_bin : int, default=5
        A numeric feature gets at most one value bin per this many training rows (quantile
        bins of about that many rows; LightGBM's name, whose default is 3), so on a few
        hundred rows splits do not fall between every two rows, and the search scans fewer
        candidates. A feature with no more distinct values keeps a bin per value (LightGBM
        would merge its rare values). Rows are counted, not weights: a row of weight 2 is not
        a repeated row here. 1: a bin per distinct value, up to ``max_bins``. Chosen on the
        suite benchmark (issue 28); only training sets under ``255 * min_data_in_bin`` rows
        are affected.
    similarity_mode : {'two-point', 'one-point'}, default='two-point'
        'one-point' restricts the similarity search to one-point learners (the paper's ablation).
    scaling : {'standard', 'minmax'} or None, default='standard'
        How features are scaled before distances are taken (similarity learners only):
        zero mean and unit variance, or [0, 1] ranges, or raw (best when all features share
        a unit, such as pixels). Training sets of 10 million entries or more are searched in
        float32.
    quickboost : bool, default=False
        Prune features early in each split search (QuickBoost, Appel 2017): the same model bit
        for bit, only the work (``histogram_updates_``) differs. Off by default: on the data
        measured it cost 3-10x the time per iteration (BENCHMARKS.md).
{loop}
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    cost_matrix_ : ndarray of shape (n_classes, n_classes) or (n_classes, M)
        The cost matrix; with ``sample_cost`` the mean cost row of each true class.
    decisions_ : ndarray of str or None
        The decision names (None: the decisions are the classes).
    cost_strategy_ : {'loss', 'posterior'}
        How the model trained: on the costs, or cost-neutrally ('loss' under 0-1 costs).
    cost_route_ : {'min_risk', 'argmax', 'loss'}
        How it decides (see :mod:`rebelboost.costs`).
    calibration_ : CalibrationMap
        Scores to ``predict_proba`` (:mod:`rebelboost.calibration`); ``temperature_`` is its
        temperature.
    route_costs_ : dict
        Out-of-fold mean cost of each route compared (empty without cross-fitting).
    cost_evidence_ : dict
        What the route choice saw: folds, calibration log-losses, route costs and each rule's
        paired difference from argmax with its standard error; ``'shape'`` where a smooth
        shape was weighed (both shapes' out-of-fold route costs and errors, their paired
        difference, which was chosen).
    model_ : AdditiveModel
        The fitted model (learners, their slots' class scores, iteration ends).
    learners_ : TreeArrays, LeafTreeArrays or SimilarityArrays
        The weak learners, stacked (``trees_`` for tree models).
    vectors_ : ndarray of shape (n_estimators_, n_classes) or None
        Each learner's step vector ``a_t`` (None for 'vector_tree': see ``leaf_scores_``).
    resolved_params_ : dict
        ``n_estimators``, ``max_depth`` (-1: none), ``learning_rate``, ``min_samples_leaf``,
        ``max_leaves``, ``max_bins`` in effect: the size-dependent defaults of those left at
        None, or the
        smooth shape a cost route chose (``cost_evidence_['shape']``).
    init_loss_ : float
        Training loss before the first iteration.
    train_loss_ : ndarray of shape (n_estimators_,)
        Training loss after each iteration (``init_loss_`` before the first).
    validation_loss_ : ndarray or None
        Validation (or ``eval_set``) loss after each iteration.
    best_iteration_ : int or None
        Iterations kept by early stopping.
    feature_importances_ : ndarray of shape (n_features_in_,)
        Share of the total training-loss reduction won by splits on each feature.
    histogram_updates_ : ndarray of shape (n_iterations,)
        Row x feature histogram additions of each iteration run (early-stopped ones too).
    n_relabeled_ : int
        Similarity models: coincident training rows relabelled to their least-cost class.
    """

    _parameter_constraints: dict = {
        **LOOP_CONSTRAINTS,
        "weak_learner": [StrOptions(set(REBEL_LEARNERS))],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "similarity_mode": [StrOptions({"two-point", "one-point"})],
        "scaling": [StrOptions({"standard", "minmax"}), None],
        "max_depth": [Interval(numbers.Integral, 1, 16, closed="both"),
                      Options(numbers.Integral, {-1}), None],
        "max_leaves": [Interval(numbers.Integral, 2, 1 << 16, closed="both"), None],
        "max_bins": [Interval(numbers.Integral, 2, 255, closed="both"), None],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "leaf_smoothing": [Interval(numbers.Real, 0, None, closed="left")],
        "subsample": [Interval(numbers.Real, 0, 1, closed="right")],
        "sampling": [StrOptions(set(SAMPLINGS))],
        "colsample_bytree": [Interval(numbers.Real, 0, 1, closed="right")],
        "histogram_bits": [Interval(numbers.Integral, 2, 16, closed="both"), None],
        "min_data_in_bin": [Interval(numbers.Integral, 1, None, closed="left")],
        "cost_matrix": ["array-like", None],
        "subcosts": [StrOptions(set(SUBCOSTS))],
        "cost_strategy": [StrOptions(set(COST_STRATEGIES))],
        "decisions": ["array-like", None],
        "cost_cv": [Interval(numbers.Integral, 2, None, closed="left")],
        "quickboost": ["boolean"],
        "categorical_features": ["array-like", StrOptions({"from_dtype"}), None],
    }
    _fitted_fields = ("cost_matrix", "vectors")
    _params_before = {"min_data_in_bin": 1}  # (files before stop 29: a bin per value)

    def __init__(
        self,
        n_estimators: int | None = None,
        *,
        weak_learner: str = "vector_tree",
        max_depth: int | None = None,
        max_leaves: int | None = None,
        min_samples_leaf: int | None = None,
        leaf_smoothing: float = 1.0,
        subsample: float = 1.0,
        sampling: str = "uniform",
        colsample_bytree: float = 1.0,
        histogram_bits: int | None = None,
        cost_matrix=None,
        subcosts: str = "thesis",
        cost_strategy: str = "posterior",
        decisions=None,
        cost_cv: int = 3,
        max_bins: int | None = None,
        min_data_in_bin: int = 5,
        categorical_features="from_dtype",
        learning_rate: float | None = None,
        similarity_mode: str = "two-point",
        scaling: str | None = "standard",
        target_loss=None,
        quickboost: bool = False,
        early_stopping: bool | str = False,
        validation_metric: str = "cost",
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 50,
        tol: float = 1e-7,
        random_state=None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ):
        self.n_estimators = n_estimators
        self.weak_learner = weak_learner
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.min_samples_leaf = min_samples_leaf
        self.leaf_smoothing = leaf_smoothing
        self.subsample = subsample
        self.sampling = sampling
        self.colsample_bytree = colsample_bytree
        self.histogram_bits = histogram_bits
        self.cost_matrix = cost_matrix
        self.subcosts = subcosts
        self.cost_strategy = cost_strategy
        self.decisions = decisions
        self.cost_cv = cost_cv
        self.max_bins = max_bins
        self.min_data_in_bin = min_data_in_bin
        self.categorical_features = categorical_features
        self.learning_rate = learning_rate
        self.similarity_mode = similarity_mode
        self.scaling = scaling
        self.target_loss = target_loss
        self.quickboost = quickboost
        self.early_stopping = early_stopping
        self.validation_metric = validation_metric
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

    def fit(self, X, y, sample_weight=None, callbacks=None, sample_cost=None, *,
            eval_set=None, eval_sample_weight=None) -> RebelClassifier:
        """Boost up to ``n_estimators`` weak learners on (X, y); ``callbacks``, ``eval_set``
        and ``eval_sample_weight`` as in :meth:`BoostedClassifier.fit`.

        ``sample_cost`` (n_samples, n_classes), instead of ``cost_matrix``, gives each sample
        its own costs: row n is the cost of predicting each class for sample n (zero at its
        true class, non-negative, not all zero), or (n_samples, M) of each named decision.
        The 'loss' route trains on them row by row; the 'posterior' route decides by
        ``cost_matrix_``, their class means, and its guard scores routes by them.
        """
        return super().fit(X, y, sample_weight, callbacks, eval_set=eval_set,
                           eval_sample_weight=eval_sample_weight, sample_cost=sample_cost)

    def _make_booster(self, X, codes, sample_weight, cost_rows, rng, validation):
        vector = self.weak_learner == "vector_tree"
        if not vector and (self.subsample < 1 or self.colsample_bytree < 1):
            raise ValueError("subsample and colsample_bytree < 1 need weak_learner="
                             f"'vector_tree', not {self.weak_learner!r}")
        if vector and self.quickboost:
            raise ValueError("quickboost prunes binary trees' searches; 'vector_tree' has none")
        depth = {"stump": 1, "tree": self.resolved_params_["max_depth"]}.get(self.weak_learner, 2)
        options = LearnerOptions(
            depth=depth, max_bins=self.resolved_params_["max_bins"],
            quickboost=bool(self.quickboost),
            similarity_mode=self.similarity_mode, scaling=self.scaling,
            vector_tree=self._vector_tree_options() if vector else None,
            categorical=self._categorical_mask(), min_data_in_bin=self.min_data_in_bin,
        )
        family = REBEL_LEARNERS[self.weak_learner](X, codes, sample_weight, self.cost_matrix_,
                                                   options, rng)
        moved = family.codes != codes  # rows a family relabelled take their new class's costs
        if moved.any():
            cost_rows = cost_rows.copy()
            cost_rows[moved] = self._trained_costs(family.codes[moved])
        return RebelBooster(family, cost_rows, sample_weight, validation, self._shrinkage(),
                             self.subcosts, exact_sums=vector and self.histogram_bits is not None)

    def _resolve_size(self, n_rows: int) -> None:
        self.resolved_params_ = resolve_size_params(self, n_rows)

    def _n_iterations(self) -> int:
        return self.resolved_params_["n_estimators"]

    def _vector_tree_options(self) -> VectorTreeOptions:
        params, depth = self.resolved_params_, self.resolved_params_["max_depth"]
        return VectorTreeOptions(
            max_leaves=params["max_leaves"], max_depth=None if depth == -1 else depth,
            min_samples_leaf=params["min_samples_leaf"], leaf_smoothing=self.leaf_smoothing,
            subsample=self.subsample, sampling=self.sampling,
            colsample_bytree=self.colsample_bytree, histogram_bits=self.histogram_bits,
            min_data_per_category=category_minimum(params["min_samples_leaf"]))

    def _shrinkage(self) -> float:  # the learning rate in effect
        return self.resolved_params_["learning_rate"]

    def _set_records(self, records, n_kept, booster) -> None:
        k = len(self.classes_)
        self.vectors_ = (None if self.weak_learner == "vector_tree" else
                         np.asarray([r["vector"] for r in records[:n_kept]]).reshape(n_kept, k))
        self.histogram_updates_ = np.asarray([r["work"] for r in records], dtype=np.int64)
        if self.weak_learner == "similarity":
            self.n_relabeled_ = booster.family.state["n_relabeled"]

    # --------------------------------------------------------------- prediction

    def _decide(self, scores: np.ndarray) -> np.ndarray:
        """Decision codes by the model's route (:func:`rebelboost.costs.decision_codes`)."""
        return decision_codes(self, scores)

    def _decision_labels(self) -> np.ndarray:
        decisions = getattr(self, "decisions_", None)
        return self.classes_ if decisions is None else decisions

    def _decides_by_argmax(self) -> bool:
        return route_of(self) != "min_risk" and getattr(self, "decisions_", None) is None

    def _proba_from_scores(self, scores: np.ndarray) -> np.ndarray:
        calibration = getattr(self, "calibration_", None)
        if calibration is None:
            return proba_from_scores(scores, self.temperature_)
        return calibration.proba(scores)

    def predict_proba(self, X, *, start: int = 0, stop: int | None = None) -> np.ndarray:
        """``sigmoid(2 H / temperature_)`` renormalised over classes.

        For a model trained cost-neutrally (0-1 costs, or the posterior route) this estimates
        the posterior; for one trained on the cost-sensitive loss it is a score, not a
        posterior (its argmax need not be ``predict``).
        """
        return self._proba_from_scores(self._scores(X, start, stop))

    def staged_predict_proba(self, X, *, start: int = 0, stop: int | None = None):
        for scores in self._staged_scores(X, start, stop):
            yield self._proba_from_scores(scores)

    def expected_cost(self, X) -> np.ndarray:
        """``predict_proba(X) @ cost_matrix_``, (n_samples, M): each decision's expected cost
        under the model's posteriors.

        An estimate of the risk when ``predict_proba`` estimates posteriors (a cost-neutral
        model; ``predict`` is its argmin on the 'min_risk' route); for a model trained on the
        cost-sensitive loss it is a heuristic score.
        """
        return self.predict_proba(X) @ self.cost_matrix_

    # --------------------------------------------------------------- model files

    def to_dict(self) -> dict:
        doc = super().to_dict()
        fitted = doc["fitted"]
        if hasattr(self, "n_relabeled_"):
            fitted["n_relabeled"] = int(self.n_relabeled_)
        write_cost_state(self, fitted)
        self._write_categorical(fitted)
        return doc

    def _read_fitted(self, fitted: dict, k: int, d: int) -> None:
        super()._read_fitted(fitted, k, d)
        read_cost_state(self, fitted, k)
        self._read_categorical(fitted, d)
        n = len(self.model_.learners)
        vector_leaves = isinstance(self.model_.learners, LeafTreeArrays)
        if vector_leaves != (self.weak_learner == "vector_tree"):
            raise corrupt(f"a {self.weak_learner!r} model holds {self.model_.learners.kind_name}")
        if vector_leaves:  # each leaf its own vector: no step vectors to check against
            if fitted["vectors"] is not None:
                raise corrupt("a vector-leaf model has no step vectors")
            self.vectors_ = None
        else:
            self.vectors_ = float_array(fitted["vectors"], (n, k), "step vectors")
            expected = (self.model_.learners.slot_outputs()[:, :, None]
                        * self.vectors_[:, None, :])
            if not np.array_equal(expected, self.model_.values):
                raise corrupt("learner values differ from the step vectors")
        if self.model_.n_stages != n:
            raise corrupt("a REBEL iteration holds one learner")
        if "n_relabeled" in fitted:
            relabeled = fitted["n_relabeled"]
            if type(relabeled) is not int or relabeled < 0:
                raise corrupt(f"n_relabeled {relabeled!r} is not a count")
            self.n_relabeled_ = relabeled
