"""``rebelboost fit / predict / evaluate / explain``: train a model on a data file and use it.

Data files are CSV, Parquet or ``.npz`` (see :mod:`.tables`); models are the JSON files of
:mod:`rebelboost.io`. Bad input ends in one ``Error: ...`` line and exit status 1: the library's
``ValueError`` and ``OSError`` about user input are converted where the commands call it.
numpy, pandas and the library are imported inside the commands, so that ``--help`` is quick.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import click

from .tables import (
    categorical_columns,
    existing_file,
    features,
    labels,
    numbers_read_as_text,
    one_line,
    read_decision_costs,
    read_table,
)

FIT_ARRAYS = (("X", "y"), ("X_train", "y_train"))
USE_ARRAYS = (("X", "y"), ("X_test", "y_test"))
DATA_HELP = "DATA is a .csv, .csv.gz, .parquet or .npz file."


@contextmanager
def _library_errors(what: str) -> Iterator[None]:
    """Report the library's complaints about user input as one line: '<what>: <message>'."""
    try:
        yield
    except BrokenPipeError:
        raise  # the reader of standard output has gone: the group ends quietly
    except (ValueError, OSError) as exc:
        raise click.ClickException(f"{what}: {one_line(exc)}") from None


@contextmanager
def _replacing(path: str) -> Iterator[Path]:
    """A temporary file beside ``path``, renamed to ``path`` when the block succeeds.

    Made before the block runs, so an unwritable ``path`` fails before any work is done; on
    failure (or Ctrl-C) it is removed and ``path`` is left as it was.
    """
    target = Path(path)
    if target.is_dir():
        raise click.ClickException(f"cannot write {path!r}: it is a folder")
    if not target.parent.is_dir():
        raise click.ClickException(f"cannot write {path!r}: no folder {str(target.parent)!r}")
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp{target.suffix}")
    try:
        temporary.open("xb").close()
    except OSError as exc:
        raise click.ClickException(f"cannot write {path!r}: {exc.strerror}") from None
    try:
        yield temporary
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _load(path: str):
    """The model in ``path``, or a one-line error for a missing or corrupt file."""
    from .. import load_model

    existing_file(path, "model file")
    with _library_errors(f"cannot load model {path!r}"):
        return load_model(path)


def _model_input(model, table, target: str | None = None):
    """The columns of ``table`` the model reads, matched by name when it knows the names."""
    return features(table, target=target, names=getattr(model, "feature_names_in_", None),
                    n_features=model.n_features_in_)


TARGET_TO_DROP = click.option(
    "--target", "-t", help="Column holding the labels, left out (CSV and Parquet; needed only "
    "for models fitted without column names, such as from .npz files).")


@click.command(epilog=DATA_HELP + " For npz files the arrays X and y (or X_train and y_train) "
               "are used and --target is not needed.")
@click.argument("data")
@click.option("--target", "-t", help="Column holding the class labels (CSV and Parquet).")
@click.option("--model-out", "-o", default="model.json", show_default=True,
              type=click.Path(dir_okay=False),
              help="Model file to write (gzip-compressed when it ends in .gz).")
@click.option("--weak-learner",
              type=click.Choice(["vector_tree", "tree", "stump", "similarity"]),
              default="vector_tree", show_default=True,
              help="Leaf-wise trees with a K-vector per leaf, or the paper's binary learners.")
@click.option("--n-estimators", type=click.IntRange(min=1),
              help="Boosting iterations (LightGBM's num_iterations) [default: 100; 500 for "
              "vector_tree on at most 1,000 rows].")
@click.option("--max-depth", type=click.IntRange(1, 16),
              help="Depth limit of the trees [default: 2 for tree; for vector_tree 2 on at "
              "most 1,000 rows, else none].")
@click.option("--max-leaves", type=click.IntRange(2, 1 << 16),
              help="Leaves per vector_tree (LightGBM's num_leaves) [default: 31, or 63 above "
                   "10,000 training rows].")
