"""Thread counts that match the CPUs this process may really use, and threads that do not spin.

``os.cpu_count()`` reports the host's cores: inside a container with a CPU quota, or under
``taskset``, starting that many threads makes each parallel region wait for threads that have
no CPU to run on. :func:`available_cpus` counts what the affinity mask and the cgroup quota
allow; :func:`numba_threads` runs numba kernels (and BLAS) on that many threads, or on
``n_jobs``.

Waiting threads: numba uses its OpenMP layer here (GNU libgomp), whose idle threads spin for
about 3 ms by default, taking the CPU from the very thread a parallel region waits for when
other processes compete for the cores. Importing rebelboost (its ``__init__``) therefore sets
``GOMP_SPINCOUNT=1000`` (spin about 10 us, then sleep) unless the user has set it or
``OMP_WAIT_POLICY``; libgomp reads it once, when it loads, so this only takes effect if no
OpenMP-using library (LightGBM, numba's pool) has run a parallel region in this process yet,
and it applies to every OpenMP library in the process. Threads that slept at once
(``OMP_WAIT_POLICY=PASSIVE``, the setting up to stop 49) slowed LightGBM's many short regions
in the same process 5-10x; a spin of 10 us keeps its speed, and beside a busy process costs a
small fit about 10% over sleeping at once (BENCHMARKS.md, "Busy machines (issue 21)").
Threads that sleep take about 100 us to wake for each parallel region, so small kernels stay on
one thread, and a split's children are searched
in a region whose threads claim tiles as they come free (a late thread takes what is left:
:func:`~rebelboost.search.vector_children.children_claimed`, and over sparse bins
:func:`~rebelboost.search.vector_children.sparse_children_claimed`); where the user lets
idle threads spin longer (:func:`threads_spin`: on a machine of their own), leaves' split scans
from a few thousand cells run on every thread too
(:func:`~rebelboost.search.vector_scan.scan_tasks`), and so they do under numba's TBB layer
(:func:`threads_wake_quickly`).
BLAS threads get no work beside numba kernels: :func:`numba_threads` limits BLAS to one thread
there, and to the same count where BLAS does the parallel work; the count is one setting of the
process, held by the first thread that sets it (:func:`blas_threads_held`).
"""

from __future__ import annotations

import functools
import math
import os
import threading
from contextlib import contextmanager
from pathlib import Path

import numba
from threadpoolctl import ThreadpoolController

_CGROUP_ROOT = Path("/sys/fs/cgroup")
# libgomp's spin count from which a parallel region's threads are taken as awake (about 0.1 ms
# of spinning before they sleep)
SPINNING = 10_000
_SPIN_SUFFIXES = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_state = threading.local()  # numba's thread count is per calling thread, so is the nesting


def _spin_count(text: str) -> float:
    """libgomp's reading of ``GOMP_SPINCOUNT``: a count with an optional k, M, G or T, or
    ``infinite``; 0 for what it cannot read."""
    text = text.strip().lower()
    if text in ("infinite", "infinity"):
        return math.inf
    scale = _SPIN_SUFFIXES.get(text[-1:], 1.0)
    try:
        return float(text[:-1] if scale != 1.0 else text) * scale
    except ValueError:
        return 0.0


def threads_spin() -> bool:
    """Whether the environment lets idle OpenMP threads spin before they sleep, so that a
    parallel region starts in microseconds: ``GOMP_SPINCOUNT`` of at least :data:`SPINNING`
    or, without it, ``OMP_WAIT_POLICY=active`` (rebelboost's import sets a spin count of
    1,000 otherwise, below it)."""
    count = os.environ.get("GOMP_SPINCOUNT", "")
    if count.strip():
        return _spin_count(count) >= SPINNING
    return os.environ.get("OMP_WAIT_POLICY", "").strip().lower() == "active"


def threads_wake_quickly() -> bool:
    """Whether numba's threads start a parallel region in microseconds: its TBB layer (idle
    workers spin briefly, then sleep; ``pip install tbb`` or conda's ``tbb``), or its OpenMP
    layer where the environment lets idle threads spin (:func:`threads_spin`)."""
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel region has run yet: numba has not chosen
        layer = None
    return layer == "tbb" or (layer != "workqueue" and threads_spin())


def _affinity_count() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return None


def _read_quota(quota_file: Path, period_file: Path | None) -> float | None:
    """CPUs a cgroup quota allows (quota / period), or None: no limit, no file, unreadable."""
    try:
        fields = quota_file.read_text().split()
        if period_file is not None:
            fields = fields[:1] + period_file.read_text().split()[:1]
        if len(fields) < 2 or fields[0] == "max":
            return None
        quota, period = int(fields[0]), int(fields[1])
    except (OSError, ValueError):
        return None
    if quota <= 0 or period <= 0:  # v1 writes -1 for "no limit"
        return None
    return quota / period


