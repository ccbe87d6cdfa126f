"""``stft`` and ``istft`` beyond the op table: the paths PyTorch's C++ takes (a window shorter
than ``n_fft``, two-sided inverse to a real signal, complex windows, frames of a signal whose
storage is not one block), their errors, and ``unfold_backward``, the overlap-add ``istft``
is built on; the window functions (hann, hamming, blackman, bartlett, kaiser) they take. Values
and gradients are compared with torch."""
import numpy as np
import pytest
import torch

import ember
from ember.ops.cumulative import unfold_backward
from torch_compare import assert_same, compare, compare_error

rng = np.random.default_rng(0)


def _grads(fn, *arrays):
    """``fn(lib, *tensors)``, then the gradient of a fixed random real projection of it."""
    out = []
    for lib in (torch, ember):
        ts = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
        y = fn(lib, *ts)
        real = lib.view_as_real(y) if y.is_complex() else y
        w = lib.tensor(np.random.default_rng(1).standard_normal(tuple(real.shape)))
        (real * w).sum().backward()
        out.append((y, [t.grad for t in ts]))
    return out


@pytest.mark.parametrize("case", [
    dict(n_fft=8, win_length=5),                               # ones in the middle of zeros
    dict(n_fft=8, hop_length=3, win_length=6, window=True),    # a window written into zeros
    dict(n_fft=7, onesided=False, center=False),
    dict(n_fft=6, normalized=True, pad_mode="replicate"),
])
def test_stft_paths(case):
    case = dict(case)
    use_window = case.pop("window", False)
    x, w = rng.standard_normal((2, 23)), rng.standard_normal(case.get("win_length", 6))

    def fn(lib, x, w):
        return lib.stft(x, return_complex=True, window=w if use_window else None, **case)
    (t_y, t_g), (e_y, e_g) = _grads(fn, x, w)
    assert_same(t_y, e_y, rtol=1e-10, atol=1e-10)
    assert_same(t_g[0], e_g[0], rtol=1e-10, atol=1e-10)
    if use_window:
        assert_same(t_g[1], e_g[1], rtol=1e-10, atol=1e-10)


def test_stft_frames_of_a_signal_whose_storage_is_not_one_block():
    """``as_strided`` needs one storage block; a signal wrapping a strided NumPy array is
    framed as the same windows."""
    base = rng.standard_normal((3, 40))
    for lib in (torch, ember):
        x = lib.from_numpy(base[::2, ::2])
        out = lib.stft(x, 6, 2, center=False, return_complex=True)
        if lib is torch:
            expected = out
    assert_same(expected, out, rtol=1e-12, atol=1e-12)


def test_istft_two_sided_to_real_reads_the_one_sided_half():
    """A two-sided spectrum inverted to a real signal: PyTorch keeps the first n_fft // 2 + 1
    bins and runs the real inverse transform (bins past the half are not read)."""
    z = rng.standard_normal((6, 5)) + 1j * rng.standard_normal((6, 5))
    compare(lambda lib: lib.istft(lib.tensor(z), 6, 2, onesided=False, center=False),
            rtol=1e-10, atol=1e-10)

    def fn(lib, re, im):
        return lib.istft(lib.complex(re, im), 6, 2, onesided=False, center=False)
    (t_y, t_g), (e_y, e_g) = _grads(fn, z.real.copy(), z.imag.copy())
    assert_same(t_g, e_g, rtol=1e-10, atol=1e-10)


