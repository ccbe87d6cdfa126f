"""Complex numbers: the parts of a complex tensor (``real``, ``imag``, ``view_as_real``,
``view_as_complex``: views, as in PyTorch), building one (``complex``, ``polar``), and the
functions only complex numbers need (``conj``, ``angle``, ``sgn``).

Gradients follow PyTorch's convention: the gradient of a real loss L with respect to a complex
z is dL/dRe(z) + i dL/dIm(z), so a holomorphic f passes ``grad * conj(f'(z))`` back.

``conj`` is eager here: PyTorch returns a lazily conjugated view sharing the input's memory;
NumPy has no such view, so Ember's ``conj`` of a complex tensor is a new tensor holding the
conjugated values. It carries PyTorch's conjugate bit all the same (``is_conj()`` True, in the
tensor's ``__dict__``), so ``resolve_conj`` materialises it as PyTorch does, with a clone (a
copy of values that are conjugated already). Unlike PyTorch's, the bit is not passed on to
views of that tensor.
"""
import math

from .. import _dtype as dt
from . import _dispatch
from ._dispatch import Tensor, Node, needs_grad, record, _wrap, device_mismatch, dtype_name
from .shape import make_view, select, clone
from .elementwise import _zeros_like, where
from ..amp import autocast_mode as _autocast

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "conj", "conj_physical",
           "resolve_conj", "resolve_neg", "is_conj", "is_neg", "angle", "polar",
           "complex", "adjoint"]

METHODS = ["conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg",
           "angle", "adjoint"]
INPLACE = ["conj_physical"]
# ``sgn`` is exported by ops/elementwise.py; the complex one here (with its backward) serves
# ``abs``'s backward and is what elementwise's ``sgn`` uses for complex inputs.

_COMPLEX_OF = {dt.float32: dt.complex64, dt.float64: dt.complex128}


def _view_with_dtype(input, data, dtype, replay):
    out = make_view(input, data, replay)
    out._dtype = dtype
    return out


# ---------------------------------------------------------------------------------------------
# The parts of a complex tensor, as views
# ---------------------------------------------------------------------------------------------

def real(input):
    """The real part as a view (writes go through to ``input``); a real tensor is its own real
    part. PyTorch takes it as ``view_as_real(input).select(-1, 0)``, so its graph has those two
    nodes."""
    if input._dtype._kind != 3:
        return input
    if needs_grad(input):
        return select(view_as_real(input), -1, 0)
    return _view_with_dtype(input, input._data.real, input._dtype.to_real(), real)


def imag(input):
    """The imaginary part as a view, ``view_as_real(input).select(-1, 1)``; PyTorch refuses
    real tensors."""
    if input._dtype._kind != 3:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    if needs_grad(input):
        return select(view_as_real(input), -1, 1)
    return _view_with_dtype(input, input._data.imag, input._dtype.to_real(), imag)


class ViewAsRealBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return complex(grad.select(-1, 0), grad.select(-1, 1))


def view_as_real(input):
    """``input`` (complex, shape S) as a real view of shape S + (2,), real part first."""
    if input._dtype._kind != 3:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    data = input._data
    parts = data.real  # same strides, real itemsize: the first part of every element
    half = parts.itemsize
    xp = input._backend.xp
    view = xp.lib.stride_tricks.as_strided(parts, shape=data.shape + (2,),
                                           strides=data.strides + (half,))
    out = _view_with_dtype(input, view, input._dtype.to_real(), view_as_real)
    if needs_grad(input):
        record(ViewAsRealBackward0, (input,), out)
    return out


class ViewAsComplexBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return view_as_real(grad)


def view_as_complex(input):
    """A real tensor whose last dimension holds (real, imag) pairs, viewed as complex."""
    if _autocast.active and _autocast.enabled_for(input, "view_as_complex"):
        return _autocast.run(view_as_complex, "view_as_complex", input)
    d = input._dtype
    if d not in _COMPLEX_OF:
        if d is dt.float16:
            raise RuntimeError("view_as_complex: complex32 (the view of a half tensor) is not "
                               "supported by Ember")
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {dtype_name(d)}")
    data = input._data
    if data.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if data.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    cd = _COMPLEX_OF[d]
    if data.size == 0:
        view = input._backend.xp.empty(data.shape[:-1], dtype=cd.np)
    else:
        view = data.view(cd.np)[..., 0]  # the (real, imag) pairs are contiguous: checked above
    out = _view_with_dtype(input, view, cd, _replay_view_as_complex)
    if needs_grad(input):
        record(ViewAsComplexBackward0, (input,), out)
    return out


