"""N-dimensional convolution as im2col on a strided view plus one batched matrix product.

Three ops share one set of parameters (stride, per-side padding, dilation, groups) and are each
other's derivatives, because all three are the partial derivatives of the same trilinear form
``T(x, w, g) = <conv(x, w), g>``:

- ``convolution(x, w)``            = dT/dg  (the forward convolution),
- ``convolution_input_grad(g, w)`` = dT/dx  (the transposed convolution, col2im),
- ``convolution_weight_grad(x, g)`` = dT/dw.

So each op's backward is written with the other two, and gradients of any order work.
``unfold``/``fold`` (im2col/col2im without the matrix product) are the same kernels exposed
as a pair of mutually adjoint ops, plus ``constant_pad_nd`` and ``pad`` (``nn.functional.pad``'s
every mode), which the padding layers and ``stft`` use, and ``conv_tbc``.
"""
import itertools
import math
import threading

from .. import _dtype as dt
from ._dispatch import Node, needs_grad, record, _wrap, CompositeBackward, record_composite
from ..amp import autocast_mode as _autocast


# ---- array kernels ---------------------------------------------------------------------------

def conv_output_size(in_size, kernel, stride, pad, dilation):
    """Output length along one dim for per-side padding ``pad = (lo, hi)``."""
    return (in_size + pad[0] + pad[1] - dilation * (kernel - 1) - 1) // stride + 1


def _pad_zeros(xp, data, pads):
    if not any(lo or hi for lo, hi in pads):
        return data
    return pad_spatial(xp, data, pads, 0)


def pad_spatial(xp, data, pads, value):
    """``(N, C, *S)`` ``data`` with ``pads`` (``(lo, hi)`` per spatial dim, non-negative) of
    ``value`` around it: one filled array and one copy, where ``xp.pad``'s general Python path
    costs tens of microseconds a call (a third of a small convolution)."""
    shape = data.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(data.shape[2:], pads))
    out = xp.full(shape, value, dtype=data.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _)
                                           in zip(data.shape[2:], pads))] = data
    return out


def _windows(backend, padded, kernel, stride, dilation, out_shape):
    """Strided view ``(C, *kernel, N, *out)`` of a padded ``(N, C, *spatial)`` array: no copy."""
    strides = padded.strides
    spatial = strides[2:]
    return backend.sliding_view(
        padded, (padded.shape[1],) + tuple(kernel) + (padded.shape[0],) + tuple(out_shape),
        (strides[1],) + tuple(s * d for s, d in zip(spatial, dilation)) + (strides[0],)
        + tuple(s * st for s, st in zip(spatial, stride)))


class _ColumnCache:
    """Freed im2col column buffers, kept for the next step's convolutions.

    Columns are ``prod(kernel)`` times their input (75 MB for a 64-channel 3x3 layer at batch
    32), above the largest mmap threshold glibc allows (32 MiB), so each is a fresh ``mmap``:
    faulting its pages in costs twice the copy that fills it. Reusing the buffers is the trade
    PyTorch's caching allocators make. Only arrays that own their memory and that the
    convolution ops made themselves are given back, once, when nothing else refers to them."""
    MIN_BYTES = 32 << 20
    MAX_BYTES = 1 << 30

    def __init__(self):
        self._free = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, xp, shape, dtype):
        if math.prod(shape) * dtype.itemsize >= self.MIN_BYTES:
            with self._lock:
                buffers = self._free.get((shape, dtype))
                if buffers:
                    buffer = buffers.pop()
                    self._bytes -= buffer.nbytes
                    return buffer
        return xp.empty(shape, dtype=dtype)

    def give(self, array):
        if array is None or array.nbytes < self.MIN_BYTES or not array.flags.owndata:
            return
        with self._lock:
            if self._bytes + array.nbytes <= self.MAX_BYTES:
                self._free.setdefault((array.shape, array.dtype), []).append(array)
                self._bytes += array.nbytes

    def clear(self):
        with self._lock:
            self._free.clear()
            self._bytes = 0


