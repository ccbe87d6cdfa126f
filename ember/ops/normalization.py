"""Normalisation over some axes (batch norm, layer norm) as one op with an analytic backward.

``normalize_affine`` computes ``(x - mean) / sqrt(var + eps) * weight + bias`` with the
statistics taken over ``axes``. Composed from generic ops its backward would run a dozen
nodes; here it is one node using the closed form

    dx = invstd * (g - mean(g) - xhat * mean(g * xhat)),   g = grad * weight

The statistics the forward computed are reused when the backward is not itself recorded. Under
``create_graph`` they are recomputed from the saved input with Ember ops, so the mean's and
variance's dependence on ``x`` reaches higher-order gradients too.
"""
import math

from .. import _dtype as dt
from ._dispatch import Node, needs_grad, record, _wrap, dtype_name
from ..autograd.grad_mode import _state as _grad_state, no_grad

__all__ = []  # its ops are reached through nn.functional


def _sum(t, axes):
    # no axes means nothing to reduce (a 1-D layer norm), where ``sum(())`` sums everything
    return t.sum(axes) if axes else t


class NativeNormBackward0(Node):
    """The closed-form backward; callers record it under PyTorch's name for their layer."""
    __slots__ = ()

    def backward(self, grad):
        x, weight = self.saved_tensors
        axes, param_view, param_axes = self.axes, self.param_view, self.param_axes
        if (not _grad_state.enabled and grad._dtype is x._dtype and x._dtype._rank != 0
                and all(param_view[a] == 1 for a in axes)):
            return self._per_channel_backward(grad, x, weight)
        if _grad_state.enabled:  # create_graph: the statistics must carry x's graph
            mean = x.mean(axes, keepdim=True)
            invstd = ((x - mean).pow(2).mean(axes, keepdim=True) + self.eps).rsqrt()
        else:
            mean, invstd = self.mean, self.invstd
        xhat = (x - mean) * invstd
        g_x = g_w = g_b = None
        if self._edges[0] is not None:
            g = grad if weight is None else grad * weight.reshape(param_view)
            g_x = (g - g.mean(axes, keepdim=True)
                   - xhat * (g * xhat).mean(axes, keepdim=True)) * invstd
        if self._edges[1] is not None:
            g_w = _sum(grad * xhat, param_axes).reshape(weight.shape)
        if self._edges[2] is not None:
            g_b = _sum(grad, param_axes).reshape(self.bias_shape)
        return g_x, g_w, g_b

    def jvp(self, tx, tw, tb):
        # y = xhat w + b with xhat = (x - mean) invstd over ``axes``:
        # d xhat = invstd (dx - mean(dx) - xhat mean(xhat dx))
        x, weight = self.saved_tensors
        if _grad_state.enabled:  # reverse over forward: the statistics carry x's graph
            mean = x.mean(self.axes, keepdim=True)
            invstd = ((x - mean).pow(2).mean(self.axes, keepdim=True) + self.eps).rsqrt()
        else:
            mean, invstd = self.mean, self.invstd
        xhat = (x - mean) * invstd
        return _affine_tangent(self, xhat, None if tx is None else
                               (tx - tx.mean(self.axes, keepdim=True)
                                - xhat * (xhat * tx).mean(self.axes, keepdim=True)) * invstd,
                               weight, tw, tb)


    def _per_channel_backward(self, grad, x, weight):
        """The same closed form on arrays, for a weight constant over the normalised axes
        (batch and instance norm): with ``c = x - mean``, ``s = invstd * weight``,

            dx = s * (grad - mean(grad) - c * invstd**2 * mean(grad * c))

        is ``grad * s + c * b + k`` with per-channel ``b`` and ``k``: about half the passes
        over the activations of the op-by-op formula, which matters at ResNet sizes."""
        xp = x._backend.xp
        axes, param_axes = self.axes, self.param_axes
        g, mean, invstd = grad._data, self.mean._data, self.invstd._data
        count = 1
        for a in axes:
            count *= g.shape[a]
        centered = x._data - mean
        sum_gc = _sum_of_products(xp, centered, g, axes)
        sum_g = g.sum(axis=axes, keepdims=True)
        extra_axes = tuple(a for a in param_axes if a not in axes)
        g_x = g_w = g_b = None
        if self._edges[0] is not None:
            scale = invstd if weight is None else invstd * weight._data.reshape(self.param_view)
            b = -scale * invstd * invstd * (sum_gc / count)
            k = -scale * (sum_g / count)
            out = g * scale
            out += xp.multiply(centered, b, out=centered)
            out += k
            g_x = _wrap(out, x._dtype, x)
        if self._edges[1] is not None:
            g_w = invstd * sum_gc
            g_w = _wrap(g_w.sum(axis=extra_axes) if extra_axes else g_w, x._dtype, x)
            g_w = g_w.reshape(weight.shape)
        if self._edges[2] is not None:
            g_b = _wrap(sum_g.sum(axis=extra_axes) if extra_axes else sum_g, x._dtype, x)
            g_b = g_b.reshape(self.bias_shape)
        return g_x, g_w, g_b


