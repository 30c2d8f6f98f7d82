"""``rebelboost demo``: the README's main job."""

from __future__ import annotations

import click


@click.command()
@click.option("--n-estimators", default=100, show_default=True, help="Boosting iterations.")
@click.option("--max-leaves", default=31, show_default=True,
              help="Leaves of every tree (REBEL's and AdaBoost's).")
@click.option("--out", "out_dir", default="demo-output", show_default=True,
              type=click.Path(file_okay=False), help="Folder for the plot and model file.")
def demo(n_estimators: int, max_leaves: int, out_dir: str) -> None:
    """Train REBEL on the bundled pendigits set, compare with AdaBoost, explain a prediction."""
    from ..demo import run_demo

    run_demo(n_estimators, max_leaves, out_dir, echo=click.echo)
