"""How many trees the small-data shape needs: test error after 100-500 of its trees.

On every suite set of at most 1,400 rows (those whose 75% training split takes the small-data
shape of issue 28: 500 depth-2 vector trees at rate 1), 5 seeds of ``bench_suite.split``:
``RebelClassifier()`` is fitted once, and its staged predictions after N trees (the model a
fit of N trees gives: boosting adds trees in order) are scored. Prints each set's mean test
error % per N, the mean, the mean rank among the N, and how many sets erred more than 500
trees by over half a point.

    python benchmarks/small_data_iterations.py
"""

from __future__ import annotations

import numpy as np
from bench_suite import load, n_rows, set_names, split
from scipy.stats import rankdata

from rebelboost import RebelClassifier

LENGTHS = (100, 150, 200, 300, 400, 500)


def main() -> None:
    errors = {}
    for name in [s for s in set_names() if n_rows(s) <= 1400]:
        X, y = load(name)
        per_seed = []
        for seed in range(5):
            X_tr, X_te, y_tr, y_te = split(X, y, seed)
            classes, codes = np.unique(y_tr, return_inverse=True)
            model = RebelClassifier(n_jobs=2, random_state=seed).fit(X_tr, codes)
            assert model.resolved_params_["n_estimators"] == LENGTHS[-1], name
            per_seed.append([np.mean(classes[model.predict(X_te, stop=n)] != y_te)
                             for n in LENGTHS])
        errors[name] = 100 * np.mean(per_seed, axis=0)
        print(f"{name:24s} " + " ".join(f"{e:6.2f}" for e in errors[name]), flush=True)
    table = np.array(list(errors.values()))
    ranks = np.array([rankdata(row) for row in table])
    print("trees    " + " ".join(f"{n:6d}" for n in LENGTHS))
    print("mean     " + " ".join(f"{e:6.2f}" for e in table.mean(axis=0)))
    print("rank     " + " ".join(f"{r:6.2f}" for r in ranks.mean(axis=0)))
    worse = (table - table[:, -1:] > 0.5).sum(axis=0)
    print("> +0.5   " + " ".join(f"{w:6d}" for w in worse))


if __name__ == "__main__":
    main()
