"""Eager-mode quantization: ``prepare``, ``convert``, ``prepare_qat``, ``quantize``,
``quantize_dynamic``, as ``torch.ao.quantization.quantize``.

The workflow works on module types: ``propagate_qconfig_`` gives every module the qconfig it
inherits (from a parent, a per-type or per-name dict, or its own ``.qconfig``); ``prepare``
attaches an ``activation_post_process`` observer to each leaf of a quantizable type (and to
fused modules, stubs and functionals) with a forward hook that observes its output;
``convert`` swaps each module for the quantized module its type maps to, built by that
module's ``from_float`` from the observers' qparams, and removes observers and qconfigs.
"""
import copy
import inspect
import itertools
import warnings

import ember
from ... import nn
from ..nn.intrinsic import _FusedModule
from . import qint8, quint8
from .observer import ObserverBase
from .fake_quantize import FakeQuantizeBase
from .qconfig import (_activation_is_memoryless, _add_module_to_qconfig_obs_ctr,
                      _assert_valid_qconfig, default_dynamic_qconfig,
                      float16_dynamic_qconfig, float_qparams_weight_only_qconfig)
from .quantization_mappings import (_get_special_act_post_process,
                                    _has_special_act_post_process,
                                    get_default_dynamic_quant_module_mappings,
                                    get_default_qat_module_mappings,
                                    get_default_qconfig_propagation_list,
                                    get_default_static_quant_module_mappings,
                                    no_observer_set)
from .stubs import DeQuantStub

__all__ = ["get_default_custom_config_dict", "propagate_qconfig_", "add_quant_dequant",
           "prepare", "quantize", "quantize_dynamic", "prepare_qat", "quantize_qat",
           "convert", "swap_module"]


def get_default_custom_config_dict():
    """The custom-module config ``prepare``/``convert`` use by default: Ember has no
    quantizable LSTM/MultiheadAttention, so there are no custom module swaps."""
    return {"float_to_observed_custom_module_class": {},
            "observed_to_quantized_custom_module_class": {}}


def _is_activation_post_process(module):
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


