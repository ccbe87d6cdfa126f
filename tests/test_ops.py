"""The op table, run against PyTorch: forward (values, dtype, shape) for every dtype a row
lists, the gradient of a random cotangent, finite-difference gradcheck in float64, and
second-order checks where a row asks. Every case runs on "cpu" and on the registered test
device."""
import pytest

from opinfo import core
from opinfo.registry import ALL_OPS


def _cases(kind):
    for op in ALL_OPS:
        if kind == "grad" and not op.grad:
            continue
        if kind == "gradcheck" and not op.gradcheck:
            continue
        for i, sample in enumerate(op.samples):
            if kind == "forward":
                for dtype in op.dtypes:
                    yield pytest.param(op, sample, dtype, id=f"{op.name}-{i}-{dtype}")
            elif kind == "grad":
                for dtype in [d for d in op.dtypes if d in ("float32", "float64", "complex64",
                                                            "complex128")]:
                    yield pytest.param(op, sample, dtype, id=f"{op.name}-{i}-{dtype}")
            else:
                yield pytest.param(op, sample, id=f"{op.name}-{i}")


@pytest.mark.parametrize("op,sample,dtype", list(_cases("forward")))
def test_forward(op, sample, dtype, device):
    if device in op.skip_devices:
        pytest.skip(f"{op.name} is not run on {device}")
    core.check_forward(op, sample, dtype, device)


@pytest.mark.parametrize("op,sample,dtype", list(_cases("grad")))
def test_backward(op, sample, dtype, device):
    if device in op.skip_devices:
        pytest.skip(f"{op.name} is not run on {device}")
    core.check_backward(op, sample, dtype, device)


@pytest.mark.parametrize("op,sample", list(_cases("gradcheck")))
def test_gradcheck(op, sample):
    core.check_gradcheck(op, sample, "cpu", gradgrad=op.gradgrad)
