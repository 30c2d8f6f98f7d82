"""Categorical columns by value: which columns are categorical, and their values as codes.

A categorical column's training values (missing ones aside) are sorted, numbers numerically
and strings lexicographically, and a value's code is its index in that list; a missing value
(None, NaN, ``pd.NA``) or a value not seen in training becomes NaN, which the trees send where
they send missing values. Codes depend on the values only: not on the order of a pandas
``CategoricalDtype``'s categories, nor on its integer codes.

:class:`CategoricalColumns` is fitted on the training X and turns any X with the same columns
into the float matrix the trees read (numeric columns as they are, categorical ones as
codes). pandas is optional: numpy object arrays work the same way.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from scipy.sparse import issparse

# Levels a categorical column may have (values seen in training). The trees give the
# max_bins most frequent levels their own bins and treat the rest as missing values.
MAX_CATEGORIES = 1_000_000
# :func:`numbers_as_text`'s rule: a text column whose distinct values are numbers but for at
# most a tenth of ten or more, and those few on at most 5% of its present rows.
NUMBER_LEVELS_SHARE = 0.9
NUMBER_ROWS_SHARE = 0.95


class NumbersAsTextWarning(UserWarning):
    """A text column split as categories whose values are numbers but for a few: a numeric
    column with a typo, most likely."""


class CategoricalColumns:
    """The categorical columns of a training X and the values each of them holds.

    ``mask`` (n_features,) marks the categorical columns; ``categories[j]`` holds column j's
    sorted training values (None for a numeric column).
    """

    def __init__(self, mask: np.ndarray, categories: list[np.ndarray | None]):
        self.mask = np.asarray(mask, dtype=bool)
        self.categories = categories

    @property
    def any(self) -> bool:
        return bool(self.mask.any())

    @classmethod
    def fit(cls, X, categorical_features) -> CategoricalColumns | None:
        """The categorical columns of ``X`` (None when there are none, or when X is sparse:
        input validation refuses it)."""
        if issparse(X):
            return None
        return cls._of_columns(*_columns(X), categorical_features)

    @classmethod
    def fit_transform(cls, X, categorical_features) -> tuple[CategoricalColumns | None, object]:
        """:meth:`fit` and, where X has categorical columns, :meth:`transform` (else X as it
        is), reading X's columns once."""
        if issparse(X):
            return None, X
        columns, names = _columns(X)
        found = cls._of_columns(columns, names, categorical_features)
        return found, (X if found is None else found._encoded(X, columns, names))

    @classmethod
    def _of_columns(cls, columns: list, names: list | None, categorical_features
                    ) -> CategoricalColumns | None:
        """:meth:`fit` of X's columns and column names (:func:`_columns`)."""
        mask = resolve_mask(categorical_features, columns, names)
        _refuse_text_left_out(columns, names, mask, categorical_features)
        if not mask.any():
            return None
        categories: list[np.ndarray | None] = [None] * len(columns)
        for j in np.flatnonzero(mask):
            values = _present(columns[j], _name(names, j))
            levels = _sorted_levels(values, _name(names, j))
            if len(levels) > MAX_CATEGORIES:
                raise ValueError(f"categorical column {_name(names, j)} has {len(levels)} "
                                 f"levels; at most {MAX_CATEGORIES} are supported")
            categories[j] = levels
            if isinstance(categorical_features, str) and not _is_categorical_dtype(columns[j]):
                _warn_numbers_as_text(columns[j], levels, _name(names, j))
        return cls(mask, categories)

    @classmethod
    def merge(cls, parts: list[tuple[np.ndarray, list, dict]], names: list | None
              ) -> CategoricalColumns | None:
        """The categorical columns of a training X held in parts (a distributed fit's
        partitions), from each part's :func:`part_levels`: the same as :meth:`fit` on all
        rows at once, its :class:`NumbersAsTextWarning` included (naming the partition and
        its row). Every part must hold the same columns, each of the same kind (a column
        categorical in one part and numeric in another is an error naming both)."""
        masks = [np.asarray(m, dtype=bool) for m, _, _ in parts]
        for i, m in enumerate(masks):
            if len(m) != len(masks[0]):
                raise ValueError(f"partition {i}: X has {len(m)} columns, partition 0 has "
                                 f"{len(masks[0])}: every partition must hold the same columns")
        mask = np.logical_or.reduce(masks)
        mixed = np.flatnonzero(mask & ~np.logical_and.reduce(masks))
        if len(mixed):
            j = mixed[0]
            numeric = next(i for i, m in enumerate(masks) if not m[j])
            categorical = next(i for i, m in enumerate(masks) if m[j])
            raise ValueError(f"partition {numeric}: column {_name(names, j)} holds numbers, "
                             f"but in partition {categorical} it is categorical (text or a "
                             "category dtype): every partition must hold the same kinds of "
                             "values")
        if not mask.any():
            return None
        categories: list[np.ndarray | None] = [None] * len(mask)
        for j in np.flatnonzero(mask):
            found = [levels[j] for _, levels, _ in parts if levels[j] is not None]
            levels = (_sorted_levels(np.concatenate(found), _name(names, j)) if found
                      else np.empty(0))
            if len(levels) > MAX_CATEGORIES:
                raise ValueError(f"categorical column {_name(names, j)} has {len(levels)} "
                                 f"levels; at most {MAX_CATEGORIES} are supported")
            categories[j] = levels
            if all(j in text for _, _, text in parts):
                _warn_parts_typo([text[j] for _, _, text in parts], levels, _name(names, j))
        return cls(mask, categories)

    def transform(self, X):
        """``X`` with its categorical columns as float codes (NaN: missing or unseen); a
        DataFrame stays a DataFrame (its column names kept), anything else becomes an
        array. Numeric columns pass unchanged (sparse X too: validation refuses it)."""
        if issparse(X):
            return X
        return self._encoded(X, *_columns(X))

    def _encoded(self, X, columns: list, names: list | None):
        """:meth:`transform` of X, given its columns and names (:func:`_columns`)."""
        if len(columns) != len(self.mask):
            raise ValueError(f"X has {len(columns)} columns, the model was fitted on "
                             f"{len(self.mask)}")
        encoded = []
        for j, col in enumerate(columns):
            if not self.mask[j]:
                if _is_text(col):
                    raise ValueError(f"column {_name(names, j)} holds text{_such_as(col)}, but "
                                     "it was numeric when the model was fitted")
                encoded.append(col)
                continue
            encoded.append(encode(col, self.categories[j], _name(names, j)))
        if not encoded:
            return X
        floats = [_as_float_or_self(col) for col in encoded]
        if names is None:
            return np.column_stack(floats)
        import pandas as pd

        if all(f.dtype == np.float64 for f in floats):  # (one block: validation reads it whole)
            return pd.DataFrame(np.column_stack(floats), columns=names, index=X.index)
        return pd.DataFrame(dict(zip(names, floats, strict=True)), index=X.index)

    def to_dict(self) -> dict:
        return {"mask": self.mask.tolist(),
                "categories": [None if c is None else c.tolist() for c in self.categories]}

    @classmethod
    def from_dict(cls, doc, n_features: int) -> CategoricalColumns:
        """Checked categorical columns from a model file; ``ValueError`` says what is wrong."""
        if not isinstance(doc, dict) or set(doc) != {"mask", "categories"}:
            raise ValueError("categorical section must hold 'mask' and 'categories'")
        mask, cats = doc["mask"], doc["categories"]
        if (not isinstance(mask, list) or len(mask) != n_features
                or not all(isinstance(m, bool) for m in mask)):
            raise ValueError(f"categorical mask must be {n_features} booleans")
        if not isinstance(cats, list) or len(cats) != n_features:
            raise ValueError(f"categories must be a list of {n_features} entries")
        categories: list[np.ndarray | None] = []
        for j, (m, c) in enumerate(zip(mask, cats, strict=True)):
            if not m:
                if c is not None:
                    raise ValueError(f"feature {j} is numeric but has categories")
                categories.append(None)
                continue
            if not isinstance(c, list) or not c:
                raise ValueError(f"categories of feature {j} must be a non-empty list")
            if all(isinstance(v, str) for v in c):
                levels = np.asarray(c, dtype=object)
            elif all(type(v) in (int, float) for v in c):
                levels = np.asarray(c, dtype=np.float64)
                if not np.isfinite(levels).all():
                    raise ValueError(f"categories of feature {j} are not finite")
            else:
                raise ValueError(f"categories of feature {j} mix strings and numbers")
            if len(set(c)) != len(c) or list(_sorted_levels(levels, str(j))) != list(levels):
                raise ValueError(f"categories of feature {j} are not sorted and distinct")
            categories.append(levels)
        if not any(mask):
            raise ValueError("categorical section without a categorical feature")
        return cls(np.asarray(mask), categories)


