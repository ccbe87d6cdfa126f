"""Smoke tests of the examples in examples/: each runs (reduced) and reaches its result."""
import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import ember

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_linear_regression_recovers_the_weights():
    result = load("linear_regression").main(["--steps", "200"])
    np.testing.assert_allclose(result["sgd"].numpy(), [1.5, -2.0, 0.5, 0.7], atol=0.03)
    np.testing.assert_allclose(result["sgd"].numpy(), result["closed_form"].numpy(), atol=1e-3)


def test_logistic_regression_separates_the_blobs():
    assert load("logistic_regression").main(["--iterations", "20"])["accuracy"] > 0.9


def test_custom_function_passes_gradcheck():
    result = load("custom_function").main([])
    assert result["gradcheck"] and result["gradgradcheck"]
    assert result["straight_through_grad"].tolist() == [1.0, 2.0, 3.0]


def test_higher_order_gradients():
    result = load("higher_order_gradients").main(["--steps", "5"])
    assert ember.allclose(result["hvp"], result["hessian"] @ ember.tensor([0.5, -1.0, 2.0]))
    assert np.isfinite(result["loss"])


def test_idx_round_trip_and_errors(tmp_path):
    mnist = load("mnist_cnn")
    images = np.random.default_rng(0).integers(0, 256, (5, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    mnist.write_idx(tmp_path / "train-images-idx3-ubyte", images)
    mnist.write_idx(tmp_path / "plain-labels", labels)  # stored gzipped below: read as well
    with gzip.open(tmp_path / "train-labels-idx1-ubyte.gz", "wb") as f:
        f.write((tmp_path / "plain-labels").read_bytes())
    assert np.array_equal(mnist.read_idx(tmp_path / "train-images-idx3-ubyte"), images)
    dataset = mnist.IDXDataset(tmp_path, "train")
    image, label = dataset[2]
    assert tuple(image.shape) == (1, 28, 28) and label.item() == 4
    assert abs(image.max().item() - images[2].max() / 255) < 1e-6

    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01" + b"\0" * 8)
    with pytest.raises(ValueError, match="not an IDX file"):
        mnist.read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes((tmp_path / "plain-labels").read_bytes()[:-2])
    with pytest.raises(ValueError, match="promises 5 bytes"):
        mnist.read_idx(tmp_path / "short")


def test_mnist_cnn_trains_on_bundled_digits():
    result = load("mnist_cnn").main(["--epochs", "1", "--limit", "640"])
    assert np.isfinite(result["loss"]) and result["accuracy"] > 0.3  # one short epoch