def _replay_view_as_complex(t):
    # Replayed on gradients too (in-place writes through the view), whose strides may not allow
    # the view; their values are all that matters there.
    try:
        return view_as_complex(t)
    except RuntimeError:
        return view_as_complex(t.contiguous())


# ---------------------------------------------------------------------------------------------
# Conjugation
# ---------------------------------------------------------------------------------------------

class ConjBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return conj(grad)

    def jvp(self, t):
        return conj(t)  # R-linear: the conjugate of the tangent


class ConjPhysicalBackward0(ConjBackward0):
    __slots__ = ()


def _conjugated(input, node_cls):
    if input._dtype._kind != 3:
        return input
    out = _wrap(input._backend.xp.conj(input._data), input._dtype, input)
    if needs_grad(input):
        record(node_cls, (input,), out)
    return out


def conj(input):
    """The complex conjugate; a real tensor is returned as is (free on real paths). The result
    has the conjugate bit when ``input`` has not (conjugating twice clears it)."""
    out = _conjugated(input, ConjBackward0)
    if out is not input and not input.__dict__.get("_conj_bit"):
        out.__dict__["_conj_bit"] = True
    return out


def conj_physical(input):
    return _conjugated(input, ConjPhysicalBackward0)


def resolve_conj(input):
    """``input`` without the conjugate bit: a clone where it has one, else ``input``."""
    if input.__dict__.get("_conj_bit"):
        return clone(input)
    return input


def resolve_neg(input):
    return input


def is_conj(input):
    return bool(input.__dict__.get("_conj_bit"))


def is_neg(input):
    return False


def adjoint(input):
    """The conjugate transpose of the last two dimensions (a view for real tensors)."""
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    return conj(input.transpose(-2, -1))


def _mH(self):
    if self.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return adjoint(self)


def _H(self):
    if self.ndim not in (0, 2):
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor.")
    # PyTorch's H is the adjoint of the last two dims: one transpose node, as mH.
    return conj(self.transpose(-2, -1) if self.ndim == 2 else self.permute(()))


# ---------------------------------------------------------------------------------------------
# angle, sgn
# ---------------------------------------------------------------------------------------------

class AngleBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (z,) = self.saved_tensors
        if z._dtype._kind != 3:
            return _zeros_like(z)
        # d(atan2(y, x)) = (-y dx + x dy) / |z|^2, i.e. i z / |z|^2 in PyTorch's convention
        g = grad * z / (z.abs() ** 2) * 1j
        return where(z == 0, _zeros_like(g), g)


def angle(input):
    """The argument of each element; for real numbers pi where negative, else 0 (NaN kept)."""
    d = input._dtype
    xp = input._backend.xp
    x = input._data
    if d._kind == 3:
        out_dtype = d.to_real()
        data = xp.angle(x)
    else:
        out_dtype = d if d._kind == 2 else dt.get_default_dtype()
        data = xp.where(x < 0, math.pi, 0.0)
        if d._kind == 2:
            data = xp.where(xp.isnan(x), x, data)
    res = _wrap(data.astype(out_dtype.np, copy=False), out_dtype, input)
    if needs_grad(input):
        record(AngleBackward0, (input,), res, save=(input,))
    return res


class SgnBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (z, s) = self.saved_tensors
        if z._dtype._kind != 3:
            return _zeros_like(grad)
        r = z.abs()
        # d(z/|z|): the tangential part of grad over |z|, zero at z == 0
        g = (grad - s * real(grad * conj(s))) / r
        return where(r == 0, _zeros_like(g), g)


def sgn(input):
    """``z / |z|`` (0 at 0) for complex tensors; ``sign`` for real ones."""
    if input._dtype._kind != 3:
        return input.sign()
    xp = input._backend.xp
    x = input._data
    r = xp.abs(x)
    data = xp.where(r == 0, 0, x / xp.where(r == 0, 1, r)).astype(x.dtype, copy=False)
    res = _wrap(data, input._dtype, input)
    if needs_grad(input):
        record(SgnBackward0, (input,), res, save=(input,), save_out=True)
    return res


