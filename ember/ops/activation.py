"""Point-wise activation functions with their own backward nodes.

These run in every layer of every network, so each is one array expression forward and one
node backward instead of a chain of generic ops. The backward formulas are Ember ops, so they
are differentiable again. Inputs that would overflow an unselected branch (``exp`` of a large
positive number in ``elu``) are clamped first: a ``where`` gradient of ``0 * inf`` is NaN.
"""
import math

from .. import _dtype as dt
from ._dispatch import (Node, needs_grad, record, _wrap, dtype_name, keep_or_zero,
                        checked_int_scalar)
from .elementwise import _sigmoid, where
from .creation import zeros_like
from .shape import cat
from .inplace import inplace

# Only the ones PyTorch also exposes as ``torch.<name>``; nn.functional imports the rest.
__all__ = ["relu", "relu_", "threshold", "threshold_", "selu", "selu_", "celu", "celu_"]
# hardshrink and prelu: Tensor methods only; torch.hardshrink and torch.prelu are the ATen
# forms (_functional_exports.py).
METHODS = ["relu", "hardshrink", "prelu"]
INPLACE = ["relu"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float_input(input, kernel):
    """``input``'s array in the precision it is computed in (float32 for half types)."""
    d = input._dtype
    if d._kind < 2:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_name(d)}'")
    x = input._data
    return x.astype(dt.float32.np) if d._rank == 0 else x


def _result(input, data):
    d = input._dtype
    return _wrap(data if data.dtype == d.np else data.astype(d.np), d, input)


def _zero_where(mask, grad):
    # Exactly zero where masked, even for a NaN or infinite ``grad`` (``grad * mask`` would
    # give NaN there), as PyTorch's backward kernels do.
    return where(mask, 0.0, grad)


# ---- relu / threshold / hardtanh --------------------------------------------------------------

class ReluBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (y,) = self.saved_tensors
        return _relu_grad(grad, y)


class ThresholdBackwardBackward0(Node):
    """Double backward of relu. The mask is piecewise constant in the result, so the result's
    gradient is zero — but it exists, as in PyTorch: the gradient of relu's gradient with
    respect to the input is a zero tensor, not "does not require grad"."""
    __slots__ = ()

    def backward(self, grad):
        (y,) = self.saved_tensors
        return where(y > 0, grad, 0.0), zeros_like(y)


def _relu_grad(grad, y):
    res = _wrap(keep_or_zero(y._backend.xp, y._data > 0, grad._data), grad._dtype, grad)
    if needs_grad(grad, y):  # only under create_graph: backward runs with grad mode off
        record(ThresholdBackwardBackward0, (grad, y), res, save=(y,))
    return res


def relu(input):
    if input._dtype._kind != 2:  # not floating: bool refused, a quantized dtype's own kernel
        if input._dtype is dt.bool:
            raise RuntimeError("Boolean inputs not supported for relu")
        if input._dtype._kind == 4:
            return input.relu()
    x = input._data
    res = _wrap(input._backend.xp.maximum(x, x.dtype.type(0)), input._dtype, input)
    if needs_grad(input):
        record(ReluBackward0, (input,), res, save_out=True)
    return res


class ThresholdBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return _zero_where(x <= self.threshold, grad)


class ThresholdBackward1(ThresholdBackward0):
    """``threshold_``'s node: the same mask, on the copy of the input taken before the write."""
    __slots__ = ()


def threshold(input, threshold, value, node=ThresholdBackward0):
    if input._dtype is dt.bool:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    if input._dtype._kind == 1:
        # PyTorch's kernel takes both numbers in the input's integer type: truncated, and an
        # error if out of its range (-0.5 for uint8)
        threshold = checked_int_scalar(threshold, input._dtype)
        value = checked_int_scalar(value, input._dtype)
    xp = input._backend.xp
    x = input._data
    data = xp.where(x > threshold, x, xp.asarray(value, dtype=x.dtype))
    res = _wrap(data, input._dtype, input)
    if needs_grad(input):
        record(node, (input,), res, save=(input,), threshold=threshold)
    return res


class HardtanhBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return _zero_where((x <= self.min_val) | (x >= self.max_val), grad)


