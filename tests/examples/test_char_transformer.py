"""Smoke test of ``examples/char_transformer.py``: the text loads from the standard library, a
reduced run trains (the loss falls and is finite), prints the unigram baseline and the
validation loss, samples text, and the script runs from the command line."""
import importlib.util
import math
import os
import subprocess
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "examples", "char_transformer.py")
SMALL = ["--batch-size", "8", "--block-size", "16", "--d-model", "32", "--layers", "1"]


def _load_example():
    spec = importlib.util.spec_from_file_location("char_transformer_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_text_comes_from_the_standard_library():
    example = _load_example()
    text = example.load_text()
    assert len(text) > 50_000
    assert "def " in text


def test_reduced_run_learns(capsys):
    example = _load_example()
    summary = example.main(["--steps", "40", "--eval-every", "20", "--lr", "1e-2",
                            "--sample-chars", "20"] + SMALL)
    history = summary["history"]
    assert [step for step, _, _ in history] == [20, 40]
    assert all(math.isfinite(train) and math.isfinite(val) for _, train, val in history)
    vocab = len(set(example.load_text()))
    # From the uniform guess (log vocab) the loss must drop well towards the baseline.
    assert history[-1][2] < 0.8 * math.log(vocab)
    assert 0 < summary["baseline"] < math.log(vocab)
    assert summary["sample"].startswith("def ") and len(summary["sample"]) == 24
    printed = capsys.readouterr().out
    assert "unigram baseline" in printed and "val loss" in printed and "sample:" in printed


def test_command_line():
    env = {**os.environ, "PYTHONPATH": REPO, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, SCRIPT, "--steps", "3", "--eval-every", "3",
                           "--sample-chars", "5"] + SMALL, capture_output=True, text=True,
                          timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "step     3  train loss" in proc.stdout
    assert "final validation loss" in proc.stdout
    losses = [float(line.split("val loss")[1].split()[0]) for line in proc.stdout.splitlines()
              if "val loss" in line]
    assert losses and np.isfinite(losses).all()
