"""Which module ``prepare_qat`` and ``convert`` swap each float module for, as torch's
``quantization_mappings``.

The quantized module families are imported when a mapping is asked for (not at import), so
preparing and calibrating a model needs none of the int8 kernels.
"""
import copy

from ... import nn
from ..nn import intrinsic as nni, qat as nnqat
from ..nn.intrinsic import qat as nniqat
from .fake_quantize import (default_fixed_qparams_range_0to1_fake_quant,
                            default_fixed_qparams_range_neg1to1_fake_quant)
from .stubs import DeQuantStub, QuantStub

__all__ = ["get_default_static_quant_module_mappings",
           "get_default_static_quant_reference_module_mappings",
           "get_default_qat_module_mappings", "get_default_dynamic_quant_module_mappings",
           "get_default_qconfig_propagation_list", "get_default_compare_output_module_list",
           "get_default_float_to_quantized_operator_mappings", "get_quantized_operator",
           "get_static_quant_module_class", "get_dynamic_quant_module_class",
           "no_observer_set", "get_embedding_qat_module_mappings",
           "get_embedding_static_quant_module_mappings", "_get_special_act_post_process",
           "_has_special_act_post_process"]

# (float module, name in ember.ao.nn.quantized); a name the quantized package does not define
# is left out of the mapping, so such a module stays in float through convert
_STATIC_QUANTIZED_NAMES = [
    (QuantStub, "Quantize"), (DeQuantStub, "DeQuantize"), (nn.Linear, "Linear"),
    (nn.Conv1d, "Conv1d"), (nn.Conv2d, "Conv2d"), (nn.Conv3d, "Conv3d"),
    (nn.ConvTranspose1d, "ConvTranspose1d"), (nn.ConvTranspose2d, "ConvTranspose2d"),
    (nn.ConvTranspose3d, "ConvTranspose3d"), (nn.BatchNorm2d, "BatchNorm2d"),
    (nn.BatchNorm3d, "BatchNorm3d"), (nn.Dropout, "Dropout"), (nn.ELU, "ELU"),
    (nn.Embedding, "Embedding"), (nn.EmbeddingBag, "EmbeddingBag"),
    (nn.GroupNorm, "GroupNorm"), (nn.Hardswish, "Hardswish"),
    (nn.InstanceNorm1d, "InstanceNorm1d"), (nn.InstanceNorm2d, "InstanceNorm2d"),
    (nn.InstanceNorm3d, "InstanceNorm3d"), (nn.LayerNorm, "LayerNorm"),
    (nn.LeakyReLU, "LeakyReLU"), (nn.ReLU6, "ReLU6"), (nn.PReLU, "PReLU"),
    (nnqat.Linear, "Linear"), (nnqat.Conv1d, "Conv1d"), (nnqat.Conv2d, "Conv2d"),
    (nnqat.Conv3d, "Conv3d"), (nniqat.ConvBn1d, "Conv1d"), (nniqat.ConvBn2d, "Conv2d"),
    (nniqat.ConvBn3d, "Conv3d"), (nniqat.LinearBn1d, "Linear"),
]
_STATIC_INTRINSIC_NAMES = [
    (nni.ConvReLU1d, "ConvReLU1d"), (nni.ConvReLU2d, "ConvReLU2d"),
    (nni.ConvReLU3d, "ConvReLU3d"), (nni.LinearReLU, "LinearReLU"),
    (nni.BNReLU2d, "BNReLU2d"), (nni.BNReLU3d, "BNReLU3d"),
    (nniqat.ConvReLU1d, "ConvReLU1d"), (nniqat.ConvReLU2d, "ConvReLU2d"),
    (nniqat.ConvReLU3d, "ConvReLU3d"), (nniqat.ConvBnReLU1d, "ConvReLU1d"),
    (nniqat.ConvBnReLU2d, "ConvReLU2d"), (nniqat.ConvBnReLU3d, "ConvReLU3d"),
    (nniqat.LinearReLU, "LinearReLU"),
]
_DYNAMIC_NAMES = [
    (nn.GRUCell, "GRUCell"), (nn.Linear, "Linear"), (nn.LSTM, "LSTM"), (nn.GRU, "GRU"),
    (nn.LSTMCell, "LSTMCell"), (nn.RNNCell, "RNNCell"),
    (nn.modules.linear.NonDynamicallyQuantizableLinear, "Linear"),
]

DEFAULT_QAT_MODULE_MAPPINGS = {
    nn.Conv1d: nnqat.Conv1d, nn.Conv2d: nnqat.Conv2d, nn.Conv3d: nnqat.Conv3d,
    nn.Linear: nnqat.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear: nnqat.Linear,
    nni.ConvBn1d: nniqat.ConvBn1d, nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBn3d: nniqat.ConvBn3d, nni.ConvBnReLU1d: nniqat.ConvBnReLU1d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d, nni.ConvBnReLU3d: nniqat.ConvBnReLU3d,
    nni.ConvReLU1d: nniqat.ConvReLU1d, nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.ConvReLU3d: nniqat.ConvReLU3d, nni.LinearReLU: nniqat.LinearReLU,
    nni.LinearBn1d: nniqat.LinearBn1d,
}

