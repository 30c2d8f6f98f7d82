"""The small data set shipped inside the package, for the demo and examples."""

from __future__ import annotations

from importlib.resources import files
from typing import NamedTuple

import numpy as np


class Split(NamedTuple):
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]


def load_pendigits() -> Split:
    """UCI Pen-Based Recognition of Handwritten Digits, official split (7494 / 3498 rows).

    16 features: the (x, y) pen positions at 8 resampled points of each digit, 0..100. Ten
    classes, the digits 0-9. Alimoglu & Alpaydin; UCI Machine Learning Repository (CC BY 4.0).
    """
    with files("rebelboost.datasets").joinpath("data/pendigits.npz").open("rb") as fh:
        d = np.load(fh, allow_pickle=False)
        return Split(d["X_train"], d["y_train"], d["X_test"], d["y_test"],
                     [str(n) for n in d["feature_names"]])
