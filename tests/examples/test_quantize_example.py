"""examples/quantize_digits.py in its --quick form: every stage runs and reports sizes."""
import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _load():
    spec = importlib.util.spec_from_file_location("example_quantize_digits",
                                                  EXAMPLES / "quantize_digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quantize_digits_quick(tmp_path):
    result = _load().main(["--quick", "--plot", "--plot-path", str(tmp_path / "curve.png")])
    rows = {(r["model"], r["variant"]): r for r in result["rows"]}
    assert set(rows) == {(m, v) for m in ("CNN", "MLP")
                         for v in ("float32", "dynamic int8", "static int8")} | {
        ("CNN", "dynamic int8, conv too")}
    # int8 weights: static checkpoints well under a third of float32's bytes
    assert rows["CNN", "static int8"]["size_ratio"] <= 0.3
    assert rows["MLP", "static int8"]["size_ratio"] <= 0.3
    assert rows["MLP", "dynamic int8"]["size_ratio"] <= 0.3
    assert rows["CNN", "dynamic int8, conv too"]["size_ratio"] <= 0.3
    for r in result["rows"]:
        assert 0 <= r["accuracy"] <= 100
    assert [s for s, _ in result["curve"]] == [0.0, 0.9]
    assert result["compact_bytes"] < 0.3 * rows["CNN", "float32"]["bytes"]
    assert (tmp_path / "curve.png").stat().st_size > 0
