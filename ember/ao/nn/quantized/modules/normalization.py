"""Quantized normalisations: the float normalisation of the dequantized input, requantized
to the output qparams, as torch's kernels compute them."""
import ember
from ember.ops import quantized as _ops

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


def _via(module, input, fn):
    def on_array(x):
        from ember._tensor import _wrap
        out = fn(_wrap(x, ember.float32, input))
        return out._data
    return _ops.via_float(input, on_array, float(module.scale), int(module.zero_point))


class LayerNorm(ember.nn.LayerNorm):
    """LayerNorm on a quantized tensor, the result quantized to ``scale``/``zero_point``."""

    def __init__(self, normalized_shape, weight, bias, scale, zero_point, eps=1e-5,
                 elementwise_affine=True, device=None, dtype=None):
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)
        self.weight, self.bias = weight, bias
        self.register_buffer("scale", ember.tensor(scale))
        self.register_buffer("zero_point", ember.tensor(zero_point))

    def forward(self, input):
        return _via(self, input, lambda x: ember.nn.functional.layer_norm(
            x, self.normalized_shape, self.weight, self.bias, self.eps))

    def _get_name(self):
        return "QuantizedLayerNorm"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return cls(mod.normalized_shape, mod.weight, mod.bias, float(scale), int(zero_point),
                   mod.eps, mod.elementwise_affine)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.normalized_shape, mod.weight, mod.bias, float(scale), int(zero_point),
                   mod.eps, mod.elementwise_affine)


class GroupNorm(ember.nn.GroupNorm):
    """GroupNorm on a quantized tensor, the result quantized to ``scale``/``zero_point``."""

    def __init__(self, num_groups, num_channels, weight, bias, scale, zero_point, eps=1e-5,
                 affine=True, device=None, dtype=None):
        super().__init__(num_groups, num_channels, eps, affine)
        self.weight, self.bias = weight, bias
        self.register_buffer("scale", ember.tensor(scale))
        self.register_buffer("zero_point", ember.tensor(zero_point))

    def forward(self, input):
        return _via(self, input, lambda x: ember.nn.functional.group_norm(
            x, self.num_groups, self.weight, self.bias, self.eps))

    def _get_name(self):
        return "QuantizedGroupNorm"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return cls(mod.num_groups, mod.num_channels, mod.weight, mod.bias, float(scale),
                   int(zero_point), mod.eps, mod.affine)


def _instance_norm(base, name):
    class InstanceNorm(base):
        __doc__ = f"{base.__name__} on a quantized tensor, the result quantized to " \
                  "``scale``/``zero_point``."

        def __init__(self, num_features, weight, bias, scale, zero_point, eps=1e-5,
                     momentum=0.1, affine=False, track_running_stats=False, device=None,
                     dtype=None):
            super().__init__(num_features, eps, momentum, affine, track_running_stats)
            self.weight, self.bias = weight, bias
            self.register_buffer("scale", ember.tensor(scale))
            self.register_buffer("zero_point", ember.tensor(zero_point))

        def forward(self, input):
            return _via(self, input, lambda x: ember.nn.functional.instance_norm(
                x, weight=self.weight, bias=self.bias, eps=self.eps))

        def _get_name(self):
            return "Quantized" + base.__name__

        @classmethod
        def from_float(cls, mod, use_precomputed_fake_quant=False):
            scale, zero_point = mod.activation_post_process.calculate_qparams()
            return cls(mod.num_features, mod.weight, mod.bias, float(scale), int(zero_point),
                       mod.eps, mod.affine)
    InstanceNorm.__name__ = InstanceNorm.__qualname__ = name
    return InstanceNorm


InstanceNorm1d = _instance_norm(ember.nn.InstanceNorm1d, "InstanceNorm1d")
InstanceNorm2d = _instance_norm(ember.nn.InstanceNorm2d, "InstanceNorm2d")
InstanceNorm3d = _instance_norm(ember.nn.InstanceNorm3d, "InstanceNorm3d")