def cgroup_cpu_limit(root: str | os.PathLike = _CGROUP_ROOT) -> float | None:
    """CPUs the cgroup quota allows this process (may be fractional); None when unlimited.

    Reads cgroup v2's ``cpu.max`` ("max 100000" or "150000 100000"), else cgroup v1's
    ``cpu/cpu.cfs_quota_us`` and ``cpu/cpu.cfs_period_us`` (quota -1: unlimited), as a
    container sees them under ``root``.
    """
    root = Path(root)
    v2 = root / "cpu.max"
    if v2.exists():
        return _read_quota(v2, None)
    return _read_quota(root / "cpu" / "cpu.cfs_quota_us", root / "cpu" / "cpu.cfs_period_us")


def available_cpus(cgroup_root: str | os.PathLike = _CGROUP_ROOT) -> int:
    """How many CPUs this process may really use: the default thread count.

    The smallest of the affinity mask's size and the cgroup quota rounded up (a quota of 1.5
    CPUs runs two threads at 75%), with ``os.cpu_count()`` where neither is known; at least 1.
    """
    counts = [_affinity_count()]
    quota = cgroup_cpu_limit(cgroup_root)
    if quota is not None:
        counts.append(math.ceil(quota))
    known = [c for c in counts if c]
    return max(1, min(known) if known else (os.cpu_count() or 1))


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Threads for ``n_jobs``: None or -1 gives :func:`available_cpus`, -2 one fewer, and so on.

    A positive count is taken as given; 0 is an error.
    """
    if n_jobs is None:
        return available_cpus()
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, -1 or a positive count")
    if n_jobs < 0:
        return max(1, available_cpus() + 1 + n_jobs)
    return n_jobs


@functools.cache
def _threadpools() -> ThreadpoolController:
    """The BLAS and OpenMP libraries, found once: a fresh scan took 2-12 ms, on every predict.

    numpy's and scipy's BLAS are loaded by then (rebelboost imports scikit-learn).
    """
    return ThreadpoolController()


def follow_thread_environment() -> None:
    """numba's pool size as ``NUMBA_NUM_THREADS`` says now, if its threads have not started.

    numba reads the variable once, when it is imported. A process whose environment is set
    after its imports (a Dask worker of ``LocalCluster(env={"NUMBA_NUM_THREADS": ...})``
    first re-imports its parent's main module, rebelboost and numba with it) would start
    its threads at the old size and then fail at its next compilation: "Cannot set
    NUMBA_NUM_THREADS to a different value once the threads have been launched"."""
    wanted = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if not wanted or wanted == str(numba.config.NUMBA_NUM_THREADS):
        return
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", True):  # (started: numba's own error)
        numba.config.reload_config()


@contextmanager
def numba_threads(n_jobs: int | None, blas_threads: int | None = 1):
    """Run the block's numba kernels on :func:`resolve_n_jobs` ``(n_jobs)`` threads.

    BLAS gets ``blas_threads`` threads (None: as many as numba). Where numba kernels do the
    parallel work, BLAS's own threads only cost: after each small product they spin-wait for
    the next one and take cores from the numba threads (MNIST, depth-2 REBEL trees on 2 cores:
    138 -> 87 ms per iteration with BLAS on one thread). Inside another ``numba_threads`` block,
    ``n_jobs=None`` keeps that block's settings, so a kernel that uses the default (binning)
    follows the ``n_jobs`` of the fit that calls it.
    """
    depth = getattr(_state, "depth", 0)
    if n_jobs is None and depth:
        yield
        return
    follow_thread_environment()
    wanted = min(resolve_n_jobs(n_jobs), numba.config.NUMBA_NUM_THREADS)  # numba's pool size
    previous = numba.get_num_threads()
    numba.set_num_threads(wanted)
    _state.depth = depth + 1
    try:
        with blas_threads_held(blas_threads or wanted):
            yield
    finally:
        _state.depth = depth
        numba.set_num_threads(previous)


_blas_holder = {"thread": None, "depth": 0}  # the thread whose blocks set BLAS's threads
_blas_lock = threading.Lock()


@contextmanager
def blas_threads_held(n: int):
    """BLAS on ``n`` threads in the block, unless another thread's block holds them.

    BLAS's thread count is one setting for the whole process. Where threads of one fit run
    blocks beside each other (a cost route's fold models beside its calibration), each
    setting and restoring it would change the count under the others' products, and some of
    BLAS's results depend on it in their last bits (scipy's L-BFGS-B steps on 1 or 2 threads:
    a calibration map, and the model file, that differed from run to run). So the first
    thread to enter a block holds the setting until its blocks end; the others' blocks run
    with it, and nested blocks of the holding thread set it as before."""
    me = threading.get_ident()
    with _blas_lock:
        held = _blas_holder["thread"] in (None, me)
        if held:
            _blas_holder["thread"] = me
            _blas_holder["depth"] += 1
    if not held:
        yield
        return
    try:
        with _threadpools().limit(limits=n, user_api="blas"):
            yield
    finally:
        with _blas_lock:
            _blas_holder["depth"] -= 1
            if _blas_holder["depth"] == 0:
                _blas_holder["thread"] = None
