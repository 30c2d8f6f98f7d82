"""glibc's mmap threshold on processes that train row blocks (:mod:`rebelboost._malloc`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rebelboost import _malloc

linux = pytest.mark.skipif(sys.platform != "linux", reason="glibc's allocator: Linux only")


_PROBE = """
import ctypes, sys
import numpy as np
from rebelboost import _malloc

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks",
                                               "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
mapped = []
for on in (None, True, False):
    if on is not None:
        assert _malloc.training_allocation(on)
    before = libc.mallinfo2().hblks
    block = np.ones(1 << 17)  # 1 MiB
    mapped.append(libc.mallinfo2().hblks - before)
    del block
print(mapped)
"""


@linux
def test_the_threshold_moves_only_where_dask_pinned_it(monkeypatch):
    """Set where ``MALLOC_TRIM_THRESHOLD_`` is (as Dask's nannies start workers), never where
    it is not or where the user chose ``MALLOC_MMAP_THRESHOLD_``."""
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert not _malloc.training_allocation(True)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    assert not _malloc.training_allocation(True)
    _malloc.training_allocation(False)  # (NumPy's hugepage advice back)


@linux
def test_a_worker_like_process_takes_arrays_from_the_heap_while_it_trains():
    """In a process started as Dask starts workers (``MALLOC_TRIM_THRESHOLD_``), a 1 MiB
    array is a fresh mapping; with the training threshold, from the heap; after it, a
    mapping again."""
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "[1, 0, 1]"


def test_numpy_hugepage_advice_is_off_while_training_and_back_after():
    """NumPy's ``madvise(MADV_HUGEPAGE)`` (whose fresh arrays stall on the kernel's compaction)
    is off between ``training_allocation(True)`` and ``(False)``, then as it was, however many
    times either is called."""
    switch = _malloc.hugepage_switch()  # (sets, and returns the setting before)
    assert switch is not None
    original = switch(True)
    try:
        for _ in range(2):
            _malloc.training_allocation(True)
            _malloc.training_allocation(True)
            assert switch(False) is False  # off while training
            _malloc.training_allocation(False)
            _malloc.training_allocation(False)
            assert switch(True) is True  # the setting before training, back
        switch(False)
        _malloc.training_allocation(True)
        _malloc.training_allocation(False)
        assert switch(False) is False  # off before, off after
    finally:
        switch(original)
        _malloc.training_allocation(False)


def test_fresh_arrays_go_unadvised_inside_the_block_and_nested_blocks_restore_in_turn():
    """:func:`~rebelboost._malloc.fresh_arrays_unadvised`: the advice off inside, each block
    putting back what it found (on, or off where an outer block turned it off), also when the
    block raises."""
    switch = _malloc.hugepage_switch()
    original = switch(True)
    try:
        with _malloc.fresh_arrays_unadvised():
            assert switch(False) is False
            with _malloc.fresh_arrays_unadvised():
                assert switch(False) is False
            assert switch(False) is False  # the outer block's setting, not the original
        assert switch(True) is True
        with pytest.raises(RuntimeError), _malloc.fresh_arrays_unadvised():
            raise RuntimeError
        assert switch(False) is True  # back on after the error
        with _malloc.fresh_arrays_unadvised():
            pass
        assert switch(False) is False  # off before: off after
    finally:
        switch(original)


def test_blocks_on_threads_put_the_advice_back_when_the_last_one_ends():
    """Two threads' blocks (a cost route's folds and final fit), the first to open ending
    first: the advice stays off until the second ends, then is as before either opened."""
    import threading

    switch = _malloc.hugepage_switch()
    original = switch(True)
    opened, first_done, states = threading.Event(), threading.Event(), []

    def second():
        with _malloc.fresh_arrays_unadvised():
            opened.set()
            first_done.wait(10)
            states.append(switch(False))  # the first block has ended: still off

    try:
        with _malloc.fresh_arrays_unadvised():
            thread = threading.Thread(target=second)
            thread.start()
            assert opened.wait(10)
        first_done.set()
        thread.join(10)
        assert states == [False]
        assert switch(True) is True  # back once both ended
    finally:
        switch(original)


def test_a_block_and_training_hold_the_advice_off_until_both_let_go():
    """A block that ends while training holds the advice off leaves it off; training's end
    then puts back what the block found."""
    switch = _malloc.hugepage_switch()
    original = switch(True)
    try:
        with _malloc.fresh_arrays_unadvised():
            _malloc.training_allocation(True)
        assert switch(False) is False  # training still holds it
        _malloc.training_allocation(False)
        assert switch(True) is True  # as before the block
    finally:
        switch(original)
        _malloc.training_allocation(False)


def test_the_boosting_loop_makes_its_stages_without_hugepage_advice():
    """Stages run without the advice (a callback sees it off) and the fit leaves it as it
    found it."""
    import numpy as np

    from rebelboost import RebelClassifier

    switch = _malloc.hugepage_switch()
    original = switch(True)
    seen = []

    def callback(info):
        seen.append(switch(False))
        switch(False)

    try:
        rng = np.random.default_rng(0)
        RebelClassifier(3, random_state=0).fit(rng.random((60, 3)), np.arange(60) % 3,
                                               callbacks=[callback])
        assert seen == [False, False, False]
        assert switch(True) is True  # as before the fit
    finally:
        switch(original)
