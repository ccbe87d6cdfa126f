"""Discrete Fourier transforms (``torch.fft``): every transform is one call to the backend's
``xp.fft`` n-dimensional routine, which handles the batch axes itself.

Three kinds of transform, one node each:

* complex to complex (``fft``, ``ifft``, ``fftn``…): linear, so the gradient is the adjoint
  transform, the opposite direction with the dual normalisation ("backward" <-> "forward");
* real to complex, one-sided (``rfft``…): the adjoint of "keep the first n//2+1 outputs" is
  zero-padding, so the gradient is the full inverse transform of the padded gradient (its real
  part reaches the real input);
* complex to real (``irfft``…): PyTorch's formula, the one-sided forward transform of the
  gradient with the entries that stand for two spectrum entries doubled.

``s``/``n`` trim or zero-pad the input along each transformed dimension before the transform;
the gradient is trimmed or padded back to the input's size.
"""
import operator

from .. import _dtype as dt
from ._dispatch import Node, needs_grad, record, _wrap, wrap_dim, wrap_dim_no_scalar, dtype_name
from .shape import roll

__all__ = []  # the ember.fft namespace (ember/fft.py) exports these

_DUAL_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_COMPLEX_OF = {dt.float32: dt.complex64, dt.float64: dt.complex128}


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------

def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _DUAL_NORM:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _compute_dtype(input, real_input_required=None):
    """The complex dtype the transform computes in: ints and bool go through the default float
    dtype; half precision has no CPU kernel in PyTorch."""
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
    return _COMPLEX_OF[d]


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
    return dims, sizes


def _transform_sizes(x, dims, sizes):
    s = [x.shape[d] if n is None else n for d, n in zip(dims, sizes)]
    for n in s:
        _check_points(n)
    return s


def _resize(grad, dims, sizes):
    """``grad`` trimmed or zero-padded along ``dims`` to ``sizes`` (the adjoint of the input
    resizing ``s`` does), as Ember ops so the gradient stays differentiable."""
    from .indexing import getitem
    from .shape import cat
    shape = grad._data.shape
    key = [slice(None)] * len(shape)
    trimmed = False
    for d, size in zip(dims, sizes):
        if shape[d] > size:
            key[d] = slice(0, size)
            trimmed = True
    if trimmed:
        grad = getitem(grad, tuple(key))
    for d, size in zip(dims, sizes):
        have = grad._data.shape[d]
        if have < size:
            pad_shape = list(grad._data.shape)
            pad_shape[d] = size - have
            zeros = _wrap(grad._backend.xp.zeros(pad_shape, dtype=grad._data.dtype),
                          grad._dtype, grad)
            grad = cat([grad, zeros], d)
    return grad


# ---------------------------------------------------------------------------------------------
# The three transforms
# ---------------------------------------------------------------------------------------------

class FftC2CBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        g = _c2c(grad, self.dims, [None] * len(self.dims), _DUAL_NORM[self.norm], not self.forward)
        return _resize(g, self.dims, self.in_sizes)


def _c2c(input, dims, sizes, norm, forward):
    cd = _compute_dtype(input)
    xp = input._backend.xp
    x = input._data
    if x.dtype != cd.np:
        x = x.astype(cd.np)
    s = _transform_sizes(x, dims, sizes)
    if dims:
        transform = xp.fft.fftn if forward else xp.fft.ifftn
        data = transform(x, s=s, axes=dims, norm=norm)
        if data.dtype != cd.np:
            data = data.astype(cd.np)
    else:
        data = x.copy() if x is input._data else x
    res = _wrap(data, cd, input)
    if needs_grad(input):
        record(FftC2CBackward0, (input,), res, dims=dims, norm=norm, forward=forward,
               in_sizes=[input._data.shape[d] for d in dims])
    return res


class FftR2CBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        dims = self.dims
        full = _resize(grad, dims[-1:], [self.last_size])  # zero-pad the one-sided half
        g = _c2c(full, dims, [None] * len(dims), _DUAL_NORM[self.norm], not self.forward)
        return _resize(g, dims, self.in_sizes)


