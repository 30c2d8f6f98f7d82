"""``rebelboost report``: one self-contained HTML page on a model file and a data file."""

from __future__ import annotations

import click

from .tables import existing_file, features, labels, one_line, read_table

TEST_ARRAYS = (("X", "y"), ("X_test", "y_test"))
TRAIN_ARRAYS = (("X", "y"), ("X_train", "y_train"))


def _labelled(model, path: str, target: str | None, npz_keys):
    """(X, y) of a data file, its columns matched to the model's features."""
    table = read_table(path, npz_keys)
    y = labels(table, target)
    X = features(table, target=target, names=getattr(model, "feature_names_in_", None),
                 n_features=model.n_features_in_)
    return X, y


@click.command(epilog="DATA and --train are .csv, .csv.gz, .parquet or .npz files; for npz files "
               "the arrays X and y (X_test and y_test, or for --train X_train and y_train) are "
               "used. The page needs matplotlib (pip install 'rebelboost[plot]').")
@click.argument("model_path", metavar="MODEL")
@click.argument("data")
@click.option("--target", "-t", help="Column holding the true labels (CSV and Parquet).")
@click.option("--out", "-o", default="report.html", show_default=True,
              type=click.Path(dir_okay=False), help="The HTML file to write.")
@click.option("--title", help="Page title (default: the estimator's name).")
@click.option("--train", "train_data", help="Training data: adds its error beside DATA's.")
def report(model_path: str, data: str, target: str | None, out: str, title: str | None,
           train_data: str | None) -> None:
    """Write an HTML report on MODEL evaluated on DATA: summary, curves, results, importances
    and every weak learner with its vector."""
    from .. import load_model
    from ..report import write_report

    existing_file(model_path, "model file")
    try:
        model = load_model(model_path)
    except (ValueError, OSError) as exc:
        raise click.ClickException(f"cannot load model {model_path!r}: {one_line(exc)}") from None
    X, y = _labelled(model, data, target, TEST_ARRAYS)
    X_train = y_train = None
    if train_data is not None:
        X_train, y_train = _labelled(model, train_data, target, TRAIN_ARRAYS)
    try:
        path = write_report(model, X, y, out, title=title, X_train=X_train, y_train=y_train)
    except (ValueError, OSError, ImportError) as exc:
        raise click.ClickException(f"cannot write the report: {one_line(exc)}") from None
    click.echo(f"report written to {path}")