@click.option("--learning-rate", type=click.FloatRange(0, min_open=True),
              help="Shrinkage of every step [default: 0.3 for vector_tree (1 on at most "
              "1,000 rows), else 1].")
@click.option("--min-samples-leaf", type=click.IntRange(min=1),
              help="Least sample weight of a vector_tree leaf (LightGBM's min_child_samples) "
                   "[default: 10, or 1 on at most 1,000 rows].")
@click.option("--subsample", type=click.FloatRange(0, 1, min_open=True),
              help="Share of the rows each vector_tree grows on (LightGBM's bagging_fraction "
                   "with bagging_freq=1) [default: 1].")
@click.option("--sampling", type=click.Choice(["uniform", "goss"]),
              help="How --subsample draws rows: uniformly, or GOSS's heaviest rows plus a "
                   "scaled-up draw of the rest [default: uniform].")
@click.option("--colsample-bytree", type=click.FloatRange(0, 1, min_open=True),
              help="Share of the features each vector_tree may split on (LightGBM's "
                   "feature_fraction) [default: 1].")
@click.option("--max-bins", type=click.IntRange(2, 255),
              help="Value bins per feature for the split search (LightGBM's max_bin) "
              "[default: 127 for vector_tree on at most 10,000 rows, else 255].")
@click.option("--min-data-in-bin", type=click.IntRange(min=1), default=5, show_default=True,
              help="At most one value bin per this many training rows for a numeric feature "
                   "(LightGBM's min_data_in_bin); 1: a bin per distinct value.")
@click.option("--histogram-bits", type=click.IntRange(2, 16),
              help="Quantize the split search's weights to this many bits (LightGBM's "
                   "use_quantized_grad; 12 keeps the accuracy): integer histograms and exact "
                   "sums, so a fit with --scheduler writes this file byte for byte.")
@click.option("--cost-matrix", type=click.Path(dir_okay=False),
              help="CSV: the K x K costs of predicting the column's class when the truth is "
              "the row's, optionally with a header row and index column of class labels; or "
              "a K x M table whose header names M decisions that are not the classes (e.g. "
              "the labels plus refer): predictions are then those decisions.")
@click.option("--cost-columns", is_flag=True,
              help="Per-row costs from the columns cost_<class>, one per class (the cost of "
              "predicting that class for the row; 0 at the row's own class). They are not "
              "features. Instead of --cost-matrix.")
@click.option("--validation-fraction", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Hold out this share of DATA and stop early when its error (cost) stops "
              "improving; the model keeps its best iteration.")
@click.option("--n-iter-no-change", type=click.IntRange(min=1),
              help="Early-stopping patience in iterations (LightGBM's early_stopping_round). "
              "[default: 50]")
@click.option("--categorical", metavar="COLS",
              help="Comma-separated feature columns (names, or 0-based indices for arrays) to "
                   "split by sets of categories; text columns are categorical anyway.")
