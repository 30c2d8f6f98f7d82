"""Localized similarities (Appel & Perona, ICML 2017): weak learners that can isolate a point.

One-point ``f_i(x) = (tau - |x - x_i|^2) / (tau + |x - x_i|^2)`` is +1 at ``x_i`` and falls to
-1 far away. Two-point ``f_ij(x) ~ <d, x - m> / (4|d|^4 + |x - m|^4)`` (``d = (x_i - x_j)/2``,
``m = (x_i + x_j)/2``) is positive near ``x_i`` and negative near ``x_j``; it is divided by its
true peak ``(3/16)(4/3)^(1/4) / |d|^2`` so its range is exactly [-1, 1] (``f_ij(x_i) ~ 0.993``).

This module holds the learner kind (prediction, descriptions, model files) and the data
preparation the guarantee needs (coincident rows relabelled); the search that fits one learner
per iteration is :mod:`rebelboost.learners.similarity_search`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numba
import numpy as np

from ..io import corrupt, float_array, int_array
from ..validation import label_text

CONSTANT, ONE_POINT, TWO_POINT = 0, 1, 2
_TWO_POINT_PEAK = 16.0 / (3.0 * (4.0 / 3.0) ** 0.25)  # 1 / ((3/16)(4/3)^(1/4))


@dataclass
class SimilarityArrays:
    """A stack of T localized similarities over scaled features ``(x - offset) / scale``.

    As a learner kind (:mod:`rebelboost.learners`), a similarity routes every row to its one
    slot with weight ``f_t(x)`` in [-1, 1]; a model adds ``f_t(x)`` times the slot's vector.
    Support points are stored in scaled units; ``offset`` and ``scale`` (the stack's, not one
    learner's) turn raw rows into them (None: rows are already scaled).
    """

    kind_name = "similarities"
    weighted_output = True  # the output f_t(x) in [-1, 1] is the routing weight

    kind: np.ndarray  # (T,) CONSTANT, ONE_POINT or TWO_POINT
    first: np.ndarray  # (T, d) x_i (zeros for the constant learner)
    second: np.ndarray  # (T, d) x_j (two-point only)
    tau: np.ndarray  # (T,) one-point radius parameter
    first_index: np.ndarray  # (T,) training row of x_i (-1: none)
    second_index: np.ndarray  # (T,) training row of x_j (-1: none)
    first_class: np.ndarray | None = None  # (T,) class code of x_i (-1: none)
    second_class: np.ndarray | None = None  # (T,) class code of x_j (-1: none)
    offset: np.ndarray | None = None  # (d,) feature offsets of the scaling
    scale: np.ndarray | None = None  # (d,) feature scales of the scaling

    def __post_init__(self):
        n = self.kind.shape[0]
        if self.first_class is None:
            self.first_class = np.full(n, -1, np.int64)
        if self.second_class is None:
            self.second_class = np.full(n, -1, np.int64)

    def describe(self, t: int, classes) -> str:
        """Which training samples learner ``t`` compares a query with, in words."""
        def row(index, code):
            return f"training row #{index} (class {label_text(classes[code])})"

        kind = self.kind[t]
        if kind == ONE_POINT:
            return (f"similarity to {row(self.first_index[t], self.first_class[t])} "
                    f"(radius^2 {self.tau[t]:.3g})")
        if kind == TWO_POINT:
            return (f"closer to {row(self.first_index[t], self.first_class[t])} than to "
                    f"{row(self.second_index[t], self.second_class[t])}")
        return "always (bias)"

    def __len__(self) -> int:
        return self.kind.shape[0]

    def outputs(self, X: np.ndarray) -> np.ndarray:
        """``f_t(x)`` for every row and learner, shape (n_samples, T)."""
        X = np.asarray(X, dtype=np.float64)
        sq = np.einsum("ij,ij->i", X, X)[:, None]
        g1 = X @ self.first.T
        g2 = X @ self.second.T
        n1 = np.einsum("ij,ij->i", self.first, self.first)
        n2 = np.einsum("ij,ij->i", self.second, self.second)
        out = np.ones((X.shape[0], len(self)))
        one = self.kind == ONE_POINT
        if one.any():
            r2 = np.maximum(sq + n1[one] - 2.0 * g1[:, one], 0.0)
            out[:, one] = (self.tau[one] - r2) / (self.tau[one] + r2)
        two = self.kind == TWO_POINT
        if two.any():
            out[:, two] = two_point_output(sq, g1[:, two], g2[:, two], n1[two], n2[two],
                                     np.einsum("ij,ij->i", self.first[two], self.second[two]))
        return out

    def take(self, index) -> SimilarityArrays:
        return SimilarityArrays(*(a[index] for a in self._fields()), self.offset, self.scale)

    @property
    def n_slots(self) -> int:
        return 1

    def scaled(self, X: np.ndarray) -> np.ndarray:
        """Raw rows in the learners' units."""
        X = np.asarray(X, dtype=np.float64)
        if np.isnan(X).any():
            raise ValueError("X contains NaN; similarity models need complete rows (impute first)")
        return X if self.offset is None else (X - self.offset) / self.scale

    def route(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(slot 0 for every row and learner, the outputs ``f_t(x)`` as weights)."""
        weights = self.outputs(self.scaled(X))
        return np.zeros(weights.shape, np.int32), weights

    def accumulate(self, X: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
        """``out += sum_t f_t(x) values[t, 0]``, in blocks of learners (bounded memory)."""
        Z = self.scaled(X)
        size = max(1, _OUTPUT_BLOCK_ENTRIES // max(Z.shape[0], 1))
        for start in range(0, len(self), size):
            block = self.take(slice(start, start + size))
            out += block.outputs(Z) @ values[start:start + size, 0, :]

    def rule(self, t: int, x: np.ndarray, names: list[str], classes) -> tuple[str, list[int]]:
        """What learner ``t`` compares a row with (it reads whole rows: no single feature)."""
        return self.describe(t, list(classes)), []

    def regions(self, t: int, names: list[str], classes, output=int):
        """One region, everywhere: the output varies continuously with the row."""
        return [(self.describe(t, list(classes)), output(0))]

    def features_used(self, t: int) -> np.ndarray:
        return np.zeros(0, np.int64)

    def slot_outputs(self) -> np.ndarray:
        """(T, 1) ones: the output ``f_t(x)`` is the routing weight."""
        return np.ones((len(self), 1))

    # ------------------------------------------------------------------ model files

    def to_dict(self) -> dict:
        return {
            "type": self.kind_name,
            **{name: getattr(self, name).tolist() for name in _FIELDS},
            "offset": self.offset.tolist(), "scale": self.scale.tolist(),
        }

    @classmethod
    def from_dict(cls, doc: dict, n_features: int, n_classes: int) -> SimilarityArrays:
        """Rebuild and check a stack written by :meth:`to_dict` (ValueError if corrupt)."""
        if not isinstance(doc["kind"], list):
            raise corrupt("similarities' kind is not a list")
        n, d = len(doc["kind"]), n_features
        kind = int_array(doc["kind"], (n,), "similarity kind", 0, 3).astype(np.int8)
        first = float_array(doc["first"], (n, d), "support points")
        second = float_array(doc["second"], (n, d), "support points")
        tau = float_array(doc["tau"], (n,), "radii")
        big = np.iinfo(np.int64).max
        indices = [int_array(doc[name], (n,), name, -1, big)
                   for name in ("first_index", "second_index")]
        labels = [int_array(doc[name], (n,), name, -1, n_classes)
                  for name in ("first_class", "second_class")]
        offset = float_array(doc["offset"], (d,), "scaling offset")
        scale = float_array(doc["scale"], (d,), "scaling scale")
        if not all(np.isfinite(a).all() for a in (first, second, tau, offset, scale)):
            raise corrupt("non-finite support points, radii or scaling")
        if np.any(tau[kind == ONE_POINT] <= 0):
            raise corrupt("non-positive similarity radius")
        if np.any(scale <= 0):
            raise corrupt("non-positive feature scale")
        return cls(kind, first, second, tau, *indices, *labels, offset, scale)

    def _fields(self):
        return tuple(getattr(self, name) for name in _FIELDS)

    @classmethod
    def stack(cls, items: list[SimilarityArrays], n_features: int, offset=None,
              scale=None) -> SimilarityArrays:
        """One stack of ``items`` (stacks themselves), with the given scaling."""
        if not items:
            return cls(np.zeros(0, np.int8), np.zeros((0, n_features)), np.zeros((0, n_features)),
                       np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64),
                       offset=offset, scale=scale)  # classes: -1
        return cls(*(np.concatenate(p) for p in zip(*(s._fields() for s in items), strict=True)),
                   offset, scale)


_FIELDS = ("kind", "first", "second", "tau", "first_index", "second_index", "first_class",
           "second_class")
_OUTPUT_BLOCK_ENTRIES = 2**22  # learner outputs held at once when scoring (~32 MB)


@numba.vectorize(["float64(float64, float64, float64, float64, float64, float64)"], cache=True)
def two_point_output(sq, g1, g2, n1, n2, n12):
    """Normalised two-point output from inner products (a ufunc: arguments broadcast).

    ``sq = |x|^2``, ``g1 = <x, x_i>``, ``g2 = <x, x_j>``, ``n1 = |x_i|^2``, ``n2 = |x_j|^2``,
    ``n12 = <x_i, x_j>``; one fused pass, no temporaries.
    """
    # |x - m|^2 and <d, x - m> with m = (x_i + x_j)/2, d = (x_i - x_j)/2.
    m_sq = (n1 + n2 + 2.0 * n12) / 4.0
    d_sq = max((n1 + n2 - 2.0 * n12) / 4.0, 1e-300)
    xm = (g1 + g2) / 2.0
    xd = (g1 - g2) / 2.0
    md = (n1 - n2) / 4.0
    r2 = max(sq - 2.0 * xm + m_sq, 0.0)
    return _TWO_POINT_PEAK * d_sq * (xd - md) / (4.0 * d_sq**2 + r2**2)


def resolve_coincident(X: np.ndarray, codes: np.ndarray, cost_matrix: np.ndarray,
                       sample_weight: np.ndarray) -> tuple[np.ndarray, int]:
    """Relabel identical rows of different classes to the one label of least total cost.

    No learner can separate coincident points, so without this the zero-training-error
    guarantee fails (ICML 2017, footnote 1). Returns the new codes and how many rows changed.
    """
    # Rows are grouped by an exact integer hash of their bytes (equal rows, equal keys), then
    # split exactly; sorting whole rows instead takes seconds on MNIST.
    rows = np.ascontiguousarray(X + 0.0)  # + 0.0 turns -0.0 into 0.0: equal values, equal bytes
    words = rows.view(np.uint32 if rows.dtype.itemsize == 4 else np.uint64)
    multipliers = np.random.default_rng(0).integers(1, 2**62, words.shape[1], dtype=np.uint64)
    keys = words.astype(np.uint64) @ (multipliers | np.uint64(1))  # wraps modulo 2**64
    _, key_group, counts = np.unique(keys, return_inverse=True, return_counts=True)
    groups = []
    for g in np.flatnonzero(counts > 1):
        members = np.flatnonzero(key_group == g)
        _, exact = np.unique(rows[members], axis=0, return_inverse=True)
        groups.extend(members[exact.ravel() == e] for e in np.unique(exact))
    codes = codes.copy()
    changed = 0
    n_classes = cost_matrix.shape[0]
    for members in groups:
        if np.unique(codes[members]).size < 2:
            continue
        mass = np.bincount(codes[members], weights=sample_weight[members], minlength=n_classes)
        label = int(np.argmin(mass @ cost_matrix))  # total cost of labelling them all `label`
        changed += int((codes[members] != label).sum())
        codes[members] = label
    return codes, changed


# Columns whose largest |x| lies outside [2^-50, 2^50] are divided by a power of two (exact)
# before their statistics are taken, so that squares and distances neither overflow nor
# underflow, in float64 or in the float32 search; columns inside it are left as they are.
_SAFE_EXPONENT = 50


def _powers_of_two(magnitude: np.ndarray) -> np.ndarray:
    """1 where ``magnitude`` is in the safe range (or 0), else a power of two near it."""
    exponent = np.frexp(magnitude)[1]
    unsafe = (magnitude > 0) & (np.abs(exponent) > _SAFE_EXPONENT)
    return np.where(unsafe, np.ldexp(1.0, exponent - 1), 1.0)


def scaling_statistics(X: np.ndarray, mode: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``(offset, scale)`` per feature, with ``x_scaled = (x - offset) / scale``.

    ``mode`` is 'standard' (mean, standard deviation), 'minmax' (minimum, range) or None (no
    per-feature scaling: offset 0 and one power of two for all features, 1 unless the data's
    magnitude would over- or underflow squared distances; the geometry is unchanged). The
    statistics are taken on columns rescaled by powers of two, so they hold at any magnitude.
    Constant features get scale 1. Raises ValueError when the scaled data would not be finite;
    with ``mode=None``, warns about varying features too small to change any distance.
    """
    magnitude = np.abs(X).max(axis=0)
    low, high = X.min(axis=0), X.max(axis=0)
    if mode is None:
        offset = np.zeros(X.shape[1])
        scale = np.full(X.shape[1], _powers_of_two(magnitude.max(initial=0.0)))
        spread = high - low
        lost = np.flatnonzero((spread > 0) & (spread < magnitude.max() * 2.0**-26))
        if lost.size:
            warnings.warn(
                f"features {lost.tolist()} (0-based) vary by less than 1e-8 of the largest "
                "feature's magnitude: with scaling=None they cannot change any distance; use "
                "scaling='standard'", UserWarning, stacklevel=5,
            )
    else:
        power = _powers_of_two(magnitude)
        if mode == "standard":
            shrunk = X / power if (power != 1).any() else X
            offset, scale = shrunk.mean(axis=0) * power, shrunk.std(axis=0) * power
        elif mode == "minmax":
            offset, scale = low, (high / power - low / power) * power
        else:
            raise ValueError(f"scaling must be 'standard', 'minmax' or None, got {mode!r}")
    scale = np.where(scale > 0, scale, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        extremes = (np.stack([low, high]) - offset) / scale
    wide = np.flatnonzero(~np.isfinite(extremes).all(axis=0) | ~np.isfinite(scale))
    if wide.size:
        raise ValueError(
            f"features {wide.tolist()} (0-based) span too wide a range to scale in float64 "
            f"(their values reach {float(magnitude[wide].max()):.3g}); rescale them first"
        )
    return offset, scale
