"""Categorical columns for an estimator: found and encoded at ``fit``, encoded the same way at
every prediction, and written to model files (:mod:`rebelboost.categorical`)."""

from __future__ import annotations

import numpy as np

from ..categorical import CategoricalColumns
from ..io import corrupt


class CategoricalInput:
    """Mixin of estimators with a ``categorical_features`` parameter. Fitted:
    ``is_categorical_`` (bool per feature) and ``categories_`` (per feature: its sorted
    training values, or None for a numeric feature)."""

    def _encode_fit(self, X):
        """X with its categorical columns as codes; finds them and their values."""
        columns, encoded = CategoricalColumns.fit_transform(X, self.categorical_features)
        self._set_categorical(columns)
        if columns is None:
            return X
        if self.weak_learner != "vector_tree":
            text = any(levels is not None and len(levels) and isinstance(levels[0], str)
                       for levels in columns.categories)
            raise ValueError(
                f"categorical features need weak_learner='vector_tree' (not "
                f"{self.weak_learner!r}): it splits by sets of categories; encode the "
                "columns as numbers for the other learners"
                + ("" if text else ", or pass categorical_features=None"))
        return encoded

    def _set_categorical(self, columns: CategoricalColumns | None) -> None:
        """The fitted categorical columns (None: all numeric) and their public view."""
        self._categorical = columns
        self.is_categorical_ = None if columns is None else columns.mask
        self.categories_ = None if columns is None else columns.categories

    def _encode(self, X):
        """X to predict on, its categorical columns encoded as in training."""
        columns = getattr(self, "_categorical", None)
        if columns is None:
            return X
        self._check_column_names(X)
        return columns.transform(X)

    def _check_column_names(self, X) -> None:
        """A ValueError where a DataFrame's column names are not the fitted ones in order.
        The categorical columns are encoded by position before validation compares the
        names, so a reordered frame was refused for holding text where a number was fitted
        (or, where the moved columns share a type, encoded by another column's categories
        until validation refused the names)."""
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is None or not hasattr(X, "columns"):
            return
        if X.columns.tolist() == fitted.tolist():  # (string names: no conversion)
            return
        given = [str(c) for c in X.columns]
        if given == fitted.tolist():
            return
        given_set, fitted_set = set(given), set(fitted)
        missing = [c for c in fitted if c not in given_set]
        unexpected = [c for c in given if c not in fitted_set]
        if not missing and not unexpected:
            raise ValueError(f"X's columns are the fitted ones in another order; pass "
                             f"X[model.feature_names_in_] (fitted order: {list(fitted)})")
        raise ValueError(f"X's columns are not the fitted ones: missing {missing}, "
                         f"not fitted {unexpected}")

    def encode_row(self, x) -> np.ndarray:
        """One row (a pandas Series, or a sequence in column order) as the learners read it:
        float64, categorical values as their codes (see ``categories_``)."""
        columns = getattr(self, "_categorical", None)
        if columns is None:
            return super().encode_row(x)
        if hasattr(x, "index") and hasattr(x, "to_frame"):  # a pandas Series
            frame = x.to_frame().T
            return columns.transform(frame.infer_objects()).to_numpy(dtype=np.float64)[0]
        row = np.asarray(x, dtype=object).reshape(1, -1)
        return np.asarray(columns.transform(row), dtype=np.float64)[0]

    def _categorical_mask(self) -> np.ndarray | None:
        columns = getattr(self, "_categorical", None)
        return None if columns is None else columns.mask

    def _write_categorical(self, fitted: dict) -> None:
        columns = getattr(self, "_categorical", None)
        fitted["categorical"] = None if columns is None else columns.to_dict()

    def _read_categorical(self, fitted: dict, d: int) -> None:
        doc = fitted["categorical"]
        try:
            columns = None if doc is None else CategoricalColumns.from_dict(doc, d)
        except ValueError as exc:
            raise corrupt(str(exc)) from None
        self._set_categorical(columns)
