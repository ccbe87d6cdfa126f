"""The deprecated hook-based ``weight_norm`` of ``torch.nn.utils.weight_norm``.

``weight_norm(module)`` replaces ``module.weight`` by two parameters, ``weight_g`` (the
magnitude, the norm over every dimension but ``dim``) and ``weight_v`` (the direction), and a
forward pre-hook recomputes ``weight = weight_g * weight_v / ||weight_v||`` before each call.
The state_dict keys are PyTorch's, so checkpoints of such modules load in either framework.
``nn.utils.parametrizations.weight_norm`` is the current form.
"""
import warnings

from ..parameter import Parameter, UninitializedParameter
from .parametrizations import _norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook that recomputes ``name`` from ``name_g`` and ``name_v``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`ember.nn.utils.weight_norm` is deprecated in favor of "
                      "`ember.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``<name>_g * <name>_v / ||<name>_v||`` (deprecated,
    as in torch: it warns with FutureWarning). ``dim=None`` takes the norm over the whole
    tensor."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo ``weight_norm``: ``<name>`` becomes a plain parameter holding the current weight."""
    remove_norm_hook(module, WeightNorm, name, "weight_norm")
    return module


def remove_norm_hook(module, hook_type, name, what):
    """Undo and drop the ``hook_type`` forward pre-hook that reparametrizes ``module.<name>``
    (``weight_norm``'s or ``spectral_norm``'s); ValueError naming ``what`` when there is none."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return
    raise ValueError(f"{what} of '{name}' not found in {module}")
