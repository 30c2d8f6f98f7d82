"""What every rebelboost classifier shares: parameters of the boosting loop, ``fit`` around
:func:`~rebelboost.engine.boost`, the one prediction path (:class:`~rebelboost.engine.
AdditiveModel`, with iteration ranges), explanations and model files.

A subclass names its booster (``_make_booster``), the per-iteration values it keeps as fitted
attributes (``_records``), the fitted arrays its model file stores (``_fitted_fields``), and
its class-probability link if it has one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from functools import cache

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted

from ..callbacks import EarlyStopping
from ..engine import AdditiveModel, BoostResult, boost
from ..engine.boosting import Validation
from ..io import corrupt, float_array, header, read_document, read_header, write_document
from ..learners.leaf_tree import LeafTreeArrays
from ..learners.tree import SERIAL_ROWS, TreeArrays
from ..parallel import numba_threads
from ..tree_tables import leaf_covers
from ..validation import check_eval_set, check_fit_input, check_predict_input, refuse_time_columns
from ._loop_params import AUTO_EARLY_STOPPING_ROWS


@cache
def _param_names(cls) -> tuple[str, ...]:
    """scikit-learn's ``_get_param_names`` of ``cls``, once per class."""
    return tuple(BaseEstimator._get_param_names.__func__(cls))