# modules whose output range is known (a sigmoid lies in [0, 1]) get fixed qparams in QAT
_DEFAULT_MODULE_TO_ACT_POST_PROCESS = {
    nn.Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Softmax: default_fixed_qparams_range_0to1_fake_quant,
    nn.Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}


def _resolve(pairs, package):
    return {float_mod: getattr(package, name) for float_mod, name in pairs
            if hasattr(package, name)}


def _quantized():
    from ..nn import quantized as nnq
    return nnq


def get_default_static_quant_module_mappings():
    """Float (or QAT, fused) module type -> the int8 module ``convert`` builds by ``from_float``."""
    from ..nn.intrinsic import quantized as nniq
    nnq = _quantized()
    return {**_resolve(_STATIC_QUANTIZED_NAMES, nnq), **_resolve(_STATIC_INTRINSIC_NAMES, nniq),
            nnq.FloatFunctional: nnq.QFunctional}


def get_default_static_quant_reference_module_mappings():
    """Reference (simulated, float-weight) quantized modules: not in Ember."""
    raise NotImplementedError("Ember has no reference quantized modules "
                              "(ember.ao.nn.quantized.reference); use is_reference=False")


def get_embedding_static_quant_module_mappings():
    nnq = _quantized()
    return _resolve([(nn.EmbeddingBag, "EmbeddingBag"), (nn.Embedding, "Embedding")], nnq)


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None,
                                  is_reference=False):
    """The statically quantized module class for ``float_module_class``."""
    if is_reference:
        get_default_static_quant_reference_module_mappings()
    mapping = {**get_default_static_quant_module_mappings(),
               **(additional_static_quant_mapping or {})}
    static_quant_module_class = mapping.get(float_module_class)
    if static_quant_module_class is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have "
                             "a corresponding quantized module class")
    return copy.deepcopy(static_quant_module_class)


def get_dynamic_quant_module_class(float_module_class, additional_dynamic_quant_mapping=None):
    """The dynamically quantized module class for ``float_module_class``."""
    mapping = {**get_default_dynamic_quant_module_mappings(),
               **(additional_dynamic_quant_mapping or {})}
    dynamic_quant_module_class = mapping.get(float_module_class)
    if dynamic_quant_module_class is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have "
                             "a corresponding quantized module class")
    return copy.deepcopy(dynamic_quant_module_class)


def get_default_qat_module_mappings():
    """Float (or fused) module type -> its QAT module, for ``prepare_qat``."""
    return copy.deepcopy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_embedding_qat_module_mappings():
    raise NotImplementedError("Ember has no QAT Embedding/EmbeddingBag modules "
                              "(ember.ao.nn.qat.Embedding)")


def get_default_dynamic_quant_module_mappings():
    """Float module type -> the dynamically quantized module ``quantize_dynamic`` builds."""
    from ..nn.quantized import dynamic as nnqd
    return _resolve(_DYNAMIC_NAMES, nnqd)


def get_default_qconfig_propagation_list():
    """Module types that ``prepare`` gives an output observer when they are leaves: those with
    a static, QAT or dynamic counterpart, plus Sequential."""
    types = {float_mod for float_mod, _ in
             _STATIC_QUANTIZED_NAMES + _STATIC_INTRINSIC_NAMES + _DYNAMIC_NAMES}
    return {*types, *DEFAULT_QAT_MODULE_MAPPINGS, nn.Sequential}


def get_default_compare_output_module_list():
    """Module types whose outputs the numeric suite compares (propagation list plus QAT and
    quantized modules)."""
    return {*get_default_qconfig_propagation_list(),
            *get_default_static_quant_module_mappings().values(),
            *DEFAULT_QAT_MODULE_MAPPINGS.values()}


def get_default_float_to_quantized_operator_mappings():
    """Float functional op -> quantized op (``F.elu`` -> ``ember.ops.quantized.elu``...)."""
    from ...nn import functional as F
    try:
        from ...ops import quantized as qops
    except ImportError as e:
        raise NotImplementedError("Ember's quantized ops (ember.ops.quantized) are not "
                                  "available") from e
    return {fn: getattr(qops, name) for fn, name in
            ((F.elu, "elu"), (F.hardswish, "hardswish"), (F.instance_norm, "instance_norm"),
             (F.layer_norm, "layer_norm"), (F.leaky_relu, "leaky_relu"),
             (F.dropout, "dropout")) if hasattr(qops, name)}


def get_quantized_operator(float_op):
    """The quantized op for ``float_op``; AssertionError when there is none."""
    quantized_op = get_default_float_to_quantized_operator_mappings().get(float_op)
    if quantized_op is None:
        raise AssertionError(f"Operator {float_op} does not have corresponding quantized op")
    return quantized_op


def no_observer_set():
    """Module types ``prepare`` inserts no output observer for (quantizable LSTM/MHA are not
    in Ember, so none)."""
    return set()


def _get_special_act_post_process(module):
    return _DEFAULT_MODULE_TO_ACT_POST_PROCESS.get(type(module))


def _has_special_act_post_process(module):
    return module.training and type(module) in _DEFAULT_MODULE_TO_ACT_POST_PROCESS
