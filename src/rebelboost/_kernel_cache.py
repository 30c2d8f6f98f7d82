"""Numba's on-disk kernel cache, dropped whenever the package's sources change.

Numba caches each ``cache=True`` kernel next to its source and checks only that file's time
stamp: a kernel that calls (and inlines) kernels of other files is loaded stale after those
files change, and runs the old code with no warning (numba issue #1833). That is what a
``git pull`` into a clone does: git rewrites the changed files only. So on import the
package compares its sources with those its cache was built from, and where they differ it
deletes every cache file it holds; the kernels are compiled again on first use.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

STAMP_NAME = "kernel-sources.stamp"
_CACHE_SUFFIXES = (".nbi", ".nbc")


def _sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _times_key(root: Path, sources: list[Path]) -> str:
    """A key of every source's path, size and modification time (cheap: no reads)."""
    digest = hashlib.sha256()
    for path in sources:
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _content_key(root: Path, sources: list[Path]) -> str:
    """A key of every source's path and bytes."""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(f"{path.relative_to(root)}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_files(root: Path) -> list[Path]:
    """Numba's cache files of the sources under ``root`` (kept in their ``__pycache__``)."""
    return [p for p in root.rglob("__pycache__/*") if p.suffix in _CACHE_SUFFIXES]


def refresh(root: Path) -> bool:
    """Delete the numba cache files under ``root`` unless they were built from the sources
    there now; True where they were deleted. The sources' times are compared first and their
    contents only where those moved, so an import that finds nothing changed reads no source.
    Does nothing where ``root`` cannot be written (numba then keeps its cache elsewhere)."""
    stamp = root / "__pycache__" / STAMP_NAME
    if not os.access(root, os.W_OK):
        return False
    sources = _sources(root)
    times = _times_key(root, sources)
    try:
        saved_times, saved_content = stamp.read_text().split()
    except (OSError, ValueError):
        saved_times, saved_content = "", ""
    if times == saved_times:
        return False
    content = _content_key(root, sources)
    stale = content != saved_content
    if stale:
        for path in cache_files(root):
            try:
                path.unlink()
            except FileNotFoundError:  # (another process cleared it first)
                pass
    try:
        stamp.parent.mkdir(exist_ok=True)
        partial = stamp.with_name(f"{STAMP_NAME}.{os.getpid()}")
        partial.write_text(f"{times} {content}\n")
        os.replace(partial, stamp)
    except OSError:
        pass
    return stale