# ---------------------------------------------------------------------------------------------
# Building complex tensors
# ---------------------------------------------------------------------------------------------

def _check_parts(a, b, second_name):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        bad = a if not isinstance(a, Tensor) else b
        raise TypeError(f"expected Tensor as element {0 if bad is a else 1} in argument, but got "
                        f"{type(bad).__name__}")
    if a._device is not b._device:
        raise device_mismatch(a, b)
    if a._dtype not in _COMPLEX_OF or b._dtype not in _COMPLEX_OF:
        if a._dtype._kind != 2 or b._dtype._kind != 2:
            raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                               f"{dtype_name(a._dtype)} and {dtype_name(b._dtype)}")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"Expected object of scalar type {dtype_name(a._dtype)} but got scalar "
                           f"type {dtype_name(b._dtype)} for {second_name}")
    if a._dtype not in _COMPLEX_OF:
        raise RuntimeError(f"Ember has no complex32: {dtype_name(a._dtype)} inputs are not "
                           "supported")
    return _COMPLEX_OF[a._dtype]


class ComplexBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return (real(grad) if self._edges[0] is not None else None,
                imag(grad) if self._edges[1] is not None else None)

    def jvp(self, t_real, t_imag):
        like = t_real if t_real is not None else t_imag
        t_real = t_real if t_real is not None else like.new_zeros(self._in_meta[0][0])
        t_imag = t_imag if t_imag is not None else like.new_zeros(self._in_meta[1][0])
        return complex(t_real, t_imag)


def complex(real, imag, *, out=None):
    """``real + 1j * imag`` from two floating tensors of one dtype (broadcast)."""
    cd = _check_parts(real, imag, "second argument")
    xp = real._backend.xp
    shape = xp.broadcast_shapes(real._data.shape, imag._data.shape)
    data = xp.empty(shape, dtype=cd.np)
    data.real = real._data
    data.imag = imag._data
    res = _wrap(data, cd, real)
    if needs_grad(real, imag):
        record(ComplexBackward0, (real, imag), res)
    if out is not None:
        return out.copy_(res)
    return res


class PolarBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (result,) = self.saved_tensors
        g_abs = g_angle = None
        if self._edges[0] is not None:
            # PyTorch's formula: the direction of the result (not cis(angle), which differs
            # in sign where abs < 0)
            g_abs = real(grad * conj(sgn(result)))
        if self._edges[1] is not None:
            g_angle = imag(grad * conj(result))
        return g_abs, g_angle

    def jvp(self, t_abs, t_angle):
        # d(r e^{i theta}) = e^{i theta} dr + i r e^{i theta} dtheta: the true derivative
        # (PyTorch's forward formula), where the backward above uses PyTorch's sign convention
        (result,) = self.saved_tensors
        r, theta = self.fw_parts
        terms = []
        if t_abs is not None:
            terms.append(polar(r.new_ones(r.shape), theta) * t_abs)
        if t_angle is not None:
            terms.append(result * t_angle * 1j)
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]


def polar(abs, angle, *, out=None):
    """``abs * (cos(angle) + 1j * sin(angle))``."""
    if _autocast.active and _autocast.enabled_for(abs, "polar"):
        return _autocast.run(polar, "polar", abs, angle, out=out)
    cd = _check_parts(abs, angle, "second argument")
    xp = abs._backend.xp
    r, theta = abs._data, angle._data
    shape = xp.broadcast_shapes(r.shape, theta.shape)
    data = xp.empty(shape, dtype=cd.np)
    data.real = r * xp.cos(theta)
    data.imag = r * xp.sin(theta)
    res = _wrap(data, cd, abs)
    if needs_grad(abs, angle):
        # the parts are kept for the forward derivative only (inside a dual level)
        record(PolarBackward0, (abs, angle), res, save_out=True,
               fw_parts=(abs, angle) if _dispatch._dual_active else None)
    if out is not None:
        return out.copy_(res)
    return res


# ---------------------------------------------------------------------------------------------
# Tensor.real / Tensor.imag: properties, assignable, as in PyTorch
# ---------------------------------------------------------------------------------------------

def _set_real(self, value):
    real(self).copy_(value)


def _set_imag(self, value):
    imag(self).copy_(value)


Tensor.real = property(real, _set_real)
Tensor.imag = property(imag, _set_imag)
Tensor.H = property(_H)
Tensor.mH = property(_mH)
