"""The int8 kernels of ember.ops.quantized against torch.ops.quantized on the same data: the
matrix product exact (against int64 NumPy), linear and convolution bit-exact with FBGEMM's
requantization, dynamic linear within float rounding, the elementwise ops within one step."""
import numpy as np
import pytest
import torch
import torch.ao.nn.quantized.functional as tqf

import ember
import ember.ao.nn.quantized.functional as eqf
from ember.ops import quantized as eq

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _both(fn):
    return fn(torch), fn(ember)


def _ints(q):
    return q.int_repr().numpy().astype(np.int64)


@pytest.mark.parametrize("k", [7, 300, 600, 2000, 5000])  # one chunk, split chunks, float64
@pytest.mark.parametrize("a_dtype", [np.uint8, np.int8])
def test_int_matmul_is_exact(k, a_dtype):
    rng = np.random.default_rng(k)
    info = np.iinfo(a_dtype)
    a = rng.integers(info.min, info.max + 1, (5, k)).astype(a_dtype)
    b = rng.integers(-128, 128, (k, 4)).astype(np.int8)
    # worst case magnitudes too
    a[0] = info.max if a_dtype is np.uint8 else info.min
    b[:, 0] = -128
    za, zb = 3, np.array([0, -2, 5, 1])
    backend = ember.tensor(0)._backend
    got = eq.int_matmul(backend, a, b, za, zb)
    want = (a.astype(np.int64) - za) @ (b.astype(np.int64) - zb[None, :])
    np.testing.assert_array_equal(got, want)


def _linear_case(seed, m, k, n, per_channel, lib):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((n, k)) * 0.1).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    qx = lib.quantize_per_tensor(lib.from_numpy(x), 0.05, 60, lib.quint8)
    if per_channel:
        scales = lib.from_numpy(np.abs(w).max(1) / 127.0)
        qw = lib.quantize_per_channel(lib.from_numpy(w), scales, lib.zeros(n, dtype=lib.long),
                                      0, lib.qint8)
    else:
        qw = lib.quantize_per_tensor(lib.from_numpy(w), float(np.abs(w).max() / 127), 3,
                                     lib.qint8)
    return x, qx, qw, lib.from_numpy(b)


@pytest.mark.parametrize("m,k,n", [(4, 16, 8), (9, 700, 6), (3, 2100, 5)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_linear_bit_exact_and_dynamic(m, k, n, per_channel):
    outs = []
    for lib, ops in ((torch, torch.ops.quantized), (ember, eq)):
        x, qx, qw, b = _linear_case(m * k, m, k, n, per_channel, lib)
        packed = ops.linear_prepack(qw, b)
        y = ops.linear(qx, packed, 0.3, 70)
        yr = ops.linear_relu(qx, packed, 0.3, 70)
        dyn = ops.linear_dynamic(lib.from_numpy(x), packed, True)
        outs.append((_ints(y), _ints(yr), dyn.numpy(), y.q_scale(), y.q_zero_point()))
        w_back, b_back = ops.linear_unpack(packed)
        assert _ints(w_back).tolist() == _ints(qw).tolist()
    (ty, tyr, tdyn, ts, tz), (ey, eyr, edyn, es, ez) = outs
    np.testing.assert_array_equal(ey, ty)
    np.testing.assert_array_equal(eyr, tyr)
    assert (es, ez) == (ts, tz)
    np.testing.assert_allclose(edyn, tdyn, rtol=1e-5, atol=1e-5 * np.abs(tdyn).max())


def test_linear_dynamic_fp16():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 12)).astype(np.float32)
    w = rng.standard_normal((3, 12)).astype(np.float32)
    t = torch.ops.quantized.linear_dynamic_fp16(
        torch.from_numpy(x), torch.ops.quantized.linear_prepack_fp16(torch.from_numpy(w), None))
    e = eq.linear_dynamic_fp16(ember.from_numpy(x), eq.linear_prepack_fp16(ember.from_numpy(w)))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


