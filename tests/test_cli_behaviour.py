"""How the command line behaves around its work: start-up, output files, Ctrl-C, pipes."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from rebelboost import RebelClassifier, load_model
from rebelboost.cli import main
from rebelboost.ensemble import rebel

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))  # this checkout's rebelboost


def _invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _cli(*args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "rebelboost.cli", *map(str, args)], env=ENV,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A labelled CSV (target 'y', three classes) and its features as an npz file."""
    folder = tmp_path_factory.mktemp("cli_behaviour")
    rng = np.random.RandomState(0)
    X = rng.randn(300, 4)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1)
    pd.DataFrame(X, columns=list("abcd")).assign(y=y).to_csv(folder / "d.csv", index=False)
    np.savez(folder / "d.npz", X=X, y=y)
    return folder, X, y


def test_help_imports_neither_numpy_nor_the_library():
    probe = ("import sys, rebelboost.cli; print(sorted(m for m in ('numpy', 'pandas', 'sklearn',"
             " 'numba', 'rebelboost.ensemble') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], env=ENV, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_fit_checks_the_output_path_before_training(data, monkeypatch):
    folder, _, _ = data
    monkeypatch.setattr(rebel.RebelClassifier, "fit", lambda *a, **k: pytest.fail("trained"))
    result = _invoke("fit", folder / "d.csv", "-t", "y", "-o", folder / "no" / "m.json")
    assert result.exit_code == 1 and "no folder" in result.output


def test_a_failed_save_leaves_the_old_model_and_no_temporary_file(data, monkeypatch):
    def disk_full(model, path):
        Path(path).write_text("half a model")
        raise OSError("No space left on device")

    folder, _, _ = data
    (folder / "old.json").write_text("old")
    monkeypatch.setattr(rebel.RebelClassifier, "save", disk_full)
    result = _invoke("fit", folder / "d.csv", "-t", "y", "-o", folder / "old.json", "-q",
                     "--n-estimators", "2")
    assert result.exit_code == 1 and "No space left" in result.output
    assert (folder / "old.json").read_text() == "old"
    assert not [p for p in os.listdir(folder) if p.endswith(".tmp.json")]


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), "numba"])
def test_ctrl_c_is_one_line_and_status_130(data, monkeypatch, raised):
    def interrupted(*args, **kwargs):
        if raised == "numba":  # what a Ctrl-C inside compiled code comes out as
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:  # CPython sets the interrupt as the cause
                raise SystemError("CPUDispatcher(...) returned a result with an exception set") \
                    from exc
        raise raised

    folder, _, _ = data
    monkeypatch.setattr(rebel.RebelClassifier, "fit", interrupted)
    result = _invoke("fit", folder / "d.csv", "-t", "y", "-o", folder / "m.json", "-q")
    assert result.exit_code == 130 and result.output == "Aborted by Ctrl-C.\n"
    assert not (folder / "m.json").exists()


def test_other_system_errors_are_not_taken_for_ctrl_c(data, monkeypatch):
    def broken(*args, **kwargs):
        raise SystemError("a real bug")

    monkeypatch.setattr(rebel.RebelClassifier, "fit", broken)
    result = _invoke("fit", data[0] / "d.csv", "-t", "y", "-q")
    assert isinstance(result.exception, SystemError)


