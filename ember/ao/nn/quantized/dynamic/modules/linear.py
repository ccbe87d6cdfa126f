"""``nn.quantized.dynamic.Linear``: int8 (or float16) weight, float input and output; the input
is quantized at run time with qparams from its own range (FBGEMM's, with ``reduce_range``)."""
import ember
from ember.ao.nn.quantized.modules import linear as nnq
from ember.ao.nn.quantized.modules.utils import _quantize_weight, _intrinsic
from ember.ops import quantized as _ops

__all__ = ["Linear"]


class Linear(nnq.Linear):
    """A linear layer with a quantized weight on float tensors: ``y = x W^T + b`` with ``x``
    quantized per call to quint8 (7 bits: ``reduce_range``, as torch's FBGEMM path)."""
    _version = 4

    def __init__(self, in_features, out_features, bias_=True, dtype=ember.qint8):
        super().__init__(in_features, out_features, bias_, dtype=dtype)
        # the pre-v4 path quantized the input with all 8 bits
        self.version = 4

    def forward(self, x):
        packed = self._packed_params._packed_params
        if self._packed_params.dtype is ember.qint8:
            if self.version is None or self.version < 4:
                return _ops.linear_dynamic(x, packed)
            return _ops.linear_dynamic(x, packed, reduce_range=True)
        if self._packed_params.dtype is ember.float16:
            return _ops.linear_dynamic_fp16(x, packed)
        raise RuntimeError("Unsupported dtype on dynamic quantized linear!")

    def _get_name(self):
        return "DynamicQuantizedLinear"

    def extra_repr(self):
        text = (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._packed_params.dtype}")
        if self._packed_params.dtype is ember.qint8:
            text += f", qscheme={self.weight().qscheme()}"
        return text

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.version = local_metadata.get("version", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The dynamic quantized module of a float Linear (or LinearReLU, or a QAT dynamic
        Linear) with a ``qconfig``: the weight quantized by ``qconfig.weight()`` (or the
        default dynamic qconfig's), int8 or float16 as the qconfig's activation dtype says."""
        float_modules = [m for m in (ember.nn.Linear, nnq._non_dynamically_quantizable(),
                                     _intrinsic("LinearReLU"),
                                     _intrinsic("Linear", "ember.ao.nn.qat.dynamic"))
                         if m is not None]
        if type(mod) not in float_modules:
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for one of"
                                 + str([m.__name__ for m in float_modules])
                                 + f", got {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        linear_relu = _intrinsic("LinearReLU")
        if linear_relu is not None and type(mod) is linear_relu:
            mod = mod[0]
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from ember.ao.quantization.qconfig import default_dynamic_qconfig
            weight_observer = default_dynamic_qconfig.weight()
        dtype = weight_observer.dtype
        if dtype not in (ember.qint8, ember.float16):
            raise AssertionError("The only supported dtypes for dynamic quantized linear are "
                                 f"qint8 and float16, got: {dtype}")
        weight_observer(mod.weight)
        if dtype is ember.qint8:
            qweight = _quantize_weight(mod.weight.float(), weight_observer)
        else:
            qweight = mod.weight.float()
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear

    @classmethod
    def from_reference(cls, ref_qlinear):
        """The dynamic quantized module of a reference quantized linear module."""
        qlinear = cls(ref_qlinear.in_features, ref_qlinear.out_features,
                      dtype=ref_qlinear.weight_dtype)
        qweight = ref_qlinear.get_quantized_weight()
        qlinear.set_weight_bias(qweight, ref_qlinear.bias)
        return qlinear
