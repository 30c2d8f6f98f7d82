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
"""

from __future__ import annotations

import ctypes
import os
import sys

TRAINING_THRESHOLD = 32 << 20  # glibc's ceiling for its dynamic threshold (64-bit)
PINNED_THRESHOLD = 128 << 10  # glibc's initial threshold, where MALLOC_TRIM_THRESHOLD_ pins it
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number


def set_mmap_threshold(size: int) -> bool:
    """glibc's mmap threshold set to ``size`` bytes in a process started with
    ``MALLOC_TRIM_THRESHOLD_`` (and no ``MALLOC_MMAP_THRESHOLD_``, the user's own choice;
    nothing where the C library is not glibc). True where it was set."""
    if (sys.platform != "linux" or "MALLOC_TRIM_THRESHOLD_" not in os.environ
            or "MALLOC_MMAP_THRESHOLD_" in os.environ):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, size))
    except (OSError, AttributeError):  # (not glibc)
        return False


def training_allocation(on: bool) -> bool:
    """The training threshold (``on``) or the pinned one back (:func:`set_mmap_threshold`)."""
    return set_mmap_threshold(TRAINING_THRESHOLD if on else PINNED_THRESHOLD)


def release_free_memory() -> None:
    """The heap's free pages handed back to the system (glibc's ``malloc_trim``) where
    :func:`training_allocation` keeps arrays in the heap: before a tree's new channels, the
    last tree's freed arrays would add to the peak."""
    if (sys.platform == "linux" and "MALLOC_TRIM_THRESHOLD_" in os.environ
            and "MALLOC_MMAP_THRESHOLD_" not in os.environ):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # (not glibc)
            pass