COLUMN_CACHE = _ColumnCache()


def im2col(backend, data, kernel, stride, pads, dilation, out_shape=None):
    """Columns ``(C * prod(kernel), N * prod(out))`` of an ``(N, C, *S)`` array (a contiguous
    copy), and the output shape. Channels first and the batch inside the columns, so a whole
    convolution is one matrix product per group (a few large BLAS calls beat many small ones)."""
    xp = backend.xp
    padded = _pad_zeros(xp, data, pads)
    if out_shape is None:
        out_shape = tuple(conv_output_size(n, k, s, p, d) for n, k, s, p, d
                          in zip(data.shape[2:], kernel, stride, pads, dilation))
    view = _windows(backend, padded, kernel, stride, dilation, out_shape)
    shape = (data.shape[1] * math.prod(kernel), data.shape[0] * math.prod(out_shape))
    cols = COLUMN_CACHE.take(xp, shape, view.dtype)
    xp.copyto(cols.reshape(view.shape), view)
    return cols, out_shape


def col2im(xp, cols, batch, spatial, kernel, stride, pads, dilation, out_shape=None):
    """Adjoint of ``im2col``: columns ``(C * prod(kernel), N * prod(out))`` summed back into an
    ``(N, C, *spatial)`` array, one strided add per kernel offset. ``out_shape`` defaults to
    the whole output a convolution of ``spatial`` has; a transposed convolution's
    ``output_padding`` makes ``spatial`` larger than its columns cover."""
    if out_shape is None:
        out_shape = tuple(conv_output_size(s, k, st, p, d) for s, k, st, p, d
                          in zip(spatial, kernel, stride, pads, dilation))
    channels = cols.shape[0] // math.prod(kernel)
    cols = cols.reshape((channels,) + tuple(kernel) + (batch,) + out_shape)
    padded_shape = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pads))
    buffer = xp.zeros((channels, batch) + padded_shape, dtype=cols.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        region = tuple(slice(o * d, o * d + st * (m - 1) + 1, st)
                       for o, d, st, m in zip(offset, dilation, stride, out_shape))
        buffer[(slice(None), slice(None)) + region] += cols[(slice(None),) + offset]
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, pads))
    return xp.ascontiguousarray(xp.swapaxes(buffer[(slice(None), slice(None)) + crop], 0, 1))