def _r2c(fn, input, dims, sizes, norm, forward=True):
    cd = _compute_dtype(input, real_input_required=fn)
    if not dims:
        raise RuntimeError(f"{fn} must transform at least one axis")
    rd = cd.to_real()
    xp = input._backend.xp
    x = input._data
    if x.dtype != rd.np:
        x = x.astype(rd.np)
    s = _transform_sizes(x, dims, sizes)
    if forward:
        data = xp.fft.rfftn(x, s=s, axes=dims, norm=norm)
    else:  # ihfft: the conjugate of the one-sided forward transform under the dual norm
        data = xp.conj(xp.fft.rfftn(x, s=s, axes=dims, norm=_DUAL_NORM[norm]))
    if data.dtype != cd.np:
        data = data.astype(cd.np)
    res = _wrap(data, cd, input)
    if needs_grad(input):
        record(FftR2CBackward0, (input,), res, dims=dims, norm=norm, forward=forward,
               last_size=s[-1], in_sizes=[input._data.shape[d] for d in dims])
    return res


class FftC2RBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        dims = self.dims
        g = _r2c("irfftn", grad, dims, [None] * len(dims), _DUAL_NORM[self.norm])
        # Each entry strictly between DC and Nyquist stands for itself and its mirror image.
        n = self.last_size
        doubled = n - g._data.shape[dims[-1]]
        if doubled > 0:
            scale = g._backend.xp.ones(g._data.shape[dims[-1]], dtype=g._dtype.to_real().np)
            scale[1:1 + doubled] = 2
            scale = scale.reshape((-1,) + (1,) * (g._data.ndim - 1 - dims[-1]))
            g = g * _wrap(scale, g._dtype.to_real(), g)
        return _resize(g, dims, self.in_sizes)


def _c2r(fn, input, dims, sizes, norm):
    if not dims:
        raise RuntimeError(f"{fn} must transform at least one axis")
    cd = _compute_dtype(input)
    xp = input._backend.xp
    x = input._data
    if x.dtype != cd.np:
        x = x.astype(cd.np)
    s = [x.shape[d] if n is None else n for d, n in zip(dims, sizes)]
    if sizes[-1] is None:
        s[-1] = 2 * (x.shape[dims[-1]] - 1)
    for n in s:
        _check_points(n)
    data = xp.fft.irfftn(x, s=s, axes=dims, norm=norm)
    rd = cd.to_real()
    if data.dtype != rd.np:
        data = data.astype(rd.np)
    res = _wrap(data, rd, input)
    if needs_grad(input):
        in_sizes = [input._data.shape[d] for d in dims]
        record(FftC2RBackward0, (input,), res, dims=dims, norm=norm, last_size=s[-1],
               in_sizes=in_sizes)
    return res


# ---------------------------------------------------------------------------------------------
# torch.fft's functions
# ---------------------------------------------------------------------------------------------

def fft(input, n=None, dim=-1, norm=None, *, out=None):
    d, n = _one_dim("fft_fft", input, n, dim)
    return _out(_c2c(input, [d], [n], _norm(norm), True), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    d, n = _one_dim("fft_ifft", input, n, dim)
    return _out(_c2c(input, [d], [n], _norm(norm), False), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    d, n = _one_dim("fft_rfft", input, n, dim)
    return _out(_r2c("rfft", input, [d], [n], _norm(norm)), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    d, n = _one_dim("fft_irfft", input, n, dim)
    return _out(_c2r("irfft", input, [d], [n], _norm(norm)), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a Hermitian-symmetric signal given by its first half: real output."""
    d, n = _one_dim("fft_hfft", input, n, dim)
    # hfft(x) = irfft(conj(x)) under the dual normalisation
    from .complex import conj
    return _out(_c2r("hfft", conj(input), [d], [n], _DUAL_NORM[_norm(norm)]), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    d, n = _one_dim("fft_ihfft", input, n, dim)
    return _out(_r2c("ihfft", input, [d], [n], _norm(norm), forward=False), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_hfftn", input, s, dim)
    from .complex import conj
    return _out(_c2r("hfftn", conj(input), dims, sizes, _DUAL_NORM[_norm(norm)]), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_ihfftn", input, s, dim)
    if input._dtype._kind == 3:
        raise RuntimeError("Only supports floating-point dtypes, but found: "
                           f"{dtype_name(input._dtype)}")
    return _out(_r2c("ihfftn", input, dims, sizes, _norm(norm), forward=False), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_fftn", input, s, dim)
    return _out(_c2c(input, dims, sizes, _norm(norm), True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_ifftn", input, s, dim)
    return _out(_c2c(input, dims, sizes, _norm(norm), False), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_rfftn", input, s, dim)
    return _out(_r2c("rfftn", input, dims, sizes, _norm(norm)), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    dims, sizes = _n_dims("fft_irfftn", input, s, dim)
    return _out(_c2r("irfftn", input, dims, sizes, _norm(norm)), out)


def _out(res, out):
    if out is None:
        return res
    from .inplace import copy_into_out
    return copy_into_out(out, res)


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
