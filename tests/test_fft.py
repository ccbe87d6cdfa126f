"""``ember.fft`` beyond the op table: result dtypes for every input dtype, argument errors,
the frequency helpers, gradients of real losses for every transform, norm and size against
PyTorch, and one backend call per transform."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ember
from torch_compare import compare, compare_error

NORMS = (None, "backward", "ortho", "forward")
TRANSFORMS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
              "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
REAL_INPUT_ONLY = {"rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn"}


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return t.detach().numpy()


def _input(lib, dtype, shape=(3, 4, 6), seed=0):
    rng = np.random.default_rng(seed)
    arr = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        arr = arr + 1j * rng.standard_normal(shape)
    if dtype in ("int64", "bool"):
        arr = (arr * 3).round()
    return lib.tensor(arr).to(getattr(lib, dtype))


def test_namespace():
    assert ember.fft.__name__ == "ember.fft"
    for name in TRANSFORMS + ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]:
        assert callable(getattr(ember.fft, name)), name
        assert callable(getattr(torch.fft, name)), name


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int64",
                                   "bool"])
def test_result_dtype_and_values(name, dtype):
    def fn(lib):
        return getattr(lib.fft, name)(_input(lib, dtype))
    try:
        t = fn(torch)
    except RuntimeError:
        compare_error(fn)
        return
    e = fn(ember)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    tol = 1e-4 if dtype in ("float32", "complex64", "int64", "bool") else 1e-10
    np.testing.assert_allclose(_np(e), _np(t), rtol=tol, atol=tol)


@pytest.mark.parametrize("bad", [
    lambda lib: lib.fft.fft(lib.ones(4, 6), n=0),
    lambda lib: lib.fft.ifft(lib.ones(4, 6), n=-1),
    lambda lib: lib.fft.fft(lib.ones(4, 6), dim=2),
    lambda lib: lib.fft.rfft(lib.ones(4, 6), dim=-3),
    lambda lib: lib.fft.fft(lib.ones(4, 6), norm="bad"),
    lambda lib: lib.fft.fftn(lib.ones(4, 6), norm="Ortho"),
    lambda lib: lib.fft.fft(lib.ones(4, dtype=lib.half)),
    lambda lib: lib.fft.rfft(lib.ones(4, dtype=lib.bfloat16)),
    lambda lib: lib.fft.rfft(lib.ones(4, dtype=lib.complex64)),
    lambda lib: lib.fft.rfftn(lib.ones(4, 2, dtype=lib.complex128)),
    lambda lib: lib.fft.ihfft(lib.ones(4, dtype=lib.complex64)),
    lambda lib: lib.fft.ihfft2(lib.ones(4, 4, dtype=lib.complex64)),
    lambda lib: lib.fft.irfft(lib.ones(1)),
    lambda lib: lib.fft.irfft(lib.ones(3, 0)),
    lambda lib: lib.fft.fft(lib.ones(3, 0)),
    lambda lib: lib.fft.fftn(lib.ones(4, 6), s=(3,), dim=(0, 1)),
    lambda lib: lib.fft.fftn(lib.ones(4, 6), dim=(0, 0)),
    lambda lib: lib.fft.fftn(lib.ones(4, 6), dim=(1, -1)),
    lambda lib: lib.fft.fftn(lib.ones(4, 6), s=(3, 0)),
    lambda lib: lib.fft.fftn(lib.ones(4, 6), s=(1, 1, 1)),
    lambda lib: lib.fft.fft2(lib.ones(3)),
    lambda lib: lib.fft.fft(lib.ones(())),
    lambda lib: lib.fft.rfftn(lib.ones(4, 6), dim=()),
    lambda lib: lib.fft.irfftn(lib.ones(4, 6), dim=()),
    lambda lib: lib.fft.fft(lib.ones(4), n=2.5),
    lambda lib: lib.fft.fftfreq(-1),
    lambda lib: lib.fft.fftfreq(5, dtype=lib.int64),
    lambda lib: lib.fft.rfftfreq(5, dtype=lib.bool),
    lambda lib: lib.fft.fftfreq(4, dtype=lib.complex64),
    lambda lib: lib.fft.fftshift(lib.ones(4, 6), dim=5),
])
def test_errors(bad):
    compare_error(bad)


@pytest.mark.parametrize("expr", [
    lambda lib: lib.fft.fftn(lib.ones(4, 6), dim=()),
    lambda lib: lib.fft.fftn(lib.ones(())),
    lambda lib: lib.fft.fftn(lib.arange(24.0).reshape(4, 6), s=(3, -1)),
    lambda lib: lib.fft.irfft(lib.ones(1, dtype=lib.complex64), n=1),
    lambda lib: lib.fft.irfft(lib.arange(4.0)),
    lambda lib: lib.fft.fft(lib.ones(3, 0), n=4),
    lambda lib: lib.fft.fftfreq(5),
    lambda lib: lib.fft.fftfreq(6, d=0.5, dtype=lib.float64),
    lambda lib: lib.fft.rfftfreq(7, 2.0),
    lambda lib: lib.fft.rfftfreq(0),
    lambda lib: lib.fft.fftshift(lib.arange(10).reshape(2, 5)),
    lambda lib: lib.fft.ifftshift(lib.arange(10).reshape(2, 5), dim=1),
    lambda lib: lib.fft.fftshift(lib.fft.fftfreq(7)),
    lambda lib: lib.fft.ifftshift(lib.fft.fftshift(lib.arange(9.0))),
])
def test_values(expr):
    compare(expr, rtol=1e-6, atol=1e-7)


def test_frequency_helpers_device_and_requires_grad():
    f = ember.fft.fftfreq(4, device="testdev", requires_grad=True)
    assert f.device.type == "testdev" and f.requires_grad and f.is_leaf
    x = ember.randn(4, 6, device="testdev")
    assert ember.fft.rfft2(x).device.type == "testdev"


def test_out_argument():
    for lib in (torch, ember):
        out = lib.empty(4, dtype=lib.complex64)
        res = lib.fft.fft(lib.arange(4.0), out=out)
        assert res is out
    compare(lambda lib: lib.fft.fft(lib.arange(4.0), out=lib.empty(4, dtype=lib.complex64)))


# ---- gradients of real losses, every transform, norm and size -----------------------------

def _loss(lib, y):
    w = lib.arange(y.shape[-1], dtype=lib.float64) + 1
    if y.is_complex():
        return (y.abs() ** 2 * w).sum() + lib.view_as_real(y.resolve_conj())[..., 1].sum()
    return (y * w).sum() + (y ** 2).sum()


GRAD_CASES = []
for _i, (_name, _kwargs) in enumerate([
    ("fft", {}), ("fft", {"n": 4, "dim": 1}), ("fft", {"n": 9}),
    ("ifft", {"dim": 0}), ("ifft", {"n": 3}),
    ("rfft", {}), ("rfft", {"n": 9, "dim": 1}), ("rfft", {"n": 3}),
    ("irfft", {}), ("irfft", {"n": 7}), ("irfft", {"n": 3, "dim": 1}),
    ("hfft", {}), ("hfft", {"n": 5}), ("ihfft", {"dim": 1}), ("ihfft", {"n": 7}),
    ("fft2", {}), ("fft2", {"s": (5, 2)}), ("ifft2", {"dim": (0, 2)}),
    ("rfft2", {}), ("rfft2", {"s": (2, 9)}), ("irfft2", {}), ("irfft2", {"s": (5, 5)}),
    ("fftn", {}), ("fftn", {"s": (2, 5, 7)}), ("ifftn", {"dim": (2, 0)}),
    ("rfftn", {"dim": (0, 2)}), ("rfftn", {"s": (3, 8)}), ("irfftn", {}),
    ("irfftn", {"s": (4, 9), "dim": (0, 1)}),
    ("hfft2", {}), ("hfftn", {"s": (2, 3, 7)}), ("ihfft2", {"s": (2, 5)}), ("ihfftn", {}),
]):
    for _kind in ("real", "complex"):
        if _kind == "complex" and _name in REAL_INPUT_ONLY:
            continue
        GRAD_CASES.append(pytest.param(_name, _kwargs, NORMS[_i % 4], _kind,
                                       id=f"{_name}-{_i}-{_kind}"))


@pytest.mark.parametrize("name,kwargs,norm,kind", GRAD_CASES)
def test_gradient_of_real_loss(name, kwargs, norm, kind):
    results = []
    for lib in (torch, ember):
        x = _input(lib, "float64" if kind == "real" else "complex128").requires_grad_()
        y = getattr(lib.fft, name)(x, norm=norm, **kwargs)
        _loss(lib, y).backward()
        results.append((_np(y), _np(x.grad)))
    (yt, gt), (ye, ge) = results
    np.testing.assert_allclose(ye, yt, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ge, gt, rtol=1e-9, atol=1e-9)


def test_gradcheck_and_gradgradcheck():
    x = ember.randn(3, 5, 2, dtype=ember.float64, requires_grad=True)

    def fn(x):
        z = ember.view_as_complex(x)
        y = ember.fft.irfft(ember.fft.fft2(z, norm="ortho") * z, n=6)
        return ember.fft.rfft(y * y).abs()
    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


def test_second_order_against_torch():
    results = []
    for lib in (torch, ember):
        x = lib.tensor([0.3, -1.2, 0.7, 2.0, 0.1], dtype=lib.float64, requires_grad=True)
        loss = (lib.fft.rfft(x * x).abs() ** 3).sum() + lib.fft.irfft(lib.fft.fft(x) ** 2).sum()
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        results.append((_np(g), _np(h)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-10)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-9)


# ---- one backend call per transform --------------------------------------------------------

@pytest.mark.parametrize("name", TRANSFORMS)
def test_one_backend_fft_call_per_kernel(monkeypatch, name):
    """One backend call per FFT kernel PyTorch's front end runs: one per transform, except
    hfftn/ihfftn over several dims, which run a complex transform over the other dims and a
    one-sided one along the last (two nodes in PyTorch's graph too)."""
    calls = []
    xp_fft = ember.tensor([0.0])._backend.xp.fft
    for routine in ("fft", "ifft", "rfft", "irfft", "fftn", "ifftn", "rfftn", "irfftn"):
        original = getattr(xp_fft, routine)

        def counted(*args, _original=original, _routine=routine, **kwargs):
            calls.append(_routine)
            return _original(*args, **kwargs)
        monkeypatch.setattr(xp_fft, routine, counted)
    dtype = ember.float32 if name in REAL_INPUT_ONLY else ember.complex64
    x = ember.randn(8, 4, 6, dtype=dtype)
    getattr(ember.fft, name)(x)
    assert len(calls) == (2 if name in ("hfft2", "hfftn", "ihfft2", "ihfftn") else 1), calls


# ---- PyTorch's front ends ---------------------------------------------------------------------

@pytest.mark.parametrize("name", TRANSFORMS)
def test_front_end_graph_and_conjugate_bit(name):
    """A real input promoted to complex (``to``), ``s`` trimming (``narrow``) and padding
    (``constant_pad_nd``) are nodes of the graph as in PyTorch, and the result carries the
    conjugate bit exactly where PyTorch's does (an inverse transform of real input)."""
    real = name in REAL_INPUT_ONLY or name.lstrip("i").startswith("fft")
    kwargs = {"n": 5} if name[-1] == "t" else {"s": (5, 7)}
    results = []
    for lib in (torch, ember):
        x = _input(lib, "float64" if real else "complex128").requires_grad_()
        y = getattr(lib.fft, name)(x, **kwargs)
        chain, node = [], y.grad_fn
        while node is not None and type(node).__name__ != "AccumulateGrad":
            chain.append(type(node).__name__)
            node = node.next_functions[0][0]
        results.append((chain, y.is_conj()))
    assert results[1] == results[0]


def test_gradient_through_complex_promotion_is_the_real_part_without_warning():
    """``ToCopyBackward0`` from real to complex hands a real input the real part of the
    gradient, as PyTorch, and without NumPy's complex-to-real cast warning."""
    import warnings
    grads = []
    for lib in (torch, ember):
        x = _input(lib, "float64").requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (lib.fft.fftn(x) * (1 + 2j)).real.sum().backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10, atol=1e-10)


