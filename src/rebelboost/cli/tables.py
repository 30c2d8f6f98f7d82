"""Input files for the model commands: data tables (CSV, Parquet, npz) and cost-matrix CSVs.

Every problem with a user's file becomes one ``click.ClickException`` line naming the file and
what is wrong with it, so that the commands never show a traceback for bad input. numpy and
pandas are imported when a file is read, not with the command line.
"""

from __future__ import annotations

import csv
import importlib.util
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import numpy as np

CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass
class Table:
    """A data file as read: a DataFrame (CSV, Parquet) or the arrays of an ``.npz`` file."""

    path: Path
    frame: object = None  # pandas.DataFrame for CSV and Parquet files
    X: np.ndarray | None = None  # npz files
    y: np.ndarray | None = None  # npz files, when they hold labels

    @property
    def n_rows(self) -> int:
        return len(self.frame) if self.frame is not None else self.X.shape[0]


def existing_file(path: str, what: str) -> Path:
    """``path`` as a Path, or a one-line error when no such file exists."""
    p = Path(path)
    if not p.is_file():
        raise click.ClickException(f"{what} {path!r} not found" if not p.exists()
                                   else f"{what} {path!r} is not a file")
    return p


def read_table(path: str, npz_keys: tuple[tuple[str, str], ...]) -> Table:
    """Read a CSV, Parquet or ``.npz`` data file.

    ``npz_keys`` lists the (features, labels) array pairs to look for in an ``.npz`` file, in
    order of preference; the labels array is optional.
    """
    p = existing_file(path, "data file")
    name = p.name.lower()
    if name.endswith(".npz"):
        return _read_npz(p, npz_keys)
    import pandas as pd

    if name.endswith(CSV_SUFFIXES):
        reader = pd.read_csv
    elif name.endswith(PARQUET_SUFFIXES):
        if importlib.util.find_spec("pyarrow") is None:
            raise click.ClickException(
                f"reading Parquet file {path!r} needs pyarrow: pip install pyarrow")
        reader = pd.read_parquet
    else:
        raise click.ClickException(
            f"{path!r}: unsupported file type; use .csv, .csv.gz, .parquet or .npz")
    try:
        frame = reader(p)
    except (ValueError, OSError) as exc:  # pandas' and pyarrow's parse errors are ValueErrors
        raise click.ClickException(f"cannot read {path!r}: {one_line(exc)}") from None
    if len(frame) == 0:
        raise click.ClickException(f"{path!r} has no data rows")
    return Table(p, frame=frame)


def _read_npz(p: Path, npz_keys: tuple[tuple[str, str], ...]) -> Table:
    import numpy as np

    try:
        with p.open("rb") as f:
            zipped = f.read(4) == b"PK\x03\x04"
    except OSError as exc:
        raise click.ClickException(f"cannot read {str(p)!r}: {one_line(exc)}") from None
    if not zipped:
        raise click.ClickException(
            f"{str(p)!r} is not an .npz file (not a zip archive of arrays, as numpy.savez "
            "writes); for CSV data name it .csv")
    key = None
    try:
        with np.load(p, allow_pickle=False) as arrays:
            found = {}
            for key in arrays.files:
                found[key] = arrays[key]
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        if key is not None and "allow_pickle" in str(exc):
            raise click.ClickException(
                f"{str(p)!r}: array {key!r} holds Python objects (dtype object), which are not "
                "loaded from files; save numbers, or labels as strings "
                "(numpy.asarray(y, dtype=str))") from None
        raise click.ClickException(f"cannot read {str(p)!r}: {one_line(exc)}") from None
    for x_key, y_key in npz_keys:
        if x_key in found:
            X, y = found[x_key], found.get(y_key)
            break
    else:
        wanted = " or ".join(repr(x) for x, _ in npz_keys)
        raise click.ClickException(
            f"{str(p)!r} holds arrays {sorted(found)}; expected {wanted}")
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise click.ClickException(
            f"{str(p)!r}: array {x_key!r} must be a 2-D numeric array, got shape {X.shape} "
            f"of dtype {X.dtype}")
    if y is not None and y.shape[:1] != X.shape[:1]:
        raise click.ClickException(
            f"{str(p)!r}: {x_key!r} has {X.shape[0]} rows but {y_key!r} has {y.shape[0]} labels")
    return Table(p, X=X, y=y)


