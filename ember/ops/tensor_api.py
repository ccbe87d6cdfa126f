"""The rest of ``torch.*`` and ``torch.Tensor``: fused multiply-adds (addcmul, addcdiv, addr),
spectral windows, statistics (cov, corrcoef, dist, renorm, trace), numerical gradients,
histogramdd, the regularized incomplete gamma functions, index_reduce, split aliases, strided
factories, in-place view ops (``t_``, ``squeeze_``…), ``resize_`` and small tensor predicates.

Most ops here are compositions of differentiable Ember ops, so their backward comes from the
ops they are built of; ``igamma``/``igammac`` have their own forward (a series and a continued
fraction) and a ``Node`` for the gradient with respect to ``other``.
"""
import builtins
import math
import numbers
import operator
import warnings

import numpy as np

from .. import _dtype as dt
from .._random import numpy_generator
from ..backends import get_backend
from ._dispatch import (Tensor, Node, needs_grad, record, _wrap, wrap_dim, wrap_dims,
                        dtype_name, device_mismatch)
from .inplace import check_inplace, inplace
from . import activation as _activation, dropout as _dropout
from .elementwise import div_scalar, mul_scalar
from .shape import (SqueezeBackward3, SqueezeBackward4, SqueezeBackward5, TBackward1,
                    TransposeBackward1, UnsqueezeBackward1)
from .. import return_types
from ._dispatch import CompositeBackward, record_composite
from ..autograd.grad_mode import no_grad
from .._tensor import _contiguous_strides
from ..autograd.grad_mode import _state as _grad_state

__all__ = ["addcmul", "addcdiv", "addr", "bartlett_window", "blackman_window", "hamming_window",
           "hann_window", "kaiser_window", "binomial", "cov", "corrcoef", "dist", "dsplit",
           "row_stack", "empty_strided", "empty_permuted", "fill", "frombuffer", "get_device",
           "get_num_threads", "set_num_threads", "gradient", "histogramdd", "igamma", "igammac",
           "index_reduce", "is_inference", "is_same_size", "is_signed", "is_storage", "isreal",
           "renorm", "split_with_sizes", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes", "trace", "unravel_index", "dropout_", "alpha_dropout_",
           "feature_alpha_dropout_", "detach", "strided", "spmm", "geqrf", "orgqr", "ormqr",
           "stft", "istft"]

METHODS = ["addcmul", "addcdiv", "addr", "cov", "corrcoef", "dist", "dsplit", "get_device",
           "igamma", "igammac", "index_reduce", "is_inference", "is_same_size", "is_signed",
           "isreal", "renorm", "split_with_sizes", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes", "trace", "fill_diagonal_", "hardshrink", "prelu",
           "as_subclass", "type_as", "new_empty_strided", "resize_", "resize_as_", "resize",
           "resize_as", "t_", "transpose_", "swapaxes_", "swapdims_", "squeeze_", "unsqueeze_",
           "as_strided_", "layout", "output_nr", "is_meta", "is_mps", "is_maia",
           "const_data_ptr", "name", "volatile", "reinforce", "geqrf", "orgqr", "ormqr", "stft",
           "istft"]

INPLACE = ["addcmul", "addcdiv", "addr", "igamma", "igammac", "index_reduce", "renorm"]


def _ops():
    # The op package, imported at call time: it imports this module while it is being built.
    from .. import ops
    return ops


