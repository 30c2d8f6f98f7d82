"""``rebelboost fit --scheduler ADDRESS``: the same model fitted on a Dask cluster.

The workers read DATA themselves (``dask.dataframe.read_csv`` / ``read_parquet``: a path every
worker can read, such as a shared file system or object store), so the rows never pass
through this process; the model file written is the local estimator's
(:class:`~rebelboost.dask.DaskRebelClassifier`).
"""

from __future__ import annotations

import time
import warnings

import click

from ..categorical import NumbersAsTextWarning
from ..costs import cost_column_names
from .tables import categorical_columns, read_decision_costs


def fit_on_cluster(address: str, data: str, target: str | None, n_estimators: int | None,
                   params: dict, categorical: str | None, quiet: bool,
                   cost_matrix: str | None = None, cost_columns: bool = False):
    """Fit DATA's rows on the cluster at ``address`` (``cost_matrix``: a cost CSV, as the
    local fit reads it; ``cost_columns``: per-row costs from DATA's ``cost_<class>``
    columns, which the workers read with the rows); returns the fitted estimator (saved by
    the caller), after echoing a summary unless ``quiet``."""
    try:
        import dask.dataframe as dd
        from distributed import Client

        from ..dask import DaskRebelClassifier
    except ImportError as exc:
        raise click.ClickException(f"--scheduler needs the dask extra (pip install "
                                   f"'rebelboost[dask]'): {exc}") from None
    lower = data.lower()
    if lower.endswith((".csv", ".csv.gz", ".txt")):
        frame = dd.read_csv(data)
    elif lower.endswith((".parquet", ".pq")) or not lower.rsplit("/", 1)[-1].count("."):
        frame = dd.read_parquet(data)  # (a file, or a directory of parts)
    else:
        raise click.ClickException(f"--scheduler reads CSV or Parquet data, not {data!r}")
    if target is None or target not in frame.columns:
        raise click.ClickException(f"--scheduler needs --target naming a column of {data!r} "
                                   f"(it has {list(frame.columns)})")
    X, y = frame.drop(columns=[target]), frame[target]
    try:
        client = Client(address, timeout="30s")
    except OSError as exc:
        raise click.ClickException(f"cannot reach the scheduler at {address!r}: {exc}") from None
    with client:
        sample_cost = None
        if cost_matrix is not None or cost_columns:  # (they name the classes: read them)
            import numpy as np

            classes = np.unique(y.unique().compute().to_numpy())
        if cost_matrix is not None:
            params["cost_matrix"], params["decisions"] = read_decision_costs(cost_matrix,
                                                                             classes)
        if cost_columns:  # (checked as numbers by fit, partition by partition)
            names = cost_column_names(X.columns, classes)
            sample_cost, X = X[names], X.drop(columns=names)
        params = dict(params, categorical_features=categorical_columns(X, categorical))
        model = DaskRebelClassifier(n_estimators, client=client, **params)
        history: list = []
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", NumbersAsTextWarning)
            model.fit(X, y, sample_cost=sample_cost, callbacks=[history.append])
        seconds = time.perf_counter() - start
        for warning in caught:  # (the workers' finding, in the command line's form)
            if issubclass(warning.category, NumbersAsTextWarning):
                click.echo(f"warning: {warning.message}", err=True)
            else:
                warnings.showwarning(warning.message, warning.category, warning.filename,
                                     warning.lineno)
        if not quiet:
            costly = cost_matrix is not None or cost_columns
            n_rows, (wrong, cost) = _score_partitions(frame, list(X.columns), target,
                                                      model.to_local(), costly)
            click.echo(f"fitted {model.n_estimators_} iterations on {n_rows} rows x "
                       f"{model.n_features_in_} features, {len(model.classes_)} classes, on "
                       f"{len(client.nthreads())} workers in {seconds:.2f} s "
                       f"({model.round_trips_.mean():.1f} round trips and "
                       f"{model.exchanges_.mean():.1f} exchanges between the workers a "
                       "tree)")
            from .model_commands import training_lines

            for line in training_lines(model, wrong / n_rows, cost / n_rows if costly else None,
                                       history):
                click.echo(line)
    return model


def _score_partitions(frame, features: list, target: str, local, costly: bool
                      ) -> tuple[int, tuple[int, float]]:
    """``(rows, (wrong labels, summed cost))`` of the fitted ``local`` model on DATA, each
    partition scored where it lives (the cost by the model's cost matrix, as the local
    command line's summary: per-row cost columns by their classes' mean rows)."""
    import numpy as np
    import pandas as pd

    from ..metrics import mean_cost

    def tally(part):
        truth = part[target].to_numpy()
        wrong = cost = 0.0
        if len(part):
            predicted = local.predict(part[features])
            if local.decisions_ is None:
                wrong = float(np.sum(predicted != truth))
            if costly:
                cost = len(part) * mean_cost(truth, predicted, local.cost_matrix_,
                                             local.classes_, local.decisions_)
        return pd.DataFrame({"rows": [len(part)], "wrong": [wrong], "cost": [cost]})

    sums = frame.map_partitions(tally, meta={"rows": "i8", "wrong": "f8", "cost": "f8"}
                                ).sum().compute()
    return int(sums["rows"]), (int(sums["wrong"]), float(sums["cost"]))