def _propagate_qconfig_helper(module, qconfig_dict, qconfig_parent=None, prefix="",
                              prepare_custom_config_dict=None):
    module_qconfig = qconfig_dict.get(type(module), qconfig_parent)
    module_qconfig = qconfig_dict.get(prefix, module_qconfig)
    module_qconfig = getattr(module, "qconfig", module_qconfig)
    _assert_valid_qconfig(module_qconfig, module)
    qconfig_with_device_check = _add_module_to_qconfig_obs_ctr(module_qconfig, module)
    module.qconfig = qconfig_with_device_check
    config = prepare_custom_config_dict or {}
    skip_names = config.get("non_traceable_module_name", [])
    skip_types = set(config.get("non_traceable_module_class", []))
    for name, child in module.named_children():
        if name in skip_names or type(child) in skip_types:
            continue
        _propagate_qconfig_helper(child, qconfig_dict, qconfig_with_device_check,
                                  f"{prefix}.{name}" if prefix else name, config)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Set ``.qconfig`` on ``module`` and every submodule, in place.

    ``qconfig_dict`` maps a module type or a qualified submodule name to a QConfig (or None
    to leave it in float); a name beats a type, and a module's own ``.qconfig`` beats both.
    A module without an entry inherits its parent's.
    """
    _propagate_qconfig_helper(module, qconfig_dict or {},
                              prepare_custom_config_dict=prepare_custom_config_dict or {})


def _observer_forward_hook(self, input, output):
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    return self.activation_post_process(input[0])


def _register_activation_post_process_hook(module, pre_hook=False):
    if not hasattr(module, "activation_post_process"):
        raise AssertionError("Expect activation_post_process attribute already attached to the "
                             "module")
    # prepended so that the observer sees the module's own output before user hooks change it
    if pre_hook:
        module.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
    else:
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def _unique_devices(module):
    return {p.device for p in module.parameters()} | {b.device for b in module.buffers()}


def _needs_observation(m):
    return getattr(m, "qconfig", None) is not None


def _add_observer_(module, qconfig_propagation_list=None, non_leaf_module_list=None,
                   device=None, custom_module_class_mapping=None):
    """Attach output observers to the quantizable leaves of ``module`` (in place)."""
    if qconfig_propagation_list is None:
        qconfig_propagation_list = get_default_qconfig_propagation_list()
    custom_module_class_mapping = custom_module_class_mapping or {}
    if device is None:
        devices = _unique_devices(module)
        if len(devices) > 1:
            raise AssertionError("_add_observer_ only works with cpu or single-device CUDA "
                                 f"modules, but got devices {devices}")
        device = next(iter(devices)) if devices else None

    def get_activation_post_process(qconfig, special_act_post_process=None):
        activation = (qconfig.activation() if special_act_post_process is None
                      else special_act_post_process())
        return activation.to(device) if device is not None else activation

    def insert_activation_post_process(m, special_act_post_process=None):
        if _needs_observation(m) and not isinstance(m, DeQuantStub):
            m.add_module("activation_post_process",
                         get_activation_post_process(m.qconfig, special_act_post_process))
            _register_activation_post_process_hook(
                m, pre_hook=_activation_is_memoryless(m.qconfig))

    functionals = _functional_classes()
    for name, child in module.named_children():
        if type(child) is nn.Dropout:
            continue
        if isinstance(child, functionals):
            if _needs_observation(child):
                if not hasattr(child, "activation_post_process"):
                    raise AssertionError(f"functional class {type(child)} has no pre-defined "
                                         "`activation_post_process`")
                child.activation_post_process = get_activation_post_process(child.qconfig)
        elif isinstance(child, _FusedModule):
            insert_activation_post_process(child)
        elif non_leaf_module_list is not None and type(child) in non_leaf_module_list:
            insert_activation_post_process(child)
        elif _has_special_act_post_process(child):
            insert_activation_post_process(child, _get_special_act_post_process(child))
        elif _needs_observation(child) and type(child) in custom_module_class_mapping:
            observed_class = custom_module_class_mapping[type(child)]
            observed_child = observed_class.from_float(child)
            setattr(module, name, observed_child)
            if not issubclass(observed_class, tuple(no_observer_set())):
                insert_activation_post_process(observed_child)
        else:
            _add_observer_(child, qconfig_propagation_list, non_leaf_module_list, device,
                           custom_module_class_mapping)

    # an observer on every quantizable leaf's output; the input is observed by a QuantStub
    quantizable = (type(module) in qconfig_propagation_list
                   and not isinstance(module, nn.Sequential))
    if quantizable and (not module._modules or hasattr(module, "weight_fake_quant")):
        insert_activation_post_process(module)


def _functional_classes():
    """FloatFunctional/QFunctional: they carry their own observer slot."""
    from ..nn import quantized as nnq
    return (nnq.FloatFunctional, nnq.QFunctional)


def _remove_activation_post_process(module):
    if hasattr(module, "activation_post_process") and _is_activation_post_process(
            module.activation_post_process):
        delattr(module, "activation_post_process")
    for hooks, hook_fn in ((module._forward_pre_hooks, _observer_forward_pre_hook),
                           (module._forward_hooks, _observer_forward_hook)):
        for handle_id in [k for k, fn in hooks.items() if fn is hook_fn]:
            hooks.pop(handle_id)


def _remove_qconfig(module):
    """Delete every ``qconfig`` and output observer left on ``module``'s tree."""
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig
    _remove_activation_post_process(module)


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """A copy of ``model`` (or ``model`` itself with ``inplace``) with observers attached for
    calibration. Run representative data through it, then ``convert``.

    Set ``model.qconfig`` (or submodules' ``qconfig``) first; put ``QuantStub``/
    ``DeQuantStub`` where float tensors enter and leave the quantized part.
    """
    if prepare_custom_config_dict is None:
        prepare_custom_config_dict = get_default_custom_config_dict()
    custom_module_class_mapping = prepare_custom_config_dict.get(
        "float_to_observed_custom_module_class", {})
    if not inplace:
        model = copy.deepcopy(model)
    qconfig_propagation_list = (allow_list if allow_list is not None
                                else get_default_qconfig_propagation_list())
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules", stacklevel=2)
    _add_observer_(model, qconfig_propagation_list, observer_non_leaf_module_list,
                   custom_module_class_mapping=custom_module_class_mapping)
    return model


def add_quant_dequant(module):
    """Wrap every leaf with a qconfig in ``QuantWrapper`` (quantize its input, dequantize its
    output), in place; returns ``module`` (or its wrapper)."""
    from .stubs import QuantWrapper
    if not module._modules and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


