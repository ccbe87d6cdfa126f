"""Activation functions, as ``torch.nn.functional``.

The common ones are single ops with their own backward (``ember/ops/activation.py``); the rest
are short compositions of differentiable ops. ``inplace=True`` writes the result into ``input``
through Ember's in-place machinery, so autograd's version checks apply as in PyTorch.
"""
import ember
from ...ops import activation as _ops
from ...ops.inplace import inplace as _inplace
from ...amp import autocast_mode as _autocast
from ..._quantized_tensor import QuantizedTensor, quantized_functional as _qF

__all__ = ["threshold", "threshold_", "relu", "relu_", "hardtanh", "hardtanh_", "hardswish",
           "relu6", "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu",
           "leaky_relu_", "prelu", "rrelu", "rrelu_", "glu", "gelu", "logsigmoid", "hardshrink",
           "tanhshrink", "softsign", "softplus", "softmin", "softmax", "log_softmax",
           "softshrink", "tanh", "sigmoid", "hardsigmoid", "silu", "mish", "gumbel_softmax"]


def _apply(op, input, inplace, *args):
    return _inplace(input, op, *args) if inplace else op(input, *args)


# The in-place forms call ops' own (which record torch's ...Backward1 nodes).
def threshold(input, threshold, value, inplace=False):
    if input.__class__ is QuantizedTensor:
        qF = _qF()
        return qF._result(input, qF.threshold(input, threshold, value), inplace)
    if inplace:
        return _ops.threshold_(input, threshold, value)
    return _ops.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _ops.threshold_(input, threshold, value)


def relu(input, inplace=False):
    if input.__class__ is QuantizedTensor:
        return input.relu_() if inplace else input.relu()
    return _apply(_ops.relu, input, inplace)


def relu_(input):
    return _inplace(input, _ops.relu)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if input.__class__ is QuantizedTensor:
        return _qF().hardtanh(input, min_val, max_val, inplace)
    return _apply(_ops.hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _inplace(input, _ops.hardtanh, min_val, max_val)


def relu6(input, inplace=False):
    if input.__class__ is QuantizedTensor:
        return _qF().hardtanh(input, 0.0, 6.0, inplace)
    return _apply(_ops.relu6, input, inplace)


def hardswish(input, inplace=False):
    return _apply(_ops.hardswish, input, inplace)


def hardsigmoid(input, inplace=False):
    if input.__class__ is QuantizedTensor:
        return _qF().hardsigmoid(input, inplace)
    return _apply(_ops.hardsigmoid, input, inplace)


def elu(input, alpha=1.0, inplace=False):
    return _ops.elu_(input, alpha) if inplace else _ops.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _ops.elu_(input, alpha)


def selu(input, inplace=False):
    return _ops.selu_(input) if inplace else _ops.selu(input)


def selu_(input):
    return _ops.selu_(input)


def celu(input, alpha=1.0, inplace=False):
    return _ops.celu_(input, alpha) if inplace else _ops.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _ops.celu_(input, alpha)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if input.__class__ is QuantizedTensor:
        return _qF().leaky_relu(input, negative_slope, inplace)
    if inplace:
        return _ops.leaky_relu_(input, negative_slope)
    return _ops.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _ops.leaky_relu_(input, negative_slope)


def silu(input, inplace=False):
    return _apply(_ops.silu, input, inplace)


def mish(input, inplace=False):
    return _apply(_ops.mish, input, inplace)


def gelu(input, approximate="none"):
    return _ops.gelu(input, approximate)


def logsigmoid(input):
    return _ops.logsigmoid(input)


def softplus(input, beta=1.0, threshold=20.0):
    if _autocast.active and _autocast.enabled_for(input, "softplus"):
        return _autocast.run(softplus, "softplus", input, beta, threshold)
    return _ops.softplus(input, beta, threshold)


def prelu(input, weight):
    if _autocast.active and _autocast.enabled_for(input, "prelu"):
        return _autocast.run(prelu, "prelu", input, weight)
    return _ops.prelu(input, weight)


def _rrelu(input, lower, upper, training):
    # an integer input reaches the kernel's dtype error before any noise is drawn
    if not training or not input.is_floating_point():
        return _ops.rrelu_with_noise(input, (lower + upper) / 2, training)
    slopes = ember.empty_like(input).uniform_(lower, upper)
    return _ops.rrelu_with_noise(input, slopes._data, True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _apply(_rrelu, input, inplace, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _inplace(input, _rrelu, lower, upper, training)


def glu(input, dim=-1):
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.ndim if dim < 0 else dim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    return _ops.glu(input, d)


def hardshrink(input, lambd=0.5):
    return _ops.hardshrink(input, lambd)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype "
                           f"{ember.ops._dispatch.dtype_name(input.dtype)}, but found {lambd:g}")
    return _ops.softshrink(input, lambd)


def tanhshrink(input):
    return input - input.tanh()


def softsign(input):
    return input / (input.abs() + 1)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return ember.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return ember.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return ember.softmax(-input, dim)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    gumbels = -ember.empty_like(logits).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = ember.zeros_like(logits).scatter_(dim, index, 1.0)
    # Straight-through: the hard sample forward, the soft sample's gradient backward.
    return one_hot - soft.detach() + soft
