"""Smoke test of ``examples/transfer_learning.py``: a torchvision-keyed ResNet-18 checkpoint
(torchvision's own random initialisation, saved with ``torch.save``) is loaded through
``weights=`` from the cache folder the example sets up, the new head trains for two steps, and
the prediction grid is written."""
import importlib.util
import os

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "examples", "transfer_learning.py")


def _load_example():
    spec = importlib.util.spec_from_file_location("transfer_learning_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reduced_run_with_a_torchvision_checkpoint(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("PIL")
    from tests.vision.torchvision_oracle import import_torchvision
    tv = import_torchvision()
    torch.manual_seed(0)
    tv_model = tv.models.resnet18()
    checkpoint = tmp_path / "resnet18-from-torchvision.pth"
    torch.save(tv_model.state_dict(), checkpoint)

    example = _load_example()
    summary = example.main(["--checkpoint", str(checkpoint), "--torch-home", str(tmp_path / "home"),
                            "--image-size", "32", "--train-images", "32", "--test-images", "8",
                            "--batch-size", "16", "--max-steps", "2", "--out",
                            str(tmp_path / "out")])
    assert len(summary["losses"]) == 2 and all(np.isfinite(summary["losses"]))
    assert 0.0 <= summary["accuracy"] <= 1.0
    assert os.path.getsize(summary["png"]) > 0
    assert (tmp_path / "home" / "hub" / "checkpoints" / "resnet18-f37072fd.pth").exists()
    # The backbone below the fine-tuned layer4 is the checkpoint's, unchanged.
    model = summary["model"]
    np.testing.assert_array_equal(model.layer1[0].conv1.weight.detach().numpy(),
                                  tv_model.layer1[0].conv1.weight.detach().numpy())
    assert model.fc.out_features == 3
    assert "test accuracy" in capsys.readouterr().out
