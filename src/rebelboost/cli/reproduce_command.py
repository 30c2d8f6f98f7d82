"""``rebelboost reproduce NAME``: rerun one of the papers' experiments."""

from __future__ import annotations

import click

from ..experiments import EXPERIMENTS


def _listing() -> str:
    return "\n".join(f"  {name:16s} {what}" for name, (_, what) in EXPERIMENTS.items())


@click.command(epilog="Experiments:\n\n" + _listing().replace("\n", "\n\n"))
@click.argument("name", type=click.Choice([*EXPERIMENTS, "all"]))
@click.option("--out", "out_dir", default="reproductions", show_default=True,
              type=click.Path(file_okay=False), help="Folder for figures and tables.")
@click.option("--quick", is_flag=True, help="A small version that runs in seconds.")
def reproduce(name: str, out_dir: str, quick: bool) -> None:
    """Rerun an experiment of the papers; write its figures and table to --out/NAME."""
    from pathlib import Path

    from ..experiments import run_experiment

    failed = []
    for each in EXPERIMENTS if name == "all" else [name]:
        click.echo(f"== {each}: {EXPERIMENTS[each][1]}{' (quick)' if quick else ''}")
        result = run_experiment(each, Path(out_dir) / each, quick=quick, echo=click.echo)
        if result.table:
            click.echo(result.table)
        for claim, held in result.claims.items():
            click.echo(f"  [{'ok' if held else 'NOT REPRODUCED'}] {claim}")
        for path in result.files:
            click.echo(f"  wrote {path}")
        if not result.ok:
            failed.append(each)
    if failed:
        raise click.ClickException(f"claims not reproduced by: {', '.join(failed)}")
