"""Max pooling over windows: one op, for the fixed windows of ``max_pool*d`` (a strided view
of the padded input) and the variable ones of ``adaptive_max_pool*d`` (gathered by index).

The op returns the maxima and the flat index of each maximum in its input plane, as PyTorch's
``return_indices``; the backward scatters the gradient to those indices with Ember's
``scatter``/``scatter_add``, so it is differentiable again (its own derivative is a gather).

Average pooling (window sums as a convolution with a ones kernel) and adaptive average pooling
(a separable linear map, one matrix product per spatial dim) are one op each too, under
PyTorch's node names; their backward is the adjoint written in the convolution and matmul
ops, so every gradient order is available. Max unpooling is a scatter into zeros whose backward
is the matching gather.
"""
import itertools
import math

from ._dispatch import Node, needs_grad, record, _wrap, dtype_name
from .. import _dtype as dt
from ..autograd.grad_mode import no_grad
from .conv import convolution, convolution_input_grad, conv_params, pad_spatial


class MaxPoolBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        indices = self.indices
        # (C,) for an unbatched input, (N, C) for a batch
        lead = tuple(grad.shape[:grad.ndim - len(self.spatial)])
        flat = grad.new_zeros(lead + (math.prod(self.spatial),))
        # windows that cannot share an input element need no accumulation: a plain scatter
        # (an indexed store) is several times faster than scatter_add
        scatter = flat.scatter if self.disjoint else flat.scatter_add
        outputs = math.prod(grad.shape[len(lead):])  # not -1: an empty batch leaves it ambiguous
        flat = scatter(len(lead), indices.reshape(lead + (outputs,)),
                       grad.reshape(lead + (outputs,)))
        return flat.reshape(lead + self.spatial)

    def jvp(self, t):
        # each maximum moves with its input element: the tangent gathered at the indices
        lead = tuple(t.shape[:t.ndim - len(self.spatial)])
        out_shape = tuple(self.indices.shape)
        picked = t.reshape(lead + (math.prod(self.spatial),)).gather(
            len(lead), self.indices.reshape(lead + (math.prod(out_shape[len(lead):]),)))
        return picked.reshape(out_shape)


# PyTorch's names for the kernels: 1-d pooling runs the 2-d kernel on an unsqueezed input.
class MaxPool2DWithIndicesBackward0(MaxPoolBackward0):
    __slots__ = ()


class MaxPool3DWithIndicesBackward0(MaxPoolBackward0):
    __slots__ = ()


class AdaptiveMaxPool2DBackward0(MaxPoolBackward0):
    __slots__ = ()


class AdaptiveMaxPool3DBackward0(MaxPoolBackward0):
    __slots__ = ()


_MAX_POOL_NODES = {2: MaxPool2DWithIndicesBackward0, 3: MaxPool3DWithIndicesBackward0}
_ADAPTIVE_MAX_POOL_NODES = {2: AdaptiveMaxPool2DBackward0, 3: AdaptiveMaxPool3DBackward0}


def _lowest(xp, dtype):
    return -xp.inf if dtype._kind >= 2 else xp.iinfo(dtype.np).min


def _argmax_offsets(xp, windows, kernel, track_nan):
    best = best_at = None
    for k, offset in enumerate(itertools.product(*(range(n) for n in kernel))):
        candidate = windows[(Ellipsis,) + offset]
        if best is None:
            best = candidate.copy()
            best_at = xp.zeros(best.shape, dtype=xp.int8 if math.prod(kernel) < 128 else xp.int64)
            continue
        better = candidate > best
        if track_nan:
            better |= candidate != candidate
        xp.maximum(best, candidate, out=best)
        # best_at += better * (k - best_at): plain arithmetic, several times faster than a
        # masked store (copyto/where or boolean indexing)
        step = k - best_at
        step *= better
        best_at += step
    return best, best_at


def _batched_data(input, nd):
    """``input``'s array with a batch axis (a view), and whether it had none: the kernels take
    an unbatched ``(C, *S)`` input as it is, as PyTorch's do, so the graph is one node."""
    data = input._data
    if data.ndim == nd + 1:
        return data[None], True
    return data, False