def hardtanh(input, min_val=-1.0, max_val=1.0):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input._dtype is dt.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    low, high = min_val, max_val
    if input._dtype._kind == 1:
        # PyTorch truncates the limits to integers, then clamps by them (so a limit outside
        # the input's range is an overflow error, and -0.5 is 0 for uint8)
        low, high = checked_int_scalar(min_val, dt.int64), checked_int_scalar(max_val, dt.int64)
        if input._dtype is dt.uint8 and (low < 0 or high < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        low, high = checked_int_scalar(low, input._dtype), checked_int_scalar(high, input._dtype)
    data = input._backend.xp.clip(input._data, low, high).astype(input._dtype.np, copy=False)
    res = _wrap(data, input._dtype, input)
    if needs_grad(input):
        record(HardtanhBackward0, (input,), res, save=(input,), min_val=min_val, max_val=max_val)
    return res


def relu6(input):
    return hardtanh(input, 0.0, 6.0)


class LeakyReluBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return where(x > 0, grad, grad * self.negative_slope)


class LeakyReluBackward1(Node):
    """The in-place form's node, which saves the result: with a non-negative slope it is
    positive exactly where the input was."""
    __slots__ = ()

    def backward(self, grad):
        if self.negative_slope < 0:
            raise RuntimeError(
                "In-place leakyReLu backward calculation is triggered with a negative slope "
                "which is not supported. This is caused by calling in-place forward function "
                "with a negative slope, please call out-of-place version instead. File an issue "
                "at https://github.com/pytorch/pytorch if you do require supporting in-place "
                "leakRelu backward calculation with negative slope")
        (y,) = self.saved_tensors
        return where(y > 0, grad, grad * self.negative_slope)

    def jvp(self, t):
        if self.negative_slope < 0:  # the result's sign no longer tells the input's
            return NotImplemented  # (the fallback raises the backward's error)
        (y,) = self.saved_tensors
        return where(y > 0, t, t * self.negative_slope)


def leaky_relu(input, negative_slope=0.01, node=LeakyReluBackward0):
    x = _float_input(input, "leaky_relu_cpu")
    data = input._backend.xp.where(x > 0, x, x * negative_slope)
    res = _result(input, data)
    if needs_grad(input):
        saved = {"save_out": True} if node is LeakyReluBackward1 else {"save": (input,)}
        record(node, (input,), res, negative_slope=negative_slope, **saved)
    return res


# ---- exponential family -------------------------------------------------------------------------

class EluBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        negative = (x.clamp(max=0) * self.input_scale).exp() * (self.alpha * self.scale
                                                                 * self.input_scale)
        return grad * where(x > 0, self.scale, negative)


class CeluBackward0(EluBackward0):
    __slots__ = ()


class EluBackward1(Node):
    """The in-place forms' node, which saves the result (the input is overwritten): where it
    is negative, ``result + alpha * scale`` is ``alpha * scale * exp(input * input_scale)``."""
    __slots__ = ()

    def backward(self, grad):
        if self.alpha < 0:  # the result's sign no longer tells the input's
            raise RuntimeError(
                "In-place elu backward calculation is triggered with a negative slope which is "
                "not supported. This is caused by calling in-place forward function with a "
                "negative slope, please call out-of-place version instead.")
        (y,) = self.saved_tensors
        return grad * where(y > 0, self.scale, (y + self.alpha * self.scale) * self.input_scale)

    def jvp(self, t):
        if self.alpha < 0:
            return NotImplemented
        (y,) = self.saved_tensors
        return t * where(y > 0, self.scale, (y + self.alpha * self.scale) * self.input_scale)


class CeluBackward1(EluBackward1):
    __slots__ = ()


def _elu(input, alpha, scale, input_scale, node):
    x = _float_input(input, "elu_cpu")
    xp = input._backend.xp
    negative = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
    res = _result(input, xp.where(x > 0, x * scale, negative))
    if needs_grad(input):
        saved = {"save_out": True} if issubclass(node, EluBackward1) else {"save": (input,)}
        record(node, (input,), res, alpha=alpha, scale=scale, input_scale=input_scale, **saved)
    return res


def elu(input, alpha=1.0, scale=1.0, input_scale=1.0):
    return _elu(input, alpha, scale, input_scale, EluBackward0)


def selu(input):
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0, EluBackward0)


def celu(input, alpha=1.0, node=CeluBackward0):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _elu(input, alpha, 1.0, 1.0 / alpha, node)


# ---- shrinkage, gated and parametric units ------------------------------------------------------

class HardshrinkBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return _zero_where(x.abs() <= self.lambd, grad)


