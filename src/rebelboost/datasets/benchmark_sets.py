"""The benchmark data sets of the papers (UCI, Statlog, MNIST) stored as ``NAME.npz`` files.

They are not shipped with the package: point ``data_dir`` (or the ``REBELBOOST_DATA``
environment variable) at a folder of ``.npz`` files with ``X_train, y_train, X_test, y_test``
(official splits) or ``X, y`` (no official split).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .bundled import Split

#: Where the files are looked for when neither ``data_dir`` nor ``REBELBOOST_DATA`` is given:
#: the project's shared data folder beside a checkout.
DEFAULT_DIRS = (Path(__file__).resolve().parents[4] / "shared" / "data",
                Path.cwd().parent / "shared" / "data")

ALIASES = {"landsat": "satimage"}


def data_dir(path: str | Path | None = None) -> Path:
    """The folder holding the ``.npz`` files, or a ``FileNotFoundError`` saying how to set it."""
    candidates = [Path(path)] if path is not None else []
    if os.environ.get("REBELBOOST_DATA"):
        candidates.append(Path(os.environ["REBELBOOST_DATA"]))
    candidates += DEFAULT_DIRS if path is None else []
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "benchmark data not found: pass data_dir or set REBELBOOST_DATA to a folder of .npz "
        f"files (looked in {', '.join(str(c) for c in candidates)})"
    )


def available(path: str | Path | None = None) -> bool:
    """Whether the benchmark folder can be found."""
    try:
        data_dir(path)
    except FileNotFoundError:
        return False
    return True


def load_benchmark(name: str, path: str | Path | None = None) -> Split:
    """One benchmark set as a train/test :class:`Split` (``X`` as float64).

    Sets without an official split (``glass``) come back with all rows in the training part
    and an empty test part; split them yourself.
    """
    file = data_dir(path) / f"{ALIASES.get(name, name)}.npz"
    if not file.exists():
        raise FileNotFoundError(f"no data set {name!r}: {file} does not exist")
    with np.load(file, allow_pickle=False) as d:
        if "X_train" in d:
            X_train, y_train, X_test, y_test = (d[k] for k in ("X_train", "y_train",
                                                                "X_test", "y_test"))
        else:
            X_train, y_train = d["X"], d["y"]
            X_test, y_test = X_train[:0], y_train[:0]
        names = ([str(n) for n in d["feature_names"]] if "feature_names" in d
                 else [f"x{j}" for j in range(X_train.shape[1])])
    return Split(X_train.astype(np.float64), y_train, X_test.astype(np.float64), y_test, names)
