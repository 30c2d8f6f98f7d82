"""A real cluster, started as users start one: ``dask scheduler`` and two ``dask worker``
processes from the command line (each worker under its nanny). The CLI fits on the scheduler's
address and writes the local fit's model (with ``--histogram-bits``, its file byte for byte);
a worker killed mid-fit is restarted by its nanny and the fit ends with the local model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from numpy.testing import assert_array_equal

distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402

from rebelboost import RebelClassifier, load_model  # noqa: E402
from rebelboost.cli import main  # noqa: E402
from rebelboost.dask import DaskRebelClassifier  # noqa: E402

# the dask command line beside this Python (a virtual environment's bin), else on PATH
DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
TREE_FIELDS = ("feature", "threshold", "missing_left", "left", "right")


@pytest.fixture(scope="module")
def address(tmp_path_factory):
    assert DASK, "the dask command line (distributed) is not installed"
    where = tmp_path_factory.mktemp("cluster")
    info = where / "scheduler.json"
    common = dict(cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    processes = [subprocess.Popen([DASK, "scheduler", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", str(info)], **common)]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert info.exists(), "the scheduler did not start within 60 s"
        for _ in range(2):
            processes.append(subprocess.Popen(
                [DASK, "worker", "--scheduler-file", str(info), "--nthreads", "1",
                 "--no-dashboard", "--memory-limit", "2GiB"], **common))
        address = json.loads(info.read_text())["address"]
        with distributed.Client(address) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _data(n=2400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.digitize(X[:, 0] + 0.6 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(n), [0.0, 1.0])
    return X, y


def test_the_cli_fits_on_a_scheduler_address(address, tmp_path):
    X, y = _data()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    frame["label"] = np.array(["low", "mid", "high"])[y]
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, (a, b) in enumerate([(0, 800), (800, 1500), (1500, 2400)]):  # CSV parts
        frame.iloc[a:b].to_csv(parts / f"part{i}.csv", index=False)
    runner = CliRunner()
    result = runner.invoke(main, ["fit", str(parts / "*.csv"), "--target", "label",
                                  "--n-estimators", "6", "--random-state", "3",
                                  "--scheduler", address, "-o", str(tmp_path / "dist.json")])
    assert result.exit_code == 0, result.output
    assert "on 2 workers" in result.output and "2400 rows" in result.output
    error = float(result.output.split("training error")[1].split()[0])
    assert 0 <= error < 0.3, result.output
    frame.to_csv(tmp_path / "all.csv", index=False)
    result = runner.invoke(main, ["fit", str(tmp_path / "all.csv"), "--target", "label",
                                  "--n-estimators", "6", "--random-state", "3", "-q",
                                  "-o", str(tmp_path / "local.json")])
    assert result.exit_code == 0, result.output
    dist, local = load_model(tmp_path / "dist.json"), load_model(tmp_path / "local.json")
    assert type(dist) is RebelClassifier
    for name in TREE_FIELDS:
        assert_array_equal(getattr(dist.trees_, name), getattr(local.trees_, name))
    features = frame.drop(columns="label")
    assert_array_equal(dist.predict(features), local.predict(features))
    # with integer histograms and exact sums: the same file, byte for byte; also with a
    # cost table of decisions (the posterior route, cross-fitted on the workers)
    (tmp_path / "refer.csv").write_text(",low,mid,high,refer\nlow,0,1,1,0.3\n"
                                        "mid,1,0,1,0.3\nhigh,1,1,0,0.3\n")
    for costs in ([], ["--cost-matrix", str(tmp_path / "refer.csv")]):
        for where, scheduler in (("dist12.json", ["--scheduler", address]),
                                 ("local12.json", [])):
            source = str(parts / "*.csv") if scheduler else str(tmp_path / "all.csv")
            result = runner.invoke(main, ["fit", source, "--target", "label",
                                          "--n-estimators", "6", "--random-state", "3",
                                          "--histogram-bits", "12", "-q", *scheduler, *costs,
                                          "-o", str(tmp_path / where)])
            assert result.exit_code == 0, result.output
        written = (tmp_path / "dist12.json").read_bytes()
        assert written == (tmp_path / "local12.json").read_bytes()
    assert b'"refer"' in written
    # early stopping on the rows a local fit holds out, GOSS trees: the same file, the same
    # summary line
    said = {}
    for where, scheduler in (("dist_es.json", ["--scheduler", address]), ("local_es.json", [])):
        source = str(parts / "*.csv") if scheduler else str(tmp_path / "all.csv")
        result = runner.invoke(main, ["fit", source, "--target", "label", "--n-estimators",
                                      "40", "--learning-rate", "1", "--random-state", "3",
                                      "--histogram-bits", "12", "--validation-fraction", "0.2",
                                      "--n-iter-no-change", "2", "--subsample", "0.5",
                                      "--sampling", "goss", *scheduler,
                                      "-o", str(tmp_path / where)])
        assert result.exit_code == 0, result.output
        said[where] = [line for line in result.output.splitlines() if "validation" in line]
    assert (tmp_path / "dist_es.json").read_bytes() == (tmp_path / "local_es.json").read_bytes()
    assert said["dist_es.json"] == said["local_es.json"] and "early stopping" in said[
        "dist_es.json"][0]
    assert load_model(tmp_path / "dist_es.json").n_estimators_ < 40
    bad = runner.invoke(main, ["fit", str(tmp_path / "all.csv"), "--target", "label",
                               "--scheduler", address, "--weak-learner", "stump"])
    assert bad.exit_code != 0 and "--weak-learner stump" in bad.output


def test_the_cli_on_a_scheduler_takes_per_row_cost_columns(address, tmp_path):
    """``--cost-columns`` on a cluster: the workers read each row's costs with its features
    (the ``cost_<class>`` columns, dropped from the features), and with integer histograms
    the model file is the local command line's, byte for byte."""
    X, y = _data(n=900, d=3, seed=4)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    frame["label"] = np.array(["low", "mid", "high"])[y]
    rng = np.random.default_rng(5)
    for j, name in enumerate(["low", "mid", "high"]):  # a wrong label costs 1-4, by row
        frame[f"cost_{name}"] = np.where(y == j, 0.0, rng.uniform(1, 4, len(y)).round(2))
    parts = tmp_path / "costs"
    parts.mkdir()
    for i, (a, b) in enumerate([(0, 400), (400, 900)]):
        frame.iloc[a:b].to_csv(parts / f"part{i}.csv", index=False)
    frame.to_csv(tmp_path / "all.csv", index=False)
    runner = CliRunner()
    for where, source, scheduler in (("dist.json", str(parts / "*.csv"), ["--scheduler", address]),
                                     ("local.json", str(tmp_path / "all.csv"), [])):
        result = runner.invoke(main, ["fit", source, "--target", "label", "--cost-columns",
                                      "--n-estimators", "4", "--random-state", "3",
                                      "--histogram-bits", "12", "-q", *scheduler,
                                      "-o", str(tmp_path / where)])
        assert result.exit_code == 0, result.output
    assert (tmp_path / "dist.json").read_bytes() == (tmp_path / "local.json").read_bytes()
    model = load_model(tmp_path / "dist.json")
    assert model.n_features_in_ == 3 and model.cost_matrix_.shape == (3, 3)
    # the summary, as the local command line's: error, cost (by the class-mean cost rows)
    # and the route, each partition scored without its cost columns
    said = {}
    for where, source, scheduler in (("dist.json", str(parts / "*.csv"), ["--scheduler", address]),
                                     ("local.json", str(tmp_path / "all.csv"), [])):
        result = runner.invoke(main, ["fit", source, "--target", "label", "--cost-columns",
                                      "--n-estimators", "4", "--random-state", "3",
                                      "--histogram-bits", "12", "-o", str(tmp_path / where),
                                      *scheduler])
        assert result.exit_code == 0, result.output
        said[where] = {line.split()[1]: line.split()[2] for line in result.output.splitlines()
                       if line.startswith("  training ")}
        assert "decides by" in result.output
    assert said["dist.json"] == said["local.json"] and set(said["dist.json"]) == {
        "loss", "error", "cost"}
    frame.drop(columns="cost_mid").to_csv(parts / "part1.csv", index=False)  # one column short
    bad = runner.invoke(main, ["fit", str(parts / "part1.csv"), "--target", "label",
                               "--cost-columns", "--scheduler", address,
                               "-o", str(tmp_path / "bad.json")])
    assert bad.exit_code != 0 and "missing ['cost_mid']" in bad.output, bad.output


