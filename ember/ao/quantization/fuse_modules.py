"""``fuse_modules`` / ``fuse_modules_qat``: replace module sequences by fused modules, in place
of the first module, with ``nn.Identity`` in place of the others (as torch's)."""
import copy

from ... import nn
from .fuser_method_mappings import get_fuser_method

__all__ = ["fuse_known_modules", "fuse_modules", "fuse_modules_qat"]


def _get_module(model, submodule_key):
    mod = model
    for token in submodule_key.split("."):
        mod = getattr(mod, token)
    return mod


def _set_module(model, submodule_key, module):
    *parents, last = submodule_key.split(".")
    mod = model
    for token in parents:
        mod = getattr(mod, token)
    setattr(mod, last, module)


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """The fused module for ``mod_list`` followed by Identities: ``[fused, Identity, ...]``.

    The first module's forward pre-hooks and the last one's forward hooks move to the fused
    module; other hooks are lost, as in torch.
    """
    types = tuple(type(m) for m in mod_list)
    fuser_method = get_fuser_method(types, additional_fuser_method_mapping)
    fused = fuser_method(is_qat, *mod_list)
    for pre_hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(pre_hook)
    mod_list[0]._forward_pre_hooks.clear()
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    mod_list[-1]._forward_hooks.clear()
    new_mod = [fused]
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        new_mod.append(identity)
    return new_mod


def _fuse_modules_helper(model, modules_to_fuse, is_qat, fuser_func, fuse_custom_config_dict):
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    mod_list = [_get_module(model, item) for item in modules_to_fuse]
    new_mod_list = fuser_func(mod_list, is_qat, additional)
    for item, new_mod in zip(modules_to_fuse, new_mod_list):
        _set_module(model, item, new_mod)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace=False, fuser_func=fuse_known_modules,
                  fuse_custom_config_dict=None):
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(item, str) for item in modules_to_fuse):
        modules_to_fuse = [modules_to_fuse]
    for module_list in modules_to_fuse:
        _fuse_modules_helper(model, module_list, is_qat, fuser_func, fuse_custom_config_dict)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse the named submodules of an eval-mode ``model`` for post-training quantization.

    ``modules_to_fuse`` is a list of names (``["conv1", "bn1", "relu1"]``) or a list of such
    lists. Supported sequences: conv-bn, conv-bn-relu, conv-relu, linear-relu, linear-bn,
    bn-relu (1/2/3-d), convtranspose-bn; BatchNorm is folded into the weights
    (``nn.utils.fuse_conv_bn_eval``), so the model must be in eval mode.
    """
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func,
                         fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """``fuse_modules`` for quantization-aware training: a training-mode model, whose
    conv-bn(-relu) become ``nni.ConvBn(ReLU)Nd`` for ``prepare_qat`` to fold while training."""
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func,
                         fuse_custom_config_dict)
