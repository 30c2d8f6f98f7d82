"""Why the default cost route costs more than argmax in some suite cases (issue 29).

For each (set, seed, matrix) of ``cost_suite``'s protocol: cross-fit the fold models as the
route does, keep their test-set scores too, and compare on the test rows:

* ``T_oof``: the temperature fitted on the out-of-fold scores (what the route uses);
* ``T_test_final`` / ``T_test_folds``: the temperature that would be best on the test rows for
  the final (all-rows) model and for the fold models: if the final model is more confident
  than the folds (``T_test_final`` < ``T_oof``), the map fitted out of fold is too soft for it;
* test mean cost of argmax, of min risk on the final model at ``T_oof`` (the default), at
  ``T_test_final`` (an oracle), and of min risk on the fold models' averaged calibrated
  probabilities (``folds-avg``);
* the guard's out-of-fold paired difference min_risk - argmax and its standard error.

Usage: ``python benchmarks/cost_diagnose.py [SET:SEED:MATRIX ...]`` (defaults: a handful of
the cases above 1.05 x argmax in ``results/cost_suite.jsonl``).

(Its fold models' scores are the raw ones, as the route used them before stop 38; the route
now sizes them by each model's median margin: ``cost_scale_replay.py``.)
"""

from __future__ import annotations

import os
import sys

for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
from cost_suite import load_split, matrices  # noqa: E402
from sklearn.base import clone  # noqa: E402

from rebelboost import RebelClassifier  # noqa: E402
from rebelboost.calibration import fit_calibration, fit_temperature  # noqa: E402
from rebelboost.costs import certain_codes, min_risk_codes  # noqa: E402
from rebelboost.ensemble._cost_route import fold_assignment  # noqa: E402

CASES = ("iris:4:random2", "penguins:0:hedge", "movement_libras:2:random1", "cars:1:random3",
         "lymphography:2:random0", "dermatology:4:refer", "tae:4:random3",
         "analcatdata_happiness:1:random0")


def diagnose(name: str, seed: int, label: str, n_folds: int = 3) -> dict:
    X, y, X_te, y_te = load_split(name, seed, 2000)
    k = int(y.max()) + 1
    C = dict(matrices(k, np.bincount(y) / len(y), np.random.default_rng(1000 + seed)))[label]
    final = RebelClassifier(random_state=seed, n_jobs=1).fit(X, y)
    s_te = final._scores(X_te)
    folds = fold_assignment(y, n_folds, np.random.RandomState(seed))
    oof = np.empty((len(y), k))
    fold_te = []
    for f in range(n_folds):
        tr = folds != f
        m = clone(final)
        leaf = m.min_samples_leaf
        if leaf is not None and tr.sum() < 10 * leaf:
            m.set_params(min_samples_leaf=max(1, round(leaf * tr.sum() / len(y))))
        m.fit(X[tr], y[tr])
        present = np.unique(y[tr])  # a class the fold never saw: its least score
        got, got_te = m._scores(X[~tr]), m._scores(X_te)
        full, full_te = (np.repeat(g.min(1, keepdims=True), k, 1) for g in (got, got_te))
        full[:, present], full_te[:, present] = got, got_te
        oof[~tr] = full
        fold_te.append(full_te)
    w = np.ones(len(y))
    cal, proba_oof, ev = fit_calibration(oof, y, w, folds)
    rows = C[y]
    argmax_oof, minrisk_oof = rows[np.arange(len(y)), certain_codes(oof.argmax(1), C)], \
        rows[np.arange(len(y)), min_risk_codes(proba_oof, C)]
    diff = minrisk_oof - argmax_oof
    t_final = fit_temperature(s_te, y_te)
    t_folds = fit_temperature(np.concatenate(fold_te), np.tile(y_te, n_folds))
    from rebelboost.calibration import CalibrationMap

    cost = {
        "argmax": C[y_te, certain_codes(s_te.argmax(1), C)].mean(),
        "default": C[y_te, min_risk_codes(cal.proba(s_te), C)].mean(),
        "oracle-T": C[y_te, min_risk_codes(CalibrationMap("temperature", t_final).proba(s_te),
                                           C)].mean(),
        "folds-avg": C[y_te, min_risk_codes(np.mean([cal.proba(s) for s in fold_te], 0),
                                            C)].mean(),
        "folds-argmax": C[y_te, certain_codes(np.mean(fold_te, 0).argmax(1), C)].mean(),
    }
    return {"case": f"{name}:{seed}:{label}", "n": len(y), "n_test": len(y_te),
            "kind": cal.kind, "T_oof": cal.temperature, "T_test_final": t_final,
            "T_test_folds": t_folds, "guard_diff": diff.mean(),
            "guard_se": diff.std(ddof=1) / np.sqrt(len(y)),
            "oof_err": (oof.argmax(1) != y).mean(),
            "test_err_final": (s_te.argmax(1) != y_te).mean(),
            "test_err_folds": np.mean([(s.argmax(1) != y_te).mean() for s in fold_te]),
            **{f"cost_{m}": v for m, v in cost.items()}}


def main(cases) -> None:
    for case in cases:
        name, seed, label = case.split(":")
        r = diagnose(name, int(seed), label)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in r.items()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or CASES)