def one_line(exc: BaseException) -> str:
    """An exception's message with its line breaks folded, for a one-line error."""
    return " ".join(str(exc).split())


def labels(table: Table, target: str | None) -> np.ndarray:
    """The class labels of ``table``: column ``target``, or the labels array of an npz file.

    Text labels come back as a numpy string array, which model files can store.
    """
    if table.frame is None:
        if table.y is None:
            raise click.ClickException(f"{str(table.path)!r} holds no labels array")
        return table.y
    if target is None:
        raise click.UsageError("--target is required for CSV and Parquet data")
    frame = table.frame
    if target not in frame.columns:
        raise click.ClickException(
            f"target column {target!r} is not in {str(table.path)!r} "
            f"(columns: {', '.join(map(str, frame.columns))})")
    import numpy as np

    column = frame[target]
    missing = np.flatnonzero(column.isna().to_numpy())
    if missing.size:
        raise click.ClickException(
            f"target column {target!r} has {missing.size} missing labels "
            f"(first at data row {missing[0]})")
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return column.to_numpy()
    return column.astype(str).to_numpy(dtype=str)


def features(table: Table, target: str | None = None, names=None, n_features: int | None = None):
    """The feature matrix of ``table``.

    With ``names`` (a model's ``feature_names_in_``) the columns are picked by name, so extra
    columns such as the target are ignored; otherwise every column but ``target`` is used and,
    given ``n_features`` (a model fitted without feature names), their count must match and a
    float array comes back, since such a model must not see column names.
    """
    if table.frame is None:
        X = table.X
        expected = len(names) if names is not None else n_features
        if expected is not None and X.shape[1] != expected:
            raise click.ClickException(
                f"{str(table.path)!r} has {X.shape[1]} features; the model expects {expected}")
        if names is None:
            return X
        import pandas as pd

        return pd.DataFrame(X, columns=list(names))
    frame = table.frame
    if names is not None:
        absent = [n for n in names if n not in frame.columns]
        if absent:
            raise click.ClickException(
                f"{str(table.path)!r} lacks the model's feature columns {absent}")
        X = frame[list(names)]
    else:
        X = frame.drop(columns=[target]) if target is not None else frame
        if n_features is not None and X.shape[1] != n_features:
            raise click.ClickException(
                f"{str(table.path)!r} has {X.shape[1]} feature columns; the model (fitted "
                f"without feature names) expects {n_features}"
                + ("; leave out the label column with --target" if target is None else ""))
    if X.shape[1] == 0:
        raise click.ClickException(
            f"{str(table.path)!r} has no feature columns"
            + (f" besides the target {target!r}" if target is not None else ""))
    import numpy as np

    return X.to_numpy(dtype=np.float64) if names is None and n_features is not None else X


def numbers_read_as_text(X, declared: str | None) -> list[str]:
    """One line for each text column of DataFrame ``X`` not ``declared`` categorical (the
    ``--categorical`` list) whose values are numbers but for a few
    (:func:`..categorical.numbers_as_text`): a numeric column with a typo, which the fit
    would otherwise split as categories."""
    if not hasattr(X, "columns"):
        return []
    import pandas as pd

    from ..categorical import not_numbers, numbers_as_text

    skip = set() if declared is None else {c.strip() for c in declared.split(",")}
    lines = []
    for name in X.columns:
        column = X[name]
        if (name in skip or pd.api.types.is_numeric_dtype(column)
                or pd.api.types.is_bool_dtype(column)
                or isinstance(column.dtype, pd.CategoricalDtype)):
            continue
        found = numbers_as_text(column.astype(str).where(column.notna()))
        if found is not None:
            bad, row = found
            lines.append(f"column {name!r} is read as text, so as categories, because {len(bad)} "
                         f"of its distinct values {not_numbers(bad)}, such as {bad[0]!r} "
                         f"(data row {row}); "
                         "fix them, or name the column in --categorical to keep it as categories")
    return lines


