"""Default thread counts from affinity and cgroup quotas; n_jobs overrides; kernels follow them."""

import math
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from rebelboost import parallel
from rebelboost.parallel import available_cpus, cgroup_cpu_limit, numba_threads, resolve_n_jobs


def _v2(root, text):
    (root / "cpu.max").write_text(text)
    return root


def _v1(root, quota, period="100000\n"):
    (root / "cpu").mkdir()
    if quota is not None:
        (root / "cpu" / "cpu.cfs_quota_us").write_text(quota)
    if period is not None:
        (root / "cpu" / "cpu.cfs_period_us").write_text(period)
    return root


@pytest.mark.parametrize("text, cpus", [
    ("150000 100000\n", 1.5),
    ("200000 100000", 2.0),
    ("max 100000\n", None),
    ("max\n", None),
    ("", None),
    ("garbage here\n", None),
    ("100000\n", None),
    ("0 100000\n", None),
    ("100000 0\n", None),
])
def test_cgroup_v2_cpu_max(tmp_path, text, cpus):
    assert cgroup_cpu_limit(_v2(tmp_path, text)) == cpus


@pytest.mark.parametrize("quota, period, cpus", [
    ("50000\n", "100000\n", 0.5),
    ("400000\n", "100000\n", 4.0),
    ("-1\n", "100000\n", None),
    ("abc\n", "100000\n", None),
    ("50000\n", "", None),
    ("50000\n", None, None),
    (None, "100000\n", None),
])
def test_cgroup_v1_quota(tmp_path, quota, period, cpus):
    assert cgroup_cpu_limit(_v1(tmp_path, quota, period)) == cpus


def test_cgroup_absent_or_unreadable(tmp_path):
    assert cgroup_cpu_limit(tmp_path / "missing") is None
    (tmp_path / "cpu.max").mkdir()  # exists, but reading it fails
    assert cgroup_cpu_limit(tmp_path) is None


def test_cgroup_v2_wins_over_v1(tmp_path):
    _v1(tmp_path, "300000\n")
    assert cgroup_cpu_limit(_v2(tmp_path, "100000 100000\n")) == 1.0


@pytest.fixture
def cpus(monkeypatch):
    """Set the affinity mask's size (None: no sched_getaffinity) and os.cpu_count()."""
    def set_(affinity, count=64):
        if affinity is None:
            monkeypatch.delattr(os, "sched_getaffinity", raising=False)
        else:
            monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(affinity)))
        monkeypatch.setattr(os, "cpu_count", lambda: count)
    return set_


def test_available_cpus_takes_the_smallest_limit(tmp_path, cpus):
    cpus(8)
    assert available_cpus(tmp_path) == 8  # no cgroup files: the affinity mask
    _v2(tmp_path, "150000 100000\n")
    assert available_cpus(tmp_path) == 2  # 1.5 CPUs rounded up
    cpus(1)
    assert available_cpus(tmp_path) == 1  # taskset -c 0
    (tmp_path / "cpu.max").write_text("max 100000\n")
    cpus(3)
    assert available_cpus(tmp_path) == 3


