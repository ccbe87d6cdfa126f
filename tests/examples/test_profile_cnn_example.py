"""examples/profile_cnn.py, small: a Chrome trace, a TensorBoard run and the top-ops table."""
import importlib.util
import json
import re
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load():
    spec = importlib.util.spec_from_file_location("example_profile_cnn",
                                                  EXAMPLES / "profile_cnn.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_profile_cnn_small(tmp_path, capsys):
    result = _load().main(["--steps", "3", "--batch-size", "8", "--out", str(tmp_path),
                           "--rows", "5"])
    trace = json.loads(Path(result["trace"]).read_text())
    names = {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
    # the one recorded step (steps 0 and 1 are wait and warm-up), its ops and its backward
    assert "ProfilerStep#2" in names and "ProfilerStep#1" not in names
    assert {"aten::conv2d", "aten::batch_norm", "aten::linear",
            "Optimizer.step#Adam.step"} <= names
    assert any(n.startswith("autograd::engine::evaluate_function: ConvolutionBackward0")
               for n in names)
    files = [p.name for p in Path(result["tb_dir"]).iterdir()]
    assert any(re.fullmatch(r"profile_cnn\.\d+\.pt\.trace\.json", f) for f in files)
    try:
        import ember.utils.tensorboard  # noqa: F401  (the loss curve needs tensorboardX)
    except ImportError:
        pass
    else:
        assert any(f.startswith("events.out.tfevents.") for f in files)
    out = capsys.readouterr().out
    assert "Self CPU time total:" in out and result["table"] in out
    assert len(result["losses"]) == 3