def categorical_columns(X, spec: str | None):
    """``categorical_features`` for ``--categorical``: 'from_dtype' without it (text columns),
    else the named columns (names, or 0-based indices of an array) and the text columns."""
    if spec is None:
        return "from_dtype"
    items = [item.strip() for item in spec.split(",") if item.strip()]
    if not hasattr(X, "columns"):
        try:
            return [int(item) for item in items]
        except ValueError:
            raise click.ClickException(f"--categorical {spec!r}: an array's columns are "
                                       "0-based indices") from None
    absent = [item for item in items if item not in X.columns]
    if absent:
        raise click.ClickException(f"--categorical names columns {absent} that the features "
                                   f"do not have ({list(map(str, X.columns))})")
    import pandas as pd

    text = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    return sorted(set(items) | set(text), key=list(map(str, X.columns)).index)


def _cost_rows(path: str) -> list[list[str]]:
    """The non-empty rows of a cost CSV file, cells stripped."""
    p = existing_file(path, "cost matrix file")
    try:
        with p.open(newline="") as f:
            return [[cell.strip() for cell in row] for row in csv.reader(f) if any(row)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise click.ClickException(f"cannot read cost matrix {path!r}: {one_line(exc)}") from None


def read_cost_matrix(path: str, classes: np.ndarray) -> np.ndarray:
    """The cost matrix in a CSV file, rows and columns in the order of ``classes``.

    The file is a K x K table of numbers, optionally with a header row and/or an index column
    of class labels; labels reorder the matrix to ``classes``. Row ``i``, column ``j`` is the
    cost of predicting class ``j`` when the truth is class ``i``. With a header row alone, the
    rows follow the header's order.
    """
    rows = _cost_rows(path)
    k = len(classes)
    shape = (len(rows), max(map(len, rows), default=0))
    if any(len(row) != shape[1] for row in rows) or shape not in {
        (k, k), (k + 1, k + 1), (k + 1, k), (k, k + 1)
    }:
        raise click.ClickException(
            f"cost matrix {path!r} must be {k} x {k} for the {k} classes {classes.tolist()} "
            "(plus an optional header row and index column of class labels)")
    header, index = shape[0] == k + 1, shape[1] == k + 1
    col_labels = rows[0][int(index):] if header else None
    body = [row[int(index):] for row in rows[int(header):]]
    row_labels = [row[0] for row in rows[int(header):]] if index else None
    import numpy as np

    try:
        cost = np.array([[float(cell) for cell in row] for row in body])
    except ValueError as exc:
        raise click.ClickException(f"cost matrix {path!r}: {one_line(exc)}") from None
    if row_labels is None and col_labels is None:
        return cost
    from ..validation import order_by_labels

    names = [str(c) for c in classes.tolist()]
    try:
        return order_by_labels(cost, row_labels, col_labels, names, f"cost matrix {path!r}")
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


def read_decision_costs(path: str, classes: np.ndarray) -> tuple[np.ndarray, list[str] | None]:
    """``(cost, decisions)`` from a cost CSV: a K x K class matrix (:func:`read_cost_matrix`,
    decisions None), or a K x M table whose header row names M decisions that are not the
    classes (e.g. ``a,b,c,refer``), optionally with an index column of class labels that
    orders its rows."""
    rows = _cost_rows(path)
    names = [str(c) for c in classes.tolist()]
    if len(rows) < 2 or all(_is_number(cell) for cell in rows[0]):
        return read_cost_matrix(path, classes), None
    body = rows[1:]
    index = not all(_is_number(row[0]) for row in body)
    header = rows[0][1:] if index else rows[0]
    if sorted(header) == sorted(names):
        return read_cost_matrix(path, classes), None
    import numpy as np

    if len(body) != len(names) or any(len(row) != len(header) + index for row in body):
        raise click.ClickException(
            f"cost table {path!r} must have one row per class ({len(names)}: {names}) and one "
            f"column per decision named in its header ({len(header)}: {header})")
    try:
        cost = np.array([[float(cell) for cell in row[int(index):]] for row in body])
    except ValueError as exc:
        raise click.ClickException(f"cost table {path!r}: {one_line(exc)}") from None
    if index:
        labels = [row[0] for row in body]
        if sorted(labels) != sorted(names):
            raise click.ClickException(f"cost table {path!r}: its row labels {labels} are not "
                                       f"the classes {names}")
        cost = cost[[labels.index(n) for n in names]]
    return cost, header


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