def numbers_as_text(col, levels=None, levels_share: float = NUMBER_LEVELS_SHARE,
                    rows_share: float = NUMBER_ROWS_SHARE) -> tuple[list, int] | None:
    """``(the distinct values that are not numbers, the row of the first)`` for a text column
    whose other values are numbers (at least ``levels_share`` of ten or more distinct values)
    and hold most rows (``rows_share`` of those present): a numeric column with a typo, or
    a marker such as '?'. None otherwise: codes with a few named levels ('other', 'none')
    that many rows take are categories. ``levels``: the column's sorted distinct values, if
    known; its rows are read only for a column that passes the levels' rule."""
    if levels is None:
        levels = _sorted_levels(_present(col, "column"), "column")
    bad = [v for v in levels if not _reads_as_number(v)]
    if not _few_levels_not_numbers(len(levels), len(bad), levels_share):
        return None  # (the rows need not be read)
    rows = np.flatnonzero(~_missing(col))
    present = _values(col)[rows]  # (no missing value: pandas' NA compares as NA)
    bad_rows = int(np.isin(present, np.asarray(bad, dtype=object)).sum())
    if not _few_rows_not_numbers(bad_rows, len(present), rows_share):
        return None
    return bad, int(rows[np.flatnonzero(present == bad[0])[0]])