@click.option("--random-state", type=int, help="Seed for the validation split and binning.")
@click.option("--n-jobs", type=int, help="Threads for the split search (default: all cores).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Fit on the Dask cluster of this scheduler (tcp://host:port): its workers "
                   "read DATA (CSV or Parquet, at a path they can all read, with --target) "
                   "and keep the rows; the model is a local fit's (the same trees; with "
                   "--histogram-bits the same file, byte for byte).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def fit(data: str, target: str | None, model_out: str, weak_learner: str,
        n_estimators: int | None,
        max_depth: int | None, max_leaves: int | None, learning_rate: float | None,
        min_samples_leaf: int | None, subsample: float | None, sampling: str | None,
        colsample_bytree: float | None, max_bins: int | None, min_data_in_bin: int,
        histogram_bits: int | None,
        cost_matrix: str | None, cost_columns: bool,
        validation_fraction: float | None, n_iter_no_change: int | None,
        categorical: str | None, random_state: int | None, n_jobs: int | None,
        scheduler: str | None, quiet: bool) -> None:
    """Train a REBEL model on DATA and write it to --model-out."""
    import numpy as np

    from .. import RebelClassifier, mean_cost
    from ..callbacks import IterationInfo
    from ..categorical import NumbersAsTextWarning
    from .progress import ProgressBar

    if n_iter_no_change is not None and validation_fraction is None:
        raise click.UsageError("--n-iter-no-change needs --validation-fraction (early stopping)")
    if cost_columns and cost_matrix is not None:
        raise click.UsageError("give --cost-matrix or --cost-columns, not both")
    # (the vector_tree options given: the others keep the estimator's defaults)
    options = {name: value for name, value in (
        ("min_samples_leaf", min_samples_leaf), ("subsample", subsample),
        ("sampling", sampling), ("colsample_bytree", colsample_bytree)) if value is not None}
    if validation_fraction is not None:
        options.update(early_stopping=True, validation_fraction=validation_fraction)
        if n_iter_no_change is not None:
            options["n_iter_no_change"] = n_iter_no_change
    if scheduler is not None:
        if weak_learner != "vector_tree":
            raise click.UsageError(f"--scheduler does not take --weak-learner {weak_learner} "
                                   "(the distributed fit grows vector_tree)")
        from .cluster_fit import fit_on_cluster

        params = dict(max_depth=max_depth, max_leaves=max_leaves, learning_rate=learning_rate,
                      max_bins=max_bins, min_data_in_bin=min_data_in_bin,
                      histogram_bits=histogram_bits, random_state=random_state, n_jobs=n_jobs,
                      **options)
        with _replacing(model_out) as temporary:
            with _library_errors(f"cannot fit {data!r} on {scheduler}"):
                model = fit_on_cluster(scheduler, data, target, n_estimators, params,
                                       categorical, quiet, cost_matrix, cost_columns)
            model.save(temporary)
        if not quiet:
            click.echo(f"wrote {model_out}")
        return
    table = read_table(data, FIT_ARRAYS)
    y = labels(table, target)
    sample_cost = None
    if cost_columns:
        if table.frame is None:
            raise click.ClickException("--cost-columns needs a CSV or Parquet table")
        from ..costs import cost_columns as read_cost_columns

        with _library_errors(f"cannot read the cost columns of {data!r}"):
            sample_cost, names = read_cost_columns(table.frame, np.unique(y))
        table.frame = table.frame.drop(columns=names)
    X = features(table, target=target)
    for line in numbers_read_as_text(X, categorical):
        click.echo(f"warning: {line}", err=True)
    params = dict(weak_learner=weak_learner, max_depth=max_depth, max_leaves=max_leaves,
                  learning_rate=learning_rate, max_bins=max_bins,
                  min_data_in_bin=min_data_in_bin, histogram_bits=histogram_bits,
                  random_state=random_state, n_jobs=n_jobs,
                  categorical_features=categorical_columns(X, categorical))
    if cost_matrix is not None:
        params["cost_matrix"], params["decisions"] = read_decision_costs(cost_matrix,
                                                                         np.unique(y))
    model = RebelClassifier(n_estimators, **params, **options)

    history: list[IterationInfo] = []
    costly = cost_matrix is not None or cost_columns
    bar = None if quiet else ProgressBar("cost" if costly else "error")
    with _replacing(model_out) as temporary:  # checks that model_out can be written
        start = time.perf_counter()
        with (_library_errors(f"cannot fit {data!r}"), bar or nullcontext(),
              warnings.catch_warnings()):
            # (said above, in the command line's words)
            warnings.simplefilter("ignore", NumbersAsTextWarning)
            model.fit(X, y, callbacks=[history.append, *([bar] if bar else [])],
                      sample_cost=sample_cost)
        seconds = time.perf_counter() - start
        with _library_errors(f"cannot write {model_out!r}"):
            model.save(temporary)
    if quiet:
        return

    predicted = model.predict(X)
    depth = model.resolved_params_["max_depth"]  # (the size-dependent defaults resolved)
    max_leaves = model.resolved_params_["max_leaves"]
    kind = {"tree": f"depth-{depth} trees", "stump": "stumps",
            "vector_tree": f"vector-leaf trees of up to {max_leaves} leaves"
                           + ("" if depth == -1 else f", depth {depth}"),
            "similarity": "localized similarities"}[weak_learner]
    click.echo(f"fitted {model.n_estimators_} iterations ({kind}) on {len(y)} rows x "
               f"{model.n_features_in_} features, {len(model.classes_)} classes, in "
               f"{seconds:.2f} s")
    cost = (mean_cost(y, predicted, model.cost_matrix_, model.classes_, model.decisions_)
            if costly else None)
    for line in training_lines(model, float(np.mean(predicted != y)), cost, history):
        click.echo(line)
    click.echo(f"wrote {model_out}")


