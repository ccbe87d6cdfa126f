"""``ember.func``: torch.func's composable function transforms.

Reverse mode (``grad``, ``grad_and_value``, ``vjp``, ``jacrev``) lives in
``ember/_functorch/eager_transforms.py``, ``vmap`` and its batching rules in
``ember/_functorch/vmap.py`` and ``batch_rules_<family>.py``, ``functional_call`` and
``stack_module_state`` in ``ember/_functorch/functional_call.py``; forward mode (``jvp``,
``jacfwd``, ``linearize``, ``hessian``) in ``ember/_functorch/forward_transforms.py``."""
import importlib as _importlib

from .._functorch.eager_transforms import grad, grad_and_value, vjp, jacrev  # noqa: F401
from .._functorch.vmap import vmap  # noqa: F401
from .._functorch.functional_call import functional_call, stack_module_state  # noqa: F401

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "vmap", "functional_call",
           "stack_module_state", "jvp", "jacfwd", "linearize", "hessian"]

_FORWARD = ("jvp", "jacfwd", "linearize", "hessian")


def __getattr__(name):
    # Forward mode comes from its own file, imported on first use.
    if name in _FORWARD:
        try:
            module = _importlib.import_module("ember._functorch.forward_transforms")
        except ModuleNotFoundError as e:
            if e.name != "ember._functorch.forward_transforms":
                raise
            raise AttributeError(f"ember.func.{name} needs forward-mode AD "
                                 "(ember/_functorch/forward_transforms.py), which this Ember "
                                 "does not have yet") from None
        value = globals()[name] = getattr(module, name)
        return value
    raise AttributeError(f"module 'ember.func' has no attribute '{name}'")