def test_istft_complex_window_envelope_is_the_squared_window():
    z = rng.standard_normal((8, 9)) + 1j * rng.standard_normal((8, 9))
    w = rng.uniform(0.5, 1.5, 8) + 0.3j * rng.standard_normal(8)
    compare(lambda lib: lib.istft(lib.tensor(z), 8, 2, window=lib.tensor(w), onesided=False,
                                  return_complex=True, center=False), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("win_length, length", [(6, None), (8, 34), (8, 25)])
def test_istft_round_trip_window_shorter_than_n_fft_or_other_length(win_length, length):
    """A window padded to n_fft (constant_pad_nd), and a length beyond the signal (zero-padded
    at the end) or short of it."""
    x, w = rng.standard_normal((2, 30)), rng.uniform(0.5, 1.5, win_length)

    def fn(lib, x, w):
        z = lib.stft(x, 8, 2, win_length=win_length, window=w, return_complex=True)
        return lib.istft(z, 8, 2, win_length=win_length, window=w, length=length)
    (t_y, t_g), (e_y, e_g) = _grads(fn, x, w)
    assert_same(t_y, e_y, rtol=1e-10, atol=1e-10)
    assert_same(t_g, e_g, rtol=1e-9, atol=1e-9)


def test_istft_errors():
    z = rng.standard_normal((5, 9)) + 1j * rng.standard_normal((5, 9))
    compare_error(lambda lib: lib.istft(lib.tensor(z), 8, return_complex=True),
                  "Cannot have onesided output if window or input is complex")
    compare_error(lambda lib: lib.istft(lib.tensor(np.concatenate([z, z[:3]])), 8,
                                        window=lib.ones(8, dtype=lib.complex128)),
                  "Complex windows are incompatible with return_complex=False")


@pytest.mark.parametrize("sizes, dim, size, step", [
    ((2, 20), 1, 8, 2), ((2, 21), 1, 8, 3), ((3, 10, 2), 1, 3, 5), ((5,), 0, 5, 1),
    ((2, 7, 3), 1, 7, 2), ((4, 9), 0, 2, 1), ((2, 9), 1, 0, 2)])
def test_unfold_backward_is_atens(sizes, dim, size, step):
    """Overlap-add of windows (overlapping, gapped, empty), its gradient (``unfold``) and its
    node name, against ``torch.ops.aten.unfold_backward``."""
    g = rng.standard_normal(tuple(torch.zeros(sizes).unfold(dim, size, step).shape))
    w = rng.standard_normal(sizes)
    results = []
    for lib, op in ((torch, lambda t: torch.ops.aten.unfold_backward(t, list(sizes), dim, size,
                                                                       step)),
                    (ember, lambda t: unfold_backward(t, sizes, dim, size, step))):
        t = lib.tensor(g, requires_grad=True)
        out = op(t)
        out.backward(lib.tensor(w))
        results.append((out, t.grad, type(out.grad_fn).__name__))
    assert_same(results[0][:2], results[1][:2], rtol=1e-12, atol=1e-12)
    assert results[1][2] == results[0][2] == "UnfoldBackwardBackward0"


@pytest.mark.parametrize("name", ["stft", "istft"])
def test_second_order_gradients(name):
    """``create_graph`` through as_strided, the FFT kernels and unfold_backward, against
    torch."""
    arr = rng.standard_normal((2, 12))

    def fn(lib, x):
        z = lib.stft(x, 4, 1, window=lib.hann_window(4, dtype=x.dtype), return_complex=True)
        return lib.view_as_real(z) if name == "stft" else lib.istft(z, 4, 1, window=lib.ones(
            4, dtype=x.dtype))
    results = []
    for lib in (torch, ember):
        x = lib.tensor(arr, requires_grad=True)
        y = fn(lib, x)
        w = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)))
        g, = lib.autograd.grad((y * y * w).sum(), x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        results.append((g, gg))
    assert_same(results[0], results[1], rtol=1e-9, atol=1e-9)


# ---- windows -------------------------------------------------------------------------------

WINDOWS = [
    ("hann_window", {}), ("hamming_window", {}), ("blackman_window", {}),
    ("bartlett_window", {}), ("kaiser_window", {}),
]


@pytest.mark.parametrize("name,kwargs", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, kwargs, length, periodic):
    compare(lambda lib: getattr(lib, name)(length, periodic, dtype=lib.float64, **kwargs),
            rtol=1e-10, atol=1e-12)
    compare(lambda lib: getattr(lib, name)(length, periodic), rtol=1e-6, atol=1e-6)


def test_window_parameters_and_options():
    compare(lambda lib: lib.hamming_window(9, False, alpha=0.5, beta=0.4, dtype=lib.float64))
    compare(lambda lib: lib.kaiser_window(9, True, 5.0, dtype=lib.float64), rtol=1e-10)
    e = ember.hann_window(8, requires_grad=True, device="testdev")
    assert e.requires_grad and e.is_leaf and e.device.type == "testdev"
    compare(lambda lib: lib.blackman_window(6, dtype=lib.float16), rtol=1e-3, atol=1e-3)


def test_window_errors():
    compare_error(lambda lib: lib.hann_window(-1))
    compare_error(lambda lib: lib.bartlett_window(4, dtype=lib.int64),
                  "bartlett_window expects floating point dtypes")


def test_stft_options_and_errors():
    x = np.random.default_rng(0).normal(size=12)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        compare(lambda lib: lib.stft(lib.tensor(x), 4, return_complex=False))
    compare(lambda lib: lib.stft(lib.tensor(x), 13, return_complex=True))
    compare_error(lambda lib: lib.stft(lib.tensor(x), 0, return_complex=True),
                  "expected 0 < n_fft < 12, but got n_fft=0")
    compare_error(lambda lib: lib.stft(lib.tensor(x), 4, hop_length=0, return_complex=True),
                  "expected hop_length > 0, but got hop_length=0")
    compare_error(lambda lib: lib.stft(lib.tensor(x), 4, win_length=5, return_complex=True),
                  "expected 0 < win_length <= n_fft, but got win_length=5")
    compare_error(lambda lib: lib.istft(lib.stft(lib.tensor(x), 4, return_complex=True), 4,
                                        window=lib.zeros(4)), "window overlap add min")
    compare(lambda lib: lib.istft(lib.stft(lib.tensor(x), 4, return_complex=True), 4,
                                  center=False))
    compare(lambda lib: lib.istft(lib.stft(lib.tensor(x), 4, return_complex=True), 4, length=20))