class BoostedClassifier(ClassifierMixin, BaseEstimator):
    """Base class. Fitted: ``classes_``, ``model_`` (the additive model), ``n_estimators_``,
    ``*_loss_`` (init, train, validation), ``best_iteration_``, ``feature_importances_``."""

    _fitted_fields: tuple[str, ...] = ()  # float arrays (or None) a subclass's file stores
    _renamed_params: dict[str, str] = {}  # old parameter name -> new, for old model files
    # a parameter added since a model file was written -> the value such files were fitted
    # with (their model's refit, ``clone(loaded).fit``, is the model they hold)
    _params_before: dict = {}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    @classmethod
    def _get_param_names(cls) -> list[str]:
        # (scikit-learn reads the constructor's signature on every get_params, set_params
        # and clone: ~35 times in a cost-route fit, 3% of a small set's time; read it once)
        return list(_param_names(cls))

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y, sample_weight=None, callbacks=None, *, eval_set=None,
            eval_sample_weight=None, **fit_params):
        """Boost up to ``n_estimators`` iterations on (X, y).

        ``callbacks`` is a list of callables, each called with an
        :class:`~rebelboost.callbacks.IterationInfo` after every iteration; one returning
        ``True`` stops training there. ``eval_set``, an ``(X, y)`` pair (or a list of one, as
        LightGBM's and XGBoost's ``fit`` take it) with ``eval_sample_weight``, is scored after
        every iteration (``validation_loss_``) instead of a held-out split of the training
        set; with ``early_stopping`` on (True or 'auto') training stops on it.
        """
        refuse_time_columns(X)  # (before the encoding could turn them into numbers)
        X, codes, sample_weight = check_fit_input(self, self._encode_fit(X), y, sample_weight)
        self._fit_checked(X, codes, sample_weight, callbacks, eval_set, eval_sample_weight,
                          fit_params)
        return self

    def _fit_scorer(self, X, codes, sample_weight, **fit_params) -> np.ndarray:
        """Fit on rows its parent's ``fit`` validated and encoded (``codes``: the parent's
        class indices; this model's classes are those present) for a model that only
        scores: no second validation and no leaf covers. Returns its scores of its
        training rows, which the cost route sizes its scores by. (The cost route fits six
        such fold models per fit; on six small sets the second validation and the covers
        took 6% of its CPU time, on the interpreter's lock, which its threads share.)"""
        self.n_features_in_ = X.shape[1]
        self.classes_, codes = np.unique(codes, return_inverse=True)  # (checked codes)
        return self._fit_checked(self._encode_fit(X), codes.astype(np.intp, copy=False),
                                 sample_weight, None, None, None, fit_params, covers=False)()

    def _fit_checked(self, X, codes, sample_weight, callbacks, eval_set, eval_sample_weight,
                     fit_params: dict, *, covers: bool = True):
        """:meth:`fit` on validated input (``covers``: record each leaf's training weight,
        which explanations read); returns a callable giving the fitted model's scores of its
        training rows (:func:`_training_scores`)."""
        self._resolve_size(X.shape[0])
        rng = _rng(self.random_state)
        cost_rows = self._fit_costs(X, codes, sample_weight, rng,
                                    may_train_twice=not callbacks and not self.verbose,
                                    **fit_params)
        validation = None
        if eval_set is not None:
            validation = self._validation(eval_set, eval_sample_weight)
        elif self._early_stopping_on(X.shape[0]):
            X, X_val, codes, codes_val, sample_weight, w_val, cost_rows, rows_val = (
                _validation_split(X, codes, sample_weight, cost_rows, self.validation_fraction,
                                  rng))
            validation = Validation(X_val, codes_val, w_val, rows_val)
        rebuild = self._booster_factory(X, codes, sample_weight, cost_rows, rng, validation)
        with numba_threads(self.n_jobs, blas_threads=None):  # (binning: n_jobs threads too)
            booster = self._make_booster(X, codes, sample_weight, cost_rows, rng, validation)
        del cost_rows  # (n, K): the booster's loss holds what it needs
        target = self.target_loss
        if target == "auto":
            target = 1.0 / X.shape[0]
        result, booster = self._train(lambda n_jobs, booster: boost(
            booster, self._n_iterations(), X.shape[1], validation=validation,
            early_stopping=self._early_stopping(validation is not None),
            callbacks=callbacks, target_loss=target, verbose=self.verbose, n_jobs=n_jobs,
            estimator=self,
        ), booster, rebuild)
        self._set_result(result)
        training_scores = _training_scores(booster, result, self.model_, X)
        self._after_training(X, training_scores)
        if covers:  # (the booster's, where it summed them as routing the rows would)
            self.model_.covers = (result.covers if result.covers is not None else leaf_covers(
                self.model_.learners, X, sample_weight,
                exact=getattr(booster, "exact_sums", False)))
        self._set_records(result.records, result.n_kept, booster)
        return training_scores

    def _train(self, train, booster, rebuild) -> tuple[BoostResult, object]:
        """``(train(n_jobs, booster), booster)``: the boosting run and the booster it ran. A
        subclass may run other work beside it, and where that work changes the parameters,
        train again on ``rebuild()``, the booster built afresh (:meth:`_booster_factory`)."""
        return train(self.n_jobs, booster), booster

    def _after_training(self, X, training_scores) -> None:
        """What a fit sets from its final model and training rows ``X`` (encoded) once the
        model is trained (nothing here); ``training_scores()``: the model's scores of
        ``X``."""

    def _booster_factory(self, X, codes, sample_weight, cost_rows, rng, validation):
        """None, or a callable that builds the booster as :meth:`_make_booster` is about to
        (the same random state), for a fit that may have to train twice (none here)."""
        return None

    def _validation(self, eval_set, eval_sample_weight) -> Validation:
        """An ``eval_set`` (validated, encoded as the training set) to score every iteration."""
        X_val, codes_val, w_val = check_eval_set(self, eval_set, eval_sample_weight,
                                                 self._encode)
        return Validation(X_val, codes_val, w_val, self._trained_costs(codes_val))

    def _early_stopping(self, validated: bool) -> EarlyStopping | None:
        """The early-stopping callback when there is a validation set and stopping is on."""
        if not (validated and self.early_stopping):
            return None
        return EarlyStopping(self.n_iter_no_change, self.tol, metric=self.validation_metric)

    def _resolve_size(self, n_rows: int) -> None:
        """Parameters whose default depends on the training set's size (none here)."""

    def _n_iterations(self) -> int:
        return self.n_estimators

    def _early_stopping_on(self, n_samples: int) -> bool:
        if self.early_stopping == "auto":
            return n_samples > AUTO_EARLY_STOPPING_ROWS
        return bool(self.early_stopping)

    def _set_result(self, result: BoostResult) -> None:
        self.model_ = result.model
        self.n_estimators_ = result.model.n_stages
        self.init_loss_ = result.init_loss
        self.train_loss_ = result.train_loss
        self.validation_loss_ = result.validation_loss
        self.best_iteration_ = result.best_iteration
        self.feature_importances_ = result.feature_importances

    def _fit_costs(self, X, codes, sample_weight, rng, may_train_twice=False) -> np.ndarray:
        """Each training row's costs of each class, (n_samples, K): what the booster trains
        on and validation decisions are scored with (0-1 unless a booster has costs).
        ``may_train_twice``: no callback or printout would see a discarded boosting run."""
        return self._cost_matrix()[codes]

    def _cost_matrix(self) -> np.ndarray:
        """The fitted model's cost matrix (the 0-1 cost unless a booster has one)."""
        return 1.0 - np.eye(len(self.classes_))

    def _trained_costs(self, codes) -> np.ndarray:
        """The costs the booster trains on for rows of these classes, (n, K): how an
        ``eval_set``'s predictions are scored."""
        return self._cost_matrix()[codes]

    def _make_booster(self, X, codes, sample_weight, cost_rows, rng, validation):
        raise NotImplementedError

    def _set_records(self, records: list[dict], n_kept: int, booster) -> None:
        """Set fitted attributes from the per-iteration records (kept ones: ``[:n_kept]``)."""

    # --------------------------------------------------------------- prediction

    def _encode_fit(self, X):
        """X as the learners read it (estimators with categorical columns encode them)."""
        return X

    def _encode(self, X):
        """X to predict on, encoded as :meth:`_encode_fit` encoded the training X."""
        return X

    def _check_X(self, X) -> np.ndarray:
        """X as a float64 array of the fitted width (NaN allowed, inf refused).

        A float64 ndarray of the right width, fitted without feature names and free of inf,
        passes as it is: sklearn's ``validate_data`` would only confirm that, and it costs
        several times the scoring of one row (single-row latency: BENCHMARKS.md, issue 19).
        Anything else (lists, DataFrames, other dtypes, bad shapes, inf) goes through
        ``validate_data``.
        """
        check_is_fitted(self)
        refuse_time_columns(X)
        X = self._encode(X)
        if (type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2 and X.shape[0]
                and X.shape[1] == self.n_features_in_ and not hasattr(self, "feature_names_in_")
                and not np.isinf(X).any()):
            return X
        return check_predict_input(self, X)

    def _threads(self, X: np.ndarray):
        """Thread settings for scoring X; none where a tree model scores it on the calling
        thread (fewer than ``SERIAL_ROWS`` rows): setting them (cgroup files read, BLAS limits
        set) takes longer than scoring one row."""
        if X.shape[0] < SERIAL_ROWS and isinstance(self.model_.learners,
                                                   (TreeArrays, LeafTreeArrays)):
            return nullcontext()
        return numba_threads(self.n_jobs, blas_threads=None)

    def _scores(self, X, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Class scores ``H(x)`` of iterations ``[start, stop)``, shape (n_samples, K)."""
        X = self._check_X(X)
        with self._threads(X):
            return self.model_.scores(X, start, stop)

    def _staged_scores(self, X, start: int = 0, stop: int | None = None) -> Iterator[np.ndarray]:
        X = self._check_X(X)
        stages = self.model_.staged_scores(X, start, stop)
        while True:  # the thread setting holds while a stage is computed, not across yields
            with numba_threads(self.n_jobs, blas_threads=None):
                scores = next(stages, None)
            if scores is None:
                return
            yield scores

    @staticmethod
    def _decision(scores: np.ndarray) -> np.ndarray:
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def decision_function(self, X, *, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Class scores (n_samples, n_classes); for two classes ``H_1 - H_0``.

        ``start``/``stop`` restrict the sum to boosting iterations ``[start, stop)``.
        """
        return self._decision(self._scores(X, start, stop))

    def staged_decision_function(self, X, *, start: int = 0,
                                 stop: int | None = None) -> Iterator[np.ndarray]:
        for scores in self._staged_scores(X, start, stop):
            yield self._decision(scores)

    def predict(self, X, *, start: int = 0, stop: int | None = None,
                early_exit=None) -> np.ndarray:
        """``classes_[argmax_k H_k(x)]`` over iterations ``[start, stop)``.

        ``early_exit='exact'`` stops adding a row's learners once its leading class cannot be
        overtaken by what the remaining ones can add (with a rounding margin): the same labels,
        bit for bit, from fewer learners (tree models deciding by argmax; others evaluate in
        full). A soft cascade from :meth:`calibrate_cascade` stops rows sooner, approximately.
        """
        if early_exit is None or not self._decides_by_argmax():
            if early_exit not in (None, "exact"):
                raise ValueError("soft cascades need a model that decides by the largest score")
            scores = self._scores(X, start, stop)
            return self._decision_labels()[self._decide(scores)]
        X = self._check_X(X)
        with self._threads(X):
            codes, _ = self.model_.predict_codes(X, start, stop, early_exit)
        return self.classes_[codes]

    def calibrate_cascade(self, X, keep: float = 0.995, *, start: int = 0,
                          stop: int | None = None, check_every: int = 10):
        """A soft cascade (thesis ch. 2) for ``predict(..., early_exit=cascade)``: thresholds
        on the lead over the runner-up every ``check_every`` learners, set on held-out rows
        ``X`` so that at least ``keep`` of the full model's decisions there stay the same (tree
        models; on new rows the kept fraction is measured, not promised)."""
        X = self._check_X(X)
        with numba_threads(self.n_jobs, blas_threads=None):
            return self.model_.calibrate_cascade(X, keep, start, stop, check_every)

    def staged_predict(self, X, *, start: int = 0, stop: int | None = None) -> Iterator:
        for scores in self._staged_scores(X, start, stop):
            yield self._decision_labels()[self._decide(scores)]

    def _decide(self, scores: np.ndarray) -> np.ndarray:
        """Decision codes from class scores (the class of largest score)."""
        return np.argmax(scores, axis=1)

    @property
    def decision_labels_(self) -> np.ndarray:
        """What ``predict`` returns: the classes, or a cost matrix's named decisions."""
        check_is_fitted(self)
        return self._decision_labels()

    @property
    def decides_by_argmax_(self) -> bool:
        """Whether ``predict`` takes the class of the largest score (not a cost rule)."""
        check_is_fitted(self)
        return self._decides_by_argmax()

    def _decision_labels(self) -> np.ndarray:
        """What :meth:`_decide`'s codes index: the classes (or a model's named decisions)."""
        return self.classes_

    def _decides_by_argmax(self) -> bool:
        """Whether :meth:`_decide` is ``argmax`` (what early exits assume)."""
        return True

    @property
    def trees_(self) -> TreeArrays | LeafTreeArrays:
        """The weak learners of a tree or stump model, stacked."""
        check_is_fitted(self)
        if not isinstance(self.model_.learners, (TreeArrays, LeafTreeArrays)):
            raise AttributeError("a similarity model has no trees_; see learners_")
        return self.model_.learners

    @property
    def learners_(self):
        """The weak learners, stacked (trees or similarities)."""
        check_is_fitted(self)
        return self.model_.learners

    @property
    def leaf_scores_(self) -> np.ndarray:
        """(n_learners, n_slots, n_classes): the class scores each learner's slots add."""
        check_is_fitted(self)
        return self.model_.values

    @property
    def stage_ends_(self) -> np.ndarray:
        """Number of learners in the first s + 1 iterations."""
        check_is_fitted(self)
        return self.model_.stage_ends

    def feature_names(self) -> list[str]:
        """The feature names the model reads (``x0, x1, ...`` when fitted without names)."""
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            return [str(n) for n in names]
        return [f"x{j}" for j in range(self.n_features_in_)]

    def explain(self, x, top: int = 10, feature_names=None):
        """The largest contributions of single learners to the prediction for one row."""
        from ..explain import explain_prediction

        return explain_prediction(self, x, top=top, feature_names=feature_names)

    def encode(self, X) -> np.ndarray:
        """X as the learners read it (and a graph from :meth:`to_onnx` takes it): float64;
        for a model with categorical columns each value as its code, the index of the value
        in ``categories_``, and NaN for a missing or unseen value."""
        check_is_fitted(self)
        encoded = self._encode(X)
        if hasattr(encoded, "to_numpy"):
            encoded = encoded.to_numpy(dtype=np.float64)
        encoded = np.asarray(encoded, dtype=np.float64)
        if encoded.ndim != 2 or encoded.shape[1] != self.n_features_in_:
            raise ValueError(f"X has shape {encoded.shape}; the model was fitted on "
                             f"{self.n_features_in_} features")
        return encoded

    def encode_row(self, x) -> np.ndarray:
        """One row (a sequence in column order, or a pandas Series) as the learners read
        it: float64, categorical values as their codes (see ``categories_``)."""
        if hasattr(x, "to_numpy"):
            x = x.to_numpy()
        return np.asarray(x, dtype=np.float64).reshape(-1)

    def contributions(self, X) -> np.ndarray:
        """Exact per-feature contributions (path-dependent TreeSHAP), shape (n_samples,
        n_features + 1, n_classes), the bias last: each row sums to its class scores ``H(x)``
        (for two classes, column 1 minus column 0 sums to ``decision_function``). Tree and
        stump models only (:mod:`rebelboost.contributions`)."""
        from ..contributions import contributions

        X = self._check_X(X)
        with numba_threads(self.n_jobs, blas_threads=None):
            return contributions(self.model_, X)

    def to_onnx(self, path=None):
        """The model as an ONNX graph (``onnx.ModelProto``; written to ``path`` when given):
        tree ensemble, scores, probabilities and the decision (:mod:`rebelboost.onnx_export`;
        needs the ``onnx`` extra)."""
        from ..onnx_export import to_onnx

        return to_onnx(self, path)

    def cost_score(self, X, y) -> float:
        """Mean cost of the predictions on (X, y) under the model's cost matrix."""
        from ..metrics import mean_cost

        labels = self._decision_labels()
        return mean_cost(y, self.predict(X), self._cost_matrix(), self.classes_,
                         decisions=None if labels is self.classes_ else labels)

    # --------------------------------------------------------------- model files

    def to_dict(self) -> dict:
        """The JSON-ready model file (see :mod:`rebelboost.io`)."""
        check_is_fitted(self)
        fitted = {
            "init_loss": float(self.init_loss_),
            "train_loss": self.train_loss_.tolist(),
            "validation_loss": None if self.validation_loss_ is None
            else self.validation_loss_.tolist(),
            "best_iteration": self.best_iteration_,
            "feature_importances": self.feature_importances_.tolist(),
        }
        for name in self._fitted_fields:
            value = getattr(self, name + "_")
            fitted[name] = None if value is None else np.asarray(value).tolist()
        return {**header(self), "model": self.model_.to_dict(), "fitted": fitted}

    @classmethod
    def from_dict(cls, doc: dict):
        """Rebuild and check a fitted estimator from a current-format document."""
        if doc.get("estimator") != cls.__name__:
            raise ValueError(f"model file holds a {doc.get('estimator')!r}, not a {cls.__name__}")
        head = read_header(doc)
        params = {cls._renamed_params.get(k, k): v for k, v in head["params"].items()}
        params = {**cls._params_before, **params}
        known = cls._get_param_names()
        model = cls(**{k: v for k, v in params.items() if k in known})
        try:
            model._validate_params()
        except ValueError as exc:
            raise corrupt(f"parameters: {exc}") from None
        model.classes_ = head["classes"]
        model.n_features_in_ = head["n_features_in"]
        if head["feature_names_in"] is not None:
            model.feature_names_in_ = head["feature_names_in"]
        k, d = len(model.classes_), model.n_features_in_
        model.model_ = AdditiveModel.from_dict(doc["model"], d, k)
        fitted = doc["fitted"]
        try:
            model._read_fitted(fitted, k, d)
        except KeyError as exc:
            raise corrupt(f"fitted values lack {exc}") from None
        except (TypeError, OverflowError) as exc:
            raise corrupt(f"fitted values: {type(exc).__name__}: {exc}") from None
        return model

    def _read_fitted(self, fitted: dict, k: int, d: int) -> None:
        """Set and check the fitted attributes from a model file's ``fitted`` section."""
        n = self.model_.n_stages
        self.n_estimators_ = n
        init = fitted.get("init_loss")
        self.init_loss_ = None if init is None else float(float_array(init, (), "init_loss"))
        self.train_loss_ = float_array(fitted["train_loss"], (n,), "train_loss")
        val = fitted.get("validation_loss")
        self.validation_loss_ = None if val is None else float_array(
            val, (len(val),) if isinstance(val, list) else None, "validation_loss")
        best = fitted.get("best_iteration")
        if best is not None and (type(best) is not int or best != n):
            raise corrupt(f"best_iteration {best!r} differs from the {n} iterations kept")
        self.best_iteration_ = best
        self.feature_importances_ = float_array(fitted["feature_importances"], (d,),
                                                "feature_importances")
        if not np.isfinite(self.feature_importances_).all():
            raise corrupt("non-finite feature importances")

    def save(self, path) -> None:
        """Write the fitted model as JSON (gzip-compressed when the name ends in ``.gz``)."""
        write_document(self.to_dict(), path)

    @classmethod
    def load(cls, path):
        """Read a model file written by :meth:`save`."""
        doc = read_document(path)
        if doc.get("estimator") != cls.__name__:
            raise ValueError(f"{path} holds a {doc.get('estimator')}, not a {cls.__name__}")
        return cls.from_dict(doc)


def _training_scores(booster, result: BoostResult, model: AdditiveModel, X):
    """A callable giving ``model``'s class scores of its training rows ``X``: the booster's
    own scores where it ran exactly the stages the model keeps and its learners route the
    training rows as prediction does (the same leaf values added in the same order: equal bit
    for bit, and no pass over the trees), else the model's."""
    scores = getattr(booster, "scores", None)
    family = getattr(booster, "family", None)
    if (result.n_kept == len(result.records) and isinstance(scores, np.ndarray)
            and scores.shape[0] == X.shape[0]
            and getattr(family, "scores_as_predicted", False)):
        return lambda: scores
    return lambda: model.scores(X)


def _rng(random_state) -> np.random.RandomState:
    if isinstance(random_state, np.random.RandomState):
        return np.random.RandomState(random_state.randint(2**31))
    return np.random.RandomState(random_state)


def validation_rows(codes: np.ndarray, fraction: float, rng: np.random.RandomState
                    ) -> np.ndarray:
    """The rows an early-stopping fit holds out (``fraction``, stratified by class where
    every class has two rows), as a mask over the rows. The training and the held-out rows
    both keep their order: a distributed fit holds out the same rows of its partitions
    and trains on what it keeps, as a local fit does (``DaskRebelClassifier``)."""
    counts = np.bincount(codes)
    n_val = int(np.ceil(fraction * len(codes)))
    stratify = codes if counts.min() >= 2 and n_val >= len(counts) else None
    _, held = train_test_split(np.arange(len(codes)), test_size=fraction, stratify=stratify,
                               random_state=rng)
    mask = np.zeros(len(codes), bool)
    mask[held] = True
    if len(np.unique(codes[~mask])) < 2:
        raise ValueError("the validation split left fewer than 2 classes for training")
    return mask


def check_held_weight(held_weight: np.ndarray) -> None:
    """The held-out rows must weigh something: their error is a weighted mean."""
    if held_weight.sum() <= 0:
        raise ValueError("the validation split has zero total sample weight")


def _validation_split(X, codes, sample_weight, cost_rows, fraction, rng):
    held = validation_rows(codes, fraction, rng)
    check_held_weight(sample_weight[held])
    kept = ~held
    return (X[kept], X[held], codes[kept], codes[held], sample_weight[kept],
            sample_weight[held], cost_rows[kept], cost_rows[held])