def test_the_cli_on_a_scheduler_says_which_column_holds_numbers_as_text(address, tmp_path):
    """A column of numbers with one typo is read as text, so as categories: the cluster's fit
    says so on a ``warning:`` line naming the column, the typo and its partition and row, as
    the local fit's command line does (its own line), and still writes a model."""
    X, y = _data(n=600, d=2, seed=2)
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1].round(3).astype(str), "label": y})
    frame.loc[7, "b"] = "1,5"
    parts = tmp_path / "typo"
    parts.mkdir()
    for i, (a, b) in enumerate([(0, 300), (300, 600)]):
        frame.iloc[a:b].to_csv(parts / f"part{i}.csv", index=False)
    result = CliRunner().invoke(main, ["fit", str(parts / "*.csv"), "--target", "label",
                                       "--n-estimators", "2", "-q", "--scheduler", address,
                                       "-o", str(tmp_path / "typo.json")])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert len(lines) == 1, result.output
    assert "column 'b' holds text" in lines[0] and "'1,5' (partition 0, row 7)" in lines[0]
    assert load_model(tmp_path / "typo.json").n_features_in_ == 2


def test_a_worker_killed_mid_fit_is_restarted_and_the_model_is_the_same(address):
    X, y = _data(n=3000, seed=1)
    Xd, yd = da.from_array(X, chunks=(750, 5)), da.from_array(y, chunks=750)
    params = dict(n_estimators=8, max_leaves=15, random_state=1, histogram_bits=12)
    with distributed.Client(address) as client:
        undisturbed = DaskRebelClassifier(client=client, **params).fit(Xd, yd)
        pids = list(client.run(os.getpid).values())
        killed = threading.Event()

        def kill_at_iteration_3(info):
            if info.iteration == 3 and not killed.is_set():
                os.kill(pids[0], signal.SIGKILL)
                killed.set()

        disturbed = DaskRebelClassifier(client=client, **params).fit(
            Xd, yd, callbacks=[kill_at_iteration_3])
        assert killed.is_set()
        client.wait_for_workers(2, timeout=60)  # the nanny started a new worker process
        assert pids[0] not in client.run(os.getpid).values()
    local = RebelClassifier(**params).fit(X, y)
    for model in (disturbed, undisturbed):  # the local fit's model file
        assert json.dumps(model.to_dict()) == json.dumps(local.to_dict())
