"""``rebelboost export``: write a model file in a format other runtimes serve (ONNX), and
check that the runtime takes the model's decisions."""

from __future__ import annotations

import click

from .model_commands import (
    DATA_HELP,
    TARGET_TO_DROP,
    USE_ARRAYS,
    _library_errors,
    _load,
    _model_input,
    _replacing,
)
from .tables import read_table


@click.command(epilog=DATA_HELP + " Columns are matched to the model's features by name.")
@click.argument("model_path", metavar="MODEL")
@click.option("--onnx", "onnx_path", required=True, type=click.Path(dir_okay=False),
              help="Write an ONNX graph (ai.onnx.ml tree ensemble, then the decision) here.")
@click.option("--check", "check_data", metavar="DATA",
              help="Run the graph in onnxruntime on every row of DATA and compare its labels "
              "and probabilities with the model's (exit status 1 if a label differs).")
@TARGET_TO_DROP
def export(model_path: str, onnx_path: str, check_data: str | None,
           target: str | None) -> None:
    """Export MODEL as an ONNX graph: input X (float64, NaN = missing; a categorical
    column holds codes, the value's index in the graph's 'categories' metadata), outputs
    label, scores, probabilities and, for a cost-sensitive decision, expected_cost.

    Needs the onnx package (pip install 'rebelboost[onnx]'); serve it with onnxruntime."""
    model = _load(model_path)
    if not hasattr(model, "to_onnx"):
        raise click.ClickException(f"a {type(model).__name__} model cannot be exported")
    with _library_errors(f"cannot export {model_path!r} to ONNX"), _replacing(onnx_path) as tmp:
        try:
            proto = model.to_onnx(tmp)
        except ImportError as exc:
            raise click.ClickException(str(exc)) from None
    outputs = ", ".join(o.name for o in proto.graph.output)
    coded = ("" if getattr(model, "is_categorical_", None) is None else
             f"; {int(model.is_categorical_.sum())} categorical as codes (see the "
             "'categories' metadata)")
    click.echo(f"wrote {onnx_path}: input X ({model.n_features_in_} features, float64"
               f"{coded}), outputs {outputs}")
    if check_data is not None:
        _check(model, proto, check_data, target)


def _check(model, proto, data: str, target: str | None) -> None:
    import numpy as np

    try:
        import onnxruntime as ort
    except ImportError:
        raise click.ClickException("--check needs onnxruntime: pip install "
                                   "'rebelboost[onnx]'") from None
    X = _model_input(model, read_table(data, USE_ARRAYS), target)
    graph_X = model.encode(X)  # categorical columns as codes; predict reads the values
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    with _library_errors(f"cannot check on {data!r}"):
        got = dict(zip(names, session.run(None, {"X": graph_X}), strict=True))
        differ = int(np.sum(got["label"] != model.predict(X)))
        n = len(graph_X)
        line = f"checked on {n} rows of {data}: {n - differ} labels identical"
        if "probabilities" in got:
            gap = float(np.max(np.abs(got["probabilities"] - model.predict_proba(X))))
            line += f", largest probability difference {gap:.3g}"
    click.echo(line)
    if differ:
        raise click.ClickException(f"onnxruntime's label differs from the model's on {differ} "
                                   "rows")
