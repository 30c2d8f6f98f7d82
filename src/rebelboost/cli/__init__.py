"""The ``rebelboost`` command: one click group, one module per family of subcommands."""

from __future__ import annotations

import click

from .. import __version__
from .demo_command import demo
from .model_commands import evaluate, explain, fit, predict
from .report_command import report
from .reproduce_command import reproduce


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rebelboost")
def main() -> None:
    """Multi-class, cost-sensitive boosting (REBEL): train, evaluate and explain models."""


for _command in (fit, predict, evaluate, explain, demo, reproduce, report):
    main.add_command(_command)
