"""``rebelboost export``: write a model file in a format other runtimes serve (ONNX)."""

from __future__ import annotations

import click

from .model_commands import _library_errors, _load, _replacing


@click.command()
@click.argument("model_path", metavar="MODEL")
@click.option("--onnx", "onnx_path", required=True, type=click.Path(dir_okay=False),
              help="Write an ONNX graph (ai.onnx.ml tree ensemble, then the decision) here.")
def export(model_path: str, onnx_path: str) -> None:
    """Export MODEL as an ONNX graph: input X (float64, NaN = missing), outputs label,
    scores, probabilities and, for a cost-sensitive decision, expected_cost.

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
    click.echo(f"wrote {onnx_path}: input X ({model.n_features_in_} features, float64), "
               f"outputs {outputs}")