def training_lines(model, error: float, cost: float | None, history: list) -> list[str]:
    """The summary's lines on the training rows, for a local or a cluster fit: the loss, the
    error (not where the model decides among decisions that are not labels), with costs
    (``cost`` not None) the mean cost and the route, and where training stopped early on
    held-out rows, their error or cost at the iteration kept (``history``: each iteration's
    :class:`~rebelboost.callbacks.IterationInfo`)."""
    lines = [f"  training loss    {model.train_loss_[-1]:.6g}"]
    if model.decisions_ is None:
        lines.append(f"  training error   {error:.4f}  (all rows of DATA)")
    if cost is not None:
        lines += [f"  training cost    {cost:.4f}", f"  decides by       {route_line(model)}"]
    if model.best_iteration_ is not None:
        kept = history[model.best_iteration_ - 1]
        name = "error" if cost is None else "cost "
        lines.append(f"  validation {name} {kept.validation_cost:.4f}  (best iteration "
                     f"{model.best_iteration_} of {len(history)} run; early stopping)")
    return lines


def route_line(model) -> str:
    """The cost route and its out-of-fold evidence, in one line."""
    evidence = getattr(model, "cost_evidence_", {})
    costs = evidence.get("route_costs", {})
    line = {"min_risk": "minimum expected cost", "argmax": "the most probable class",
            "loss": "the cost-sensitive loss's largest score"}[model.cost_route_]
    if costs:
        line += " (out-of-fold mean cost " + ", ".join(
            f"{route} {value:.4f}" for route, value in costs.items()) + ")"
    if "shape" in evidence:
        from ..report.cost_view import shape_sentence

        line += "; trees: " + shape_sentence(evidence["shape"])
    return line


@click.command(epilog=DATA_HELP + " Columns are matched to the model's features by name; "
               "others (such as the target) are ignored. For npz files the array X (or "
               "X_test) is used.")
@click.argument("model_path", metavar="MODEL")
@click.argument("data")
@click.option("--out", "-o", default="-", show_default=True,
              help="CSV file for the predictions ('-': standard output).")
@click.option("--proba", is_flag=True, help="Add a column proba_<class> per class.")
@click.option("--expected-cost", is_flag=True,
              help="Add a column expected_cost_<decision> per class (or named decision): "
              "the expected cost of that decision.")
@click.option("--early-exit", is_flag=True,
              help="Stop adding a row's learners once its class can no longer change: the "
              "same predictions from fewer learners (tree models).")
