"""glibc's allocator on the processes that hold row blocks (Dask workers) while they train:
arrays that come and go every round of splits cost page faults where the allocator maps
them afresh.

Dask's nannies start workers with ``MALLOC_TRIM_THRESHOLD_`` (to give memory back to the
system), which pins glibc's mmap threshold at 128 KiB: every array between 128 KiB and
32 MiB (histograms, row lists, gathered rows) becomes a fresh mapping whose pages fault in,
zeroed, at each use. :func:`training_allocation` puts the threshold where glibc's own
dynamic threshold ends while the rounds of splits run, and back after them (the setup before,
where a worker's memory peaks, keeps Dask's allocation; BENCHMARKS.md, "Arrays from the
heap while Dask workers train").

While training, NumPy's ``madvise(MADV_HUGEPAGE)`` on its large arrays is off as well: under
the common ``defrag=madvise`` setting of transparent huge pages, a fresh array so marked
stalls its first touch on the kernel's compaction (a tree's new row channels on a worker took
2-3x the time of filling them; BENCHMARKS.md, "Huge pages off while workers train"). Every
boosting loop does the same for the arrays its stages make afresh
(:func:`fresh_arrays_unadvised`): the arrays made before it (the bins, the rows' channels)
keep their huge pages.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading

TRAINING_THRESHOLD = 32 << 20  # glibc's ceiling for its dynamic threshold (64-bit)
PINNED_THRESHOLD = 128 << 10  # glibc's initial threshold, where MALLOC_TRIM_THRESHOLD_ pins it
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number
_training = False  # this process's threshold is the training one
_advice_lock = threading.RLock()
_advice_holders = 0  # of NumPy's hugepage advice off (:func:`_hold_advice_off`)
_advice_before = True  # the advice when the first of them took hold
_training_holds_advice = False  # training is one of them


def _glibc():
    """glibc, in a process started with ``MALLOC_TRIM_THRESHOLD_`` and without the user's
    own ``MALLOC_MMAP_THRESHOLD_``; None elsewhere (or where the C library is not glibc)."""
    if (sys.platform != "linux" or "MALLOC_TRIM_THRESHOLD_" not in os.environ
            or "MALLOC_MMAP_THRESHOLD_" in os.environ):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018  (glibc has both)
    except (OSError, AttributeError):
        return None
    return libc


def set_mmap_threshold(size: int) -> bool:
    """glibc's mmap threshold set to ``size`` bytes where :func:`_glibc` allows it. True
    where it was set."""
    libc = _glibc()
    return libc is not None and bool(libc.mallopt(_M_MMAP_THRESHOLD, size))


def training_allocation(on: bool) -> bool:
    """The training threshold (``on``) and NumPy's hugepage advice off, or both back
    (:func:`set_mmap_threshold`; True where the threshold was set). Either, called again, does
    nothing more: training holds the advice off once (:func:`_hold_advice_off`)."""
    global _training, _training_holds_advice
    done = set_mmap_threshold(TRAINING_THRESHOLD if on else PINNED_THRESHOLD)
    _training = on and done
    with _advice_lock:
        if on != _training_holds_advice:
            _training_holds_advice = on
            _hold_advice_off(on)
    return done


def _hold_advice_off(hold: bool) -> None:
    """One holder more (``hold``) or one fewer of NumPy's hugepage advice off: the advice is
    off while any holds it (training, :func:`fresh_arrays_unadvised` blocks on any thread) and
    as it was before the first once the last lets go. Nothing where NumPy has no switch."""
    global _advice_holders, _advice_before
    switch = hugepage_switch()
    if switch is None:
        return
    with _advice_lock:
        if hold:
            if _advice_holders == 0:
                _advice_before = bool(switch(False))
            _advice_holders += 1
        else:
            _advice_holders -= 1
            if _advice_holders == 0:
                switch(_advice_before)


def hugepage_switch():
    """NumPy's ``_set_madvise_hugepage`` (sets the advice, returns the setting before; the
    switch behind ``NUMPY_MADVISE_HUGEPAGE``), or None where NumPy has none."""
    import numpy as np

    core = getattr(np, "_core", None) or np.core  # (NumPy 2, NumPy 1)
    return getattr(core.multiarray, "_set_madvise_hugepage", None)


@contextlib.contextmanager
def fresh_arrays_unadvised():
    """NumPy's hugepage advice off inside the block and back as it was once the last holder
    lets go (:func:`_hold_advice_off`: blocks nest and run on several threads at once, a cost
    route's fold models and final fit; a worker's training holds it too): for a loop whose
    large arrays are made afresh every iteration, while the arrays made before it keep their
    huge pages. A fresh array so advised stalls its first touch on the kernel's compaction
    under the common ``defrag=madvise`` setting: a 20M-row local fit's tree spent 0.83 s
    writing its rows' leaves into a new array, 0.12 s with the advice off (BENCHMARKS.md,
    "Fresh arrays without hugepage advice in the local loop")."""
    _hold_advice_off(True)
    try:
        yield
    finally:
        _hold_advice_off(False)


def release_free_memory() -> None:
    """The heap's free pages handed back to the system (glibc's ``malloc_trim``) while
    :func:`training_allocation` keeps arrays in the heap: before a tree's new channels, the
    last tree's freed arrays would add to the peak. Nothing otherwise."""
    if _training:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