def _same_device(*tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if t is not None and t._device is not first._device:
            raise device_mismatch(first, t)


# ---------------------------------------------------------------------------------------------
# addcmul, addcdiv, addr
# ---------------------------------------------------------------------------------------------

def _scaled(product, value):
    return product if (type(value) is int and value == 1) else product * value


class AddcmulBackward0(Node):
    """``input + value * tensor1 * tensor2`` (edges: input, tensor1, tensor2)."""
    __slots__ = ()

    def backward(self, grad):
        t1, t2 = self.saved_tensors
        scaled = _scaled(grad, self.value)
        return (grad if self._edges[0] is not None else None,
                scaled * t2 if self._edges[1] is not None else None,
                scaled * t1 if self._edges[2] is not None else None)


class AddcdivBackward0(Node):
    """``input + value * tensor1 / tensor2`` (edges: input, tensor1, tensor2)."""
    __slots__ = ()

    def backward(self, grad):
        t1, t2 = self.saved_tensors
        scaled = _scaled(grad, self.value)
        return (grad if self._edges[0] is not None else None,
                scaled / t2 if self._edges[1] is not None else None,
                -scaled * t1 / (t2 * t2) if self._edges[2] is not None else None)


def _pointwise_product(node, input, tensor1, tensor2, value, product):
    with no_grad():
        res = input + _scaled(product(tensor1, tensor2), value)
    if needs_grad(input, tensor1, tensor2):
        record(node, (input, tensor1, tensor2), res, save=(tensor1, tensor2), value=value)
    return res


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    _same_device(input, tensor1, tensor2)
    rt = dt.promote_types(dt.promote_types(input._dtype, tensor1._dtype), tensor2._dtype)
    if rt is dt.bool:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    if rt._kind == 1 and isinstance(value, float):
        value = int(value)
    res = _pointwise_product(AddcmulBackward0, input, tensor1, tensor2, value, lambda a, b: a * b)
    return _finish_out(res, out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    _same_device(input, tensor1, tensor2)
    if tensor1._dtype._kind <= 1 and tensor2._dtype._kind <= 1:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes."
            .replace("torch.", "ember."))
    res = _pointwise_product(AddcdivBackward0, input, tensor1, tensor2, value, lambda a, b: a / b)
    return _finish_out(res, out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    _same_device(input, vec1, vec2)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    ops = _ops()
    rt = dt.promote_types(dt.promote_types(input._dtype, vec1._dtype), vec2._dtype)
    for name, scalar in (("beta", beta), ("alpha", alpha)):
        if rt._kind <= 1 and isinstance(scalar, float):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               "floating point number.")
    if builtins.all(t._dtype is dt.bool for t in (input, vec1, vec2)):
        input = input.expand(vec1._data.shape[0], vec2._data.shape[0])
        # PyTorch's boolean addr: (beta and input) or (alpha and vec1 outer vec2)
        prod = ops.logical_and(vec1.unsqueeze(1), vec2.unsqueeze(0))
        res = ops.logical_or(prod if alpha else ops.zeros_like(prod),
                             input if beta else ops.zeros_like(input))
    else:
        # the outer product is taken in the result dtype (a uint8 one against a float input
        # does not wrap around)
        def composition(input, vec1, vec2):
            input = input.expand(vec1._data.shape[0], vec2._data.shape[0])
            product = ops.outer(vec1.to(rt), vec2.to(rt))
            if beta == 0:
                # beta == 0 ignores input entirely (NaN and infinity included), as in PyTorch.
                return _scaled(product, alpha) + fill(input, 0)
            return _scaled(input, beta) + _scaled(product, alpha)
        res = record_composite(AddrBackward0, (input, vec1, vec2), composition)
    return _finish_out(res, out)


class AddrBackward0(CompositeBackward):
    __slots__ = ()


def _finish_out(res, out):
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
    ops = _ops()
    dev = ops.creation.resolve_device(device)
    xp = get_backend(dev).xp
    if window_length <= 1:
        data = xp.ones((window_length,), dtype=d.np)
    else:
        n = window_length + 1 if periodic else window_length
        values = formula(xp, xp.arange(n, dtype="float64"), n)
        data = values[:window_length].astype(d.np)
    return ops.creation._finish(data, d, dev, requires_grad)


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
# Sampling, factories
# ---------------------------------------------------------------------------------------------

def binomial(count, prob, generator=None):
    _same_device(count, prob)
    if count._dtype._kind != 2:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{dtype_name(count._dtype)}")
    if count._dtype is not prob._dtype:
        raise RuntimeError(f"Found dtype {dtype_name(prob._dtype)} but expected "
                           f"{dtype_name(count._dtype)}")
    backend = count._backend
    n = backend.to_numpy(count._data)
    p = backend.to_numpy(prob._data)
    n, p = np.broadcast_arrays(n, p)
    rng = numpy_generator(generator)
    # PyTorch draws nothing for a negative count and saturates probabilities outside [0, 1].
    draws = rng.binomial(np.clip(n, 0, None).astype(np.int64), np.clip(p.astype(np.float64), 0, 1))
    return _wrap(backend.asarray(draws.astype(count._dtype.np)), count._dtype, count)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    size = tuple(operator.index(s) for s in size)
    stride = tuple(operator.index(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")
    if builtins.any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    d = dtype or dt.get_default_dtype()
    ops = _ops()
    dev = ops.creation.resolve_device(device)
    xp = get_backend(dev).xp
    needed = 0 if 0 in size else 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    storage = ops.creation._fill_if_deterministic(
        xp.empty((builtins.max(needed, 1),), dtype=d.np), d, "empty")
    data = xp.lib.stride_tricks.as_strided(storage, shape=size,
                                           strides=tuple(s * d.itemsize for s in stride))
    return ops.creation._finish(data, d, dev, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    size = tuple(operator.index(s) for s in size)
    order = tuple(operator.index(p) for p in physical_layout)
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    for i, p in enumerate(order):
        if not 0 <= p < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {p} at index {i}).  NB: negative dims "
                               "not currently supported; file an issue if you want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    d = dtype or dt.get_default_dtype()
    ops = _ops()
    dev = ops.creation.resolve_device(device)
    xp = get_backend(dev).xp
    physical = ops.creation._fill_if_deterministic(
        xp.empty(tuple(size[p] for p in order), dtype=d.np), d, "empty")
    inverse = [0] * len(order)
    for i, p in enumerate(order):
        inverse[p] = i
    return ops.creation._finish(physical.transpose(inverse), d, dev, requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad=False, pin_memory=False):
    return empty_strided(size, stride, dtype=dtype or self._dtype,
                         device=device if device is not None else self._device,
                         requires_grad=requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    view = memoryview(buffer)
    length = view.nbytes
    if length <= 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count <= 0 and (length - offset) % dtype.itemsize:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({dtype.itemsize})")
    if view.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor. You may want to copy "
                      "the buffer to protect its data or make it writable before converting it "
                      "to a tensor. This type of warning will be suppressed for the rest of "
                      "this program.", UserWarning, stacklevel=2)
    # Shares the buffer's memory, as PyTorch's does; the array stays read-only where the
    # buffer is (NumPy refuses to write through it rather than corrupting a bytes object).
    data = np.frombuffer(buffer, dtype=dtype.np, count=count, offset=offset)
    ops = _ops()
    dev = ops.creation.resolve_device("cpu")
    return ops.creation._finish(data, dtype, dev, requires_grad)


def fill(input, value):
    """A new tensor like ``input`` filled with ``value`` (``torch.fill``, the out-of-place
    ``fill_``); ``input``'s history gets a zero gradient, a tensor ``value`` the sum."""
    return input.clone().fill_(value)


def detach(input):
    return input.detach()


# ---------------------------------------------------------------------------------------------
# Predicates and metadata
# ---------------------------------------------------------------------------------------------

from .._layout import strided  # noqa: E402  (the layouts live in ember/_layout.py)


def _layout(self):
    return self._layout  # strided, or a sparse tensor's layout (ember/sparse/tensor.py)


def get_device(input):
    """-1 for a CPU tensor, else the device index."""
    if input._device.type == "cpu":
        return -1
    return input._device.index or 0


def is_inference(input):
    """Ember keeps no inference-tensor flag: ``inference_mode`` runs like ``no_grad``, so no
    tensor is an inference tensor."""
    return False


def is_same_size(input, other):
    return input._data.shape == other._data.shape


def is_signed(input):
    return input._dtype.is_signed


def is_storage(obj):
    return False


def isreal(input):
    if input._dtype._kind == 3:
        return input.imag == 0
    return _ops().ones_like(input, dtype=dt.bool)


def _output_nr(self):
    return self._output_nr


def _false(self):
    return False


def _is_mps(self):
    return self._device.type == "mps"


def const_data_ptr(self):
    return self.data_ptr()


def _volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def reinforce(self, reward):
    raise RuntimeError(
        "reinforce() was removed.\nUse ember.distributions instead.\nSee "
        "https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\nprobs = "
        "policy_network(state)\naction = probs.multinomial()\nnext_state, reward = "
        "env.step(action)\naction.reinforce(reward)\naction.backward()\n\nUse:\n\nprobs = "
        "policy_network(state)\n# NOTE: categorical is equivalent to what used to be called "
        "multinomial\nm = ember.distributions.Categorical(probs)\naction = m.sample()\n"
        "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\n"
        "loss.backward()\n")


layout = property(_layout)
output_nr = property(_output_nr)
is_meta = property(_false)
is_maia = property(_false)
is_mps = property(_is_mps)
# The JIT's debug name for a traced value; None outside tracing, which Ember does not have.
name = property(lambda self: None)
volatile = property(_volatile)


def get_num_threads():
    """The number of threads the BLAS library (where NumPy's heavy work runs) may use, read
    through threadpoolctl when it is installed; otherwise the CPU count."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return _cpu_count()
    blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    return blas[0] if blas else _cpu_count()


_thread_limiter = None


def set_num_threads(int):
    """Limit the BLAS thread pools to ``int`` threads (through threadpoolctl; without it,
    Ember has no pool it can resize and raises)."""
    n = operator.index(int)
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        raise RuntimeError("set_num_threads needs the threadpoolctl package to resize NumPy's "
                           "BLAS thread pool") from None
    global _thread_limiter
    if _thread_limiter is None:
        _thread_limiter = ThreadpoolController()
    _thread_limiter.limit(limits=n, user_api="blas")


def _cpu_count():
    import os
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------
# Statistics: cov, corrcoef, dist, renorm, trace
# ---------------------------------------------------------------------------------------------

def cov(input, *, correction=1, fweights=None, aweights=None):
    ops = _ops()
    if input._data.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input._data.ndim} dimensions")
    if input._dtype is dt.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    observations = input if input._data.ndim == 2 else input.reshape(1, -1)
    n_obs = observations._data.shape[1]
    weights = None
    if fweights is not None:
        _same_device(input, fweights)
        if fweights._data.ndim > 1:
            raise RuntimeError(f"cov(): expected fweights to have one or fewer dimensions but "
                               f"got fweights with {fweights._data.ndim} dimensions")
        if fweights._dtype._kind > 1:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {dtype_name(fweights._dtype)} dtype")
        if fweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {fweights.numel()} != "
                               f"{n_obs}")
        if fweights.numel() and int(fweights.min()) < 0:
            raise RuntimeError("cov(): fweights cannot be negative")
        weights = fweights
    if aweights is not None:
        _same_device(input, aweights)
        if aweights._data.ndim > 1:
            raise RuntimeError(f"cov(): expected aweights to have one or fewer dimensions but "
                               f"got aweights with {aweights._data.ndim} dimensions")
        if aweights._dtype._kind != 2:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {dtype_name(aweights._dtype)} dtype")
        if aweights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aweights.numel()} != "
                               f"{n_obs}")
        if aweights.numel() and float(aweights.min()) < 0:
            raise RuntimeError("cov(): aweights cannot be negative")
        weights = aweights if weights is None else weights * aweights
    if observations._dtype._kind <= 1:
        observations = observations.to(dt.get_default_dtype())

    # PyTorch's composite, op for op: sums divided by the weight total (a 0-d int64 tensor
    # without weights), the centred observations multiplied by their own (weighted) transpose.
    if weights is None:
        w_sum = _wrap(input._backend.xp.asarray(n_obs, dtype=np.int64), dt.int64, input)
        avg = observations.sum(1) / w_sum
    else:
        w_sum = weights.sum()
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (observations * weights).sum(1) / w_sum
    if weights is not None and aweights is not None and correction != 0:
        norm = w_sum - mul_scalar((weights * aweights).sum(), correction) / w_sum
    elif weights is not None and correction == 0:
        norm = w_sum
    else:
        norm = w_sum - correction
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm.zero_()
    centered = observations - avg.unsqueeze(1)
    scaled = centered if weights is None else centered * weights
    return (ops.mm(centered, scaled.t().conj()) / norm).squeeze()


def corrcoef(input):
    ops = _ops()
    if input._data.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input._data.ndim} dimensions")
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    d = ops.diagonal(c)
    stddev = ops.sqrt(ops.real(d) if d._dtype._kind == 3 else d)
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c._dtype._kind == 3:
        # As NumPy: the real and imaginary parts clipped separately.
        return ops.complex(ops.clip(ops.real(c), -1, 1), ops.clip(ops.imag(c), -1, 1))
    return ops.clip(c, -1, 1)


def dist(input, other, p=2):
    _same_device(input, other)
    from . import linalg  # ops.linalg: not the ember.linalg namespace, which imports ops
    diff = input - other
    if diff._dtype._kind < 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {dtype_name(diff._dtype)} instead.")
    return record_composite(DistBackward0, (input, other),
                            lambda a, b: linalg.vector_norm(a - b, p))


class DistBackward0(CompositeBackward):
    __slots__ = ()


class RenormBackward0(CompositeBackward):
    __slots__ = ()


def renorm(input, p, dim, maxnorm):
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if input._dtype._kind < 2:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {dtype_name(input._dtype)}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    nd = input._data.ndim
    if nd <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {nd} dimensions")
    d = wrap_dim(dim, nd)
    from . import linalg  # ops.linalg: not the ember.linalg namespace, which imports ops
    ops = _ops()
    others = tuple(i for i in range(nd) if i != d)

    def scaled(input):
        norms = linalg.vector_norm(input, p, dim=others, keepdim=True)
        # PyTorch scales by maxnorm / (norm + 1e-7) where the norm exceeds maxnorm, and its
        # gradient flows through the norm as well.
        factor = ops.where(norms > maxnorm, maxnorm / (norms + 1e-7), ops.ones_like(norms))
        return input * factor
    return record_composite(RenormBackward0, (input,), scaled)


def trace(input):
    if input._dtype is dt.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    with no_grad():
        res = _ops().diagonal(input).sum()
    if needs_grad(input):
        record(TraceBackward0, (input,), res, shape=tuple(input.shape))
    return res


class TraceBackward0(Node):
    """The gradient is ``grad`` on the diagonal, 0 elsewhere."""
    __slots__ = ()

    def backward(self, grad):
        rows, cols = self.shape
        eye = _ops().eye(rows, cols, dtype=grad.dtype, device=grad.device)
        return (eye * grad,)


# ---------------------------------------------------------------------------------------------
# Splits
# ---------------------------------------------------------------------------------------------

def split_with_sizes(input, split_sizes, dim=0):
    return _ops().split(input, [operator.index(s) for s in split_sizes], dim)


# PyTorch's unsafe_* variants return pieces that share the input's memory but are not tracked
# as views: each may be modified in place (a split's views may not), at the caller's risk.
def _untracked(pieces, input, sizes, dim, node):
    from ._dispatch import record_multi
    outs = tuple(_wrap(p._data, p._dtype, p) for p in pieces)
    vc = input._ensure_vc()
    for out in outs:
        out._vc = vc
    if needs_grad(input):
        record_multi(node, (input,), outs, dim=wrap_dim(dim, input._data.ndim), sizes=sizes)
    return outs


def _split_node(name):
    """PyTorch's nodes for the unsafe splits: split's backward under their own names."""
    from .shape import SplitBackward0
    return type(name, (SplitBackward0,), {"__slots__": ()})


UnsafeSplitBackward0 = _split_node("UnsafeSplitBackward0")
UnsafeSplitWithSizesBackward0 = _split_node("UnsafeSplitWithSizesBackward0")


def unsafe_split(input, split_size, dim=0):
    pieces = _ops().split(input.detach(), split_size, dim)
    return _untracked(pieces, input, [p._data.shape[wrap_dim(dim, input._data.ndim)]
                                      for p in pieces], dim, UnsafeSplitBackward0)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    sizes = [operator.index(s) for s in split_sizes]
    return _untracked(_ops().split(input.detach(), sizes, dim), input, sizes, dim,
                      UnsafeSplitWithSizesBackward0)


def unsafe_chunk(input, chunks, dim=0):
    pieces = _ops().chunk(input.detach(), chunks, dim)
    return _untracked(pieces, input, [p._data.shape[wrap_dim(dim, input._data.ndim)]
                                      for p in pieces], dim, UnsafeSplitBackward0)


def dsplit(input, indices_or_sections):
    if input._data.ndim < 3:
        raise RuntimeError(f"ember.dsplit requires a tensor with at least 3 dimension, but got "
                           f"a tensor with {input._data.ndim} dimensions!")
    if isinstance(indices_or_sections, int) and indices_or_sections != 0 \
            and input.shape[2] % indices_or_sections:
        raise RuntimeError(f"ember.dsplit attempted to split along dimension 2, but the size of "
                           f"the dimension {input.shape[2]} is not divisible by the split_size "
                           f"{indices_or_sections}!")
    return _ops().tensor_split(input, indices_or_sections, 2)


def row_stack(tensors, *, out=None):
    return _finish_out(_ops().vstack(tensors), out)


def spmm(input, mat2):
    """Dense ``input @ mat2`` (PyTorch's sparse-times-dense product, given dense operands)."""
    return _ops().mm(input, mat2)


# ---------------------------------------------------------------------------------------------
# unravel_index
# ---------------------------------------------------------------------------------------------

def unravel_index(indices, shape):
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    if indices._dtype._kind > 1 or indices._dtype is dt.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{_torch_dtype_name(indices._dtype)}")
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    shape = tuple(operator.index(s) for s in shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape and indices._data.size:
        raise RuntimeError("ZeroDivisionError")
    # PyTorch applies floor division and modulo without a range check: out-of-range and
    # negative indices wrap around (-1 is the last element).
    flat = indices._data.astype("int64")
    coords = []
    for size in reversed(shape):
        coords.append(flat % size if size else flat)
        flat = flat // size if size else flat
    return tuple(_wrap(c, dt.int64, indices) for c in reversed(coords))


def _torch_dtype_name(d):
    return f"ember.{d.name}"


# ---------------------------------------------------------------------------------------------
# gradient
# ---------------------------------------------------------------------------------------------

def gradient(input, *, spacing=1, dim=None, edge_order=1):
    nd = input._data.ndim
    if input._dtype is dt.uint8:
        raise RuntimeError("ember.gradient does not support uint8 input.")
    if edge_order not in (1, 2):
        raise RuntimeError("ember.gradient only supports edge_order=1 and edge_order=2.")
    coordinates = isinstance(spacing, (tuple, list)) and builtins.any(
        isinstance(s, Tensor) for s in spacing)
    if input._dtype is dt.bool and not (coordinates and edge_order == 2):
        # PyTorch's differences subtract bools (its second-order formula for coordinates
        # multiplies them instead)
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if dim is None:
        dims = tuple(range(nd))
    elif isinstance(dim, numbers.Integral):
        dims = (wrap_dim(dim, nd),)
    else:
        dims = wrap_dims(tuple(dim), nd)
    if isinstance(spacing, (tuple, list)):
        if len(spacing) != len(dims) and dim is None:
            raise RuntimeError(f"ember.gradient expected spacing to be unspecified, a scalar, "
                               f"or a list of length equal to 'self.dim() = {nd}', since dim "
                               f"argument was not given, but got a list of length "
                               f"{len(spacing)}")
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.".replace("torch.", "ember."))
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input._data.shape[d] < edge_order + 1:
            raise RuntimeError("ember.gradient expected each dimension size to be at least "
                               "edge_order+1")
    values = input if input._dtype._kind >= 2 else input.to(dt.get_default_dtype())
    return tuple(_gradient_along(values, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_along(f, d, h, edge_order):
    n = f._data.shape[d]

    def part(start, stop):
        return f.narrow(d, start, stop - start)

    if isinstance(h, Tensor):
        _same_device(f, h)
        if h._data.ndim != 1 or h._data.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"as the input tensor and to have one dimension of size {n}"
                               .replace("torch.", "ember."))
        return _gradient_coordinates(f, d, h, edge_order, part, n)
    # PyTorch's composite and its arithmetic: the central difference is divided by h, then by
    # 2, and numbers apply through the Scalar overloads.
    interior = div_scalar(part(2, n) - part(0, n - 2), h)
    if edge_order == 1:
        first = div_scalar(part(1, 2) - part(0, 1), h)
        last = div_scalar(part(n - 1, n) - part(n - 2, n - 1), h)
    else:
        first = div_scalar(mul_scalar(part(0, 1), -1.5) + mul_scalar(part(1, 2), 2)
                           - mul_scalar(part(2, 3), 0.5), h)
        last = div_scalar(mul_scalar(part(n - 3, n - 2), 0.5) - mul_scalar(part(n - 2, n - 1), 2)
                          + mul_scalar(part(n - 1, n), 1.5), h)
    return _ops().cat([first, div_scalar(interior, 2), last], d)


def _gradient_coordinates(f, d, coords, edge_order, part, n):
    ops = _ops()
    shape = [1] * f._data.ndim
    shape[d] = -1

    def along(t):
        return t.reshape(shape)

    # PyTorch's composite, op for op: each one-sided stencil is its three weights times the
    # three slices, summed.
    dx = coords.diff(1, 0)
    if dx._dtype._kind < 2:
        dx = dx.to(f._dtype)
    dx1, dx2 = dx.narrow(0, 0, n - 2), dx.narrow(0, 1, n - 2)
    a = along(-dx2 / (dx1 * (dx1 + dx2)))
    b = along((dx2 - dx1) / (dx1 * dx2))
    c = along(dx1 / (dx2 * (dx1 + dx2)))
    interior = a * part(0, n - 2) + b * part(1, n - 1) + c * part(2, n)
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / dx[0]
        last = (part(n - 1, n) - part(n - 2, n - 1)) / dx[-1]
    else:
        h1, h2 = dx[0], dx[1]
        a = -(mul_scalar(h1, 2.0) + h2) / (h1 * (h1 + h2))
        b = (h1 + h2) / (h1 * h2)
        c = (-h1) / (h2 * (h1 + h2))
        first = a * part(0, 1) + b * part(1, 2) + c * part(2, 3)
        h1, h2 = dx[-2], dx[-1]
        a = h2 / (h1 * (h2 + h1))
        b = -(h2 + h1) / (h2 * h1)
        c = (mul_scalar(h2, 2) + h1) / (h2 * (h2 + h1))
        last = a * part(n - 3, n - 2) + b * part(n - 2, n - 1) + c * part(n - 1, n)
    return ops.cat([first, interior, last], d)


# ---------------------------------------------------------------------------------------------
# histogramdd
# ---------------------------------------------------------------------------------------------

def histogramdd(input, bins=10, *, range=None, weight=None, density=False, out=None):
    if input._dtype._kind != 2:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    if input._data.ndim < 2:
        raise RuntimeError("ember.histogramdd: input tensor should have at least 2 dimensions")
    xp = input._backend.xp
    n_dims = input._data.shape[-1]
    samples = input._data.reshape(-1, n_dims).astype("float64")
    if isinstance(bins, numbers.Integral):
        bins_arg = [int(bins)] * n_dims
    elif isinstance(bins, Tensor):
        bins_arg = [bins]
    else:
        bins_arg = list(bins)
    if len(bins_arg) != n_dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    bins_arg = [b._data.astype("float64") if isinstance(b, Tensor) else b for b in bins_arg]
    ranges = None
    if range is not None:
        ranges = [(float(range[2 * i]), float(range[2 * i + 1])) for i in builtins.range(n_dims)]
    w = None if weight is None else weight._data.reshape(-1).astype("float64")
    hist, edges = xp.histogramdd(samples, bins=bins_arg, range=ranges, weights=w,
                                 density=density)
    np_dtype = input._dtype.np
    hist_t = _wrap(hist.astype(np_dtype), input._dtype, input)
    edge_ts = tuple(_wrap(xp.asarray(e).astype(np_dtype), input._dtype, input) for e in edges)
    return return_types.histogramdd((hist_t, edge_ts))


# ---------------------------------------------------------------------------------------------
# igamma, igammac: the regularized lower and upper incomplete gamma functions
# ---------------------------------------------------------------------------------------------

# Near x = a the series needs about 9 sqrt(a) terms to reach float64 precision: 5000 covers
# a up to ~3e5, Gamma draws' implicit gradients (ember.distributions) included.
_MAX_TERMS = 5000
_EPS = float(np.finfo(np.float64).eps)


def _log_prefactor(xp, lgamma_a, a, x):
    """log(x^a e^-x / Gamma(a))."""
    return a * xp.log(x) - x - lgamma_a


def _lower_series(xp, a, x):
    """sum_n x^n / (a (a+1) ... (a+n)); converges for all x, fastest for x < a + 1."""
    term = 1.0 / a
    total = term.copy()
    denom = a.copy()
    for _ in builtins.range(_MAX_TERMS):
        denom += 1
        term = term * (x / denom)
        total += term
        if not xp.any(xp.abs(term) > xp.abs(total) * _EPS):
            break
    return total


def _upper_fraction(xp, a, x):
    """Continued fraction for Gamma(a, x) e^x x^-a (modified Lentz), for x >= a + 1."""
    tiny = 1e-300
    b = x + 1 - a
    c = xp.full_like(x, 1 / tiny)
    d = 1 / xp.where(xp.abs(b) < tiny, tiny, b)
    h = d.copy()
    for i in builtins.range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = xp.where(xp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        # delta settles within a rounding or two of 1, not below a fixed 1e-16.
        if not xp.any(xp.abs(delta - 1) > 4 * _EPS):
            break
    return h


def regularized_gamma_tails(xp, a, x, lgamma_a, lower):
    """P(a, x) where ``lower``, Q(a, x) elsewhere, for positive finite float64 arrays of one
    shape (``lgamma_a`` is lgamma(a)). Each tail comes from its own expansion, never as 1 minus
    the other, so a tail near 0 keeps its relative precision; the series converges fastest
    for x < a + 1, the continued fraction beyond, which is where callers choose them."""
    out = xp.empty(a.shape)
    for tail, where in ((_lower_series, lower), (_upper_fraction, ~lower)):
        if xp.any(where):
            av, xv = a[where], x[where]
            out[where] = tail(xp, av, xv) * xp.exp(_log_prefactor(xp, lgamma_a[where], av, xv))
    return out


def _igamma_arrays(xp, a, x, lgamma_a, upper):
    """P(a, x) (or Q(a, x) when ``upper``) for float64 arrays of one shape."""
    out = xp.full(a.shape, math.nan)
    valid = (a >= 0) & (x >= 0) & ~(xp.isnan(a) | xp.isnan(x))
    lower_val, upper_val = (0.0, 1.0)
    # Edge cases by PyTorch's rules: a == 0 (x > 0) and x == inf give P = 1; a == inf or
    # x == 0 (a > 0) give P = 0; a == x == 0 is NaN.
    edge_one = valid & (((a == 0) & (x > 0)) | (xp.isinf(x) & ~xp.isinf(a)))
    edge_zero = valid & ((xp.isinf(a) & ~xp.isinf(x)) | ((x == 0) & (a > 0)))
    regular = valid & ~edge_one & ~edge_zero & (a > 0) & (x > 0) & ~xp.isinf(x) & ~xp.isinf(a)
    out[edge_one] = lower_val if upper else upper_val
    out[edge_zero] = upper_val if upper else lower_val
    if xp.any(regular):
        av, xv = a[regular], x[regular]
        lower = xv < av + 1
        tails = regularized_gamma_tails(xp, av, xv, lgamma_a[regular], lower)
        # ``tails`` holds P where ``lower``, Q elsewhere; the function asked for is the other's
        # complement where it is not the one computed.
        out[regular] = xp.where(lower != upper, tails, 1 - tails)
    return out


class IgammaBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        if self._edges[0] is not None:
            raise NotImplementedError(f"the derivative for '{self.fn_name}: input' is not "
                                      "implemented.")
        a, x = self.saved_tensors
        ops = _ops()
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); Q = 1 - P.
        density = ops.exp(ops.xlogy(a - 1, x) - x - ops.lgamma(a))
        return None, grad * (-density if self.upper else density)


class IgammacBackward0(IgammaBackward0):
    __slots__ = ()


def _igamma(input, other, upper, out):
    name = "igammac" if upper else "igamma"
    for position, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")
    _same_device(input, other)
    rt = dt.result_type(input, other)
    if rt._kind != 2:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dtype_name(rt)}'")
    xp = input._backend.xp
    a, x = xp.broadcast_arrays(input._data.astype("float64"), other._data.astype("float64"))
    shape = a.shape
    a, x = a.reshape(-1), x.reshape(-1)  # flat: boolean-mask assignment needs 1-D arrays
    lgamma_a = _ops().lgamma(_wrap(xp.ascontiguousarray(a), dt.float64, input))._data
    values = _igamma_arrays(xp, a, x, lgamma_a, upper).reshape(shape)
    res = _wrap(values.astype(rt.np), rt, input)
    if needs_grad(input, other):
        a_t = input if input._dtype is rt else input.to(rt)
        x_t = other if other._dtype is rt else other.to(rt)
        record(IgammacBackward0 if upper else IgammaBackward0, (input, other), res,
               save=(a_t, x_t), upper=upper, fn_name=name)
    return _finish_out(res, out)


def igamma(input, other, *, out=None):
    return _igamma(input, other, False, out)


def igammac(input, other, *, out=None):
    return _igamma(input, other, True, out)


# ---------------------------------------------------------------------------------------------
# index_reduce
# ---------------------------------------------------------------------------------------------

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")
_warned_index_reduce = False


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    global _warned_index_reduce
    if not _warned_index_reduce:
        _warned_index_reduce = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.",
                      UserWarning, stacklevel=2)
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    _same_device(input, index, source)
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{dtype_name(index._dtype)}")
    if index._data.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: "
                         f"{index._data.ndim} with type: {dtype_name(index._dtype)} and size: "
                         f"{list(index._data.shape)}")
    if input._dtype is not source._dtype:
        raise RuntimeError(f"index_reduce_(): self ({dtype_name(input._dtype)}) and source "
                           f"({dtype_name(source._dtype)}) must have the same scalar type")
    if input._dtype is dt.bool and (reduce == "mean" or not include_self):
        kernel = "index_func_" if include_self else "index_reduce_func_exclude_input_init"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    nd = input._data.ndim
    d = wrap_dim(dim, nd)
    source_shape = source._data.shape
    if builtins.max(len(source_shape), 1) != builtins.max(nd, 1) or builtins.any(
            s != t for i, (s, t) in enumerate(zip(source_shape, input._data.shape)) if i != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input._data.shape)} "
                           f"source.shape = {list(source_shape)}")
    n_index = index._data.size
    source_len = source_shape[d] if source_shape else 1
    if n_index != source_len and not source_shape:
        # PyTorch asks a 0-d source for its size along dim
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if n_index != source_len:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n_index}) should be equal to "
                           f"source.size(dim): ({source_len}), for dim: {dim}")
    size = input._data.shape[d] if nd else 1
    if n_index:
        lo, hi = int(index._data.min()), int(index._data.max())
        if lo < -size or hi >= size:
            raise IndexError("index out of range in self")
    if nd == 0:
        return _ops().scatter_reduce(input, 0, index.reshape(()).to(dt.int64), source, reduce,
                                     include_self=include_self) if n_index else input.clone()
    shape = [1] * nd
    shape[d] = n_index
    wrapped = index.to(dt.int64)
    xp = index._backend.xp
    wrapped = _wrap(xp.where(wrapped._data < 0, wrapped._data + size, wrapped._data), dt.int64,
                    index)
    scatter_index = wrapped.reshape(shape).expand(source._data.shape)
    res = record_composite(IndexReduceBackward0, (input, source), lambda input, source: _ops(
        ).scatter_reduce(input, d, scatter_index, source, reduce, include_self=include_self))
    return _finish_out(res, out)


