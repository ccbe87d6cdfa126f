"""In-place arithmetic outside autograd writes straight into the tensor (``out=``). These cases
check it gives exactly what PyTorch gives, and that it leaves alone what it must not take."""
import numpy as np
import pytest
import torch

import ember

CASES = [
    "p.add_(g, alpha=-0.5)", "p.sub_(g)", "p.mul_(g)", "p.div_(g)", "p.add_(2)",
    "p.mul_(0.5)", "p.add_(row)", "p.div_(row)", "p.sub_(1.5, alpha=2)",
    "p[:, 1].mul_(10)", "p[0].add_(row)", "p.t().add_(g.t())",
]


def _run(lib, expr, dtype):
    p = lib.arange(6.0, dtype=getattr(lib, dtype)).reshape(2, 3) + 1
    g = (lib.arange(6.0, dtype=getattr(lib, dtype)).reshape(2, 3) + 1) * 0.25
    row = lib.tensor([1.0, 2.0, 4.0], dtype=getattr(lib, dtype))
    with lib.no_grad():
        eval(expr)
    return p


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("expr", CASES)
def test_in_place_arithmetic_matches_torch(expr, dtype):
    e, t = _run(ember, expr, dtype), _run(torch, expr, dtype)
    np.testing.assert_array_equal(np.asarray(e.float()), t.float().numpy())


def test_version_bumped_and_views_see_the_write():
    p = ember.zeros(2, 3)
    v = p[1]
    p.add_(1)
    v.mul_(3)
    assert p._version == 2
    assert p.tolist() == [[1.0, 1.0, 1.0], [3.0, 3.0, 3.0]]


def test_integer_and_mixed_dtypes_keep_the_general_rules():
    for lib in (ember, torch):
        x = lib.arange(4)
        with pytest.raises(RuntimeError):
            x.div_(2)  # int64 result of true division cannot be cast back
        y = lib.zeros(3)
        y.add_(lib.ones(3, dtype=lib.float64))  # float64 operand into float32: casts
        assert y.dtype == lib.float32


def test_expanded_self_is_refused_as_in_torch():
    for lib in (ember, torch):
        x = lib.zeros(1, 3).expand(2, 3)
        with pytest.raises(RuntimeError):
            x.add_(1)


def test_matmul_in_place_operator():
    for lib in (ember, torch):
        m = lib.ones(2, 2)
        m @= lib.eye(2) * 3
        assert m.tolist() == [[3.0, 3.0], [3.0, 3.0]]