CONV_CASES = [  # N, C, H, W, Cout, k, stride, padding, dilation, groups
    (2, 4, 9, 9, 6, 3, 1, 1, 1, 1),
    (1, 6, 8, 7, 4, 3, 2, 2, 1, 2),
    (2, 3, 10, 10, 5, 5, 1, 0, 2, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv2d_bit_exact(case, per_channel):
    n, c, h, w_, co, k, st, pd, dl, g = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c, h, w_)).astype(np.float32)
    w = (rng.standard_normal((co, c // g, k, k)) * 0.2).astype(np.float32)
    b = rng.standard_normal(co).astype(np.float32)
    res = []
    for lib in (torch, ember):
        qx = lib.quantize_per_tensor(lib.from_numpy(x), 0.04, 70, lib.quint8)
        if per_channel:
            scales = lib.from_numpy(np.abs(w).reshape(co, -1).max(1) / 127.0)
            qw = lib.quantize_per_channel(lib.from_numpy(w), scales,
                                          lib.zeros(co, dtype=lib.long), 0, lib.qint8)
        else:
            qw = lib.quantize_per_tensor(lib.from_numpy(w), float(np.abs(w).max() / 127), 2,
                                         lib.qint8)
        f = tqf if lib is torch else eqf
        res.append(_ints(f.conv2d(qx, qw, lib.from_numpy(b), st, pd, dl, g, scale=0.2,
                                  zero_point=64)))
    np.testing.assert_array_equal(res[1], res[0])


def test_conv1d_bit_exact_and_relu():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 20)).astype(np.float32)
    w = (rng.standard_normal((4, 3, 3)) * 0.3).astype(np.float32)
    res = []
    for lib in (torch, ember):
        qx = lib.quantize_per_tensor(lib.from_numpy(x), 0.03, 128, lib.quint8)
        qw = lib.quantize_per_tensor(lib.from_numpy(w), 0.01, 0, lib.qint8)
        f = tqf if lib is torch else eqf
        res.append(_ints(f.conv1d(qx, qw, None, 2, 1, scale=0.1, zero_point=100)))
    np.testing.assert_array_equal(res[1], res[0])
    packed = eq.conv_prepack(ember.quantize_per_tensor(ember.from_numpy(w), 0.01, 0,
                                                       ember.qint8), None, 1, 0, 1, 1)
    qx = ember.quantize_per_tensor(ember.from_numpy(x), 0.03, 128, ember.quint8)
    assert _ints(eq.conv_relu(qx, packed, 0.1, 100)).min() >= 100


def _pair(seed, lib):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(5000).astype(np.float32)
    b = rng.standard_normal(5000).astype(np.float32)
    return (lib.quantize_per_tensor(lib.from_numpy(a), 0.037, 100, lib.quint8),
            lib.quantize_per_tensor(lib.from_numpy(b), 0.021, 130, lib.quint8))


@pytest.mark.parametrize("op", ["add", "add_relu", "mul", "mul_relu", "matmul"])
def test_binary_ops_within_one_step(op):
    outs = []
    for lib, ops in ((torch, torch.ops.quantized), (ember, eq)):
        qa, qb = _pair(1, lib)
        if op == "matmul":
            qa, qb = qa.reshape(50, 100), qb.reshape(100, 50)
        outs.append(_ints(getattr(ops, op)(qa, qb, 0.05, 120)))
    diff = np.abs(outs[0] - outs[1])
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01  # torch's own float rounding


@pytest.mark.parametrize("value", [0.5, 3.0, -2.0])
def test_scalar_ops_and_relu(value):
    outs = []
    for lib, ops in ((torch, torch.ops.quantized), (ember, eq)):
        qa, _ = _pair(2, lib)
        r = [ops.add_scalar(qa, value), ops.mul_scalar(qa, value), lib.relu(qa) if
             lib is torch else eq.relu(qa), ops.relu6(qa)]
        outs.append([(_ints(q), q.q_scale(), q.q_zero_point()) for q in r])
    for (ti, ts, tz), (ei, es, ez) in zip(*outs):
        np.testing.assert_array_equal(ei, ti)
        assert (es, ez) == (ts, tz)


def test_functional_pooling_and_activations():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    tq = torch.quantize_per_tensor(torch.from_numpy(x), 0.05, 110, torch.quint8)
    e = ember.quantize_per_tensor(ember.from_numpy(x), 0.05, 110, ember.quint8)
    np.testing.assert_array_equal(_ints(eqf.max_pool2d(e, 2)), _ints(tqf.max_pool2d(tq, 2)))
    for t, got in [(tqf.adaptive_avg_pool2d(tq, 3), eqf.adaptive_avg_pool2d(e, 3)),
                   (tqf.avg_pool2d(tq, 2), eqf.avg_pool2d(e, 2)),
                   (tqf.hardswish(tq, 0.03, 90), eqf.hardswish(e, 0.03, 90)),
                   (tqf.leaky_relu(tq, 0.1), eqf.leaky_relu(e, 0.1)),
                   (tqf.elu(tq, 0.04, 60), eqf.elu(e, 0.04, 60)),
                   (tqf.hardtanh(tq), eqf.hardtanh(e)),
                   (tqf.interpolate(tq, scale_factor=2), eqf.interpolate(e, scale_factor=2))]:
        assert got.shape == t.shape and got.q_scale() == t.q_scale()
        assert np.abs(_ints(got) - _ints(t)).max() <= 1
