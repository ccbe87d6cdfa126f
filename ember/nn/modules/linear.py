"""``Identity``, ``Linear``, ``Bilinear`` and ``LazyLinear``, as ``torch.nn``, with PyTorch's
default initialisation (Kaiming-uniform with ``a=sqrt(5)``, i.e. U(-1/sqrt(fan_in),
1/sqrt(fan_in)) for the weight, and the same bound for the bias)."""
import math

from ... import ops as _ops
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, UninitializedParameter
from .. import functional as F
from .. import init
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


def _register_bias(module, bias, shape, device, dtype):
    """A ``bias`` parameter of ``shape`` when ``bias`` is true, else ``bias`` registered as
    None, so that ``module.bias`` exists either way as in PyTorch."""
    if bias:
        module.bias = Parameter(_ops.empty(shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``, over the last dimension of ``x``.

    ``weight`` is ``(out_features, in_features)`` and both it and ``bias`` start uniform in
    ``±1/sqrt(in_features)``, as in PyTorch, so a PyTorch ``state_dict`` loads unchanged.

    >>> import ember
    >>> layer = ember.nn.Linear(4, 2)
    >>> layer
    Linear(in_features=4, out_features=2, bias=True)
    >>> layer(ember.ones(3, 4)).shape
    ember.Size([3, 2])
    >>> list(layer.state_dict())
    ['weight', 'bias']
    """
    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_ops.empty((out_features, in_features), device=device,
                                           dtype=dtype))
        _register_bias(self, bias, out_features, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        init._layer_default_init_(self.weight, self.bias, zero_bias_without_fan_in=True)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the class name PyTorch gives MultiheadAttention's output projection."""


class Bilinear(Module):
    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_ops.empty((out_features, in1_features, in2_features),
                                           device=device, dtype=dtype))
        _register_bias(self, bias, out_features, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is read from the last dimension of its first input."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        # Linear builds a 0-input weight that is replaced by placeholders right away.
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