class IndexReduceBackward0(CompositeBackward):
    __slots__ = ()


# ---------------------------------------------------------------------------------------------
# Methods whose kernels live in other op families
# ---------------------------------------------------------------------------------------------

def hardshrink(self, lambd=0.5):
    return _activation.hardshrink(self, lambd)


def prelu(self, weight):
    return _activation.prelu(self, weight)


def as_subclass(self, cls):
    """``self`` as an instance of ``cls`` (a Tensor subclass) sharing its data and history."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): expected a Tensor subclass, got {cls!r}")
    from .._tensor import _as_subclass
    out = _as_subclass(self, cls)
    if self._output_nr:
        out._output_nr = self._output_nr
    if self._base is not None:
        out._base = self._base
        out._view_fn = self._view_fn
    return out


def type_as(self, other):
    return self.to(dtype=other._dtype, device=other._device)


def dropout_(input, p=0.5, train=True):
    return _dropout.dropout(input, p, train, inplace=True)


def alpha_dropout_(input, p=0.5, train=False):
    return _dropout.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input, p=0.5, train=False):
    return _dropout.feature_alpha_dropout(input, p, train, inplace=True)


# ---------------------------------------------------------------------------------------------
# fill_diagonal_
# ---------------------------------------------------------------------------------------------

def fill_diagonal_(self, fill_value, wrap=False):
    shape = self._data.shape
    nd = len(shape)
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and builtins.any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    xp = self._backend.xp
    numel = self._data.size
    if nd == 2:
        height, width = shape
        step = width + 1
        stop = numel if wrap else builtins.min(height, width) * width
    else:
        step = builtins.sum(shape[0] ** k for k in builtins.range(nd))
        stop = numel
    mask = xp.zeros(numel, dtype=bool)
    mask[0:stop:step] = True
    mask_t = _wrap(mask.reshape(shape), dt.bool, self)
    return inplace(self, _ops().masked_fill, mask_t, fill_value)


# ---------------------------------------------------------------------------------------------
# In-place view ops: self takes the view's metadata and (when recording) its history
# ---------------------------------------------------------------------------------------------

def _inplace_view(self, undo, view_op, *args, node=None):
    """Give ``self`` the geometry (and, when recording, the history) of ``view_op(self)``.
    ``undo`` maps a tensor of the new geometry back to the old one: views taken of ``self``
    earlier replay themselves through it, since their replay functions start from ``self``.
    ``node`` is PyTorch's name for the in-place overload (``TransposeBackward1``…), a subclass
    of the out-of-place node with the same backward."""
    check_inplace(self)
    result = view_op(self, *args)
    if node is not None and result.grad_fn is not None:
        result.grad_fn.__class__ = node
    self._data = result._data
    if self._base is not None:
        self._view_fn = result._view_fn
    else:
        _replay_views_through(self, undo, result)
    if _grad_state.enabled and result._requires_grad:
        self.grad_fn = result.grad_fn
        self._requires_grad = True
        self.__dict__.pop("_output_nr", None)
    self._bump_version()
    return self


def _replay_views_through(root, undo, skip):
    refs = root.__dict__.get("_views")
    if not refs:
        return
    for ref in refs:
        view = ref()
        if view is not None and view is not skip:
            view._view_fn = lambda t, replay=view._view_fn: replay(undo(t))


def _reshape_back(self):
    shape = tuple(self._data.shape)
    return lambda t: t.reshape(shape)


def t_(self):
    if self._data.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{self._data.ndim}D")
    undo = (lambda t: t.t()) if self._data.ndim == 2 else (lambda t: t)
    return _inplace_view(self, undo, _ops().t, node=TBackward1)


def transpose_(self, dim0, dim1):
    return _inplace_view(self, lambda t: t.transpose(dim0, dim1), _ops().transpose, dim0, dim1,
                         node=TransposeBackward1)


swapaxes_ = swapdims_ = transpose_


def squeeze_(self, dim=None):
    node = (SqueezeBackward3 if dim is None else
            SqueezeBackward5 if isinstance(dim, (tuple, list)) else SqueezeBackward4)
    return _inplace_view(self, _reshape_back(self), _ops().squeeze, dim, node=node)


def unsqueeze_(self, dim):
    return _inplace_view(self, _reshape_back(self), _ops().unsqueeze, dim,
                         node=UnsqueezeBackward1)


def as_strided_(self, size, stride, storage_offset=None):
    if self._base is None:
        # Ember's storage is a root tensor's whole array, and self's new geometry may cover
        # only part of it: a hidden root takes over self's array, history and views, and
        # self becomes a view of it.
        check_inplace(self)
        _hand_storage_to_hidden_root(self)
    return _inplace_view(self, None, _ops().as_strided, size, stride, storage_offset)


def _hand_storage_to_hidden_root(self):
    import weakref
    root = _wrap(self._data, self._dtype, self)
    root._requires_grad = self._requires_grad
    root.grad_fn = self.grad_fn
    if self._output_nr:
        root._output_nr = self._output_nr
    root._vc = self._ensure_vc()
    for key in ("_views", "_views_limit"):
        if key in self.__dict__:
            root.__dict__[key] = self.__dict__.pop(key)
    for ref in root.__dict__.get("_views", ()):
        view = ref()
        if view is not None:
            view._base = root
    root.__dict__.setdefault("_views", []).append(weakref.ref(self))
    self._base = root
    self._view_fn = lambda t: t


# ---------------------------------------------------------------------------------------------
# resize_
# ---------------------------------------------------------------------------------------------

def resize_(self, *sizes, memory_format=None):
    if self._requires_grad and _grad_state.enabled:
        raise RuntimeError("cannot resize variables that require grad")
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = tuple(operator.index(s) for s in sizes)
    if builtins.any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    numel = 1
    for s in shape:
        numel *= s
    xp = self._backend.xp
    root = self._base if self._base is not None else self
    root_data = root._data
    if root_data.flags.c_contiguous and (self is root or self.is_contiguous()):
        # Like PyTorch, the tensor reads its storage from its own offset on, contiguously.
        offset = self.storage_offset()
        flat = root_data.reshape(-1)
        if offset + numel <= flat.size:
            if self._base is None and numel == flat.size:
                old_shape = tuple(self._data.shape)
                _replay_views_through(self, lambda t: t.reshape(old_shape), None)
            elif self._base is None:
                _hand_storage_to_hidden_root(self)
            self._data = flat[offset:offset + numel].reshape(shape)
            if self._base is not None:
                strides = _contiguous_strides(shape)
                self._view_fn = lambda t: t.as_strided(shape, strides, offset)
            self._bump_version()
            return self
        grown = xp.empty(offset + numel, dtype=root_data.dtype)
        grown[:flat.size] = flat
        data = grown[offset:offset + numel].reshape(shape)
    else:
        old = self._data.reshape(-1)
        data = xp.empty(numel, dtype=old.dtype)
        kept = builtins.min(numel, old.size)
        data[:kept] = old[:kept]
        data = data.reshape(shape)
    # The storage grew: the tensor now owns a new one, no longer shared with its views/base.
    self._data = data
    for attr in ("_base", "_view_fn", "_vc"):
        self.__dict__.pop(attr, None)
    self._bump_version()
    return self


def resize_as_(self, the_template, memory_format=None):
    return resize_(self, tuple(the_template.shape))


def resize(self, *sizes):
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    out = self.detach().clone() if self._requires_grad else self.clone()
    return resize_(out, *sizes)


def resize_as(self, tensor):
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return resize(self, tuple(tensor.shape))


# ---------------------------------------------------------------------------------------------
# geqrf, orgqr, ormqr: QR in LAPACK's compact Householder form
# ---------------------------------------------------------------------------------------------

class GeqrfBackward0(Node):
    __slots__ = ()

    def backward(self, *grads):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def _check_lapack_dtype(name, d):
    if d._kind < 2 or d in (dt.float16, dt.bfloat16):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dtype_name(d)}'")


def geqrf(input, *, out=None):
    if input._data.ndim < 2:
        raise RuntimeError("ember.geqrf: input must have at least 2 dimensions.")
    _check_lapack_dtype("geqrf", input._dtype)
    xp = input._backend.xp
    m, n = input._data.shape[-2:]
    batch = input._data.shape[:-2]
    if m == 0 or n == 0:
        h = xp.zeros(input._data.shape, dtype=input._dtype.np)
        tau = xp.zeros(batch + (0,), dtype=input._dtype.np)
    else:
        # NumPy's "raw" QR is LAPACK's geqrf, returned in Fortran (transposed) layout.
        raw, tau = xp.linalg.qr(input._data, mode="raw")
        h = xp.ascontiguousarray(xp.swapaxes(raw, -1, -2)).astype(input._dtype.np, copy=False)
        tau = tau.astype(input._dtype.np, copy=False)
    a_t, tau_t = _wrap(h, input._dtype, input), _wrap(tau, input._dtype, input)
    if needs_grad(input):
        from ._dispatch import record_multi
        record_multi(GeqrfBackward0, (input,), (a_t, tau_t))
    res = return_types.geqrf((a_t, tau_t))
    if out is not None:
        _finish_out(a_t, out[0])
        _finish_out(tau_t, out[1])
        return return_types.geqrf_out(out)
    return res


def _reflectors(input, tau):
    """(V, T) with H_1 ... H_k = I - V T V^H: V the unit lower-trapezoidal reflector vectors
    stored below input's diagonal, T upper triangular, T^-1 = diag(1 / tau) + striu(V^H V).
    A reflector with tau = 0 is the identity: its vector is zeroed and its tau replaced by 1."""
    ops = _ops()
    from . import linalg  # ops.linalg: not the ember.linalg namespace, which imports ops
    m = input._data.shape[-2]
    k = tau._data.shape[-1]
    cols = input[..., :, :k]
    eye = ops.eye(m, k, dtype=input._dtype, device=input._device)
    vectors = ops.tril(cols, -1) + eye
    identity = tau == 0
    vectors = ops.where(identity.unsqueeze(-2), ops.zeros_like(vectors), vectors)
    safe_tau = ops.where(identity, ops.ones_like(tau), tau)
    gram = ops.matmul(vectors.mH if vectors._dtype._kind == 3 else vectors.mT, vectors)
    t_inverse = ops.triu(gram, 1) + ops.diag_embed(1 / safe_tau)
    return vectors, t_inverse, linalg


def _apply_q(input, tau, other, left, adjoint):
    """op(Q) @ other (``left``) or other @ op(Q), op the conjugate transpose when ``adjoint``."""
    vectors, t_inverse, linalg = _reflectors(input, tau)
    ops = _ops()
    vh = vectors.mH if vectors._dtype._kind == 3 else vectors.mT
    if left:
        # Q other = other - V T V^H other;  Q^H other = other - V T^H V^H other
        projected = ops.matmul(vh, other)
        solved = linalg.solve_triangular(t_inverse.mH if adjoint else t_inverse, projected,
                                         upper=not adjoint)
        return other - ops.matmul(vectors, solved)
    # other Q = other - (other V) T V^H;  other Q^H = other - (other V) T^H V^H
    projected = ops.matmul(other, vectors)
    solved = linalg.solve_triangular(t_inverse.mH if adjoint else t_inverse, projected,
                                     upper=not adjoint, left=False)
    return other - ops.matmul(solved, vh)


def _check_householder(name, input, tau):
    _same_device(input, tau)
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau._data.shape[:-1] != input._data.shape[:-2] or tau._data.ndim != input._data.ndim - 1:
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau._data.shape[:-1])}")
    if tau._dtype is not input._dtype:
        raise RuntimeError(f"{name}: tau dtype {dtype_name(tau._dtype)} does not match input "
                           f"dtype {dtype_name(input._dtype)}")
    _check_lapack_dtype("orgqr" if "householder" in name else "ormqr", input._dtype)


def orgqr(input, tau):
    """The first n columns of Q = H_1 ... H_k from geqrf's output (linalg.householder_product)."""
    name = "ember.linalg.householder_product"
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = input._data.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < tau._data.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    _check_householder(name, input, tau)
    ops = _ops()
    eye = ops.eye(m, n, dtype=input._dtype, device=input._device)
    eye = eye.expand(input._data.shape[:-2] + (m, n))
    return record_composite(LinalgHouseholderProductBackward0, (input, tau),
                            lambda input, tau: _apply_q(input, tau, eye, True, False))