def _few_levels_not_numbers(n_levels: int, n_bad: int,
                            levels_share: float = NUMBER_LEVELS_SHARE) -> bool:
    """:func:`numbers_as_text`'s rule on the distinct values: ten or more, at least one and
    at most ``1 - levels_share`` of them not numbers."""
    return n_levels >= 10 and 0 < n_bad <= (1 - levels_share) * n_levels


def _few_rows_not_numbers(bad_rows: int, present_rows: int,
                          rows_share: float = NUMBER_ROWS_SHARE) -> bool:
    """:func:`numbers_as_text`'s rule on the rows: those values on at most ``1 - rows_share``
    of the present rows."""
    return bad_rows <= (1 - rows_share) * present_rows


def not_numbers(bad: list) -> str:
    """"is not a number" or "are not numbers", as many as ``bad`` holds (the messages of
    :func:`numbers_as_text`'s findings)."""
    return "is not a number" if len(bad) == 1 else "are not numbers"


def _reads_as_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _refuse_text_left_out(columns: list, names: list | None, mask: np.ndarray,
                          categorical_features) -> None:
    """A training column of text that ``categorical_features`` (names, indices or a mask)
    does not name is an error (named columns are exactly the categorical ones), saying how
    to include it. (None: no column is categorical, and input validation names the columns
    that are not numbers.)"""
    if categorical_features is None:
        return
    text = next((j for j in np.flatnonzero(~mask) if _is_text(columns[j])), None)
    if text is not None:
        raise ValueError(f"column {_name(names, text)} holds text{_such_as(columns[text])}, "
                         f"which categorical_features={categorical_features!r} does not name: "
                         "name it too, or pass 'from_dtype' (every text and category column)")


def _such_as(col) -> str:
    """' (such as VALUE in row I)': a text column's first value that is not a number."""
    values = _values(col)
    row = next((i for i, v in enumerate(values)
                if isinstance(v, str) and not _reads_as_number(v)), None)
    return "" if row is None else f" (such as {values[row]!r} in row {row})"


def _warn_numbers_as_text(col, levels: np.ndarray, name: str) -> None:
    """A :class:`NumbersAsTextWarning` where a text column taken as categorical by its dtype
    holds numbers but for a few of its values (:func:`numbers_as_text`)."""
    found = numbers_as_text(col, levels)
    if found is not None:
        bad, row = found
        _warn_typo(name, bad, len(levels), f"row {row}", stacklevel=7)


def _warn_parts_typo(parts: list[tuple[int, dict]], levels: np.ndarray, name: str) -> None:
    """:func:`_warn_numbers_as_text` for a column held in parts, from each part's present
    rows and its values that are not numbers (:func:`part_levels`)."""
    found_bad = {v for _, found in parts for v in found}
    bad = [v for v in levels if v in found_bad]  # (in the levels' order, as a local fit's)
    bad_rows = sum(n for _, found in parts for n, _ in found.values())
    if not (_few_levels_not_numbers(len(levels), len(bad))
            and _few_rows_not_numbers(bad_rows, sum(p for p, _ in parts))):
        return
    i = next(i for i, (_, found) in enumerate(parts) if bad[0] in found)
    _warn_typo(name, bad, len(levels), f"partition {i}, row {parts[i][1][bad[0]][1]}",
               stacklevel=6)  # (the caller of DaskRebelClassifier.fit)