@TARGET_TO_DROP
def predict(model_path: str, data: str, out: str, proba: bool, expected_cost: bool,
            early_exit: bool, target: str | None) -> None:
    """Predict the class of every row of DATA with the model in MODEL; write a CSV.

    Values below 1e-300 are written as 0 (the model's probabilities are floored at float64's
    smallest normal number, 2.2e-308, which is no information)."""
    import numpy as np
    import pandas as pd

    model = _load(model_path)
    extras = [(prefix, method) for flag, prefix, method in (
        (proba, "proba", "predict_proba"), (expected_cost, "expected_cost", "expected_cost"))
        if flag]
    for _, method in extras:
        if not hasattr(model, method):
            raise click.ClickException(f"a {type(model).__name__} model has no {method}")
    table = read_table(data, USE_ARRAYS)
    X = _model_input(model, table, target)
    with _library_errors(f"cannot predict {data!r}"):
        columns = {"prediction": model.predict(X, early_exit="exact" if early_exit else None)}
        for prefix, method in extras:
            outputs = model.classes_ if method == "predict_proba" else model.decision_labels_
            names = [f"{prefix}_{c}" for c in outputs.tolist()]
            values = getattr(model, method)(X)
            values[np.abs(values) < 1e-300] = 0.0
            columns.update(zip(names, values.T, strict=True))
    with _library_errors(f"cannot write {out!r}"), click.open_file(out, "w") as f:
        pd.DataFrame(columns).to_csv(f, index=False, lineterminator="\n")
    if out != "-":
        click.echo(f"wrote {table.n_rows} predictions to {out}")


@click.command(epilog=DATA_HELP + " For npz files the arrays X and y (or X_test and y_test) "
               "are used.")
@click.argument("model_path", metavar="MODEL")
@click.argument("data")
@click.option("--target", "-t", help="Column holding the true labels (CSV and Parquet).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as one JSON object.")
def evaluate(model_path: str, data: str, target: str | None, as_json: bool) -> None:
    """Error rate, mean cost, confusion matrix and per-class error of MODEL on DATA."""
    import numpy as np
    from sklearn.metrics import confusion_matrix

    from .. import mean_cost

    model = _load(model_path)
    table = read_table(data, USE_ARRAYS)
    y = labels(table, target)
    X = _model_input(model, table, target)
    classes = model.classes_.tolist()
    unknown = sorted(set(y.tolist()) - set(classes), key=str)
    if unknown:
        raise click.ClickException(
            f"labels {unknown[:5]} in {data!r} are not classes of the model {classes}")
    with _library_errors(f"cannot predict {data!r}"):
        predicted = model.predict(X)
    cost_matrix = getattr(model, "cost_matrix_", None)
    decisions = getattr(model, "decisions_", None)
    cost = None if cost_matrix is None else mean_cost(y, predicted, cost_matrix, classes,
                                                      decisions)
    if decisions is not None:
        _evaluate_decisions(y, predicted, classes, decisions.tolist(), cost, as_json)
        return
    matrix = confusion_matrix(y, predicted, labels=model.classes_)
    support = matrix.sum(axis=1)
    per_class = [None if n == 0 else float(1 - matrix[k, k] / n) for k, n in enumerate(support)]
    result = {
        "n_rows": len(y),
        "error_rate": float(np.mean(predicted != y)),
        "mean_cost": cost,
        "classes": classes,
        "confusion_matrix": matrix.tolist(),
        "per_class": [{"class": c, "n_rows": int(n), "error": e}
                      for c, n, e in zip(classes, support, per_class, strict=True)],
    }
    if as_json:
        click.echo(json.dumps(result))
        return
    click.echo(f"rows        {result['n_rows']}")
    click.echo(f"error rate  {result['error_rate']:.4f}")
    if cost is not None and not np.array_equal(cost_matrix, 1 - np.eye(len(classes))):
        click.echo(f"mean cost   {cost:.4f}  (under the model's cost matrix)")
    names = [str(c) for c in classes]
    width = max(max(map(len, names)), len(str(matrix.max()))) + 2
    click.echo("confusion matrix (rows: true class, columns: predicted class)")
    click.echo(" " * width + "".join(f"{n:>{width}}" for n in names))
    for name, counts in zip(names, matrix, strict=True):
        click.echo(f"{name:>{width}}" + "".join(f"{v:>{width}d}" for v in counts))
    click.echo("per-class error")
    for name, n, e in zip(names, support, per_class, strict=True):
        click.echo(f"{name:>{width}}  " + ("-" if e is None else f"{e:.4f}") + f"  ({n} rows)")