def hardshrink(input, lambd=0.5):
    if input._dtype._kind < 2:
        raise NotImplementedError(f"\"hardshrink_cpu\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    x = input._data
    res = _wrap(input._backend.xp.where(abs(x) <= lambd, 0, x).astype(x.dtype, copy=False),
                input._dtype, input)
    if needs_grad(input):
        record(HardshrinkBackward0, (input,), res, save=(input,), lambd=lambd)
    return res


class SoftshrinkBackward0(HardshrinkBackward0):
    __slots__ = ()


def softshrink(input, lambd=0.5):
    if input._dtype._kind < 2:
        raise NotImplementedError(f"\"softshrink_check\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    x = input._data
    res = _wrap(x - input._backend.xp.clip(x, -lambd, lambd), input._dtype, input)
    if needs_grad(input):
        record(SoftshrinkBackward0, (input,), res, save=(input,), lambd=lambd)
    return res


class GluBackward0(Node):
    """``a * sigmoid(b)`` for the two halves ``a, b`` of the input along ``dim``."""
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        a, b = x.chunk(2, self.dim)
        gate = b.sigmoid()
        g_a = grad * gate
        return (cat([g_a, g_a * a * (1 - gate)], self.dim),)

    def jvp(self, t):
        (x,) = self.saved_tensors
        a, b = x.chunk(2, self.dim)
        ta, tb = t.chunk(2, self.dim)
        gate = b.sigmoid()
        return gate * (ta + a * (1 - gate) * tb)


def glu(input, dim):
    """``dim`` is non-negative and splits ``input`` into two equal halves."""
    x = _float_input(input, "glu")
    half = x.shape[dim] // 2
    xp = input._backend.xp
    a, b = xp.split(x, [half], axis=dim)
    res = _result(input, a * _sigmoid(xp, b))
    if needs_grad(input):
        record(GluBackward0, (input,), res, save=(input,), dim=dim)
    return res


class PreluKernelBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        x, weight = self.saved_tensors
        positive = x > 0
        g_x = where(positive, grad, grad * weight) if self._edges[0] is not None else None
        g_w = (where(positive, zeros_like(grad), grad * x) if self._edges[1] is not None
               else None)
        return g_x, g_w

    def jvp(self, t_x, t_w):
        x, weight = self.saved_tensors
        positive = x > 0
        out = where(positive, t_x, t_x * weight) if t_x is not None else None
        if t_w is not None:
            term = where(positive, zeros_like(x), t_w * x)
            out = term if out is None else out + term
        return out


def prelu_kernel(input, weight):
    """``input`` where positive, ``input * weight`` elsewhere (``weight`` broadcasts)."""
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{dtype_name(input._dtype)} and {dtype_name(weight._dtype)}")
    if input._dtype._kind < 2:
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    x, w = input._data, weight._data
    res = _wrap(input._backend.xp.where(x > 0, x, x * w), input._dtype, input)
    if needs_grad(input, weight):
        record(PreluKernelBackward0, (input, weight), res, save=(input, weight))
    return res


def prelu(input, weight):
    """``nn.functional.prelu`` (and ``Tensor.prelu``): ``weight`` has one entry or one per
    channel (dim 1; a vector input has a single channel) and is viewed to broadcast there."""
    if input.ndim > 0:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if weight.numel() != 1 and weight.numel() != channels:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = "
                               f"{channels}.")
        shape = [1] * input.ndim
        if input.ndim > 1:
            shape[1] = weight.numel()
        weight = weight.reshape(shape)
    return prelu_kernel(input, weight)


class RreluWithNoiseBackward0(Node):
    """The gradient is the per-element slope the forward applied."""
    __slots__ = ()

    def backward(self, grad):
        (slopes,) = self.saved_tensors
        return (grad * slopes,)

    def jvp(self, t):
        return t * self.saved_tensors[0]


def rrelu_with_noise(input, negative_slopes, training):
    """``input`` times a slope: 1 where positive (or zero, when training), else the matching
    element of ``negative_slopes`` (an array broadcasting against the input)."""
    if input._dtype._kind < 2:  # eval mode is PyTorch's leaky_relu kernel
        kernel = "rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{dtype_name(input._dtype)}'")
    xp = input._backend.xp
    x = input._data
    positive = x >= 0 if training else x > 0
    slopes = _wrap(xp.where(positive, 1, negative_slopes).astype(x.dtype, copy=False),
                   input._dtype, input)
    res = _wrap(x * slopes._data, input._dtype, input)
    if needs_grad(input):
        record(RreluWithNoiseBackward0, (input,), res, save=(slopes,))
    return res


class SoftplusBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        scaled = x * self.beta
        return where(scaled > self.threshold, grad, grad * scaled.sigmoid())


def softplus(input, beta=1.0, threshold=20.0):
    x = _float_input(input, "softplus_cpu")
    xp = input._backend.xp
    scaled = x * beta
    # log1p(exp(z)) overflows for large z; above ``threshold`` softplus is the identity anyway.
    smooth = xp.log1p(xp.exp(xp.minimum(scaled, threshold))) / beta
    res = _result(input, xp.where(scaled > threshold, x, smooth))
    if needs_grad(input):
        record(SoftplusBackward0, (input,), res, save=(input,), beta=beta, threshold=threshold)
    return res


class LogSigmoidBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return grad * (-x).sigmoid()


def logsigmoid(input):
    x = _float_input(input, "log_sigmoid_cpu")
    xp = input._backend.xp
    # log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), finite for every x.
    res = _result(input, xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))))
    if needs_grad(input):
        record(LogSigmoidBackward0, (input,), res, save=(input,))
    return res


# ---- smooth gates ---------------------------------------------------------------------------

class GeluBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        if self.approximate == "tanh":
            inner = (x + x * x * x * _GELU_CUBIC) * _SQRT_2_OVER_PI
            t = inner.tanh()
            d_inner = (x * x * (3 * _GELU_CUBIC) + 1) * _SQRT_2_OVER_PI
            return grad * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * d_inner)
        cdf = ((x * _SQRT_HALF).erf() + 1) * 0.5
        pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
        return grad * (cdf + x * pdf)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    x = _float_input(input, "GeluKernelImpl")
    backend = input._backend
    xp = backend.xp
    if approximate == "tanh":
        data = x * 0.5 * (1 + xp.tanh((x + _GELU_CUBIC * x * x * x) * _SQRT_2_OVER_PI))
    else:
        data = x * 0.5 * (1 + backend.erf(x * _SQRT_HALF))
    res = _result(input, data)
    if needs_grad(input):
        record(GeluBackward0, (input,), res, save=(input,), approximate=approximate)
    return res


class SiluBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        s = x.sigmoid()
        return grad * s * (x * (1 - s) + 1)


def silu(input):
    x = _float_input(input, "silu_cpu")
    res = _result(input, x * _sigmoid(input._backend.xp, x))
    if needs_grad(input):
        record(SiluBackward0, (input,), res, save=(input,))
    return res


class MishBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        t = softplus(x).tanh()
        return grad * (t + x * x.sigmoid() * (1 - t * t))


def mish(input):
    x = _float_input(input, "mish_cpu")
    xp = input._backend.xp
    softplus_x = xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))
    res = _result(input, x * xp.tanh(softplus_x))
    if needs_grad(input):
        record(MishBackward0, (input,), res, save=(input,))
    return res


class HardsigmoidBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        return _zero_where((x <= -3) | (x >= 3), grad / 6)


def hardsigmoid(input):
    x = _float_input(input, "hardsigmoid_cpu")
    res = _result(input, input._backend.xp.clip(x / 6 + 0.5, 0, 1))
    if needs_grad(input):
        record(HardsigmoidBackward0, (input,), res, save=(input,))
    return res


class HardswishBackward0(Node):
    __slots__ = ()

    def backward(self, grad):
        (x,) = self.saved_tensors
        middle = grad * (x / 3 + 0.5)
        return _zero_where(x < -3, where(x <= 3, middle, grad))


def hardswish(input):
    x = _float_input(input, "hardswish_cpu")
    res = _result(input, x * input._backend.xp.clip(x + 3, 0, 6) / 6)
    if needs_grad(input):
        record(HardswishBackward0, (input,), res, save=(input,))
    return res


def relu_(input):
    return inplace(input, relu)


# PyTorch's in-place forms record their own nodes (``...Backward1``).
def threshold_(input, threshold_value, value):
    return inplace(input, threshold, threshold_value, value, node=ThresholdBackward1)


def selu_(input):
    return inplace(input, _elu, _SELU_ALPHA, _SELU_SCALE, 1.0, EluBackward1)


def elu_(input, alpha=1.0):
    return inplace(input, _elu, alpha, 1.0, 1.0, EluBackward1)


def leaky_relu_(input, negative_slope=0.01):
    return inplace(input, leaky_relu, negative_slope, node=LeakyReluBackward1)


def celu_(input, alpha=1.0):
    return inplace(input, celu, alpha, node=CeluBackward1)


# One-input element-wise activations: a diagonal Jacobian, so the backward applied to the
# tangent is the forward derivative (ember/autograd/forward_ad.py: elementwise_jvp).
def _forward_derivatives():
    from ..autograd.forward_ad import elementwise_jvp
    for cls in (ReluBackward0, ThresholdBackward0, HardtanhBackward0, LeakyReluBackward0, EluBackward0, HardshrinkBackward0, SoftplusBackward0, LogSigmoidBackward0, GeluBackward0, SiluBackward0, MishBackward0, HardsigmoidBackward0, HardswishBackward0):
        cls.jvp = elementwise_jvp


_forward_derivatives()