def _window_maximum(xp, windows, kernel):
    """The maxima alone, one offset at a time (NaN wins, as it does in ``_argmax_offsets``)."""
    best = None
    for offset in itertools.product(*(range(n) for n in kernel)):
        candidate = windows[(Ellipsis,) + offset]
        if best is None:
            best = candidate.copy()
        else:
            xp.maximum(best, candidate, out=best)
    return best


def _window_max(input, windows, kernel, flat_index, node, disjoint=False, unbatched=False,
                with_indices=True):
    """Maxima of ``windows`` ``(N, C, *out, *kernel)`` and their flat input indices;
    ``flat_index(k)`` maps each output's winning kernel offset (raveled) to that index.

    The kernel is walked one offset at a time over the whole batch (a few passes over the
    output) rather than reducing a copied ``(..., K)`` array along its short last axis, which
    NumPy does slowly."""
    xp = input._backend.xp
    if not with_indices and not needs_grad(input):  # inference: no indices to find
        best = _window_maximum(xp, windows, kernel)
        return _wrap(best[0] if unbatched else best, input._dtype, input), None
    floating = input._dtype._kind >= 2
    # A NaN wins and stays (the last one, as in PyTorch's kernels). On the host that takes a
    # rarer, slower second pass only where a NaN won; a device would have to sync to learn
    # that, so there the one pass tracks NaNs from the start.
    on_device = floating and input._device.type != "cpu"
    best, best_at = _argmax_offsets(xp, windows, kernel, track_nan=on_device)
    if floating and not on_device and xp.isnan(best).any():
        best, best_at = _argmax_offsets(xp, windows, kernel, track_nan=True)
    indices = xp.asarray(flat_index(best_at), dtype=xp.int64)
    if unbatched:
        best, indices = best[0], indices[0]
    values = _wrap(best, input._dtype, input)
    indices = _wrap(indices, dt.int64, input)
    if needs_grad(input):
        record(node, (input,), values, indices=indices,
               spatial=tuple(input.shape[input.ndim - len(kernel):]), disjoint=disjoint)
    return values, indices


def _row_major_weights(spatial):
    return [math.prod(spatial[i + 1:]) for i in range(len(spatial))]


def max_pool_nd(input, kernel, stride, pads, dilation, out_shape, with_indices=True):
    """Max over fixed windows of an ``(N, C, *S)`` or ``(C, *S)`` tensor; ``pads`` are per-dim
    ``(lo, hi)`` with ``hi`` covering ``ceil_mode``'s last partial window. Returns the maxima
    and their flat indices; the indices are None when ``with_indices`` is false and no gradient
    is recorded."""
    xp = input._backend.xp
    data, unbatched = _batched_data(input, len(kernel))
    padded = pad_spatial(xp, data, pads, _lowest(xp, input._dtype)) if any(map(any, pads)) \
        else data
    strides = padded.strides
    view = input._backend.sliding_view(
        padded, padded.shape[:2] + tuple(out_shape) + tuple(kernel),
        strides[:2] + tuple(s * st for s, st in zip(strides[2:], stride))
        + tuple(s * d for s, d in zip(strides[2:], dilation)))
    nd = len(kernel)

    def flat_index(at):
        # a window's flat index separates: where the window starts, plus the offset inside it
        weights = _row_major_weights(data.shape[2:])
        starts = 0
        offsets = 0
        for i in range(nd):
            shape = [1] * nd
            shape[i] = -1
            starts = starts + ((xp.arange(out_shape[i]) * stride[i] - pads[i][0])
                               * weights[i]).reshape(shape)
            offsets = offsets + (xp.arange(kernel[i]) * dilation[i] * weights[i]).reshape(shape)
        return starts + offsets.reshape(-1)[at]
    disjoint = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel))
    return _window_max(input, view, kernel, flat_index,
                       _MAX_POOL_NODES.get(nd, MaxPoolBackward0), disjoint, unbatched,
                       with_indices)