class LinalgHouseholderProductBackward0(CompositeBackward):
    __slots__ = ()


class OrmqrBackward0(CompositeBackward):
    __slots__ = ()


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    name = "ember.ormqr"
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other._data.ndim < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    _same_device(input, other)
    m = input._data.shape[-2]
    side = -2 if left else -1
    if other._data.shape[side] != m:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    k = tau._data.shape[-1]
    if k > builtins.min(other._data.shape[side], input._data.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    _check_householder(name, input, tau)
    if other._dtype is not input._dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but "
                           f"input has dtype {dtype_name(input._dtype)} and other has dtype "
                           f"{dtype_name(other._dtype)}")
    res = record_composite(OrmqrBackward0, (input, tau, other),
                           lambda input, tau, other: _apply_q(input, tau, other, left, transpose))
    return _finish_out(res, out)


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
    _same_device(like, window)
    if window._data.ndim != 1 or window._data.shape[0] != win_length:
        raise RuntimeError(f"{prefix}expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window._data.shape)}")


def _stft_window(window, n_fft, win_length, like):
    """The window over ``n_fft`` samples, as PyTorch's stft makes it: a shorter one written into
    the middle of zeros (``narrow(...).copy_``), no window a block of ones there."""
    ops = _ops()
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
    ops = _ops()
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
    ops = _ops()
    from . import spectral
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
    mode = spectral._BY_ROOT_N if normalized else spectral._NONE
    if complex_input:
        spectrum = spectral._fft_c2c(frames, [2], mode, True)
    else:
        spectrum = spectral._fft_r2c(frames, [2], mode, onesided)
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
    ops = _ops()
    from . import spectral
    from .cumulative import unfold_backward
    from .conv import constant_pad_nd
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
    mode = spectral._BY_ROOT_N if normalized else spectral._BY_N
    if return_complex:
        frames = spectral._fft_c2c(columns, [2], mode, False)
    else:
        if not onesided:
            columns = columns.narrow(-1, 0, n_fft // 2 + 1)
        frames = spectral._fft_c2r(columns, [2], mode, n_fft)
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
