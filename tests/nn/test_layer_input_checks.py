"""What the convolution, pooling, unfold/fold and constant-padding functions refuse, and how:
the exception type and PyTorch's message, for inputs of the wrong rank, empty dims, dtypes a
CPU kernel lacks and fill values a dtype cannot hold; and that what torch accepts in those
corners (empty batches, global pooling of any rank) gives torch's result."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error


def F(lib):
    return lib.nn.functional


RANK_CASES = {
    "unfold": lambda L, x: F(L).unfold(x, 2),
    "fold": lambda L, x: F(L).fold(x, (3, 3), 2),
    "avg_pool1d": lambda L, x: F(L).avg_pool1d(x, 1),
    "avg_pool2d": lambda L, x: F(L).avg_pool2d(x, 1),
    "avg_pool3d": lambda L, x: F(L).avg_pool3d(x, 1),
    "max_pool1d": lambda L, x: F(L).max_pool1d(x, 1),
    "max_pool1d_indices": lambda L, x: F(L).max_pool1d(x, 1, return_indices=True)[0],
    "max_pool2d": lambda L, x: F(L).max_pool2d(x, 1),
    "max_pool3d": lambda L, x: F(L).max_pool3d(x, 1),
    "lp_pool1d": lambda L, x: F(L).lp_pool1d(x, 2, 1),
    "lp_pool2d": lambda L, x: F(L).lp_pool2d(x, 2, 1),
    "lp_pool3d": lambda L, x: F(L).lp_pool3d(x, 2, 1),
    "adaptive_avg_pool1d": lambda L, x: F(L).adaptive_avg_pool1d(x, 1),
    "adaptive_avg_pool2d_global": lambda L, x: F(L).adaptive_avg_pool2d(x, 1),
    "adaptive_avg_pool2d": lambda L, x: F(L).adaptive_avg_pool2d(x, 2),
    "adaptive_avg_pool2d_tuple": lambda L, x: F(L).adaptive_avg_pool2d(x, (2, None)),
    "adaptive_avg_pool3d_global": lambda L, x: F(L).adaptive_avg_pool3d(x, 1),
    "adaptive_avg_pool3d_tuple": lambda L, x: F(L).adaptive_avg_pool3d(x, (1, 2, 1)),
    "adaptive_max_pool1d": lambda L, x: F(L).adaptive_max_pool1d(x, 1),
    "adaptive_max_pool2d": lambda L, x: F(L).adaptive_max_pool2d(x, 1),
    "adaptive_max_pool3d": lambda L, x: F(L).adaptive_max_pool3d(x, 1),
}


def _same_outcome(fn, make):
    """``fn`` on the inputs ``make(lib)`` gives torch's result, or torch's error and message."""
    try:
        expected = fn(torch, *make(torch))
    except Exception:
        compare_error(lambda L: fn(L, *make(L)))
        return
    assert_same(expected, fn(ember, *make(ember)))


@pytest.mark.parametrize("rank", range(7))
@pytest.mark.parametrize("name", RANK_CASES)
def test_rank_checks_as_torch(name, rank):
    _same_outcome(RANK_CASES[name], lambda L: (L.ones((2,) * rank, dtype=L.float64),))


ADAPTIVE = {
    "avg1d": (lambda L, x: F(L).adaptive_avg_pool1d(x, 2), [(2, 0, 4), (0, 3, 4), (2, 3, 0),
                                                          (0, 4), (3, 0)]),
    "avg1d_global": (lambda L, x: F(L).adaptive_avg_pool1d(x, 1), [(2, 0, 4), (2, 3, 0), (3, 0)]),
    "avg2d": (lambda L, x: F(L).adaptive_avg_pool2d(x, 2), [(2, 0, 4, 4), (0, 3, 4, 4),
                                                          (2, 3, 0, 4), (0, 4, 4), (3, 0, 4)]),
    "avg2d_global": (lambda L, x: F(L).adaptive_avg_pool2d(x, 1), [(2, 0, 4, 4), (2, 3, 0, 4)]),
    "avg3d": (lambda L, x: F(L).adaptive_avg_pool3d(x, 2), [(2, 0, 4, 4, 4), (0, 3, 4, 4, 4),
                                                          (2, 3, 4, 0, 4), (0, 4, 4, 4),
                                                          (3, 4, 0, 4)]),
    "max1d": (lambda L, x: F(L).adaptive_max_pool1d(x, 2), [(2, 0, 4), (0, 3, 4), (2, 3, 0),
                                                          (0, 4), (3, 0)]),
    "max2d": (lambda L, x: F(L).adaptive_max_pool2d(x, 2), [(2, 0, 4, 4), (0, 3, 4, 4),
                                                          (2, 3, 0, 4), (0, 4, 4), (3, 0, 4)]),
    "max2d_global": (lambda L, x: F(L).adaptive_max_pool2d(x, 1), [(2, 0, 4, 4), (2, 3, 0, 4)]),
    "max3d": (lambda L, x: F(L).adaptive_max_pool3d(x, 2), [(2, 0, 4, 4, 4), (0, 3, 4, 4, 4),
                                                          (2, 3, 4, 0, 4), (0, 4, 4, 4)]),
}


@pytest.mark.parametrize("name,shape", [(n, s) for n, (_, shapes) in ADAPTIVE.items()
                                        for s in shapes])
def test_adaptive_pooling_of_empty_dims_as_torch(name, shape):
    """An empty batch pools to an empty result; an empty non-batch dim is torch's
    RuntimeError naming the sizes and the dim (the 2-d average kernel checks only the
    spatial dims, and global average pooling is a mean, which takes any)."""
    _same_outcome(ADAPTIVE[name][0], lambda L: (L.ones(shape),))


def _tensors(L, dtype, *shapes):
    return tuple(L.ones(s, dtype=getattr(L, dtype)) for s in shapes)


CONV_DTYPE_CASES = {
    "conv1d": (lambda L, x, w: F(L).conv1d(x, w), [(2, 3, 7), (4, 3, 3)]),
    "conv1d_dilated": (lambda L, x, w: F(L).conv1d(x, w, dilation=2), [(2, 3, 7), (4, 3, 3)]),
    "conv2d_dilated": (lambda L, x, w: F(L).conv2d(x, w, dilation=(2, 1)),
                       [(1, 2, 6, 6), (2, 2, 2, 2)]),
    "conv3d": (lambda L, x, w: F(L).conv3d(x, w), [(1, 2, 4, 4, 4), (2, 2, 2, 2, 2)]),
    "conv3d_empty": (lambda L, x, w: F(L).conv3d(x, w), [(0, 2, 3, 3, 3), (2, 2, 2, 2, 2)]),
    "conv_transpose1d": (lambda L, x, w: F(L).conv_transpose1d(x, w), [(2, 3, 5), (3, 4, 3)]),
    "conv_transpose1d_empty": (lambda L, x, w: F(L).conv_transpose1d(x, w),
                               [(0, 3, 5), (3, 2, 2)]),
    "conv_transpose2d": (lambda L, x, w: F(L).conv_transpose2d(x, w),
                         [(2, 3, 4, 4), (3, 2, 3, 3)]),
    "conv_transpose3d": (lambda L, x, w: F(L).conv_transpose3d(x, w, stride=2),
                         [(1, 2, 2, 3, 2), (2, 1, 2, 2, 2)]),
}


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "bool"])
@pytest.mark.parametrize("name", CONV_DTYPE_CASES)
def test_convolution_integer_dtypes_as_torch(name, dtype):
    """The plain kernels take every integer dtype but bool, the dilated and transposed ones
    only int64, and an empty batch reaches no kernel."""
    fn, shapes = CONV_DTYPE_CASES[name]
    _same_outcome(fn, lambda L: _tensors(L, dtype, *shapes))


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "bool"])
def test_max_unpool_refuses_integer_dtypes(n, dtype):
    shape = (1, 2) + (4,) * n
    indices = (1, 2) + (2,) * n

    def fn(L):
        return getattr(F(L), f"max_unpool{n}d")(L.ones(shape[:2] + indices[2:],
                                                        dtype=getattr(L, dtype)),
                                                L.zeros(indices, dtype=L.int64), 2)
    compare_error(fn)


@pytest.mark.parametrize("dtype,value", [
    ("uint8", -1), ("uint8", -0.5), ("uint8", 255.9), ("uint8", 256), ("uint8", float("nan")),
    ("int8", 200), ("int8", -128.7), ("float16", 1e6), ("bfloat16", 1e39), ("float32", 1e300)])
def test_pad_fill_value_must_fit_the_dtype(dtype, value):
    compare_error(lambda L: F(L).pad(L.zeros(2, 3, dtype=getattr(L, dtype)), (1, 1), value=value))


@pytest.mark.parametrize("dtype,value", [
    ("uint8", 255), ("uint8", 1.5), ("int8", -128), ("bool", -3), ("bool", 5.0),
    ("float16", float("inf")), ("float32", float("nan")), ("int64", 2 ** 62)])
def test_pad_fill_values_that_fit(dtype, value):
    def run(L):
        return F(L).pad(L.zeros(2, 3, dtype=getattr(L, dtype)), (1, 1), value=value)
    expected = run(torch)
    actual = run(ember)
    assert actual.dtype is getattr(ember, dtype)
    np.testing.assert_array_equal(actual.float().numpy(), expected.float().numpy())