def test_ctrl_c_during_training_through_the_entry_point(data):
    folder, X, y = data
    # Every row twice with two labels: the loss has a positive floor, so training cannot end
    # by itself (at a zero loss) before the signal arrives.
    pd.DataFrame(np.vstack([X, X]), columns=list("abcd")).assign(
        y=np.concatenate([y, (y + 1) % 3])).to_csv(folder / "noisy.csv", index=False)
    # (as from a terminal: a shell's background job, such as a CI runner's, starts its
    # children with SIGINT ignored, and Python then installs no KeyboardInterrupt handler)
    fit = _cli("fit", folder / "noisy.csv", "-t", "y", "-o", folder / "long.json",
               "--n-estimators", "10000000", cwd=folder,
               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    fit.stderr.readline()  # the first progress line: training has started
    fit.send_signal(signal.SIGINT)
    _, err = fit.communicate(timeout=300)
    assert fit.returncode == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == "Aborted by Ctrl-C."
    assert not [p for p in os.listdir(folder) if "long.json" in p]


def test_predict_into_a_closed_pipe_ends_quietly(data, tmp_path):
    folder, X, y = data
    RebelClassifier(3).fit(X, y).save(tmp_path / "m.json")
    pd.DataFrame(np.tile(X, (100, 1)), columns=list("abcd")).to_csv(tmp_path / "big.csv",
                                                                     index=False)
    predict = _cli("predict", tmp_path / "m.json", tmp_path / "big.csv", "--proba")
    assert predict.stdout.readline().startswith("prediction,")
    predict.stdout.close()  # as `| head -1` does
    err = predict.stderr.read()
    assert predict.wait(timeout=300) == 141 and err == ""


def test_predict_leaves_out_the_target_for_a_model_fitted_from_npz(data, tmp_path):
    folder, X, y = data
    fitted = _invoke("fit", folder / "d.npz", "-o", tmp_path / "m.json", "-q",
                     "--n-estimators", "5")
    assert fitted.exit_code == 0, fitted.output
    result = _invoke("predict", tmp_path / "m.json", folder / "d.csv", "--target", "y")
    assert result.exit_code == 0, result.output
    model = load_model(tmp_path / "m.json")
    assert result.output.split()[1:] == [str(c) for c in model.predict(X)]
    explained = _invoke("explain", tmp_path / "m.json", folder / "d.csv", "-t", "y", "-r", "0")
    assert explained.exit_code == 0, explained.output


def test_probabilities_floored_at_tiny_are_written_as_zero(data, tmp_path):
    folder, X, y = data
    from rebelboost.calibration import CalibrationMap

    model = RebelClassifier(60, max_depth=3).fit(X, y)
    # A sharp temperature sends the least likely classes below the floor (sigmoid < tiny).
    model.calibration_, model.temperature_ = CalibrationMap("temperature", 0.01), 0.01
    assert (model.predict_proba(X) == np.finfo(float).tiny).any()  # the floor is reached
    model.save(tmp_path / "m.json")
    result = _invoke("predict", tmp_path / "m.json", folder / "d.csv", "-t", "y", "--proba",
                     "--expected-cost")
    assert result.exit_code == 0 and "e-308" not in result.output
    written = pd.read_csv(pd.io.common.StringIO(result.output))
    proba = written.filter(like="proba_").to_numpy()
    expected = model.predict_proba(X)
    np.testing.assert_array_equal(proba, np.where(expected < 1e-300, 0.0, expected))


def test_evaluate_reports_a_mean_cost_only_for_cost_sensitive_models(data, tmp_path):
    folder, X, y = data
    RebelClassifier(3).fit(X, y).save(tmp_path / "neutral.json")
    costs = [[0, 1, 5], [1, 0, 1], [1, 1, 0]]
    RebelClassifier(3, cost_matrix=costs).fit(X, y).save(tmp_path / "costly.json")
    neutral = _invoke("evaluate", tmp_path / "neutral.json", folder / "d.csv", "-t", "y")
    costly = _invoke("evaluate", tmp_path / "costly.json", folder / "d.csv", "-t", "y")
    assert neutral.exit_code == costly.exit_code == 0
    assert "mean cost" not in neutral.output and "mean cost" in costly.output


def test_a_numeric_column_with_a_few_text_values_is_warned_about(data, tmp_path):
    """A typo in a numeric CSV column makes pandas read it as text, which the fit would split
    as categories without a word: it is named, with the first offending value."""
    folder, X, y = data
    frame = pd.DataFrame(X.round(3), columns=list("abcd")).assign(y=y)
    frame["b"] = frame["b"].astype(object)
    frame.loc[7, "b"] = "oops"
    frame.to_csv(tmp_path / "typo.csv", index=False)
    fit = ("fit", tmp_path / "typo.csv", "-t", "y", "-o", tmp_path / "m.json",
           "--n-estimators", 3, "--quiet")
    result = _invoke(*fit)
    assert result.exit_code == 0, result.output
    assert "column 'b' is read as text, so as categories, because 1 of its" in result.stderr
    assert "values is not a number, such as 'oops' (data row 7)" in result.stderr
    assert result.stderr.count("'oops'") == 1  # (the library's own warning is not repeated)
    named = _invoke(*fit, "--categorical", "b")  # (declared categories: as asked, no warning)
    clean = _invoke("fit", folder / "d.csv", "-t", "y", "-o", tmp_path / "c.json",
                    "--n-estimators", 3, "--quiet")
    assert named.exit_code == clean.exit_code == 0
    assert "warning" not in named.stderr and "warning" not in clean.stderr
