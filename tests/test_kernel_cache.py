"""Compiled kernels are never loaded from a cache built from other sources."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from rebelboost import _kernel_cache
from rebelboost._kernel_cache import cache_files, refresh

SRC = str(Path(_kernel_cache.__file__).parents[1])


def _package(root: Path, g_returns: int) -> Path:
    """A package of two files whose cached kernel ``a.f`` calls ``b.g`` in the other file,
    guarded as rebelboost's own ``__init__`` guards its kernels."""
    pkg = root / "cachedpkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from pathlib import Path
        from rebelboost._kernel_cache import refresh
        refresh(Path(__file__).parent)
    """))
    (pkg / "a.py").write_text(textwrap.dedent("""
        import numba
        from .b import g

        @numba.njit(cache=True)
        def f():
            return g() + 10
    """))
    (pkg / "b.py").write_text(textwrap.dedent(f"""
        import numba

        @numba.njit(cache=True)
        def g():
            return {g_returns}
    """))
    return pkg


def _run_f(root: Path) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), SRC])}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", "from cachedpkg.a import f; print(f())"],
                         env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_a_kernel_calling_an_edited_file_runs_the_edited_code(tmp_path):
    # numba alone would load f's cache (a.py did not change) and return 11 again
    pkg = _package(tmp_path, 1)
    assert _run_f(tmp_path) == 11
    assert cache_files(pkg)  # f and g were cached
    _package(tmp_path, 2)  # b.py edited, a.py untouched
    assert _run_f(tmp_path) == 12


def test_the_cache_is_kept_while_the_sources_read_the_same(tmp_path):
    pkg = _package(tmp_path, 1)
    (pkg / "__pycache__").mkdir()
    cached = pkg / "__pycache__" / "a.f-5.py311.nbi"
    cached.write_bytes(b"index")
    assert refresh(pkg)  # no stamp yet: the cache's sources are unknown
    assert not cached.exists()
    cached.write_bytes(b"index")
    assert not refresh(pkg)
    os.utime(pkg / "b.py", ns=(1, 1))  # touched, same bytes: still the same sources
    assert not refresh(pkg) and cached.exists()
    (pkg / "b.py").write_text((pkg / "b.py").read_text() + "\n# edited\n")
    assert refresh(pkg) and not cached.exists()