class NativeBatchNormBackward0(NativeNormBackward0):
    """Batch norm's node, from batch statistics (training) or running ones (``running``:
    the running mean and ``1 / sqrt(running_var + eps)``, constants to the graph)."""
    __slots__ = ()

    def backward(self, grad):
        running = self.__dict__.get("running")
        if running is None:
            return super().backward(grad)
        x, weight = self.saved_tensors
        mean, invstd = running
        view, axes = self.param_view, self.param_axes
        g_x = g_w = g_b = None
        if self._edges[0] is not None:
            g_x = grad * (invstd if weight is None else invstd * weight).reshape(view)
        if self._edges[1] is not None:
            xhat = (x - mean.reshape(view)) * invstd.reshape(view)
            g_w = (grad * xhat).sum(axes).reshape(weight.shape)
        if self._edges[2] is not None:
            g_b = grad.sum(axes).reshape(self.bias_shape)
        return g_x, g_w, g_b

    def jvp(self, tx, tw, tb):
        running = self.__dict__.get("running")
        if running is None:
            return super().jvp(tx, tw, tb)
        # running statistics are constants: xhat is affine in x
        x, weight = self.saved_tensors
        mean, invstd = running
        view = self.param_view
        xhat = (x - mean.reshape(view)) * invstd.reshape(view)
        return _affine_tangent(self, xhat, None if tx is None else tx * invstd.reshape(view),
                               weight, tw, tb)


def _affine_tangent(node, xhat, t_xhat, weight, tw, tb):
    """The tangent of ``xhat * weight + bias`` (weight and bias viewed as ``param_view``)."""
    view = node.param_view
    out = None
    if t_xhat is not None:
        out = t_xhat if weight is None else t_xhat * weight.reshape(view)
    if tw is not None:
        term = xhat * tw.reshape(view)
        out = term if out is None else out + term
    if tb is not None:
        term = tb.reshape(view)
        out = term if out is None else out + term
    return out