@click.command(epilog=DATA_HELP + " For npz files the array X (or X_test) is used.")
@click.argument("model_path", metavar="MODEL")
@click.argument("data")
@click.option("--row", "-r", type=click.IntRange(min=0), required=True,
              help="Row of DATA to explain (0-based, not counting the header).")
@click.option("--top", "-n", type=click.IntRange(min=1), default=10, show_default=True,
              help="Number of weak learners to list.")
@TARGET_TO_DROP
def explain(model_path: str, data: str, row: int, top: int, target: str | None) -> None:
    """List the weak learners that decided MODEL's prediction for one row of DATA, then (tree
    models) why this decision: each decision's expected cost, the runner-up and the
    features that moved the decision.

    Learners are numbered from 1, in the order they were added (as in the HTML report)."""
    import numpy as np

    model = _load(model_path)
    if not hasattr(model, "explain"):
        raise click.ClickException(f"a {type(model).__name__} model has no explain")
    table = read_table(data, USE_ARRAYS)
    if row >= table.n_rows:
        raise click.ClickException(
            f"--row {row} is out of range: {data!r} has {table.n_rows} rows (0 to "
            f"{table.n_rows - 1})")
    X = _model_input(model, table, target)
    x = X.iloc[row] if hasattr(X, "iloc") else X[row]
    if getattr(model, "categories_", None) is None:  # (categorical rows keep their values)
        x = np.asarray(x, dtype=np.float64)
    with _library_errors(f"cannot explain row {row} of {data!r}"):
        explanation = model.explain(x, top=top)
    click.echo(f"row {row}: {_numbered_from_one(explanation)}")
    if explanation.decision is not None:  # tree models: why this decision, per feature
        click.echo(str(explanation.decision))


def _numbered_from_one(explanation) -> str:
    """An :class:`~rebelboost.explain.Explanation` as text, learners numbered from 1."""
    e = explanation
    lines = [
        f"predicted {e.predicted!r} over runner-up {e.runner_up!r} by margin {e.margin:.4g} = "
        f"the sum of every learner's term; the largest {len(e.terms)}:",
        "  margin   learner  rule",
        *(f"  {t.margin:+8.4f}  #{t.learner + 1:<6d} {t.rule}" for t in e.terms),
    ]
    top = sorted(e.feature_margins.items(), key=lambda kv: -abs(kv[1]))[:5]
    if top:  # similarity learners read whole rows, not single features
        lines.append("  by feature: " + ", ".join(f"{n} {v:+.3f}" for n, v in top))
    return "\n".join(lines)


def _evaluate_decisions(y, predicted, classes: list, decisions: list, cost: float,
                        as_json: bool) -> None:
    """Mean cost and the count of each decision per true class (decisions are not labels,
    so there is no error rate)."""
    import numpy as np

    table = [[int(np.sum((y == c) & (predicted == d))) for d in decisions] for c in classes]
    if as_json:
        click.echo(json.dumps({"n_rows": len(y), "mean_cost": cost, "classes": classes,
                               "decisions": decisions, "decision_counts": table}))
        return
    click.echo(f"rows        {len(y)}")
    click.echo(f"mean cost   {cost:.4f}  (under the model's cost matrix)")
    width = max(len(str(v)) for v in [*classes, *decisions, len(y)]) + 2
    click.echo("decisions (rows: true class, columns: decision taken)")
    click.echo(" " * width + "".join(f"{d:>{width}}" for d in decisions))
    for c, counts in zip(classes, table, strict=True):
        click.echo(f"{c!s:>{width}}" + "".join(f"{v:>{width}d}" for v in counts))
