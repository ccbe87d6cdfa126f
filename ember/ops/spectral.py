"""Discrete Fourier transforms (``torch.fft``), built as PyTorch builds them: each function is
a front end (dtype promotion with ``to``, trimming with ``narrow`` and zero-padding with
``constant_pad_nd`` to the requested sizes, ``conj`` where a transform runs in the other
direction) over three kernels with PyTorch's names and backward formulas, so ``grad_fn``
chains print as PyTorch's. Each kernel is one call to the backend's ``xp.fft`` routine (the
one-dimensional one for one dim), which handles the batch axes itself.

* ``_fft_c2c`` (``FftC2CBackward0``): linear, so the gradient is the transform in the other
  direction with the same scaling;
* ``_fft_r2c`` (``FftR2CBackward0``): real to complex, full or one-sided. The adjoint of "keep
  the first n//2+1 outputs" is zero-padding, so the gradient is the inverse transform of the
  padded gradient (its real part reaches the real input);
* ``_fft_c2r`` (``FftC2RBackward0``): one-sided complex to real; the gradient is the one-sided
  forward transform of the gradient with the entries that stand for two spectrum entries
  doubled.

A kernel's ``normalization`` is PyTorch's ``fft_norm_mode``: how the result is scaled (not at
all, by 1/sqrt(n), by 1/n), whatever the direction; ``norm=`` names the scaling by the
direction it applies to, and ``_norm_mode`` translates, as PyTorch's ``norm_from_string``.

The short-time transforms ``stft``/``istft`` are framed signals through the same kernels (the
frames one ``as_strided`` view, the overlap-add ``unfold_backward``), and the window functions
(``hann_window``…) they are usually given are computed in float64 and rounded once.
"""
import builtins
import math
import operator
import warnings

from .. import _dtype as dt
from ..backends import get_backend
from ._dispatch import (Node, needs_grad, record, _wrap, wrap_dim, wrap_dim_no_scalar,
                        dtype_name, device_mismatch)
from . import creation as _creation
from .shape import roll, narrow
from .conv import constant_pad_nd
from .complex import conj, conj_physical
from ..amp import autocast_mode as _autocast

# Top-level: the windows and the short-time transforms; the ember.fft namespace
# (ember/fft.py) exports the transforms.
__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "stft", "istft"]
METHODS = ["stft", "istft"]
INPLACE = []

_COMPLEX_OF = {dt.float32: dt.complex64, dt.float64: dt.complex128}

# PyTorch's fft_norm_mode
_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------

def _norm_mode(norm, forward):
    """The scaling a transform in direction ``forward`` applies under ``norm=``."""
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _numpy_norm(mode, forward):
    """NumPy's ``norm=`` for a transform in direction ``forward`` scaled by ``mode``."""
    if mode == _BY_ROOT_N:
        return "ortho"
    unscaled = "backward" if forward else "forward"
    scaled = "forward" if forward else "backward"
    return scaled if mode == _BY_N else unscaled


def _fft_dtype(input, require_complex, real_input_required=None):
    """The dtype the transform computes in (PyTorch's ``promote_type_fft``): ints and bool go
    through the default float dtype; half precision has no CPU kernel in PyTorch."""
    d = input._dtype
    if d._kind == 3:
        if real_input_required:
            kind = "real-valued" if real_input_required.endswith("n") else "real"
            raise RuntimeError(f"{real_input_required} expects a {kind} input tensor, but got "
                               f"{dtype_name(d)}")
        return d
    if d._kind < 2:
        d = dt.get_default_dtype()
    if d not in _COMPLEX_OF:
        raise RuntimeError(f"Unsupported dtype {dtype_name(d)}")
    return _COMPLEX_OF[d] if require_complex else d


def _promote(input, require_complex, real_input_required=None):
    """``input`` in the dtype the transform computes in (a ``to`` copy when it is not)."""
    target = _fft_dtype(input, require_complex, real_input_required)
    return input if input._dtype is target else input.to(target)


