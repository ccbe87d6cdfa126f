"""Complex tensors beyond the op table: creation and dtypes, printing, the views ``real`` /
``imag`` / ``view_as_real`` / ``view_as_complex`` (memory sharing, writes through them, their
gradients), argument errors, and gradients of real losses through complex intermediates,
all compared with PyTorch."""
import sys

import numpy as np
import pytest
import torch

import ember
from torch_compare import compare, compare_error

complex_ops = sys.modules["ember.ops.complex"]


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return t.detach().numpy()


def _z(lib, shape=(3, 4), seed=0, dtype="complex64"):
    rng = np.random.default_rng(seed)
    arr = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return lib.tensor(arr, dtype=getattr(lib, dtype))


# ---- creation, dtypes, promotion, printing ------------------------------------------------

@pytest.mark.parametrize("expr", [
    lambda lib: lib.tensor([1 + 2j, 3 - 1j]),
    lambda lib: lib.tensor([[1.5 + 2j], [3 - 1j]], dtype=lib.complex128),
    lambda lib: lib.zeros(2, 3, dtype=lib.complex64),
    lambda lib: lib.ones(2, dtype=lib.cdouble),
    lambda lib: lib.full((2,), 1 - 1j),
    lambda lib: lib.tensor([1.0, 2.0]).to(lib.complex64),
    lambda lib: lib.tensor([1, 2]) * 1j,
    lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64) + lib.tensor(1j),
    lambda lib: lib.tensor([1 + 1j]) + lib.tensor([2.0], dtype=lib.float64),
    lambda lib: lib.tensor([1 + 1j], dtype=lib.complex128) * lib.tensor([2.0]),
    lambda lib: lib.tensor([1 + 1j]).sum(),
    lambda lib: lib.tensor([[1 + 1j, 2 - 3j]]).mean(dim=1),
    lambda lib: lib.tensor([3 + 4j, -1j]).abs(),
    lambda lib: lib.tensor([3 + 4j, -1j], dtype=lib.complex128).abs(),
])
def test_creation_and_promotion(expr):
    compare(expr)


def test_default_complex_dtype_follows_default_float():
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        assert ember.tensor([1j]).dtype is ember.complex128
        assert torch.tensor([1j]).dtype is torch.complex128
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("expr", [
    lambda lib: lib.tensor([1 + 2j, 3 - 1j]),
    lambda lib: lib.tensor([[1.5 + 2j, -3.25 - 1j], [0j, 1e-5 + 1e5j]]),
    lambda lib: lib.tensor(2 - 0.5j, dtype=lib.complex128),
    lambda lib: lib.tensor([-0.0 - 1j]),
])
def test_repr(expr):
    assert repr(expr(ember)) == repr(expr(torch)).replace("torch", "ember")


def test_item_and_tolist():
    z = ember.tensor([[1 + 2j, 3 - 1j]])
    assert z[0, 1].item() == 3 - 1j
    assert z.tolist() == [[1 + 2j, 3 - 1j]]
    assert z.is_complex() and ember.is_complex(z) and not z.real.is_complex()


# ---- real / imag: properties and views ----------------------------------------------------

def test_real_imag_are_views_that_write_through():
    for lib in (torch, ember):
        z = lib.tensor([1 + 2j, 3 - 1j])
        z.real.add_(1)
        z.imag.mul_(2)
        z.real[1] = 10.0
        assert z.real.dtype == lib.float32 and z.imag.dtype == lib.float32
        assert z.real.stride() == (2,)
    compare(lambda lib: _ops_on_views(lib))


def _ops_on_views(lib):
    z = lib.tensor([1 + 2j, 3 - 1j])
    z.real.add_(1)
    z.imag.mul_(2)
    z.real[1] = 10.0
    z.imag = lib.tensor([5.0, 6.0])
    z.real = 7.0
    return z


def test_real_of_real_tensor_is_itself_and_imag_refuses():
    x = ember.tensor([1.0, 2.0])
    assert x.real is x and ember.real(x) is x
    compare_error(lambda lib: lib.tensor([1.0]).imag)
    compare_error(lambda lib: lib.imag(lib.tensor([1, 2])))


def test_version_counter_shared_with_views():
    z = ember.tensor([1 + 2j])
    r = z.real
    v = z._version
    r.add_(1)
    assert z._version == v + 1 and z[0].item() == 2 + 2j


def test_view_as_real_shares_memory_and_strides():
    def fn(lib):
        z = _z(lib, (3, 4)).t()
        r = lib.view_as_real(z)
        r[0, 1, 1] = 100.0
        return r, r.stride(), z
    e, t = fn(ember), fn(torch)
    assert e[1] == t[1]
    np.testing.assert_allclose(_np(e[2]), _np(t[2]))
    np.testing.assert_allclose(_np(e[0]), _np(t[0]))


