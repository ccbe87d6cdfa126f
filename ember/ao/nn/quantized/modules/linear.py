"""``nn.quantized.Linear``: int8 weight, quint8 input and output, as torch's (FBGEMM)."""
import ember
from ember.nn.modules.module import Module
from ember.nn.modules.linear import Linear as _FloatLinear
from ember.ops import quantized as _ops
from .utils import (WeightedQuantizedModule, _quantize_weight, _hide_packed_params_repr,
                    _float_module_type, _intrinsic)

__all__ = ["LinearPackedParams", "Linear"]


def _non_dynamically_quantizable():
    from ember.nn.modules import linear
    return getattr(linear, "NonDynamicallyQuantizableLinear", None)


class LinearPackedParams(Module):
    """Holds a quantized linear layer's packed weight and bias (``_packed_params``); in a
    state_dict they are the tuple ``(weight, bias)`` under ``_packed_params``, with ``dtype``."""
    _version = 3

    def __init__(self, dtype=ember.qint8):
        super().__init__()
        self.dtype = dtype
        if dtype is ember.qint8:
            weight = ember._make_per_tensor_quantized_tensor(
                ember.zeros(1, 1, dtype=ember.int8), 1.0, 0)
        elif dtype is ember.float16:
            weight = ember.zeros(1, 1, dtype=ember.float)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        self.set_weight_bias(weight, None)

    def set_weight_bias(self, weight, bias):
        if self.dtype is ember.qint8:
            self._packed_params = _ops.linear_prepack(weight, bias)
        elif self.dtype is ember.float16:
            self._packed_params = _ops.linear_prepack_fp16(weight, bias)
        else:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")

    def _weight_bias(self):
        return self._packed_params.unpack()

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            self.dtype = ember.qint8
        else:
            self.dtype = state_dict.pop(prefix + "dtype")
        if version is None or version < 3:
            self.set_weight_bias(state_dict.pop(prefix + "weight"),
                                 state_dict.pop(prefix + "bias"))
        if version == 3:
            weight, bias = state_dict.pop(prefix + "_packed_params")
            self.set_weight_bias(weight, bias)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self):
        return repr(self._weight_bias())


class Linear(WeightedQuantizedModule):
    """A linear layer on quantized tensors: ``y = x W^T + b`` for a quint8 ``x``, with the
    output quantized to ``scale``/``zero_point`` (set by ``from_float`` from the observer)."""
    _version = 3
    _FLOAT_MODULE = (_FloatLinear,)

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = ember.zeros(out_features, dtype=ember.float) if bias_ else None
        if dtype is ember.qint8:
            weight = ember._make_per_tensor_quantized_tensor(
                ember.zeros(out_features, in_features, dtype=ember.int8), 1.0, 0)
        elif dtype is ember.float16:
            weight = ember.zeros(out_features, in_features, dtype=ember.float)
        else:
            raise RuntimeError("Unsupported dtype specified for quantized Linear!")
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(weight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self):
        return "QuantizedLinear"

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"qscheme={self.weight().qscheme()}")

    def __repr__(self):
        return _hide_packed_params_repr(self, LinearPackedParams)

    def forward(self, x):
        return _ops.linear(x, self._packed_params._packed_params, self.scale, self.zero_point)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = ember.tensor(self.scale)
        destination[prefix + "zero_point"] = ember.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        version = local_metadata.get("version", None)
        if version is None or version == 1:
            state_dict[prefix + "_packed_params.weight"] = state_dict.pop(prefix + "weight")
            state_dict[prefix + "_packed_params.bias"] = state_dict.pop(prefix + "bias")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def _weight_bias(self):
        return self._packed_params._weight_bias()

    def weight(self):
        return self._weight_bias()[0]

    def bias(self):
        return self._weight_bias()[1]

    def set_weight_bias(self, w, b):
        self._packed_params.set_weight_bias(w, b)

    @classmethod
    def _float_modules(cls):
        extra = [_non_dynamically_quantizable()]
        return tuple(m for m in (*cls._FLOAT_MODULE, *extra) if m is not None)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized module of an observed float module (prepared by
        ``ember.ao.quantization``): weight quantized by its qconfig's weight observer (or the
        QAT module's ``weight_fake_quant``), output qparams from ``activation_post_process``."""
        if hasattr(mod, "weight_fake_quant"):
            linear_bn = _intrinsic("LinearBn1d", "ember.ao.nn.intrinsic.qat")
            if linear_bn is not None and _float_module_type(mod) is linear_bn:
                from ember.nn.utils.fusion import fuse_linear_bn_weights
                mod.weight, mod.bias = fuse_linear_bn_weights(
                    mod.weight, mod.bias, mod.bn.running_mean, mod.bn.running_var, mod.bn.eps,
                    mod.bn.weight, mod.bn.bias)
            weight_post_process = mod.weight_fake_quant
            activation_post_process = mod.activation_post_process
        else:
            supported = cls._float_modules()
            if _float_module_type(mod) not in supported:
                names = ", ".join(m.__name__ for m in supported)
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {names}, "
                                     f"but got: {type(mod)}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined")
            activation_post_process = mod.activation_post_process
            linear_relu = _intrinsic("LinearReLU")
            if linear_relu is not None and _float_module_type(mod) is linear_relu:
                mod = mod[0]
            weight_post_process = mod.qconfig.weight()
        if not use_precomputed_fake_quant:
            weight_post_process(mod.weight)
        dtype = weight_post_process.dtype
        act_scale, act_zp = activation_post_process.calculate_qparams()
        if dtype is not ember.qint8:
            raise AssertionError(f"Weight observer must have dtype ember.qint8, got {dtype}")
        qweight = _quantize_weight(mod.weight.float(), weight_post_process)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        qlinear.scale = float(act_scale)
        qlinear.zero_point = int(act_zp)
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear, output_scale, output_zero_point):
        """The quantized module of a reference quantized linear module."""
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features)
        qlinear.set_weight_bias(ref_qlinear.get_quantized_weight(), ref_qlinear.bias)
        qlinear.scale = float(output_scale)
        qlinear.zero_point = int(output_zero_point)
        return qlinear