def batch_norm_eval(input, running_mean, running_var, weight, bias, eps):
    """Batch norm with running statistics: an affine map per channel (dim 1), one multiply and
    one add over the input."""
    if input._dtype._kind < 2:
        raise NotImplementedError(f"\"batch_norm\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    view = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    params = [t for t in (running_mean, running_var, weight, bias) if t is not None]
    if not needs_grad(input, weight, bias) and all(
            t._dtype is input._dtype and t._device is input._device for t in params) and \
            input._dtype not in (dt.float16, dt.bfloat16):
        # inference: the same arithmetic on the arrays, without a tensor op's dispatch each
        xp = input._backend.xp
        invstd = 1 / xp.sqrt(running_var._data + eps)
        scale = invstd if weight is None else invstd * weight._data
        shift = -running_mean._data * scale
        if bias is not None:
            shift = shift + bias._data
        return _wrap(input._data * scale.reshape(view) + shift.reshape(view), input._dtype,
                     input)
    # half precision computes in float32 and rounds once, as PyTorch's CPU kernel
    half = input._dtype in (dt.float16, dt.bfloat16)
    with no_grad():
        work = [None if t is None else (t.float() if half else t)
                for t in (input, running_mean, running_var, weight, bias)]
        invstd = (work[2] + eps).rsqrt()
        scale = invstd if weight is None else invstd * work[3]
        shift = -work[1] * scale
        if bias is not None:
            shift = shift + work[4]
        out = work[0] * scale.reshape(view) + shift.reshape(view)
        if half:
            out, invstd = out.to(input._dtype), invstd.to(input._dtype)
    if needs_grad(input, weight, bias):
        record(NativeBatchNormBackward0, (input, weight, bias), out, save=(input, weight),
               running=(running_mean.detach().clone(), invstd), param_view=view,
               param_axes=tuple(i for i in range(input.ndim) if view[i] == 1),
               bias_shape=None if bias is None else bias.shape)
    return out


class NativeLayerNormBackward0(NativeNormBackward0):
    __slots__ = ()


class NativeGroupNormBackward0(Node):
    """Group norm with a per-channel affine map. With ``g = grad * weight`` viewed per group
    ``(N, G, -1)``, the input's gradient is layer norm's closed form over each group; the
    statistics are recomputed from the saved input with Ember ops, so the formula is itself
    differentiable."""
    __slots__ = ()

    def backward(self, grad):
        x, weight = self.saved_tensors
        n, groups, eps = x.shape[0], self.groups, self.eps
        view = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        grouped = x.reshape(n, groups, math.prod(x.shape[1:]) // groups)
        mean = grouped.mean(-1, keepdim=True)
        invstd = ((grouped - mean).pow(2).mean(-1, keepdim=True) + eps).rsqrt()
        xhat = (grouped - mean) * invstd
        sum_axes = (0,) + tuple(range(2, x.ndim))
        g_x = g_w = g_b = None
        if self._edges[0] is not None:
            g = (grad if weight is None else grad * weight.reshape(view)).reshape(grouped.shape)
            g_x = ((g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
                   * invstd).reshape(x.shape)
        if self._edges[1] is not None:
            g_w = (grad * xhat.reshape(x.shape)).sum(sum_axes)
        if self._edges[2] is not None:
            g_b = grad.sum(sum_axes)
        return g_x, g_w, g_b

    def jvp(self, tx, tw, tb):
        # layer norm's forward derivative over each group, then the per-channel affine map
        x, weight = self.saved_tensors
        n, groups, eps = x.shape[0], self.groups, self.eps
        view = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        grouped = x.reshape(n, groups, math.prod(x.shape[1:]) // groups)
        mean = grouped.mean(-1, keepdim=True)
        invstd = ((grouped - mean).pow(2).mean(-1, keepdim=True) + eps).rsqrt()
        xhat = (grouped - mean) * invstd
        out = None
        if tx is not None:
            tg = tx.reshape(grouped.shape)
            out = ((tg - tg.mean(-1, keepdim=True) - xhat * (xhat * tg).mean(-1, keepdim=True))
                   * invstd).reshape(x.shape)
            if weight is not None:
                out = out * weight.reshape(view)
        xhat = xhat.reshape(x.shape)
        if tw is not None:
            term = xhat * tw.reshape(view)
            out = term if out is None else out + term
        if tb is not None:
            term = tb.reshape(view)
            out = term if out is None else out + term
        return out


def group_norm(input, groups, weight, bias, eps):
    """``input`` ``(N, C, *)`` normalised over each group of ``C / groups`` channels (and all
    positions), then ``weight`` and ``bias`` per channel (either may be None)."""
    n, channels = input.shape[0], input.shape[1]
    view = (1, channels) + (1,) * (input.ndim - 2)
    with no_grad():
        grouped = input.reshape(n, groups, math.prod(input.shape[1:]) // groups)
        out, _, _ = normalize_affine(grouped, None, None, (2,), (1, 1, 1), eps)
        out = out.reshape(input.shape)
        if weight is not None:
            out = out * weight.reshape(view)
        if bias is not None:
            out = out + bias.reshape(view)
    if needs_grad(input, weight, bias):
        record(NativeGroupNormBackward0, (input, weight, bias), out, save=(input, weight),
               groups=groups, eps=eps)
    return out


def _sum_of_products(xp, a, b, axes):
    """``(a * b).sum(axes, keepdims=True)`` without the product array: for batch norm's axes
    (all but the channels) one ``einsum`` contraction over ``(N, C, L)`` views."""
    if a.ndim >= 2 and tuple(axes) == (0,) + tuple(range(2, a.ndim)) and a.shape == b.shape:
        n, c = a.shape[:2]
        size = math.prod(a.shape[2:])
        sums = xp.einsum("ncl,ncl->c", a.reshape(n, c, size), b.reshape(n, c, size))
        return sums.reshape((1, c) + (1,) * (a.ndim - 2))
    return (a * b).sum(axis=axes, keepdims=True)


def normalize_affine(input, weight, bias, axes, param_view, eps, node=NativeNormBackward0):
    """``(out, mean, invstd)``: ``input`` normalised over ``axes``, times ``weight`` plus
    ``bias`` (either may be None) viewed as ``param_view``. ``mean`` and ``invstd`` keep the
    reduced axes as size 1. ``node`` is the backward class recorded (PyTorch names it by
    layer)."""
    d = input._dtype
    if d._kind < 2:  # PyTorch's error names the layer's kernel
        kernel = {NativeLayerNormBackward0: "LayerNormKernelImpl",
                  NativeBatchNormBackward0: "batch_norm"}.get(node, "GroupNormKernelImpl")
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(d)}'")
    xp = input._backend.xp
    x = input._data
    work = dt.float32.np if d._rank == 0 else x.dtype
    x = x.astype(work, copy=False)
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    count = x.size // mean.size if mean.size else 0
    var = _sum_of_products(xp, centered, centered, axes) / max(count, 1)
    invstd = 1.0 / xp.sqrt(var + eps)
    out = centered
    if weight is not None:
        out *= invstd * weight._data.astype(work, copy=False).reshape(param_view)
    else:
        out *= invstd
    if bias is not None:
        out += bias._data.astype(work, copy=False).reshape(param_view)
    result = _wrap(out.astype(d.np, copy=False), d, input)
    mean_t = _wrap(mean.astype(d.np, copy=False), d, input)
    invstd_t = _wrap(invstd.astype(d.np, copy=False), d, input)
    if needs_grad(input, weight, bias):
        param_axes = tuple(i for i in range(x.ndim) if param_view[i] == 1)
        record(node, (input, weight, bias), result, save=(input, weight),
               axes=axes, param_view=param_view, param_axes=param_axes, eps=eps,
               mean=mean_t, invstd=invstd_t,
               bias_shape=None if bias is None else bias.shape)
    return result, mean_t, invstd_t