def _warn_typo(name: str, bad: list, n_levels: int, where: str, stacklevel: int) -> None:
    what = not_numbers(bad)
    warnings.warn(f"column {name} holds text, so it is split as categories, but {len(bad)} of "
                  f"its {n_levels} distinct values {what} and the others are, such as "
                  f"{bad[0]!r} ({where}): a numeric column with a typo? Fix those values, or "
                  "name the column in categorical_features to keep it as categories",
                  NumbersAsTextWarning, stacklevel=stacklevel)  # (the caller of fit)


def part_levels(X, categorical_features) -> tuple[np.ndarray, list, dict]:
    """One part of a training X: the categorical mask its rows resolve to, each categorical
    column's distinct values (None where it has none), and, for a column taken as categorical
    because it holds text (``'from_dtype'``), its present rows and, per value that is not a
    number, its rows and its first row (what :func:`numbers_as_text` reads), for
    :meth:`CategoricalColumns.merge`."""
    columns, names = _columns(X)
    mask = resolve_mask(categorical_features, columns, names)
    _refuse_text_left_out(columns, names, mask, categorical_features)
    levels: list[np.ndarray | None] = [None] * len(columns)
    text: dict[int, tuple[int, dict]] = {}
    for j in np.flatnonzero(mask):
        values = _present(columns[j], _name(names, j))
        if len(values):
            levels[j] = _sorted_levels(values, _name(names, j))
        if isinstance(categorical_features, str) and not _is_categorical_dtype(columns[j]):
            bad = [v for v in (levels[j] if len(values) else ()) if not _reads_as_number(v)]
            rows = np.flatnonzero(~_missing(columns[j]))  # (the rows of ``values``)
            hits = [rows[np.flatnonzero(values == v)] for v in bad]
            text[int(j)] = (len(values), {v: (len(at), int(at[0]))
                                          for v, at in zip(bad, hits, strict=True)})
    return mask, levels, text


def resolve_mask(categorical_features, columns: list, names: list | None) -> np.ndarray:
    """The boolean mask of categorical columns that ``categorical_features`` names: None,
    ``'from_dtype'`` (pandas category, object and string columns; numpy object columns of
    text), column names, integer indices or a boolean mask."""
    d = len(columns)
    mask = np.zeros(d, dtype=bool)
    spec = categorical_features
    if spec is None:
        return mask
    if isinstance(spec, str):
        if spec != "from_dtype":
            raise ValueError(f"categorical_features must be None, 'from_dtype', names, "
                             f"indices or a boolean mask, got {spec!r}")
        for j, col in enumerate(columns):
            mask[j] = _is_categorical_dtype(col) or _is_text(col)
        return mask
    items = list(np.asarray(spec, dtype=object).ravel()) if not isinstance(spec, list) \
        else list(spec)
    if items and all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != d:
            raise ValueError(f"categorical_features mask has {len(items)} entries, X has {d} "
                             "columns")
        return np.asarray(items, dtype=bool)
    for v in items:
        if isinstance(v, str):
            if names is None or v not in names:
                raise ValueError(f"categorical_features names column {v!r}, which X does not "
                                 "have" + ("" if names is None else f" (columns: {names})"))
            mask[names.index(v)] = True
        elif isinstance(v, Integral) and not isinstance(v, bool):
            if not -d <= int(v) < d:
                raise ValueError(f"categorical_features index {v} is out of range for {d} "
                                 "columns")
            mask[int(v)] = True
        else:
            raise ValueError(f"categorical_features entries must be column names or indices, "
                             f"got {v!r}")
    return mask


def encode(col, levels: np.ndarray, name: str) -> np.ndarray:
    """Float codes of a column's values in ``levels`` (NaN: missing or not a level)."""
    if _is_categorical_dtype(col):  # each category used looked up once, not each row
        codes, categories = _category_codes(col)
        used = _used_categories(codes, len(categories))
        by_category = np.full(len(categories) + 1, np.nan)  # (the last: missing)
        by_category[used] = _level_codes(categories[used], levels, name)
        return by_category[codes]
    present = ~_missing(col)
    codes = np.full(len(col), np.nan)
    if present.any():
        codes[present] = _level_codes(_values(col)[present], levels, name)
    return codes