SECOND_ORDER = {
    "rfft_n": lambda lib, x: lib.view_as_real(lib.fft.rfft(x, n=6)),
    "ifft_real_input": lambda lib, x: lib.view_as_real(lib.fft.ifft(x, n=10).resolve_conj()),
    "fftn_real_input": lambda lib, x: lib.view_as_real(lib.fft.fftn(x, s=(2, 9))),
    "ihfft2": lambda lib, x: lib.view_as_real(lib.fft.ihfft2(x, s=(2, 5))),
    "irfft": lambda lib, x: lib.fft.irfft(lib.view_as_complex(x.reshape(3, 4, 2)), n=7),
    "hfftn": lambda lib, x: lib.fft.hfftn(lib.view_as_complex(x.reshape(3, 4, 2)), s=(2, 6)),
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_gradients(name):
    """``create_graph`` through the kernels' backward formulas: the gradient of a squared
    norm of the first gradient, against torch."""
    arr = np.random.default_rng(0).standard_normal((3, 8))
    results = []
    for lib in (torch, ember):
        x = lib.tensor(arr, requires_grad=True)
        y = SECOND_ORDER[name](lib, x)
        w = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
        g, = lib.autograd.grad((y * y * w).sum(), x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        results.append((_np(g), _np(gg)))
    for expected, actual in zip(*results):
        np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-9)


# ---- laws -------------------------------------------------------------------------------------

signals = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
                     elements=st.floats(-100, 100, allow_nan=False))