def test_view_as_complex_shares_memory():
    def fn(lib):
        x = lib.zeros(3, 4, 2, dtype=lib.float64)
        c = lib.view_as_complex(x[:, 1:3])
        c[1, 0] = 1 - 2j
        return x, c.dtype, c.shape
    e, t = fn(ember), fn(torch)
    np.testing.assert_allclose(_np(e[0]), _np(t[0]))
    assert str(e[1]).split(".")[-1] == str(t[1]).split(".")[-1] and tuple(e[2]) == tuple(t[2])


@pytest.mark.parametrize("bad", [
    lambda lib: lib.view_as_real(lib.ones(3)),
    lambda lib: lib.view_as_real(lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.view_as_complex(lib.ones(3)),
    lambda lib: lib.view_as_complex(lib.ones(3, 2).t()),
    lambda lib: lib.view_as_complex(lib.ones(2, 3)[:, :2]),
    lambda lib: lib.view_as_complex(lib.ones(3, 2, dtype=lib.int64)),
    lambda lib: lib.view_as_complex(lib.ones(())),
    lambda lib: lib.view_as_complex(lib.ones(5)[1:5].view(2, 2)),
    lambda lib: lib.view_as_complex(lib.ones(3, 5)[:, :4].reshape(3, 2, 2)),
    lambda lib: lib.complex(lib.ones(3), lib.ones(3, dtype=lib.float64)),
    lambda lib: lib.complex(lib.ones(3, dtype=lib.int64), lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.polar(lib.ones(3), lib.ones(3, dtype=lib.float64)),
    lambda lib: lib.polar(lib.ones(3, dtype=lib.int64), lib.ones(3, dtype=lib.int64)),
    lambda lib: lib.ones(3).H,
    lambda lib: lib.ones(3).mH,
    lambda lib: lib.adjoint(lib.ones(3)),
    lambda lib: lib.tensor([1 + 1j], requires_grad=True).mul(2).sum().backward(),
    lambda lib: lib.tensor([1 + 1j]).abs_(),
])
def test_errors(bad):
    compare_error(bad)


def test_view_as_complex_of_half_is_refused():
    # PyTorch makes a complex32 tensor, a dtype Ember does not have.
    with pytest.raises(RuntimeError, match="complex32"):
        ember.view_as_complex(ember.ones(3, 2, dtype=ember.float16))


# ---- conj and friends -----------------------------------------------------------------------

def test_conj_of_real_is_free_and_flags():
    x = ember.tensor([1.0, -2.0])
    assert ember.conj(x) is x and x.conj() is x and ember.conj_physical(x) is x
    z = ember.tensor([1 + 1j])
    assert not ember.is_conj(z) and not z.is_neg()
    assert ember.resolve_conj(z) is z and z.resolve_neg() is z


def test_conj_bit_as_torch():
    """``conj`` sets the conjugate bit, conjugating again clears it, and ``resolve_conj``
    clears it with a copy that shares no memory (the bit is not carried into views in Ember,
    which conjugates eagerly)."""
    flags = []
    for lib in (torch, ember):
        z = _z(lib)
        c = z.conj()
        r = c.resolve_conj()
        flags.append((c.is_conj(), lib.is_conj(c), c.conj().is_conj(), c.clone().is_conj(),
                      (c * 1).is_conj(), r.is_conj(), lib.resolve_conj(z) is z,
                      r.data_ptr() == c.data_ptr(), z.is_conj(), lib.conj_physical(z).is_conj()))
        np.testing.assert_array_equal(_np(r), np.conj(_np(z)))
    assert flags[1] == flags[0]


@pytest.mark.parametrize("expr", [
    lambda lib: _z(lib).conj(),
    lambda lib: lib.conj_physical(_z(lib)),
    lambda lib: _z(lib).conj_physical_(),
    lambda lib: _z(lib).mH,
    lambda lib: _z(lib).H,
    lambda lib: lib.adjoint(_z(lib, (2, 3, 4))),
    lambda lib: lib.tensor([[1.0, 2.0]]).H,
    lambda lib: lib.vdot(_z(lib, (5,)), _z(lib, (5,), seed=1)),
    lambda lib: lib.complex(lib.ones(3, 1), lib.arange(2.0)),
    lambda lib: lib.polar(lib.tensor([1.0, 2.0]), lib.tensor([0.5, -3.0])),
    lambda lib: lib.angle(lib.tensor([-1, 0, 2])),
    lambda lib: lib.angle(lib.tensor([-1.0, -0.0, 2.0, float("nan")])),
    lambda lib: lib.angle(_z(lib, dtype="complex128")),
])
def test_values(expr):
    e, t = expr(ember), expr(torch)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] and e.shape == t.shape
    np.testing.assert_allclose(_np(e), _np(t), rtol=1e-6, atol=1e-6, equal_nan=True)


def test_complex_sgn_matches_torch():
    arr = np.array([1 + 1j, 0j, -3 + 0.5j, 2j])
    z_t = torch.tensor(arr, requires_grad=True)
    z_e = ember.tensor(arr, requires_grad=True)
    w = np.array([0.5 - 1j, 2 + 1j, -1 + 0.3j, 1.0])
    s_t, s_e = torch.sgn(z_t), complex_ops.sgn(z_e)
    np.testing.assert_allclose(_np(s_e), _np(s_t))
    (s_t * torch.tensor(w)).real.sum().backward()
    (s_e * ember.tensor(w)).real.sum().backward()
    np.testing.assert_allclose(_np(z_e.grad), _np(z_t.grad), atol=1e-12)


# ---- gradients of real losses through complex intermediates --------------------------------

LOSSES = [
    lambda lib, a, b: (a * b).abs().sum(),
    lambda lib, a, b: (a / b).real.sum() + (a / b).imag.pow(2).sum(),
    lambda lib, a, b: (a + b).exp().abs().pow(2).sum(),
    lambda lib, a, b: (a - b).angle().sum(),
    lambda lib, a, b: (a @ b.mT).abs().sum(),
    lambda lib, a, b: lib.view_as_real(a * b.conj()).pow(2).sum(),
    lambda lib, a, b: (a.log() * b.sqrt()).imag.sum(),
    lambda lib, a, b: (a.sin() * b.tanh()).abs().sum(),
    lambda lib, a, b: ((a * 2j) / (1 + 3j) - b).real.sum(),
    lambda lib, a, b: (a ** 3 + a ** b).imag.sum(),
    lambda lib, a, b: (a.mean(0) * b.sum(1, keepdim=True)).abs().sum(),
    lambda lib, a, b: (a.reshape(4, 3).t() * b).abs().sum(),
    lambda lib, a, b: lib.vdot(a.flatten(), b.flatten()).real,
    lambda lib, a, b: (a.mH @ b).imag.sum(),
    lambda lib, a, b: (a.reciprocal() * b.rsqrt()).real.sum(),
    lambda lib, a, b: lib.polar(a.abs(), b.angle()).pow(2).real.sum(),
    lambda lib, a, b: (lib.complex(a.real, b.imag) ** 2).imag.sum(),
]


@pytest.mark.parametrize("loss", LOSSES)
def test_gradients_of_real_losses(loss):
    grads = []
    for lib in (torch, ember):
        a = _z(lib, seed=0, dtype="complex128").requires_grad_()
        b = _z(lib, seed=1, dtype="complex128").requires_grad_()
        out = loss(lib, a, b)
        out.backward()
        grads.append((out.item(), _np(a.grad), _np(b.grad)))
    (lt, at, bt), (le, ae, be) = grads
    assert np.isclose(lt, le)
    np.testing.assert_allclose(ae, at, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(be, bt, rtol=1e-8, atol=1e-10)


def test_real_leaf_gets_real_part_of_complex_gradient():
    grads = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
        z = lib.tensor([1 + 2j, 3 - 1j, -1j])
        ((x * z).exp().abs() ** 2).sum().backward()
        grads.append(x.grad)
    assert grads[1].dtype is ember.float32
    np.testing.assert_allclose(_np(grads[1]), _np(grads[0]), rtol=1e-5, atol=1e-6)


def test_inplace_write_through_real_view_gradient():
    grads = []
    for lib in (torch, ember):
        a = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        w = a * 2
        w.real.mul_(3)
        w.imag.add_(w.real)
        (w.abs() ** 2).sum().backward()
        grads.append(a.grad)
    np.testing.assert_allclose(_np(grads[1]), _np(grads[0]))


def test_double_backward_through_complex():
    results = []
    for lib in (torch, ember):
        x = lib.tensor([0.3, -1.2, 0.7], dtype=lib.float64, requires_grad=True)
        z = lib.complex(x, x * x)
        loss = (z.exp() * z.conj()).abs().sum()
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        results.append((_np(g), _np(h)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-10)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-8)


def test_gradcheck_through_complex():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    y = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)

    def fn(x, y):
        z = ember.complex(x, y)
        return ember.view_as_real((z * z.conj().exp()) / (z.abs() + 1))
    assert ember.autograd.gradcheck(fn, (x, y))


def test_real_abs_backward_unchanged():
    compare(lambda lib: _abs_grad(lib))


def _abs_grad(lib):
    x = lib.tensor([-1.5, 0.0, 2.0], requires_grad=True)
    x.abs().sum().backward()
    return x.grad


def test_inplace_writes_through_view_as_complex_and_view_as_real_gradients():
    arr = np.random.default_rng(0).standard_normal((3, 2))
    results = []
    for lib in (torch, ember):
        x = lib.tensor(arr, requires_grad=True)
        y = x * 1
        c = lib.view_as_complex(y)
        c.mul_(1 + 2j)
        c[0] = 3j
        (y ** 2 * lib.tensor([1.0, 2.0], dtype=lib.float64)).sum().backward()
        z = lib.tensor(arr[:, 0] + 1j * arr[:, 1], requires_grad=True)
        w = z * 1
        lib.view_as_real(w)[1, 1] = 5.0
        lib.view_as_real(w).mul_(2)
        (w.abs() ** 2 * lib.arange(3)).sum().backward()
        results.append((_np(x.grad), _np(z.grad)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)