def test_available_cpus_falls_back_to_cpu_count(tmp_path, cpus):
    cpus(None, count=6)
    assert available_cpus(tmp_path) == 6
    assert available_cpus(_v2(tmp_path, "20000 100000\n")) == 1  # 0.2 CPUs: one thread
    cpus(None, count=None)
    assert available_cpus(tmp_path / "missing") == 1


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no affinity masks (not Linux)")
@pytest.mark.parametrize("n_cpus", [1, 2])
def test_available_cpus_follows_this_machines_affinity_mask(n_cpus):
    """Pinned to n CPUs (as ``taskset`` does), a process counts n, or the quota if smaller."""
    mask = sorted(os.sched_getaffinity(0))[:n_cpus]
    quota = cgroup_cpu_limit()
    expected = min(len(mask), math.ceil(quota)) if quota is not None else len(mask)
    code = (f"import os; os.sched_setaffinity(0, {set(mask)!r}); "
            "from rebelboost.parallel import available_cpus; print(available_cpus())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == expected


@pytest.mark.parametrize("n_jobs, threads", [
    (None, 4), (-1, 4), (-2, 3), (-4, 1), (-9, 1), (1, 1), (3, 3), (16, 16),
])
def test_resolve_n_jobs(monkeypatch, n_jobs, threads):
    monkeypatch.setattr(parallel, "available_cpus", lambda: 4)
    assert resolve_n_jobs(n_jobs) == threads


def test_n_jobs_zero_is_an_error():
    with pytest.raises(ValueError, match="n_jobs == 0"):
        resolve_n_jobs(0)
    with pytest.raises(ValueError, match="n_jobs == 0"), numba_threads(0):
        pass


def _blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_numba_threads_sets_and_restores(monkeypatch):
    np.ones((4, 4)) @ np.ones((4, 4))  # BLAS loaded
    pool = numba.config.NUMBA_NUM_THREADS
    before, blas_before = numba.get_num_threads(), _blas_threads()
    monkeypatch.setattr(parallel, "available_cpus", lambda: 1)  # e.g. a 1-CPU cgroup quota
    with numba_threads(None):
        assert numba.get_num_threads() == 1
        assert _blas_threads() == {1}
    with numba_threads(pool + 5, blas_threads=None):  # capped at numba's pool
        assert numba.get_num_threads() == pool
        assert _blas_threads() == {pool}
    assert numba.get_num_threads() == before
    assert _blas_threads() == blas_before


def test_blas_threads_stay_with_the_thread_that_set_them_first():
    """A block on another thread (a cost route's fold model) does not change BLAS's thread
    count under the holding thread's products, nor leave it changed when it ends; the
    holding thread's nested blocks still set it, and its last block restores it."""
    import threading

    np.ones((4, 4)) @ np.ones((4, 4))  # BLAS loaded
    blas_before = _blas_threads()
    entered, release, seen = threading.Event(), threading.Event(), []

    def other():
        with numba_threads(1):  # (BLAS on one thread, were it the holder)
            seen.append(_blas_threads())
            entered.set()
            release.wait(10)
        seen.append(_blas_threads())

    with numba_threads(2, blas_threads=2):
        thread = threading.Thread(target=other)
        thread.start()
        assert entered.wait(10)
        assert _blas_threads() == {2}
        with numba_threads(1):  # the holder's nested block
            assert _blas_threads() == {1}
        release.set()
        thread.join(10)
        assert _blas_threads() == {2}
    assert seen == [{2}, {2}]
    assert _blas_threads() == blas_before
    with numba_threads(1):  # nobody holds them now: set again
        assert _blas_threads() == {1}


def test_nested_default_keeps_the_enclosing_count():
    with numba_threads(1):
        with numba_threads(None):
            assert numba.get_num_threads() == 1
        with numba_threads(-1):  # explicit counts still apply
            assert numba.get_num_threads() == min(available_cpus(),
                                                  numba.config.NUMBA_NUM_THREADS)
        assert numba.get_num_threads() == 1


def _recording(monkeypatch, owner, name, seen):
    original = getattr(owner, name)

    def wrapped(*a, **k):
        seen.append((numba.get_num_threads(), _blas_threads()))
        return original(*a, **k)

    monkeypatch.setattr(owner, name, wrapped)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_prediction_and_binning_follow_n_jobs(monkeypatch):
    from rebelboost import AdaBoostMHClassifier, RebelClassifier, binning
    from rebelboost.learners.leaf_tree import LeafTreeArrays
    from rebelboost.learners.tree import TreeArrays

    rng = np.random.RandomState(0)
    X, y = rng.normal(size=(200, 5)), rng.randint(3, size=200)
    seen = []
    for name in ("leaves", "outputs"):
        _recording(monkeypatch, TreeArrays, name, seen)
    _recording(monkeypatch, LeafTreeArrays, "leaves", seen)
    _recording(monkeypatch, binning, "_bin_rows", seen)
    for cls in (RebelClassifier, AdaBoostMHClassifier):
        model = cls(3, n_jobs=1).fit(X, y)
        seen.clear()
        model.predict(X)
        list(model.staged_predict(X))
        assert seen and all(threads == 1 for threads, _ in seen)
    seen.clear()
    binning.Binner(16).fit(X).transform(X)  # outside a fit: the default count
    assert seen == [(min(available_cpus(), numba.config.NUMBA_NUM_THREADS), seen[0][1])]


def _env_after_import(env: dict) -> tuple[str, str]:
    """``(OMP_WAIT_POLICY, GOMP_SPINCOUNT)`` after ``import rebelboost`` in a process started
    with ``env`` over this one's environment without either."""
    code = ("import os, rebelboost; print(os.environ.get('OMP_WAIT_POLICY'), "
            "os.environ.get('GOMP_SPINCOUNT'))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")} | env
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return tuple(out.stdout.split())


