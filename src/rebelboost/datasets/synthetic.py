"""Synthetic data sets of the papers."""

from __future__ import annotations

import numpy as np


def make_spiral(n_samples: int = 500, n_classes: int = 3, noise: float = 0.2, random_state=None):
    """Interleaved 2-D spiral arms, one per class (the ICML 2017 paper's toy problem)."""
    rng = np.random.default_rng(random_state)
    y = np.arange(n_samples) % n_classes
    t = rng.uniform(0.0, 1.0, n_samples)
    angle = 4.0 * np.pi * t + 2.0 * np.pi * y / n_classes
    radius = 0.2 + 0.8 * t
    X = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    X += noise * 0.1 * rng.standard_normal(X.shape)
    return X, y