def _level_codes(values: np.ndarray, levels: np.ndarray, name: str) -> np.ndarray:
    """Float codes of values that are not missing (NaN: not a level)."""
    if levels.dtype == object:
        if not all(isinstance(v, str) for v in values):
            raise ValueError(f"categorical column {name} held text when the model was fitted; "
                             "now it holds other values")
        lookup = {v: i for i, v in enumerate(levels)}
        got = np.array([lookup.get(v, -1) for v in values], dtype=np.float64)
    else:
        try:
            numbers = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"categorical column {name} held numbers when the model was "
                             "fitted; now it holds text") from None
        at = np.minimum(np.searchsorted(levels, numbers), len(levels) - 1)
        got = np.where(levels[at] == numbers, at, -1).astype(np.float64)
    got[got < 0] = np.nan
    return got


# ---------------------------------------------------------------------------- helpers

def _columns(X) -> tuple[list, list | None]:
    """X's columns (pandas Series or 1-d arrays) and its column names (None: no names)."""
    if hasattr(X, "columns") and hasattr(X, "items"):
        names = [str(c) for c in X.columns]
        return [col for _, col in X.items()], names
    arr = np.asarray(X)
    if arr.ndim != 2:
        return [], None  # validation names the problem
    return [arr[:, j] for j in range(arr.shape[1])], None


def _name(names, j: int) -> str:
    return repr(names[j]) if names is not None else f"{j} (0-based)"


def _is_categorical_dtype(col) -> bool:
    # (by the dtype's class: str() of a numpy dtype took ~2 us, called for every column)
    return type(getattr(col, "dtype", None)).__name__ == "CategoricalDtype"


def _category_codes(col) -> tuple[np.ndarray, np.ndarray]:
    """A pandas categorical column's codes (-1: missing) and its categories, read from the
    ``Categorical`` itself: the ``.cat`` accessor took ~20 us a column, most of encoding a
    small frame."""
    values = getattr(col, "array", col)
    return np.asarray(values.codes), values.categories.to_numpy()


def _used_categories(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """The categories some row takes, in order (pandas' codes are of an integer type that
    holds one more than the largest)."""
    return np.flatnonzero(np.bincount(codes + 1, minlength=n_categories + 1)[1:])


def _values(col) -> np.ndarray:
    """A column's values as a numpy array (a pandas categorical as its values, not codes)."""
    if _is_categorical_dtype(col):
        return np.asarray(col.astype(object))
    return np.asarray(col.to_numpy(dtype=object) if hasattr(col, "to_numpy")
                      and str(getattr(col, "dtype", "")) == "string" else col)


def _missing(col) -> np.ndarray:
    """Where a column's values are missing: NaN, None, pandas' NA and NaT."""
    if _is_categorical_dtype(col):
        return _category_codes(col)[0] < 0
    values = _values(col)
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind in "iub":
        return np.zeros(len(values), dtype=bool)
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)


def _is_text(col) -> bool:
    """Whether a column holds strings (pandas object/string, numpy object or str arrays)."""
    dtype = getattr(col, "dtype", None)
    if dtype is None:
        return False
    if str(dtype) == "string" or getattr(dtype, "kind", "") in "US":
        return True
    if getattr(dtype, "kind", "") != "O":
        return False
    values = _values(col)
    return any(isinstance(v, str) for v in values[~_missing(col)])


def _present(col, name: str) -> np.ndarray:
    """A column's values that are not missing (of a pandas categorical: the categories
    its rows use, each once)."""
    if _is_categorical_dtype(col):
        codes, categories = _category_codes(col)
        return categories[_used_categories(codes, len(categories))]
    values = _values(col)[~_missing(col)]
    for v in values[:1000] if values.dtype == object else ():
        try:
            hash(v)
        except TypeError:
            raise ValueError(f"categorical column {name} holds unhashable values such as "
                             f"{v!r}") from None
    return values


def _sorted_levels(values: np.ndarray, name: str) -> np.ndarray:
    """Distinct values, sorted: all strings (lexicographic) or all numbers (numeric)."""
    if values.dtype.kind in "iufb":
        return np.unique(values.astype(np.float64))
    kinds = {isinstance(v, str) for v in values}
    if kinds == {True}:
        return np.asarray(sorted(set(values)), dtype=object)
    if kinds == {False}:
        try:
            numbers = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"categorical column {name} holds values that are neither text "
                             "nor numbers") from None
        if not np.isfinite(numbers).all():
            raise ValueError(f"categorical column {name} holds infinite values")
        return np.unique(numbers)
    raise ValueError(f"categorical column {name} mixes text and numbers, which cannot be "
                     "ordered; convert it to one type")


def _as_float_or_self(col):
    try:
        return np.asarray(col, dtype=np.float64)
    except (TypeError, ValueError):
        return np.asarray(col)  # text in a numeric column: validation names it
