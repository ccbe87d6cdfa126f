"""QConfigMapping: which QConfig each part of a model gets in FX graph mode quantization.

Mirrors ``torch.ao.quantization.qconfig_mapping``. Lookup order, lowest priority first:
the global qconfig, an object type (a module class, a function such as ``F.relu``, or a
method name such as ``"reshape"``), a module-name regex, a module name, then a
(module name, object type, index) triple.
"""
from collections import OrderedDict

from ... import nn
from ...nn import functional as F
from .fake_quantize import FixedQParamsFakeQuantize, default_weight_fake_quant
from .observer import (default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer,
                       default_placeholder_observer, default_weight_observer)
from .qconfig import (QConfig, default_quint8_weight_qconfig, default_reuse_input_qconfig,
                      get_default_qat_qconfig, get_default_qconfig)
import ember

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]

_GLOBAL_DICT_KEY = ""
_OBJECT_TYPE_DICT_KEY = "object_type"
_MODULE_NAME_REGEX_DICT_KEY = "module_name_regex"
_MODULE_NAME_DICT_KEY = "module_name"
_MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY = "module_name_object_type_order"

# ops whose output range is known get fixed qparams (a sigmoid lies in [0, 1])
_FIXED_QPARAMS_OP_TO_OBSERVER = {
    nn.Hardsigmoid: default_fixed_qparams_range_0to1_observer,
    F.hardsigmoid: default_fixed_qparams_range_0to1_observer,
    "hardsigmoid": default_fixed_qparams_range_0to1_observer,
    "hardsigmoid_": default_fixed_qparams_range_0to1_observer,
    nn.Sigmoid: default_fixed_qparams_range_0to1_observer,
    ember.sigmoid: default_fixed_qparams_range_0to1_observer,
    "sigmoid": default_fixed_qparams_range_0to1_observer,
    "sigmoid_": default_fixed_qparams_range_0to1_observer,
    nn.Softmax: default_fixed_qparams_range_0to1_observer,
    nn.Tanh: default_fixed_qparams_range_neg1to1_observer,
    ember.tanh: default_fixed_qparams_range_neg1to1_observer,
    "tanh": default_fixed_qparams_range_neg1to1_observer,
    "tanh_": default_fixed_qparams_range_neg1to1_observer,
}


class QConfigMapping:
    """A model's QConfigs by global default, object type, module name regex, module name and
    (module name, object type, index). Setters return ``self`` so they chain."""

    def __init__(self):
        self.global_qconfig = None
        self.object_type_qconfigs = OrderedDict()
        self.module_name_regex_qconfigs = OrderedDict()
        self.module_name_qconfigs = OrderedDict()
        self.module_name_object_type_order_qconfigs = OrderedDict()

    def set_global(self, global_qconfig):
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type, qconfig):
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name_regex(self, module_name_regex, qconfig):
        """Regexes are tried in the order they were first set."""
        self.module_name_regex_qconfigs[module_name_regex] = qconfig
        return self

    def set_module_name(self, module_name, qconfig):
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def set_module_name_object_type_order(self, module_name, object_type, index, qconfig):
        """The ``index``-th call of ``object_type`` inside module ``module_name``."""
        self.module_name_object_type_order_qconfigs[(module_name, object_type, index)] = qconfig
        return self

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for style, entries in (
                ("global_qconfig", None), ("object_type_qconfigs", self.object_type_qconfigs),
                ("module_name_regex_qconfigs", self.module_name_regex_qconfigs),
                ("module_name_qconfigs", self.module_name_qconfigs),
                ("module_name_object_type_order_qconfigs",
                 self.module_name_object_type_order_qconfigs)):
            lines.append(f" {style}")
            if entries is None:
                lines.append(f"  {self.global_qconfig}")
            else:
                lines.extend(f"  {k}: {v}" for k, v in entries.items())
        return "\n".join(lines) + "\n)"

    def to_dict(self):
        """The legacy ``qconfig_dict`` form: ``{"": global, "object_type": [(type, qconfig)],
        ...}``."""
        return {
            _GLOBAL_DICT_KEY: self.global_qconfig,
            _OBJECT_TYPE_DICT_KEY: list(self.object_type_qconfigs.items()),
            _MODULE_NAME_REGEX_DICT_KEY: list(self.module_name_regex_qconfigs.items()),
            _MODULE_NAME_DICT_KEY: list(self.module_name_qconfigs.items()),
            _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY: [
                (*k, v) for k, v in self.module_name_object_type_order_qconfigs.items()],
        }

    @classmethod
    def from_dict(cls, qconfig_dict):
        """The mapping of a legacy ``qconfig_dict``."""
        conf = cls()
        if _GLOBAL_DICT_KEY in qconfig_dict:
            conf.set_global(qconfig_dict[_GLOBAL_DICT_KEY])
        for object_type, qconfig in qconfig_dict.get(_OBJECT_TYPE_DICT_KEY, []):
            conf.set_object_type(object_type, qconfig)
        for regex, qconfig in qconfig_dict.get(_MODULE_NAME_REGEX_DICT_KEY, []):
            conf.set_module_name_regex(regex, qconfig)
        for name, qconfig in qconfig_dict.get(_MODULE_NAME_DICT_KEY, []):
            conf.set_module_name(name, qconfig)
        for name, object_type, index, qconfig in qconfig_dict.get(
                _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY, []):
            conf.set_module_name_object_type_order(name, object_type, index, qconfig)
        return conf


def _get_default_qconfig_mapping(is_qat, backend, version):
    qconfig = (get_default_qat_qconfig(backend, version) if is_qat
               else get_default_qconfig(backend, version))
    default_weight = default_weight_fake_quant if is_qat else default_weight_observer
    # x86/fbgemm transposed convolutions have no per-channel weight kernel
    qconfig_transpose = (QConfig(activation=qconfig.activation, weight=default_weight)
                         if backend in ("fbgemm", "x86") else qconfig)
    qconfig_layernorm = QConfig(activation=qconfig.activation,
                                weight=default_placeholder_observer)
    mapping = (QConfigMapping()
               .set_global(qconfig)
               .set_object_type("reshape", default_reuse_input_qconfig)
               .set_object_type(nn.ConvTranspose1d, qconfig_transpose)
               .set_object_type(nn.ConvTranspose2d, qconfig_transpose)
               .set_object_type(nn.ConvTranspose3d, qconfig_transpose)
               .set_object_type(F.conv_transpose1d, qconfig_transpose)
               .set_object_type(F.conv_transpose2d, qconfig_transpose)
               .set_object_type(F.conv_transpose3d, qconfig_transpose)
               .set_object_type(F.layer_norm, qconfig_layernorm)
               .set_object_type(nn.LayerNorm, qconfig_layernorm)
               .set_object_type(nn.PReLU, default_quint8_weight_qconfig))
    by_observer = {}
    for op, observer in _FIXED_QPARAMS_OP_TO_OBSERVER.items():
        if observer not in by_observer:
            activation = (FixedQParamsFakeQuantize.with_args(observer=observer) if is_qat
                          else observer)
            by_observer[observer] = QConfig(activation=activation, weight=default_weight)
        mapping.set_object_type(op, by_observer[observer])
    return mapping


def get_default_qconfig_mapping(backend="x86", version=0):
    """The default QConfigMapping for post-training quantization on ``backend``."""
    return _get_default_qconfig_mapping(False, backend, version)


def get_default_qat_qconfig_mapping(backend="x86", version=1):
    """The default QConfigMapping for quantization-aware training on ``backend``."""
    return _get_default_qconfig_mapping(True, backend, version)