def test_threads_spin_briefly_unless_the_user_chose():
    """The import sets a short spin (which libgomp takes over its default 3 ms) and leaves
    the user's own wait policy or spin count alone."""
    assert _env_after_import({}) == ("None", "1000")
    assert _env_after_import({"OMP_WAIT_POLICY": "active"}) == ("active", "None")
    assert _env_after_import({"OMP_WAIT_POLICY": "PASSIVE"}) == ("PASSIVE", "None")
    assert _env_after_import({"GOMP_SPINCOUNT": "50k"}) == ("None", "50k")


@pytest.mark.parametrize("env, spin", [
    ({}, False),
    ({"GOMP_SPINCOUNT": "1000"}, False),  # (rebelboost's own)
    ({"OMP_WAIT_POLICY": "PASSIVE"}, False),
    ({"OMP_WAIT_POLICY": "active"}, True),
    ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "10000"}, True),  # the count wins
    ({"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "100"}, False),
    ({"GOMP_SPINCOUNT": "10k"}, True),
    ({"GOMP_SPINCOUNT": "3M"}, True),
    ({"GOMP_SPINCOUNT": "9999"}, False),
    ({"GOMP_SPINCOUNT": "infinite"}, True),
    ({"GOMP_SPINCOUNT": "lots"}, False),
])
def test_threads_spin_where_the_environment_says(monkeypatch, env, spin):
    from rebelboost.parallel import threads_spin

    for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert threads_spin() is spin


@pytest.mark.parametrize("layer, spin, quick", [
    ("omp", False, False), ("omp", True, True), ("tbb", False, True),
    ("workqueue", True, False), (None, True, True), (None, False, False),
])
def test_threads_wake_quickly_under_tbb_or_spinning_openmp(monkeypatch, layer, spin, quick):
    """numba's TBB layer, or OpenMP threads that spin (``None``: numba has not chosen yet)."""
    from rebelboost import parallel

    def chosen():
        if layer is None:
            raise ValueError("Threading layer is not initialized.")
        return layer

    monkeypatch.setattr(parallel.numba, "threading_layer", chosen)
    monkeypatch.setattr(parallel, "threads_spin", lambda: spin)
    assert parallel.threads_wake_quickly() is quick


def test_a_thread_count_set_after_numba_was_imported_is_followed(tmp_path):
    """A process that imported numba (with rebelboost) before NUMBA_NUM_THREADS was set, as
    a Dask worker of ``LocalCluster(env=...)`` does, starts its threads at the count now set
    and can still compile: without the reload, numba starts them at the old count and its
    next compilation fails ("Cannot set NUMBA_NUM_THREADS ...")."""
    script = tmp_path / "late_environment.py"
    script.write_text(
        "import os\n"
        "import numba\n"
        "import numpy as np\n"
        "from rebelboost.parallel import numba_threads\n"
        "wanted = numba.config.NUMBA_NUM_THREADS + 1\n"
        "os.environ['NUMBA_NUM_THREADS'] = str(wanted)\n"
        "with numba_threads(None):\n"
        "    pass\n"
        "@numba.njit(parallel=True)\n"  # (not cached: compiled here, after the threads start)
        "def total(x):\n"
        "    s = 0.0\n"
        "    for i in numba.prange(x.shape[0]):\n"
        "        s += x[i]\n"
        "    return s\n"
        "assert total(np.ones(100)) == 100.0\n"
        "assert numba.config.NUMBA_NUM_THREADS == wanted\n"
        "print('ok')\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