def prepare_qat(model, mapping=None, inplace=False):
    """Swap a training-mode model's modules for QAT modules (fake-quantized weights) and
    attach fake-quantize observers to their outputs. Train it, then ``convert``."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """Post-training static quantization in one call: ``prepare``, ``run_fn(model, *run_args)``
    to calibrate (in eval mode), ``convert``."""
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


def quantize_qat(model, run_fn, run_args, inplace=False):
    """Quantization-aware training in one call: ``prepare_qat``, ``run_fn(model, *run_args)``
    (the training loop), then ``convert`` in eval mode."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


def quantize_dynamic(model, qconfig_spec=None, dtype=qint8, mapping=None, inplace=False):
    """Replace ``model``'s Linear/LSTM/GRU (by default) with dynamically quantized modules:
    int8 weights, activations quantized per call from their observed range.

    ``qconfig_spec`` is a set of module types (or names) to quantize with the ``dtype``'s
    default qconfig, or a dict from type/name to QConfig.
    """
    if qconfig_spec is None:
        if dtype == qint8:
            qconfig_spec = dict.fromkeys((nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell,
                                          nn.GRUCell), default_dynamic_qconfig)
        elif dtype == ember.float16:
            qconfig_spec = dict.fromkeys((nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell,
                                          nn.GRUCell), float16_dynamic_qconfig)
        elif dtype == quint8:
            qconfig_spec = dict.fromkeys((nn.EmbeddingBag, nn.Embedding),
                                         float_qparams_weight_only_qconfig)
        else:
            raise ValueError(f"Don't know how to quantize with default settings for {dtype}. "
                             "Provide full qconfig please")
    elif isinstance(qconfig_spec, set):
        defaults = {qint8: default_dynamic_qconfig, ember.float16: float16_dynamic_qconfig,
                    quint8: float_qparams_weight_only_qconfig}
        if dtype not in defaults:
            raise RuntimeError(f"Unknown dtype specified for quantize_dynamic: {dtype}")
        qconfig_spec = dict(zip(qconfig_spec, itertools.repeat(defaults[dtype])))
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Swap each module that has a qconfig and a mapped type for its quantized module (built
    by ``from_float`` from the module and its observers); then drop qconfigs and observers.
    """
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, inplace=True, is_reference=is_reference,
             convert_custom_config_dict=convert_custom_config_dict,
             use_precomputed_fake_quant=use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module, mapping=None, inplace=False, is_reference=False,
             convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    if mapping is None:
        if is_reference:
            raise NotImplementedError("Ember has no reference quantized modules; use "
                                      "convert(..., is_reference=False)")
        mapping = get_default_static_quant_module_mappings()
    config = convert_custom_config_dict or get_default_custom_config_dict()
    custom_module_class_mapping = config.get("observed_to_quantized_custom_module_class", {})
    if not inplace:
        module = copy.deepcopy(module)
    reassign = {}
    for name, mod in module.named_children():
        # a fused module converts as a whole; its parts are not swapped one by one
        if not isinstance(mod, _FusedModule) and type(mod) not in custom_module_class_mapping:
            _convert(mod, mapping, True, is_reference, config, use_precomputed_fake_quant)
        reassign[name] = swap_module(mod, mapping, custom_module_class_mapping,
                                     use_precomputed_fake_quant)
    for key, value in reassign.items():
        module._modules[key] = value
    return module


def swap_module(mod, mapping, custom_module_class_mapping, use_precomputed_fake_quant=False):
    """The quantized module for ``mod`` if it has a qconfig and its type is in ``mapping``,
    else ``mod``. User forward hooks carry over; the observer hooks do not."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    if type(mod) in custom_module_class_mapping:
        new_mod = custom_module_class_mapping[type(mod)].from_observed(mod)
    elif type(mod) in mapping:
        qmod = mapping[type(mod)]
        if "use_precomputed_fake_quant" in inspect.signature(qmod.from_float).parameters:
            new_mod = qmod.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
        else:
            new_mod = qmod.from_float(mod)
    else:
        return mod
    for pre_hook in mod._forward_pre_hooks.values():
        if pre_hook is not _observer_forward_pre_hook:
            new_mod.register_forward_pre_hook(pre_hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new_mod.register_forward_hook(hook)
    devices = _unique_devices(mod)
    if len(devices) > 1:
        raise AssertionError("swap_module only works with cpu or single-device CUDA modules, "
                             f"but got devices {devices}")
    if devices:
        device = next(iter(devices))
        if device.type != "cpu":
            new_mod.to(device)
    return new_mod
