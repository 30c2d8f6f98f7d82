"""The demo's fit time where numba compiles its kernels during the first fit."""

from __future__ import annotations

import numba

from rebelboost import demo
from rebelboost.datasets import load_pendigits
from rebelboost.ensemble import RebelClassifier


def _counted(fits: list, compiles: bool) -> type:
    """RebelClassifier counting its fits; with ``compiles``, each fit first has numba
    compile a new function, as a first run on a machine compiles the kernels."""

    class Counted(RebelClassifier):
        def fit(self, X, y, *args, **kwargs):
            fits.append(len(X))
            if compiles:
                numba.njit(lambda v: v + 1)(1)
            return super().fit(X, y, *args, **kwargs)

    return Counted


def test_a_fit_that_compiled_is_timed_again(tmp_path, monkeypatch):
    fits, lines = [], []
    monkeypatch.setattr(demo, "RebelClassifier", _counted(fits, compiles=True))
    result = demo.run_demo(n_estimators=3, out_dir=tmp_path, echo=lines.append)
    assert len(fits) == 2  # the first fit compiled: the table shows the second
    assert result["rebel_first_fit_seconds"] is not None
    assert any("first fit took" in line for line in lines)


def test_a_fit_with_cached_kernels_runs_once(tmp_path, monkeypatch):
    data = load_pendigits()
    RebelClassifier(2, random_state=0).fit(data.X_train, data.y_train)  # (compiled now)
    fits, lines = [], []
    monkeypatch.setattr(demo, "RebelClassifier", _counted(fits, compiles=False))
    result = demo.run_demo(n_estimators=3, out_dir=tmp_path, echo=lines.append)
    assert len(fits) == 1
    assert result["rebel_first_fit_seconds"] is None
    assert not any("first fit took" in line for line in lines)
