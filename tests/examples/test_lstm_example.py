"""Smoke test of ``examples/lstm_sequence.py``: a reduced run trains (the loss falls), and the
script runs from the command line."""
import importlib.util
import os
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "examples", "lstm_sequence.py")


def _load_example():
    spec = importlib.util.spec_from_file_location("lstm_sequence_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reduced_run_learns(capsys):
    example = _load_example()
    summary = example.main(["--steps", "30", "--batch", "32", "--hidden", "16"])
    losses = summary["losses"]
    assert len(losses) == 30 and all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < 0.75 * np.mean(losses[:5])
    for key in ("val_mse", "naive_mse", "forecast_mse"):
        assert np.isfinite(summary[key]) and summary[key] > 0
    printed = capsys.readouterr().out
    assert "step   30  loss" in printed and "validation MSE" in printed


def test_command_line_flag():
    proc = subprocess.run([sys.executable, SCRIPT, "--steps", "3", "--batch", "8",
                           "--hidden", "8"], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": REPO})
    assert proc.returncode == 0, proc.stderr
    assert "step    3  loss" in proc.stdout
    assert "24-step free-running forecast MSE" in proc.stdout
