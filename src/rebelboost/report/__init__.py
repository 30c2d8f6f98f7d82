"""A self-contained HTML report on a fitted model and a labelled data set: summary, curves,
results, importances and every weak learner (the white-box view), for ``rebelboost report``.

Figures need matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

from pathlib import Path

from .html import render_report


def write_report(model, X, y, path, *, title: str | None = None, X_train=None,
                 y_train=None) -> Path:
    """Write the report on ``model`` evaluated on (X, y) to ``path`` and return the path.

    ``X_train, y_train`` (optional) add training error and cost beside the given data's.
    """
    if (X_train is None) != (y_train is None):
        raise ValueError("give both X_train and y_train, or neither")
    page = render_report(model, X, y, title=title, X_train=X_train, y_train=y_train)
    path = Path(path)
    path.write_text(page, encoding="utf-8")
    return path


__all__ = ["render_report", "write_report"]
