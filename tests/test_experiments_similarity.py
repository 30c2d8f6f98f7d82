"""Quick modes of the ICML 2017 similarity reproductions: files, tables and claims."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rebelboost.experiments import run_experiment

pytest.importorskip("matplotlib")

#: experiment -> a row label its table must hold
EXPECTED_ROWS = {
    "boundaries": ["| spiral | stumps |", "| rings | similarities |", "| xor | similarities |"],
    "spiral": ["| 1 |", "| 400 |"],
    "robustness": ["| 4/5 of the data |", "| 30% mislabeled |"],
    "uci-curves": ["| pendigits (slice) |"],
    "benchmark": ["| pendigits (slice) |"],
}
#: claims a 100-row training set cannot be expected to show (full mode checks them)
FULL_SIZE_ONLY = ("SVM and MLP", "1-point")


@pytest.mark.parametrize("name", list(EXPECTED_ROWS))
def test_quick_mode_reproduces_the_claims(name, tmp_path):
    result = run_experiment(name, tmp_path, quick=True, echo=lambda _: None)
    assert result.claims
    for claim, held in result.claims.items():
        if not any(part in claim for part in FULL_SIZE_ONLY):
            assert held, claim
    assert result.files and all(Path(f).is_file() and Path(f).stat().st_size for f in result.files)
    assert any(Path(f).suffix == ".png" for f in result.files)
    assert any(Path(f).suffix == ".csv" for f in result.files)
    for row in EXPECTED_ROWS[name]:
        assert row in result.table


def test_reproduce_command_runs_an_experiment(tmp_path):
    beside = Path(sys.executable).with_name("rebelboost")
    exe = str(beside) if beside.exists() else shutil.which("rebelboost")
    if exe is None:
        pytest.fail("the rebelboost entry point is not installed")
    result = subprocess.run([exe, "reproduce", "spiral", "--quick", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "[ok] training error reaches 0" in result.stdout
    assert (tmp_path / "spiral" / "spiral_curves.png").is_file()