def _check_points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _int_arg(fn, name, value):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{fn}(): argument '{name}' must be int, not "
                        f"{type(value).__name__}") from None


def _one_dim(fn, input, n, dim):
    ndim = input._data.ndim
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(_int_arg(fn, "dim", dim), ndim)
    if n is not None:
        n = _int_arg(fn, "n", n)
        _check_points(n)
    return d, n


def _n_dims(fn, input, s, dim):
    """Dims and sizes (None: keep the input's) for an n-dimensional transform, as PyTorch
    resolves them: ``s`` alone transforms the last len(s) dims; neither means all dims."""
    ndim = input._data.ndim
    if s is not None:
        s = [_int_arg(fn, "s", v) for v in ([s] if isinstance(s, int) else s)]
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [wrap_dim(_int_arg(fn, "dim", d), ndim) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} "
                               "dimensions.")
        dims = list(range(ndim - len(s), ndim))
    else:
        dims = list(range(ndim))
    sizes = [None] * len(dims)
    if s is not None:
        for i, v in enumerate(s):
            if v != -1:
                _check_points(v)
                sizes[i] = v
    for d, n in zip(dims, sizes):
        if n is None:
            _check_points(input._data.shape[d])
    return dims, sizes


def _c2r_sizes(fn, input, dims, sizes):
    """The output length of the last (Hermitian) dim, and the sizes the input is resized to
    (that dim to ``n // 2 + 1``), as PyTorch's c2r front ends resolve them."""
    if not dims:
        raise RuntimeError(f"{fn} must transform at least one axis")
    last = sizes[-1]
    if last is None:
        last = 2 * (input._data.shape[dims[-1]] - 1)
    _check_points(last)
    return last, list(sizes[:-1]) + [last // 2 + 1]


def _resize(x, dims, sizes):
    """PyTorch's ``resize_fft_input``: ``x`` trimmed (``narrow``, one view per dim) or
    zero-padded (one ``constant_pad_nd`` for all dims) to ``sizes`` (None: as it is) along
    ``dims``."""
    if sizes.count(None) == len(sizes):
        return x
    pads = [[0, 0] for _ in range(x._data.ndim)]
    pad = False
    for d, n in zip(dims, sizes):
        if n is None:
            continue
        have = x._data.shape[d]
        if have < n:
            pads[d][1] = n - have
            pad = True
        elif have > n:
            x = narrow(x, d, 0, n)
    return constant_pad_nd(x, tuple(map(tuple, pads)), 0) if pad else x


# ---------------------------------------------------------------------------------------------
# The three kernels
# ---------------------------------------------------------------------------------------------

class FftC2CBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return _fft_c2c(grad, self.dim, self.normalization, not self.forward)

    def jvp(self, t):
        # every transform is linear: its tangent is the same transform of the input's
        return _fft_c2c(t, self.dim, self.normalization, self.forward)


def _fft_c2c(input, dim, normalization, forward):
    """The complex transform of ``input`` (complex) along the dims ``dim``."""
    xp = input._backend.xp
    x = input._data
    if not dim:
        data = x.copy()
    else:
        norm = _numpy_norm(normalization, forward)
        if len(dim) == 1:  # NumPy's one-dimensional routines skip fftn's per-call set-up
            transform = xp.fft.fft if forward else xp.fft.ifft
            data = transform(x, axis=dim[0], norm=norm)
        else:
            transform = xp.fft.fftn if forward else xp.fft.ifftn
            data = transform(x, axes=dim, norm=norm)
        if data.dtype != x.dtype:
            data = data.astype(x.dtype)
    res = _wrap(data, input._dtype, input)
    if needs_grad(input):
        record(FftC2CBackward0, (input,), res, dim=list(dim), normalization=normalization,
               forward=forward)
    return res


class FftR2CBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        dim = self.dim
        if self.onesided:  # zero-pad the one-sided half back to the full spectrum
            missing = self.last_dim_size - grad._data.shape[dim[-1]]
            if missing > 0:
                pads = [(0, 0)] * grad._data.ndim
                pads[dim[-1]] = (0, missing)
                grad = constant_pad_nd(grad, tuple(pads), 0)
        return _fft_c2c(grad, dim, self.normalization, False)

    def jvp(self, t):
        return _fft_r2c(t, self.dim, self.normalization, self.onesided)


def _fft_r2c(input, dim, normalization, onesided):
    """The forward transform of ``input`` (real floating point) along ``dim``: the full
    spectrum, or with ``onesided`` its first ``n // 2 + 1`` entries along the last dim."""
    xp = input._backend.xp
    x = input._data
    norm = _numpy_norm(normalization, True)
    if len(dim) == 1:
        transform = xp.fft.rfft if onesided else xp.fft.fft
        data = transform(x, axis=dim[0], norm=norm)
    else:
        transform = xp.fft.rfftn if onesided else xp.fft.fftn
        data = transform(x, axes=dim, norm=norm)
    cd = _COMPLEX_OF[input._dtype]
    if data.dtype != cd.np:
        data = data.astype(cd.np)
    res = _wrap(data, cd, input)
    if needs_grad(input):
        record(FftR2CBackward0, (input,), res, dim=list(dim), normalization=normalization,
               onesided=onesided, last_dim_size=x.shape[dim[-1]])
    return res


class FftC2RBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        dim = self.dim
        g = _fft_r2c(grad, dim, self.normalization, True)
        # Each entry strictly between DC and Nyquist stands for itself and its mirror image.
        last = dim[-1]
        doubled = grad._data.shape[last] - g._data.shape[last]
        if doubled > 0:
            real = g._dtype.to_real()
            scale = g._backend.xp.ones(g._data.shape[last], dtype=real.np)
            scale[1:1 + doubled] = 2
            scale = scale.reshape((-1,) + (1,) * (g._data.ndim - 1 - last))
            g = g * _wrap(scale, real, g)
        return g

    def jvp(self, t):
        return _fft_c2r(t, self.dim, self.normalization, self.last_dim_size)


def _fft_c2r(input, dim, normalization, last_dim_size):
    """The real inverse transform of the one-sided spectrum ``input`` (complex, ``n // 2 + 1``
    entries along the last of ``dim``) to ``last_dim_size`` points."""
    xp = input._backend.xp
    x = input._data
    norm = _numpy_norm(normalization, False)
    if len(dim) == 1:
        data = xp.fft.irfft(x, n=last_dim_size, axis=dim[0], norm=norm)
    else:
        s = [x.shape[d] for d in dim[:-1]] + [last_dim_size]
        data = xp.fft.irfftn(x, s=s, axes=dim, norm=norm)
    rd = input._dtype.to_real()
    if data.dtype != rd.np:
        data = data.astype(rd.np)
    res = _wrap(data, rd, input)
    if needs_grad(input):
        record(FftC2RBackward0, (input,), res, dim=list(dim), normalization=normalization,
               last_dim_size=last_dim_size)
    return res


# ---------------------------------------------------------------------------------------------
# torch.fft's functions: PyTorch's front ends
# ---------------------------------------------------------------------------------------------

def _check_sizes(input, dims, sizes):
    for d, n in zip(dims, sizes):
        _check_points(input._data.shape[d] if n is None else n)


def _c2c(input, dims, sizes, norm, forward):
    _check_sizes(input, dims, sizes)
    x = _resize(_promote(input, True), dims, sizes)
    return _fft_c2c(x, dims, _norm_mode(norm, forward), forward)


def _r2c(fn, input, dims, sizes, norm, forward, onesided):
    """Real input: the forward kernel, conjugated for an inverse transform."""
    x = _promote(input, False, fn if onesided else None)
    _check_sizes(x, dims, sizes)
    x = _resize(x, dims, sizes)
    res = _fft_r2c(x, dims, _norm_mode(norm, forward), onesided)
    return res if forward else conj(res)


def _c2r(fn, input, dims, sizes, norm, forward):
    """To real output: an inverse kernel, fed the conjugate for a forward transform (hfft)."""
    last, sizes = _c2r_sizes(fn, input, dims, sizes)
    x = _resize(_promote(input, True), dims, sizes)
    mode = _norm_mode(norm, forward)
    if not forward:
        return _fft_c2r(x, dims, mode, last)
    # hfftn: the forward transform over the other dims, then the last dim's as an inverse
    # transform of the conjugate
    if len(dims) > 1:
        x = _fft_c2c(x, dims[:-1], mode, True)
    return _fft_c2r(conj(x), dims[-1:], mode, last)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_fft"):
        return _autocast.run(fft, "fft_fft", input, n, dim, norm, out=out)
    d, n = _one_dim("fft_fft", input, n, dim)
    if input._dtype._kind == 3:
        return _out(_c2c(input, [d], [n], norm, True), out)
    return _out(_r2c("fft", input, [d], [n], norm, True, False), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_ifft"):
        return _autocast.run(ifft, "fft_ifft", input, n, dim, norm, out=out)
    d, n = _one_dim("fft_ifft", input, n, dim)
    if input._dtype._kind == 3:
        return _out(_c2c(input, [d], [n], norm, False), out)
    return _out(_r2c("ifft", input, [d], [n], norm, False, False), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_rfft"):
        return _autocast.run(rfft, "fft_rfft", input, n, dim, norm, out=out)
    d, n = _one_dim("fft_rfft", input, n, dim)
    return _out(_r2c("rfft", input, [d], [n], norm, True, True), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_irfft"):
        return _autocast.run(irfft, "fft_irfft", input, n, dim, norm, out=out)
    d, n = _one_dim("fft_irfft", input, n, dim)
    return _out(_c2r("irfft", input, [d], [n], norm, False), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a Hermitian-symmetric signal given by its first half: real output."""
    if _autocast.active and _autocast.enabled_for(input, "fft_hfft"):
        return _autocast.run(hfft, "fft_hfft", input, n, dim, norm, out=out)
    d, n = _one_dim("fft_hfft", input, n, dim)
    return _out(_c2r("hfft", input, [d], [n], norm, True), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_ihfft"):
        return _autocast.run(ihfft, "fft_ihfft", input, n, dim, norm, out=out)
    d, n = _one_dim("fft_ihfft", input, n, dim)
    return _out(_r2c("ihfft", input, [d], [n], norm, False, True), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_hfftn", input, s, dim)
    return _out(_c2r("hfftn", input, dims, sizes, norm, True), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_ihfftn", input, s, dim)
    if input._dtype._kind == 3:
        raise RuntimeError("Only supports floating-point dtypes, but found: "
                           f"{dtype_name(input._dtype)}")
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    x = _resize(_promote(input, False), dims, sizes)
    mode = _norm_mode(norm, False)
    half = _fft_r2c(x, dims[-1:], mode, True)
    if len(dims) == 1:
        return _out(conj(half), out)
    # the conjugate of the last dim's forward transform, then the inverse over the others
    return _out(_fft_c2c(conj_physical(half), dims[:-1], mode, False), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_fft2"):
        return _autocast.run(fft2, "fft_fft2", input, s, dim, norm, out=out)
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_ifft2"):
        return _autocast.run(ifft2, "fft_ifft2", input, s, dim, norm, out=out)
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_rfft2"):
        return _autocast.run(rfft2, "fft_rfft2", input, s, dim, norm, out=out)
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_irfft2"):
        return _autocast.run(irfft2, "fft_irfft2", input, s, dim, norm, out=out)
    return irfftn(input, s, dim, norm, out=out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_fftn"):
        return _autocast.run(fftn, "fft_fftn", input, s, dim, norm, out=out)
    dims, sizes = _n_dims("fft_fftn", input, s, dim)
    return _out(_c2c(input, dims, sizes, norm, True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_ifftn"):
        return _autocast.run(ifftn, "fft_ifftn", input, s, dim, norm, out=out)
    dims, sizes = _n_dims("fft_ifftn", input, s, dim)
    return _out(_c2c(input, dims, sizes, norm, False), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_rfftn"):
        return _autocast.run(rfftn, "fft_rfftn", input, s, dim, norm, out=out)
    dims, sizes = _n_dims("fft_rfftn", input, s, dim)
    _fft_dtype(input, False, "rfftn")
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    return _out(_r2c("rfftn", input, dims, sizes, norm, True, True), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    if _autocast.active and _autocast.enabled_for(input, "fft_irfftn"):
        return _autocast.run(irfftn, "fft_irfftn", input, s, dim, norm, out=out)
    dims, sizes = _n_dims("fft_irfftn", input, s, dim)
    return _out(_c2r("irfftn", input, dims, sizes, norm, False), out)


def _out(res, out):
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


# ---------------------------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------------------------

def _window(name, window_length, periodic, dtype, device, requires_grad, formula):
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    d = dt.check_dtype(dtype, name) or dt.get_default_dtype()
    if d._kind != 2:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    dev = _creation.resolve_device(device)
    xp = get_backend(dev).xp
    if window_length <= 1:
        data = xp.ones((window_length,), dtype=d.np)
    else:
        n = window_length + 1 if periodic else window_length
        values = formula(xp, xp.arange(n, dtype="float64"), n)
        data = values[:window_length].astype(d.np)
    return _creation._finish(data, d, dev, requires_grad)


def _cosine_sum(*coefficients):
    def formula(xp, k, n):
        phase = 2 * math.pi * k / (n - 1)
        return builtins.sum(c * xp.cos(i * phase) for i, c in enumerate(coefficients))
    return formula


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.5, -0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(alpha, -beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, -0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    def formula(xp, k, n):
        return 1 - xp.abs(2 * k / (n - 1) - 1)
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   formula)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    def formula(xp, k, n):
        half = (n - 1) / 2
        ratio = (k - half) / half
        return xp.i0(beta * xp.sqrt(xp.clip(1 - ratio * ratio, 0, None))) / xp.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   formula)


# ---------------------------------------------------------------------------------------------
# stft, istft
# ---------------------------------------------------------------------------------------------

def _stft_prefix(name, input, n_fft, hop_length, win_length, window):
    shape = list(input._data.shape)
    return (f"{name}(ember.Tensor{shape}, n_fft={n_fft}, hop_length={hop_length}, "
            f"win_length={win_length}, window={'None' if window is None else 'Tensor'}) : ")


def _check_window(window, win_length, like, prefix):
    if window is None:
        return
    if window._device is not like._device:
        raise device_mismatch(like, window)
    if window._data.ndim != 1 or window._data.shape[0] != win_length:
        raise RuntimeError(f"{prefix}expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window._data.shape)}")


def _stft_window(window, n_fft, win_length, like):
    """The window over ``n_fft`` samples, as PyTorch's stft makes it: a shorter one written into
    the middle of zeros (``narrow(...).copy_``), no window a block of ones there."""
    from .. import ops
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    padded = ops.zeros(n_fft, dtype=(window if window is not None else like)._dtype,
                       device=like._device)
    if window is None:
        padded.narrow(0, left, win_length).fill_(1)
    else:
        padded.narrow(0, left, win_length).copy_(window)
    return padded


def _frames(signal, n_fft, hop_length):
    """PyTorch's time2col: the frames of a (batch, length) signal as a strided view
    (batch, n_frames, n_fft) of its storage."""
    from .. import ops
    batch, length = signal._data.shape
    n_frames = 1 + (length - n_fft) // hop_length
    root = signal._base if signal._base is not None else signal
    flags = root._data.flags
    if not (flags.c_contiguous or flags.f_contiguous):
        # as_strided addresses a storage that is one block; the same windows as a view
        return signal.unfold(-1, n_fft, hop_length)
    s0, s1 = signal.stride()
    return ops.as_strided(signal, (batch, n_frames, n_fft), (s0, hop_length * s1, s1))


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform: frames of ``n_fft`` samples every ``hop_length``, each
    multiplied by ``window`` and transformed, recorded as PyTorch records it (the centring pad
    between two views, the frames as one ``as_strided`` view, one FFT kernel over the last dim,
    transposed in place)."""
    if _autocast.active and _autocast.enabled_for(input, "stft"):
        return _autocast.run(stft, "stft", input, n_fft, hop_length, win_length, window, center,
                             pad_mode, normalized, onesided, return_complex, align_to_window)
    from .. import ops
    if center and input._dtype is dt.bool and pad_mode in ("reflect", "replicate"):
        # PyTorch pads the signal before any other check, and has no bool kernel for that
        kernel = "reflection_pad1d" if pad_mode == "reflect" else "replication_pad1d"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if return_complex is None and input._dtype._kind != 3 and (
            window is None or window._dtype._kind != 3):
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    if return_complex is False:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "ember.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    nd = input._data.ndim
    prefix = _stft_prefix("stft", input, n_fft, hop_length, win_length, window)
    if nd not in (1, 2):
        raise RuntimeError(f"{prefix}expected a 1D or 2D tensor")
    signal = input
    if center:  # torch.functional.stft: the pad runs on a (1, batch, length) view
        from .conv import pad
        half = n_fft // 2
        extended = signal.view((1,) * (3 - nd) + tuple(signal._data.shape))
        padded = pad(extended, (half, half), mode=pad_mode)
        signal = padded.view(padded._data.shape[-nd:])
    if input._dtype._kind < 2:  # checked on the padded signal, which PyTorch's message names
        padded = _stft_prefix("stft", signal, n_fft, hop_length, win_length, window)
        raise RuntimeError(f"{padded}expected a tensor of floating point or complex values")
    if nd == 1:
        signal = signal.unsqueeze(0)
    length = signal._data.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"{prefix}expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"{prefix}expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{prefix}expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    _check_window(window, win_length, input, prefix)
    window = _stft_window(window, n_fft, win_length, input)
    frames = _frames(signal, n_fft, hop_length)              # (batch, n_frames, n_fft)
    if window is not None:
        frames = frames.mul(window)
    complex_input = frames._dtype._kind == 3
    if onesided is None:
        onesided = not complex_input
    elif onesided and complex_input:
        raise RuntimeError(f"{prefix}Cannot have onesided output if window or input is "
                           "complex")
    mode = _BY_ROOT_N if normalized else _NONE
    if complex_input:
        spectrum = _fft_c2c(frames, [2], mode, True)
    else:
        spectrum = _fft_r2c(frames, [2], mode, onesided)
    spectrum.transpose_(1, 2)                                # (batch, freq, n_frames)
    if nd == 1:
        spectrum.squeeze_(0)
    if not return_complex:
        spectrum = ops.view_as_real(spectrum)
    return spectrum


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse of ``stft``: inverse FFT of each frame, windowed overlap-add
    (``unfold_backward``), divided by the overlap-added squared window (the least-squares
    estimate), recorded as PyTorch records it."""
    from .. import ops
    from .cumulative import unfold_backward
    if input._dtype._kind != 3:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    prefix = _stft_prefix("istft", input, n_fft, hop_length, win_length, window)
    nd = input._data.ndim
    if nd not in (2, 3):
        raise RuntimeError(f"{prefix}expected a tensor with a 2 or 3 dimensions of complex "
                           f"dtype, but got {nd}")
    n_freq, n_frames = input._data.shape[-2:]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_fft // 2 + 1 != n_freq:
        raise RuntimeError(f"{prefix}expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(f"{prefix}expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {n_freq}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError(f"{prefix}expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{prefix}expected 0 < win_length <= n_fft")
    _check_window(window, win_length, input, prefix)
    if return_complex and onesided:
        raise RuntimeError(f"{prefix}Cannot have onesided output if window or input is "
                           "complex")
    if not return_complex and window is not None and window._dtype._kind == 3:
        raise RuntimeError(f"{prefix}Complex windows are incompatible with "
                           "return_complex=False")
    columns = ops.view_as_real(ops.resolve_conj(input))      # (batch?, freq, n_frames, 2)
    if window is None:
        window = ops.ones(win_length, dtype=columns._dtype, device=input._device)
    if win_length != n_fft:  # centred between zeros
        left = (n_fft - win_length) // 2
        window = constant_pad_nd(window, ((left, n_fft - win_length - left),), 0)
    if nd == 2:
        columns = columns.unsqueeze(0)
    columns = columns.transpose(1, 2)                        # (batch, n_frames, freq, 2)
    if not _views_as_complex(columns):
        columns = columns.contiguous()
    columns = ops.view_as_complex(columns)
    mode = _BY_ROOT_N if normalized else _BY_N
    if return_complex:
        frames = _fft_c2c(columns, [2], mode, False)
    else:
        if not onesided:
            columns = columns.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft_c2r(columns, [2], mode, n_fft)
    frames = frames * window.view(1, 1, n_fft)               # (batch, n_frames, n_fft)
    expected = n_fft + hop_length * (n_frames - 1)
    signal = unfold_backward(frames, (frames._data.shape[0], expected), 1, n_fft, hop_length)
    squared = window.pow(2).expand(1, n_frames, n_fft)
    envelope = unfold_backward(squared, (1, expected), 1, n_fft, hop_length)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = expected - n_fft // 2
    else:
        end = expected
    stop = builtins.min(end, expected)
    kept = builtins.max(stop - start, 0)
    signal = signal.narrow(1, start, kept)
    envelope = envelope.narrow(1, start, kept)
    if envelope.numel() and bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(f"{prefix}window overlap add min: 1")
    signal = signal / envelope
    if nd == 2:
        signal = signal.squeeze(0)
    if end > expected:
        signal = constant_pad_nd(signal, ((0, end - expected),), 0)
    return signal


def _views_as_complex(pairs):
    """Whether ``view_as_complex`` can view ``pairs`` as it is (PyTorch's ``as_complex``: pairs
    adjacent and every other stride even), else it needs a contiguous copy first."""
    strides = pairs.stride()
    return (strides[-1] == 1 and all(s % 2 == 0 for s in strides[:-1])
            and pairs.storage_offset() % 2 == 0)


# ---------------------------------------------------------------------------------------------
# Sample frequencies and shifts
# ---------------------------------------------------------------------------------------------

def _frequencies(name, values_of, n, d, dtype, device, requires_grad):
    from .creation import resolve_device, _finish
    from ..backends import get_backend
    n = _int_arg(name, "n", n)
    dtype = dtype or dt.get_default_dtype()
    if dtype._kind < 2:
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dtype._kind == 3:  # PyTorch builds the frequencies with arange, which refuses complex
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dtype_name(dtype)}'")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dev = resolve_device(device)
    xp = get_backend(dev).xp
    return _finish(values_of(xp, n, d).astype(dtype.np), dtype, dev, requires_grad)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    res = _frequencies("fftfreq", lambda xp, n, d: xp.fft.fftfreq(n, d) if n else xp.zeros(0),
                       n, d, dtype, device, requires_grad)
    return _out(res, out)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    # n == 0 gives one NaN, as PyTorch's arange(1) / (0 * d)
    res = _frequencies("rfftfreq", lambda xp, n, d: xp.arange(n // 2 + 1) / float(n * d),
                       n, d, dtype, device, requires_grad)
    return _out(res, out)


def _shift(input, dim, sign):
    ndim = input._data.ndim
    if dim is None:
        dims = list(range(ndim))
    else:
        dims = [wrap_dim_no_scalar(d, ndim) for d in ([dim] if isinstance(dim, int) else dim)]
    if not dims:  # PyTorch rolls by no shifts, which it refuses
        raise RuntimeError("`shifts` required")
    shape = input._data.shape
    # fftshift rolls by n // 2; ifftshift undoes it with (n + 1) // 2
    shifts = [(shape[d] + (sign < 0)) // 2 for d in dims]
    return roll(input, shifts, dims)


def fftshift(input, dim=None):
    """The zero-frequency term moved to the centre of each dimension in ``dim``."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    return _shift(input, dim, -1)


FFT_FUNCTIONS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
                 "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn",
                 "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
