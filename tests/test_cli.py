"""The command line through its real entry point."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _rebelboost(*args):
    beside = Path(sys.executable).with_name("rebelboost")  # the venv running the tests
    exe = str(beside) if beside.exists() else shutil.which("rebelboost")
    if exe is None:
        pytest.fail("the rebelboost entry point is not installed")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=600)


def test_help_lists_the_demo():
    result = _rebelboost("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout


def test_demo_trains_compares_and_explains(tmp_path):
    result = _rebelboost("demo", "--n-estimators", "30", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "REBEL, 30 trees of 31 leaves" in out and "AdaBoost" in out
    rebel_acc = float(out.split("REBEL, 30 trees of 31 leaves")[1].split()[0])
    assert rebel_acc > 0.9  # pendigits test accuracy after 30 vector-leaf trees
    assert "predicted" in out and "reloaded model predicts identically: True" in out
    assert (tmp_path / "pendigits-rebel.json").exists()


def test_module_entry_matches():
    result = subprocess.run([sys.executable, "-m", "rebelboost.cli", "--version"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "rebelboost" in result.stdout