def _batch_last(xp, data, groups):
    """``(N, C, *S)`` as ``(groups, C / groups, N * prod(S))``."""
    n, c = data.shape[:2]
    size = math.prod(data.shape[2:])
    return xp.ascontiguousarray(xp.swapaxes(data.reshape(n, c, size), 0, 1)).reshape(
        groups, c // groups, n * size)


def _batch_first(xp, data, batch, spatial):
    """``(C, N * prod(S))`` as ``(N, C, *S)``."""
    channels = data.shape[0]
    data = data.reshape(channels, batch, math.prod(spatial))
    return xp.ascontiguousarray(xp.swapaxes(data, 0, 1)).reshape((batch, channels) + tuple(spatial))


class _Params:
    """Convolution geometry shared by the three ops (and their nodes)."""
    __slots__ = ("stride", "pads", "dilation", "groups")

    def __init__(self, stride, pads, dilation, groups):
        self.stride, self.pads, self.dilation, self.groups = stride, pads, dilation, groups


def _grouped_matmul(backend, a, b):
    """``a @ b`` over a leading groups axis; one group goes through the plain 2-D product,
    which NumPy hands to BLAS more directly than a stack of one matrix."""
    if a.shape[0] == 1:
        return backend.matmul(a[0], b[0])[None]
    return backend.matmul(a, b)


def _conv_arrays(backend, x, w, bias, p, cols=None, out_shape=None):
    xp = backend.xp
    kernel = w.shape[2:]
    if cols is None:
        cols, out_shape = im2col(backend, x, kernel, p.stride, p.pads, p.dilation, out_shape)
    else:
        out_shape = tuple(conv_output_size(n, k, s, pd, d) for n, k, s, pd, d
                          in zip(x.shape[2:], kernel, p.stride, p.pads, p.dilation))
    g = p.groups
    wmat = w.reshape(g, w.shape[0] // g, -1)
    columns = cols.shape[1]
    y = _grouped_matmul(backend, wmat, cols.reshape(g, wmat.shape[2], columns))
    y = y.reshape(w.shape[0], columns)
    if bias is not None:
        y += bias[:, None]
    return _batch_first(xp, y, x.shape[0], out_shape), cols


def _input_grad_arrays(backend, g, w, spatial, p):
    xp = backend.xp
    groups = p.groups
    reach = [d * (k - 1) for d, k in zip(p.dilation, w.shape[2:])]
    exact = all(n == m + r - lo - hi for n, m, r, (lo, hi)
                in zip(spatial, g.shape[2:], reach, p.pads))  # no output_padding
    # columns of the gradient (flipped-kernel path) vs columns of the input (col2im path)
    smaller = w.shape[0] * math.prod(spatial) <= groups * w.shape[1] * math.prod(g.shape[2:])
    if exact and smaller and all(s == 1 for s in p.stride) and all(
            lo <= r and hi <= r for (lo, hi), r in zip(p.pads, reach)):
        # With stride 1 the transposed convolution is an ordinary one over the gradient, with
        # the kernel flipped and its channel axes swapped per group: one im2col and one matrix
        # product, instead of a product K times the input's size scattered back by col2im.
        out_group = w.shape[0] // groups
        flipped = w[(slice(None), slice(None)) + (slice(None, None, -1),) * (w.ndim - 2)]
        flipped = flipped.reshape((groups, out_group) + w.shape[1:])
        adjoint = xp.ascontiguousarray(xp.swapaxes(flipped, 1, 2)).reshape(
            (groups * w.shape[1], out_group) + w.shape[2:])
        pads = tuple((r - lo, r - hi) for (lo, hi), r in zip(p.pads, reach))
        result, cols = _conv_arrays(backend, g, adjoint, None,
                                    _Params(p.stride, pads, p.dilation, groups))
        COLUMN_CACHE.give(cols)
        return result
    return _scatter_products(backend, g, w, spatial, p)


def _scatter_products(backend, g, w, spatial, p):
    """col2im fused with its matrix product: one small product per kernel offset, added into
    its strided region at once, so the ``K`` times larger columns are never materialised (a
    large fresh array costs more in page faults than the arithmetic on it)."""
    xp = backend.xp
    groups = p.groups
    out_group, in_group = w.shape[0] // groups, w.shape[1]
    batch, out_shape = g.shape[0], g.shape[2:]
    grads = _batch_last(xp, g, groups)
    # (*K, groups, C/groups, O/groups): each offset's slice is the transposed per-group kernel
    taps = xp.ascontiguousarray(w.reshape((groups, out_group, in_group) + w.shape[2:])
                                .transpose(tuple(range(3, w.ndim + 1)) + (0, 2, 1)))
    padded_shape = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, p.pads))
    buffer = xp.zeros((groups * in_group, batch) + padded_shape, dtype=g.dtype)
    for offset in itertools.product(*(range(k) for k in w.shape[2:])):
        region = tuple(slice(o * d, o * d + st * (m - 1) + 1, st)
                       for o, d, st, m in zip(offset, p.dilation, p.stride, out_shape))
        buffer[(slice(None), slice(None)) + region] += _grouped_matmul(
            backend, taps[offset], grads).reshape((groups * in_group, batch) + out_shape)
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, p.pads))
    return xp.ascontiguousarray(xp.swapaxes(buffer[(slice(None), slice(None)) + crop], 0, 1))


