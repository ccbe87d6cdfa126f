"""The main demo (`python -m ember.demo`) trains, reports, and writes what it promises."""
import os

import numpy as np
import pytest
import torch

import ember
from ember import demo


def test_bundled_digits_are_the_uci_set():
    images, labels = demo.load_digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype == np.float32
    assert 0.0 <= images.min() and images.max() == 1.0
    assert sorted(set(labels.tolist())) == list(range(10))
    assert np.bincount(labels).min() >= 170  # every class well represented


def test_split_is_fixed_and_disjoint():
    images, labels = demo.load_digits()
    (a, _), (b, _) = demo.split(images, labels)
    (c, _), (d, _) = demo.split(images, labels)
    assert len(a) + len(b) == 1797 and np.array_equal(a, c) and np.array_equal(b, d)


def test_one_epoch_trains_and_writes_a_checkpoint_and_plot(tmp_path, capsys):
    history = demo.main(["--epochs", "1", "--out", str(tmp_path)])
    assert history["accuracy"][-1] > 0.85  # one epoch of a CNN on digits
    out = capsys.readouterr().out
    assert "test accuracy" in out
    checkpoint = tmp_path / "digits_cnn.pt"
    assert checkpoint.exists()
    # The checkpoint is PyTorch's format: torch loads it safely, and the weights rebuild the model
    state = torch.load(checkpoint, weights_only=True)
    assert set(state) == {"model", "optimizer", "epoch", "test_accuracy"}
    model = demo.DigitsCNN()
    model.load_state_dict(ember.load(checkpoint)["model"])
    assert state["model"]["classifier.4.weight"].shape == (10, 128)
    pytest.importorskip("matplotlib")
    assert (tmp_path / "digits_cnn.png").stat().st_size > 10_000


def test_rejects_zero_epochs():
    with pytest.raises(SystemExit):
        demo.main(["--epochs", "0", "--out", os.devnull])