@settings(max_examples=30, deadline=None)
@given(signals, st.sampled_from(NORMS))
def test_inverse_transforms_round_trip(arr, norm):
    x = ember.tensor(arr)
    back = ember.fft.ifftn(ember.fft.fftn(x, norm=norm), norm=norm)
    np.testing.assert_allclose(back.real.numpy(), arr, atol=1e-9 * (1 + np.abs(arr).max()))
    n = arr.shape[-1]
    real_back = ember.fft.irfft(ember.fft.rfft(x, norm=norm), n=n, norm=norm)
    np.testing.assert_allclose(real_back.numpy(), arr, atol=1e-9 * (1 + np.abs(arr).max()))


@settings(max_examples=30, deadline=None)
@given(signals)
def test_parseval_under_ortho(arr):
    x = ember.tensor(arr)
    energy = (ember.fft.fftn(x, norm="ortho").abs() ** 2).sum().item()
    assert np.isclose(energy, (arr ** 2).sum(), rtol=1e-9, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(signals)
def test_view_as_real_inverts_view_as_complex(arr):
    z = ember.fft.fft(ember.tensor(arr))
    assert ember.equal(ember.view_as_complex(ember.view_as_real(z)), z)
    assert ember.equal(ember.complex(z.real, z.imag), z)
    assert ember.allclose(ember.polar(z.abs(), z.angle()), z, atol=1e-9)
