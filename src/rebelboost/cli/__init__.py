"""The ``rebelboost`` command: one click group, one module per family of subcommands.

Only click is imported here and in the command modules; each command imports numpy, pandas and
the library when it runs, so that ``rebelboost --help`` starts quickly.
"""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from .demo_command import demo
from .export_command import export
from .model_commands import evaluate, explain, fit, predict
from .report_command import report
from .reproduce_command import reproduce

INTERRUPTED, BROKEN_PIPE = 130, 141  # 128 + SIGINT, 128 + SIGPIPE, as shells report them


def _interrupted(exc: BaseException | None) -> bool:
    """Whether ``exc`` is, or was raised while handling, a KeyboardInterrupt (numba's compiled
    code turns a Ctrl-C into a SystemError whose context is the KeyboardInterrupt)."""
    while exc is not None:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class _Group(click.Group):
    """The command group; ends a command stopped by Ctrl-C or by a closed output pipe quietly."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # e.g. `rebelboost predict ... | head`: the reader has gone
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(BROKEN_PIPE)
        except (KeyboardInterrupt, SystemError) as exc:
            if not _interrupted(exc):
                raise
            click.echo("Aborted by Ctrl-C.", err=True)
            ctx.exit(INTERRUPTED)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rebelboost")
def main() -> None:
    """Multi-class, cost-sensitive boosting (REBEL): train, evaluate and explain models."""


for _command in (fit, predict, evaluate, explain, export, demo, reproduce, report):
    main.add_command(_command)
