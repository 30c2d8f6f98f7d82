"""Wall time of ``Binner.transform`` (2 threads) on normal values with 1% missing and one
5-level column, ``ROWS`` x 50, fitted once; ``REPEATS`` timings and a hash of the codes. Run it
with two source trees (``PYTHONPATH=<src>``) to compare them:

    python benchmarks/binning_time.py LABEL ROWS REPEATS
"""

from __future__ import annotations

import hashlib
import sys
import time

import numpy as np

from rebelboost.binning import Binner

rng = np.random.default_rng(0)
X = rng.standard_normal((int(sys.argv[2]), 50))
X[rng.random(X.shape) < 0.01] = np.nan
X[:, 4] = rng.integers(0, 5, len(X))
b = Binner().fit(X)
b.transform(X[:1000])  # (compile)
ts = []
for _ in range(int(sys.argv[3])):
    s = time.perf_counter()
    c = b.transform(X)
    ts.append(time.perf_counter() - s)
print(sys.argv[1], "transform s", np.round(ts, 3), hashlib.sha256(c.tobytes()).hexdigest()[:12])