def _weight_grad_arrays(backend, x, g, kernel, p, cols=None):
    xp = backend.xp
    made_here = cols is None
    if made_here:
        cols, _ = im2col(backend, x, kernel, p.stride, p.pads, p.dilation, g.shape[2:])
    groups = p.groups
    cols = cols.reshape(groups, cols.shape[0] // groups, cols.shape[1])
    # cols @ g^T keeps the long axis contiguous in both operands, which BLAS runs about
    # twice as fast as g @ cols^T; the transpose back only copies the small weight
    gw = _grouped_matmul(backend, cols, xp.swapaxes(_batch_last(xp, g, groups), 1, 2))
    if made_here:
        COLUMN_CACHE.give(cols.base if cols.base is not None else cols)
    return xp.ascontiguousarray(xp.swapaxes(gw, 1, 2)).reshape(
        (g.shape[1], x.shape[1] // groups) + tuple(kernel))


# ---- the three ops ---------------------------------------------------------------------------

_HALF = (dt.float16, dt.bfloat16)


def _operands(dtype, *tensors):
    """The tensors' arrays, as float32 for half-precision ``dtype``: PyTorch's CPU kernels
    accumulate the products, the kernel offsets and the bias in float32 and round once, which
    rounding after each product would not reproduce."""
    arrays = tuple(None if t is None else t._data for t in tensors)
    if dtype not in _HALF:
        return arrays
    return tuple(None if a is None else a.astype(dt.float32.np) for a in arrays)


def _rounded(data, dtype):
    return data.astype(dtype.np) if dtype in _HALF else data


class ConvolutionBackward0(Node):
    """Backward of ``convolution`` and of ``convolution_transpose`` (``transposed``), as
    PyTorch's one node serves both; the edges are (input, weight, bias)."""
    __slots__ = ()

    def backward(self, grad):
        x, w = self.saved_tensors
        p = self.params
        gx = gw = gb = None
        if self.transposed:
            if self._edges[0] is not None:
                gx = convolution(grad, w, None, p, tuple(x.shape[2:]))
            if self._edges[1] is not None:
                gw = convolution_weight_grad(grad, x, w.shape[2:], p)
        else:
            if self._edges[0] is not None:
                gx = convolution_input_grad(grad, w, x.shape[2:], p)
            if self._edges[1] is not None:
                gw = convolution_weight_grad(x, grad, w.shape[2:], p, self.__dict__.get("cols"))
        if self._edges[2] is not None:
            gb = grad.sum((0,) + tuple(range(2, grad.ndim)))
        return gx, gw, gb

    def jvp(self, tx, tw, tb):
        # bilinear in (input, weight), plus the bias: each tangent through the same convolution
        x, w = self.saved_tensors
        p = self.params
        if self.transposed:
            def conv(a, b):
                return convolution_transpose(a, b, None, self.spatial, p)
        else:
            def conv(a, b):
                return convolution(a, b, None, p)
        out = None if tx is None else conv(tx, w)
        if tw is not None:
            term = conv(x, tw)
            out = term if out is None else out + term
        if tb is not None:
            term = tb.reshape((-1,) + (1,) * (x.ndim - 2))
            out = term if out is None else out + term
        return out

    def release(self):
        super().release()
        COLUMN_CACHE.give(self.__dict__.pop("cols", None))


def convolution(input, weight, bias, params, out_shape=None):
    """``input`` ``(N, C, *S)`` convolved with ``weight`` ``(O, C/groups, *K)`` (cross-correlation,
    as PyTorch), plus ``bias`` ``(O,)`` or None. Arguments are checked by ``nn.functional``.
    ``out_shape`` keeps only the leading outputs (the adjoint of ``output_padding``)."""
    x, w, b = _operands(input._dtype, input, weight, bias)
    y, cols = _conv_arrays(input._backend, x, w, b, params, out_shape=out_shape)
    res = _wrap(_rounded(y, input._dtype), input._dtype, input)
    if needs_grad(input, weight, bias):
        attrs = {"params": params, "transposed": False}
        # The columns cost K times the input's memory but save the weight gradient a second
        # im2col pass; released with the node's saved tensors after backward.
        if weight._requires_grad:
            attrs["cols"] = cols
            cols = None
        record(ConvolutionBackward0, (input, weight, bias), res, save=(input, weight), **attrs)
    COLUMN_CACHE.give(cols)
    return res


def convolution_transpose(input, weight, bias, spatial, params):
    """The transposed convolution of ``input`` ``(N, C, *S)`` with ``weight``
    ``(C, O/groups, *K)`` to spatial shape ``spatial``, plus ``bias`` ``(O,)`` or None."""
    x, w, b = _operands(input._dtype, input, weight, bias)
    data = _input_grad_arrays(input._backend, x, w, tuple(spatial), params)
    if b is not None:
        data += b.reshape((-1,) + (1,) * len(spatial))
    res = _wrap(_rounded(data, input._dtype), input._dtype, input)
    if needs_grad(input, weight, bias):
        record(ConvolutionBackward0, (input, weight, bias), res, save=(input, weight),
               params=params, transposed=True, spatial=tuple(spatial))
    return res


class ConvolutionInputGradBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        g, w = self.saved_tensors
        p = self.params
        dg = (convolution(grad, w, None, p, tuple(g.shape[2:]))
              if self._edges[0] is not None else None)
        dw = (convolution_weight_grad(grad, g, w.shape[2:], p)
              if self._edges[1] is not None else None)
        return dg, dw


def convolution_input_grad(grad, weight, spatial, params):
    """The transposed convolution: the gradient of ``convolution`` with respect to an input of
    spatial shape ``spatial``, given the output gradient ``grad``."""
    g, w = _operands(grad._dtype, grad, weight)
    data = _input_grad_arrays(grad._backend, g, w, tuple(spatial), params)
    res = _wrap(_rounded(data, grad._dtype), grad._dtype, grad)
    if needs_grad(grad, weight):
        record(ConvolutionInputGradBackward0, (grad, weight), res, save=(grad, weight),
               params=params)
    return res


class ConvolutionWeightGradBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, g = self.saved_tensors
        p = self.params
        dx = (convolution_input_grad(g, grad, x.shape[2:], p)
              if self._edges[0] is not None else None)
        dg = (convolution(x, grad, None, p, tuple(g.shape[2:]))
              if self._edges[1] is not None else None)
        return dx, dg


def convolution_weight_grad(input, grad, kernel, params, cols=None):
    """The gradient of ``convolution`` with respect to its weight (kernel shape ``kernel``)."""
    x, g = _operands(grad._dtype, input, grad)
    data = _weight_grad_arrays(input._backend, x, g, tuple(kernel), params, cols)
    res = _wrap(_rounded(data, grad._dtype), grad._dtype, grad)
    if needs_grad(input, grad):
        record(ConvolutionWeightGradBackward0, (input, grad), res, save=(input, grad),
               params=params)
    return res


def conv_params(stride, pads, dilation, groups):
    return _Params(tuple(stride), tuple(tuple(p) for p in pads), tuple(dilation), groups)


class ConvTbcBackward0(CompositeBackward):
    __slots__ = ()


def conv_tbc(input, weight, bias, params):
    """1-D convolution of a (time, batch, channels) input with a (kernel, in, out) weight: the
    convolution of the (batch, channels, time) view, under PyTorch's one node."""
    return record_composite(ConvTbcBackward0, (input, weight, bias), lambda input, weight, bias:
                            convolution(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias,
                                        params).permute(2, 0, 1))


# ---- unfold / fold ---------------------------------------------------------------------------

class Im2ColBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return col2im_op(grad, self.spatial, self.kernel, self.stride, self.pads, self.dilation)

    def jvp(self, t):
        return im2col_op(t, self.kernel, self.stride, self.pads, self.dilation)  # linear


def im2col_op(input, kernel, stride, pads, dilation):
    """``F.unfold`` on an ``(N, C, *S)`` tensor: ``(N, C * prod(kernel), L)``; an unbatched
    ``(C, *S)`` one gives ``(C * prod(kernel), L)`` (one node, as PyTorch's kernel)."""
    xp = input._backend.xp
    unbatched = input.ndim == len(kernel) + 1
    data = input._data[None] if unbatched else input._data
    cols, out_shape = im2col(input._backend, data, kernel, stride, pads, dilation)
    batch = data.shape[0]
    cols = xp.ascontiguousarray(xp.swapaxes(
        cols.reshape(cols.shape[0], batch, math.prod(out_shape)), 0, 1))
    res = _wrap(cols[0] if unbatched else cols, input._dtype, input)
    if needs_grad(input):
        record(Im2ColBackward0, (input,), res, spatial=tuple(data.shape[2:]), kernel=kernel,
               stride=stride, pads=pads, dilation=dilation)
    return res


class Col2ImBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return im2col_op(grad, self.kernel, self.stride, self.pads, self.dilation)

    def jvp(self, t):
        return col2im_op(t, self.spatial, self.kernel, self.stride, self.pads, self.dilation)


def col2im_op(input, spatial, kernel, stride, pads, dilation):
    """``F.fold`` on an ``(N, C * prod(kernel), L)`` tensor: ``(N, C, *spatial)``; an
    unbatched ``(C * prod(kernel), L)`` one gives ``(C, *spatial)``."""
    xp = input._backend.xp
    unbatched = input.ndim == 2
    source = input._data[None] if unbatched else input._data
    batch, rows = source.shape[:2]
    cols = xp.swapaxes(source, 0, 1).reshape(rows, batch * source.shape[2])
    data = col2im(xp, cols, batch, tuple(spatial), kernel, stride, pads, dilation)
    res = _wrap(data[0] if unbatched else data, input._dtype, input)
    if needs_grad(input):
        record(Col2ImBackward0, (input,), res, spatial=tuple(spatial), kernel=kernel,
               stride=stride, pads=pads, dilation=dilation)
    return res


# ---- constant padding ------------------------------------------------------------------------

class GatherDimsBackward(Node):
    """Base of the nodes of ``gather_dims``: the gradient scatter-adds back through the gathers
    in reverse order (Ember's ``index_add``, so it is differentiable)."""
    __slots__ = ()

    def backward(self, grad):
        for dim, index, size in reversed(self.gathers):
            shape = list(grad.shape)
            shape[dim] = size
            grad = grad.new_zeros(shape).index_add(dim, index, grad)
        return (grad,)

    def jvp(self, t):
        # linear: the same gathers of the tangent
        for dim, index, _ in self.gathers:
            t = t.index_select(dim, index)
        return t


def gather_dims_node(name):
    """A ``gather_dims`` node class under PyTorch's ``name`` for the op it serves."""
    return type(name, (GatherDimsBackward,), {"__slots__": ()})


# Reflect and replicate padding, by mode and number of padded dims.
INDEX_PAD_NODES = {(kind, n): gather_dims_node(f"{name}Pad{n}DBackward0")
                   for kind, name in (("reflect", "Reflection"), ("replicate", "Replication"))
                   for n in (1, 2, 3)}


def gather_dims(input, gathers, node):
    """``input`` gathered along each ``(dim, index)`` of ``gathers`` in turn (``index`` an int64
    tensor of source positions), recorded as ``node`` (a ``GatherDimsBackward``): reflect and
    replicate padding, nearest-neighbour resampling."""
    xp = input._backend.xp
    data = input._data
    sizes = []
    for dim, index in gathers:
        sizes.append(data.shape[dim])
        data = xp.take(data, index._data, axis=dim)
    res = _wrap(data, input._dtype, input)
    if needs_grad(input):
        record(node, (input,), res,
               gathers=tuple((d, i, n) for (d, i), n in zip(gathers, sizes)))
    return res


class ConstantPadNdBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        return constant_pad_nd(grad, tuple((-lo, -hi) for lo, hi in self.pads), 0)

    def jvp(self, t):
        return constant_pad_nd(t, self.pads, 0)  # the padding is constant: its tangent is 0


_C_SCALAR_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                   "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                   "float32": "float", "float64": "double"}


def _check_fill_value(xp, value, dtype):
    """PyTorch's checked conversion of a fill value: it must lie in an integer dtype's range
    (NaN does not), and a finite one in a float dtype's (infinities and NaN pass)."""
    if dtype is dt.bool or dtype._kind > 2 or isinstance(value, complex):
        return
    if dtype._kind == 1:
        info = xp.iinfo(dtype.np)
        fits = info.min <= value <= info.max
    else:
        limit = dt.largest_finite(dtype)
        fits = not math.isfinite(value) or -limit <= value <= limit
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {_C_SCALAR_NAMES[dtype.name]} "
                           "without overflow")


def constant_pad_nd(input, pads, value):
    """``input`` with its last ``len(pads)`` dims padded by ``value``; ``pads`` is per-dim
    ``(before, after)`` from the first padded dim on, and a negative width crops."""
    xp = input._backend.xp
    data = input._data
    _check_fill_value(xp, value, input._dtype)
    lead = data.ndim - len(pads)
    out_shape = data.shape[:lead] + tuple(n + lo + hi for n, (lo, hi) in zip(data.shape[lead:], pads))
    for size in out_shape[lead:]:
        if size < 0:
            raise RuntimeError(f"The input size {list(data.shape)}, plus negative padding "
                               f"{[p for pad in reversed(pads) for p in pad]} resulted in a "
                               "negative output size, which is invalid. Check dimension "
                               f"{out_shape.index(size)} of your input.")
    out = xp.full(out_shape, value, dtype=data.dtype)
    source = (slice(None),) * lead + tuple(slice(max(-lo, 0), n - max(-hi, 0))
                                           for n, (lo, hi) in zip(data.shape[lead:], pads))
    target = (slice(None),) * lead + tuple(slice(max(lo, 0), max(lo, 0) + n - max(-lo, 0) -
                                                 max(-hi, 0))
                                           for n, (lo, hi) in zip(data.shape[lead:], pads))
    if all(s > 0 for s in out_shape[lead:]):
        out[target] = data[source]
    res = _wrap(out, input._dtype, input)
    if needs_grad(input):
        record(ConstantPadNdBackward0, (input,), res, pads=tuple(pads))
    return res



# ---- padding: ``nn.functional.pad`` ----------------------------------------------------------
# Constant padding is ``constant_pad_nd``; reflect and replicate padding gather each padded dim
# by an index vector, as one op (``gather_dims``) under PyTorch's node; circular padding is
# PyTorch's composite of slice copies into a new tensor (``CopySlices`` nodes).

_NON_CONSTANT = ("reflect", "replicate", "circular")


def _pairs(pad, input):
    """``pad`` (last dim first, PyTorch's order) as ``(before, after)`` from the first padded
    dim on."""
    pad = tuple(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    return tuple((pad[2 * i], pad[2 * i + 1]) for i in reversed(range(len(pad) // 2)))


def _source_index(xp, mode, size, lo, hi):
    positions = xp.arange(-lo, size + hi)
    if mode == "replicate":
        return xp.clip(positions, 0, size - 1)
    period = 2 * (size - 1)
    folded = positions % period if period else positions * 0
    return xp.where(folded < size, folded, period - folded)


def _check_non_constant(input, pairs, mode):
    padded_dims = len(pairs)
    if not (padded_dims <= 3 and input.ndim in (padded_dims + 1, padded_dims + 2)):
        raise NotImplementedError(
            f"Padding size {2 * padded_dims} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    lead = input.ndim - padded_dims
    for i, (lo, hi) in enumerate(pairs):
        size = input.shape[lead + i]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{lead + i} of input {list(input.shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode == "replicate" and any(s == 0 for s in input.shape[1:]):
        raise RuntimeError(f"Expected {lead + padded_dims - 1}D or {lead + padded_dims}D (batch "
                           f"mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")


def pad(input, pad, mode="constant", value=None):
    """Pads (or, with negative widths, crops) the last ``len(pad) // 2`` dims of ``input``."""
    # autocast: ATen's reflection_pad1d/2d and replication_pad1d/2d/3d are float32 ops on the CPU
    if (_autocast.active and (mode == "replicate" or (mode == "reflect" and len(pad) < 6))
            and _autocast.enabled_for(input, "reflection_or_replication_pad")):
        return _autocast.run(_pad_op, "reflection_or_replication_pad", input, pad, mode, value)
    if mode not in ("constant",) + _NON_CONSTANT:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pairs = _pairs(pad, input)
    if mode == "constant":
        return constant_pad_nd(input, pairs, 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    _check_non_constant(input, pairs, mode)
    if mode == "circular":
        return _pad_circular(input, pairs)
    if input.dtype is dt.bool:
        kernel = "reflection_pad" if mode == "reflect" else "replication_pad"
        raise NotImplementedError(f"\"{kernel}{len(pairs)}d\" not implemented for 'Bool'")
    xp = input._backend.xp
    lead = input.ndim - len(pairs)
    gathers = [(lead + i, _wrap(xp.asarray(_source_index(xp, mode, input.shape[lead + i], lo, hi),
                                           dtype=xp.int64), dt.int64, input))
               for i, (lo, hi) in enumerate(pairs)]
    # one node, PyTorch's ReflectionPad2DBackward0 and the like
    return gather_dims(input, gathers, INDEX_PAD_NODES[mode, len(gathers)])


_pad_op = pad  # pad() names its own function's name as an argument


def _pad_circular(input, pairs):
    """PyTorch's ``_pad_circular``: a new tensor gets the (cropped) input copied into its middle,
    then, dim by dim from the last, each border is copied from the far side of the new tensor
    itself. Every copy writes a slice in place, so the graph is PyTorch's chain of
    ``CopySlices`` (corners are written more than once, as there)."""
    lead = input.ndim - len(pairs)
    in_shape = input.shape
    out_shape = list(in_shape[:lead])
    for size, (lo, hi) in zip(in_shape[lead:], pairs):
        if size + lo + hi < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        out_shape.append(size + lo + hi)
    out = input.new_empty(out_shape)
    out_slice, in_slice = out, input
    last_first = [(lead + i, lo, hi) for i, (lo, hi) in reversed(list(enumerate(pairs)))]
    for dim, lo, hi in last_first:
        out_slice = out_slice.narrow(dim, max(lo, 0), out_shape[dim] - max(hi, 0) - max(lo, 0))
        in_slice = in_slice.narrow(dim, max(-lo, 0), in_shape[dim] - max(-hi, 0) - max(-lo, 0))
    out_slice.copy_(in_slice)
    for dim, lo, hi in last_first:
        n = out_shape[dim]
        if lo > 0:
            out.narrow(dim, 0, lo).copy_(out.narrow(dim, n - lo - max(hi, 0), lo))
        if hi > 0:
            # PyTorch's copy runs forward through memory, so a right border wider than the
            # distance to its source (a left crop allows it) repeats what it has just written:
            # copy in pieces no wider than that distance.
            source, target = max(lo, 0), n - hi
            step = max(target - source, 1)
            for offset in range(0, hi, step):
                width = min(step, hi - offset)
                out.narrow(dim, target + offset, width).copy_(
                    out.narrow(dim, source + offset, width))
    return out


__all__ = []
