"""The example OpenCL backend (examples/ember_opencl): an out-of-tree device built from the
operator registry, on PyOpenCL (PoCL's CPU device where there is no GPU).

The MLP and a reduced digits CNN train a few steps with losses equal to the CPU's (float32
tolerance) in strict mode, so every operator of those steps ran as an OpenCL kernel; an
operator the backend lacks falls back with the warning. PyOpenCL and PoCL cache compiled
kernels on disk, so only a machine's first run pays for compiling them."""
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import nn

pyopencl = pytest.importorskip("pyopencl", reason="the OpenCL example needs pyopencl "
                                                  "(pip install 'pyopencl[pocl]')")
try:
    pyopencl.create_some_context(interactive=False)
except Exception as exc:  # no OpenCL platform (PoCL missing)
    pytest.skip(f"no OpenCL device: {exc}", allow_module_level=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ember_opencl"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))  # the package where it is not pip-installed
import ember_opencl  # noqa: E402,F401  (registers "opencl")
import train  # noqa: E402  (examples/ember_opencl/train.py)


@pytest.fixture(scope="module")
def digits():
    from ember.demo import load_digits
    images, labels = load_digits()
    return images[:64], labels[:64]


@pytest.fixture
def strict():
    ember.library.set_strict_fallback(True)
    yield
    ember.library.set_strict_fallback(False)


def small_cnn():
    # the digits CNN's layers at a reduced width
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.25), nn.Linear(64, 10))


@pytest.mark.parametrize("make_model", [train.mlp, small_cnn], ids=["mlp", "cnn"])
def test_training_matches_cpu_with_every_op_on_the_device(make_model, digits, strict):
    images, labels = digits
    cpu, cpu_acc = train.train(make_model, "cpu", images, labels, steps=3, batch_size=16)
    ocl, ocl_acc = train.train(make_model, "opencl", images, labels, steps=3, batch_size=16)
    np.testing.assert_allclose(ocl, cpu, rtol=1e-5)
    # A convolution's bias before BatchNorm has a zero gradient up to rounding noise, which
    # Adam turns into steps of +-lr: predictions may differ where two logits nearly tie.
    assert abs(ocl_acc - cpu_acc) <= 2 / 64
    report = ember.library.fallback_report()
    assert report.ops_fallen_back("opencl") == []
    assert {"aten::mm", "aten::clone", "aten::add.Tensor"} <= set(report.ops_on_device("opencl"))


def test_an_op_without_a_kernel_falls_back_with_a_warning():
    ember.library.reset_fallback_report(warnings_too=True)
    x = ember.arange(6.0).reshape(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ember.cumsum(x.to("opencl"), 1)
    assert got.device.type == "opencl"
    np.testing.assert_allclose(got.cpu().numpy(), ember.cumsum(x, 1).numpy())
    assert any("'aten::cumsum'" in str(w.message) and "opencl" in str(w.message)
               for w in caught)
    assert ember.library.fallback_report().ops_fallen_back("opencl") == ["aten::cumsum"]
    ember.library.set_strict_fallback(True)
    try:
        with pytest.raises(NotImplementedError, match="aten::cumsum"):
            ember.cumsum(x.to("opencl"), 1)
    finally:
        ember.library.set_strict_fallback(False)


def test_unsupported_dtype_is_refused_naming_the_device():
    with pytest.raises(TypeError, match="opencl"):
        ember.zeros(2, dtype=ember.float16, device="opencl")
