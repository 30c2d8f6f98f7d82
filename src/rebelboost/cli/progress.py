"""A progress bar for ``fit``, driven by the estimator's per-iteration callbacks.

On a terminal the bar is redrawn in place (at most ten times a second); when stderr is a file
or a pipe it prints a plain line every tenth of the run instead, so logs stay readable.
"""

from __future__ import annotations

import sys
import time

import click

from ..callbacks import IterationInfo

WIDTH = 24


class ProgressBar:
    """Callback drawing ``[####----]  45/100  train loss 0.31  valid error 0.083  0:02`` on stderr.

    ``cost_label`` names the validation metric: 'error' under the 0-1 cost, else 'cost'. Use as
    a context manager so that the last state is drawn and the line ended however fit stops.
    """

    def __init__(self, cost_label: str = "error", tty: bool | None = None):
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.cost_label = cost_label
        self.start = time.perf_counter()
        self.last_draw = -1.0
        self.info: IterationInfo | None = None
        self.drawn: IterationInfo | None = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        if self.info is not None and self.info is not self.drawn:
            self._draw()
        if self.tty and self.drawn is not None:
            click.echo(err=True)

    def __call__(self, info: IterationInfo) -> None:
        self.info = info
        now = time.perf_counter()
        if self.tty:
            due = now - self.last_draw >= 0.1
        else:
            every = max(1, info.n_estimators // 10)
            due = info.iteration % every == 0 or info.iteration == 1
        if due or info.iteration == info.n_estimators:
            self.last_draw = now
            self._draw()

    def line(self) -> str:
        """The current state as one line of text."""
        info = self.info
        done = int(WIDTH * info.iteration / info.n_estimators)
        width = len(str(info.n_estimators))
        text = (f"[{'#' * done}{'-' * (WIDTH - done)}] {info.iteration:{width}d}/"
                f"{info.n_estimators}  train loss {info.train_loss:.4g}")
        if info.validation_cost is not None:
            text += f"  valid {self.cost_label} {info.validation_cost:.4g}"
        seconds = int(time.perf_counter() - self.start)
        return text + f"  {seconds // 60}:{seconds % 60:02d}"

    def _draw(self) -> None:
        self.drawn = self.info
        if self.tty:
            click.echo("\r" + self.line() + "\033[K", err=True, nl=False)
        else:
            click.echo(self.line(), err=True)