def adaptive_max_pool_nd(input, out_shape):
    """Max over PyTorch's adaptive windows ``[floor(i*S/O), ceil((i+1)*S/O))`` per dim; shorter
    windows repeat their last element, which leaves the maximum and its first index unchanged."""
    xp = input._backend.xp
    data, unbatched = _batched_data(input, len(out_shape))
    tables = []
    for size, out in zip(data.shape[2:], out_shape):
        starts = (xp.arange(out) * size) // out
        ends = -((-(xp.arange(out) + 1) * size) // out)
        width = int((ends - starts).max()) if out else 1
        table = starts[:, None] + xp.arange(width)[None, :]
        tables.append(xp.minimum(table, ends[:, None] - 1))
    nd = len(tables)
    weights = _row_major_weights(data.shape[2:])
    index = [slice(None), slice(None)]
    flat = 0
    for i, table in enumerate(tables):
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = table.shape
        index.append(table.reshape(shape))
        flat = flat + table.reshape(shape) * weights[i]
    windows = data[tuple(index)]  # (N, C, *out, *window)
    flat = flat.reshape(tuple(out_shape) + (-1,))
    kernel = tuple(t.shape[1] for t in tables)
    return _window_max(input, windows, kernel, lambda at: xp.take_along_axis(
        flat[None, None], at[..., None].astype(xp.int64), -1)[..., 0],
        _ADAPTIVE_MAX_POOL_NODES.get(nd, MaxPoolBackward0), unbatched=unbatched)



# ---- average pooling ---------------------------------------------------------------------------

class AvgPool2DBackward0(Node):
    """Each output's gradient, over its divisor, spread back over its window: the adjoint of
    the window sums (a convolution of each plane with a kernel of ones), so differentiable."""
    __slots__ = ()

    def backward(self, grad):
        lead = tuple(grad.shape[:grad.ndim - len(self.spatial)])
        g = grad / self.divisor
        planes = g.reshape((math.prod(lead), 1) + tuple(grad.shape[len(lead):]))
        spread = convolution_input_grad(planes, self.ones, self.spatial, self.params)
        return (spread.reshape(lead + self.spatial),)

    def jvp(self, t):
        # linear: the same window means of the tangent
        lead = tuple(t.shape[:t.ndim - len(self.spatial)])
        sums = convolution(t.reshape((math.prod(lead), 1) + self.spatial), self.ones, None,
                           self.params)
        return sums.reshape(lead + tuple(sums.shape[2:])) / self.divisor


class AvgPool3DBackward0(AvgPool2DBackward0):
    __slots__ = ()


_AVG_POOL_NODES = {2: AvgPool2DBackward0, 3: AvgPool3DBackward0}


def avg_pool_nd(input, kernel, stride, pads, out_shape, divisor):
    """Window means of an ``(N, C, *S)`` or ``(C, *S)`` tensor: window sums (one convolution of
    every plane with a kernel of ones) over ``divisor``, a number or a tensor broadcasting
    against the ``(N, C, *out_shape)`` result."""
    if len(kernel) == 3 and input._dtype in (dt.float16, dt.bfloat16):
        # PyTorch's CPU kernel has no half-precision form (nor, so, lp_pool3d)
        raise NotImplementedError(f"\"avg_pool3d_out_frame\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    lead = tuple(input.shape[:input.ndim - len(kernel)])
    spatial = tuple(input.shape[len(lead):])
    ones = _wrap(input._backend.xp.ones((1, 1) + tuple(kernel), dtype=input._dtype.np),
                 input._dtype, input)
    params = conv_params(tuple(stride), tuple(pads), (1,) * len(kernel), 1)
    with no_grad():
        sums = convolution(input.reshape((math.prod(lead), 1) + spatial), ones, None, params)
        res = sums.reshape(lead + tuple(out_shape))
        # integer windows divide as C++ integers do (toward zero), as in PyTorch
        res = res / divisor if input._dtype._kind >= 2 else res.div(divisor, rounding_mode="trunc")
    if needs_grad(input):
        record(_AVG_POOL_NODES[len(kernel)], (input,), res, ones=ones, params=params,
               spatial=spatial, divisor=divisor)
    return res



# ---- adaptive average pooling ------------------------------------------------------------------

def apply_along_spatial(input, matrices):
    """``input`` ``(N, C, *S)`` (or ``(C, *S)``) with ``matrices[i]`` ``(O_i, S_i)`` applied
    along spatial dim i: a separable linear map as one batched matrix product per dim."""
    lead = tuple(input.shape[:input.ndim - len(matrices)])
    x = input
    for i, matrix in enumerate(matrices):
        shape = tuple(x.shape[len(lead):])
        before, size, after = math.prod(shape[:i]), shape[i], math.prod(shape[i + 1:])
        x = matrix.matmul(x.reshape(lead + (before, size, after)))
        x = x.reshape(lead + shape[:i] + (matrix.shape[0],) + shape[i + 1:])
    return x


class SeparableMapBackward(Node):
    """Base of the nodes of ``separable_map``: the adjoint map, the transposed matrices applied
    in turn."""
    __slots__ = ()

    def backward(self, grad):
        return (apply_along_spatial(grad, [m.mT for m in self.matrices]),)

    def jvp(self, t):
        return apply_along_spatial(t, self.matrices)  # linear: the map itself


class AdaptiveAvgPool2DBackward0(SeparableMapBackward):
    __slots__ = ()


class AdaptiveAvgPool3DBackward0(SeparableMapBackward):
    __slots__ = ()


def separable_map(input, matrices, node):
    """``apply_along_spatial`` as one op recorded as ``node`` (a ``SeparableMapBackward``):
    adaptive average pooling, linear resampling."""
    with no_grad():
        res = apply_along_spatial(input, matrices)
    if needs_grad(input):
        record(node, (input,), res, matrices=matrices)
    return res


def adaptive_avg_pool_nd(input, matrices):
    """``input`` averaged over adaptive windows, ``matrices[i]`` averaging spatial dim i."""
    node = AdaptiveAvgPool2DBackward0 if len(matrices) <= 2 else AdaptiveAvgPool3DBackward0
    return separable_map(input, matrices, node)



# ---- max unpooling -----------------------------------------------------------------------------

class MaxUnpool2DBackward0(Node):
    """Each input element went to its index: the gradient gathers it back from there."""
    __slots__ = ()

    def backward(self, grad):
        lead = self.indices.shape[:-1]  # (N, C), or (C,) for an unbatched input
        picked = grad.reshape(lead + (-1,)).gather(len(lead), self.indices)
        return (picked.reshape(self.in_shape),)

    def jvp(self, t):
        # linear: the tangent scattered to the same places
        lead = tuple(self.indices.shape[:-1])
        flat = t.new_zeros(lead + (math.prod(self.out_spatial),))
        return flat.scatter(len(lead), self.indices, t.reshape(lead + (-1,))).reshape(
            lead + self.out_spatial)


class MaxUnpool3DBackward0(MaxUnpool2DBackward0):
    __slots__ = ()


def max_unpool_nd(input, indices, out_shape):
    """``input`` scattered into zeros of spatial shape ``out_shape`` at ``indices`` (flat in
    each output plane); an unbatched ``(C, *S)`` input is taken as it is, as PyTorch's kernel
    does."""
    n = len(out_shape)
    lead = tuple(input.shape[:input.ndim - n])
    plane = math.prod(out_shape)
    flat_indices = indices.reshape(lead + (-1,))
    if flat_indices.numel():
        largest, smallest = int(flat_indices.max()), int(flat_indices.min())
        if smallest < 0 or largest >= plane:
            bad = largest if largest >= plane else smallest
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(map(str, out_shape))})")
    with no_grad():
        out = input.new_zeros(lead + (plane,))
        out = out.scatter(len(lead), flat_indices, input.reshape(lead + (-1,)))
        out = out.reshape(lead + tuple(out_shape))
    if needs_grad(input):
        node = MaxUnpool2DBackward0 if n == 2 else MaxUnpool3DBackward0
        record(node, (input,), out, indices=flat_indices, in_shape=tuple(input.shape),
               out_spatial=tuple(out_shape))
    return out


__all__ = []
