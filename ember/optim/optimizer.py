"""``Optimizer``: the bookkeeping every algorithm shares, as ``torch.optim.Optimizer``.

The base owns parameter groups, per-parameter state, ``state_dict`` / ``load_state_dict`` in
PyTorch's layout (so checkpoints move between the two), ``zero_grad`` and the hooks. An algorithm
subclass supplies ``__init__`` (validation and defaults) and two methods:

* ``_init_state(group, param, state)`` fills an empty ``state`` dict the first time ``param``
  has a gradient;
* ``_update(group, param, grad, state)`` applies one step of the rule to one parameter, in place,
  on backend arrays (``array(param)``, ``array(grad)``, ``array(state[...])``) through the
  backend's ``xp`` with ``out=``, so a step allocates no more than the rule needs.

``step`` calls them for every parameter that has a gradient, under ``no_grad``, and bumps the
parameter's version; a rule that resolves a value once per group (Adafactor) overrides
``_step_group``, and an algorithm that is not per-parameter (LBFGS) overrides ``step`` instead.
The helpers below (``lerp_``, ``addcmul_``, ``addcdiv_``, ``square_average_``) evaluate
PyTorch's formulas in PyTorch's order, so results agree to rounding. ``foreach``, ``capturable`` and
``differentiable`` are accepted and stored like PyTorch's (checkpoints carry them) but change
nothing: there is one implementation, and updates are never recorded for autograd.
"""
import functools
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain

from .. import _dtype as dt
from .. import _layout
from .._tensor import Tensor, _wrap
from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.creation import tensor as _tensor
from ..utils.hooks import add_hook

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton marking a hyperparameter every group must give (no default)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs)`` runs before every optimizer's ``step``."""
    return add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs)`` runs after every optimizer's ``step``."""
    return add_hook(_global_step_post_hooks, hook)


def _typename(obj):
    """``torch.typename``: a tensor's legacy type name (``ember.FloatTensor``), else the class."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


def scalar(value):
    """A hyperparameter as a Python number: ``lr`` and friends may be 0-d tensors."""
    return value.item() if isinstance(value, Tensor) else value


def check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def check_nonnegative(what, value):
    """PyTorch's "Invalid <what> value: <value>" for a hyperparameter that must be >= 0."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def check_not_fused(fused):
    if fused:
        raise RuntimeError("`fused=True` is not supported by Ember: there is no fused kernel "
                           "to call; leave `fused` at None or False")


def step_counter(value=0.0):
    """The float32 0-d tensor PyTorch keeps as ``state['step']`` (and other scalar state)."""
    return _tensor(value, dtype=dt.float32)


def array(tensor):
    """The tensor's backend array as the update rules see it, sharing its memory: a complex
    tensor as its real view (last axis: real, imaginary), so every rule treats the two parts as
    independent reals, as PyTorch's ``view_as_real`` does; a 0-d one as a 1-element view, since
    NumPy's ufuncs return scalars rather than arrays for 0-d operands and ``out=`` needs arrays."""
    data = tensor._data
    if data.dtype.kind == "c":
        return data[..., None].view(data.real.dtype)
    return data.reshape(1) if data.ndim == 0 else data


def zeros_state(param):
    """``torch.zeros_like(param)``: a state buffer with the parameter's shape, dtype and layout."""
    return _wrap(param._backend.xp.zeros_like(param._data), param._dtype, param)


def full_state(param, value):
    return _wrap(param._backend.xp.full_like(param._data, value), param._dtype, param)


def state_from(values, like):
    """A state tensor holding a copy of the array ``values``, shaped, typed and placed like
    ``like``."""
    values = values.copy()
    if like._data.dtype.kind == "c":
        values = values.view(like._data.dtype)
    return _wrap(values.reshape(like._data.shape), like._dtype, like)


def advance(step_tensor):
    """``step += 1`` in place; returns the new count as a Python number."""
    data = step_tensor._data
    data += 1
    return data.item()


def lerp_(xp, start, end, weight, scratch):
    """``start.lerp_(end, weight)`` with PyTorch's formula for a scalar weight, into ``start``."""
    xp.subtract(end, start, out=scratch)
    if abs(weight) < 0.5:
        xp.multiply(scratch, weight, out=scratch)
        xp.add(start, scratch, out=start)
    else:
        xp.multiply(scratch, 1 - weight, out=scratch)
        xp.subtract(end, scratch, out=start)


def addcmul_(xp, target, a, b, value, scratch):
    """``target.addcmul_(a, b, value=value)``: ``target + value * a * b``."""
    xp.multiply(a, value, out=scratch)
    xp.multiply(scratch, b, out=scratch)
    xp.add(target, scratch, out=target)


def addcdiv_(xp, target, a, b, value, scratch):
    """``target.addcdiv_(a, b, value=value)``: ``target + value * (a / b)``."""
    xp.divide(a, b, out=scratch)
    xp.multiply(scratch, value, out=scratch)
    xp.add(target, scratch, out=target)


def square_average_(xp, average, values, decay, scratch):
    """``average.mul_(decay).addcmul_(values, values, value=1 - decay)``: the running average of
    squares behind Adam's second moment, RMSprop and Adadelta, in PyTorch's order."""
    xp.multiply(average, decay, out=average)
    # addcmul_'s three operations, written out: this runs for every parameter on every step.
    xp.multiply(values, 1 - decay, out=scratch)
    xp.multiply(scratch, values, out=scratch)
    xp.add(average, scratch, out=average)


def gradient_for_step(xp, param, grad, maximize, weight_decay):
    """The gradient the rule sees: negated under ``maximize``, plus ``weight_decay * param``
    (a new array whenever it differs from ``grad``, which is never written)."""
    if maximize:
        grad = xp.negative(grad)
    weight_decay = scalar(weight_decay)
    if weight_decay != 0:
        decayed = xp.multiply(param, weight_decay)
        grad = xp.add(grad, decayed, out=decayed)
    return grad


def decayed_gradient(xp, param, grad, group, lr):
    """The gradient of the Adam family's rules: with ``decoupled_weight_decay`` the parameter
    shrinks by ``lr * weight_decay`` first (AdamW), otherwise the decay joins the gradient."""
    weight_decay = group["weight_decay"]
    decoupled = group["decoupled_weight_decay"]
    if weight_decay != 0 and decoupled:
        xp.multiply(param, 1 - lr * weight_decay, out=param)
    return gradient_for_step(xp, param, grad, group["maximize"], 0 if decoupled else weight_decay)


def update_moments(xp, state, grad, beta1, beta2, scratch):
    """Adam's running moments in place: ``exp_avg.lerp_(grad, 1 - beta1)`` and
    ``exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad**2``; returns both arrays."""
    exp_avg = array(state["exp_avg"])
    exp_avg_sq = array(state["exp_avg_sq"])
    lerp_(xp, exp_avg, grad, 1 - beta1, scratch)
    square_average_(xp, exp_avg_sq, grad, beta2, scratch)
    return exp_avg, exp_avg_sq


def is_sparse_gradient(grad):
    """Whether ``grad`` is a sparse COO tensor (``nn.Embedding(sparse=True)`` makes them)."""
    return grad._layout is _layout.sparse_coo


def coalesced_gradient(grad, maximize=False):
    """``(index, values)`` of a sparse gradient summed over repeated positions, negated under
    ``maximize``: ``index`` is a tuple of index arrays that picks each stored entry, once."""
    grad = grad.coalesce()
    values = grad._values_data
    if maximize:
        values = grad._backend.xp.negative(values)
    return tuple(grad._indices_data), values


class Optimizer:
    """Base class for all optimizers (see the module docstring for what a subclass writes)."""

    # Whether the rule accepts sparse gradients, and PyTorch's error where it does not (None:
    # "<class name> does not support sparse gradients").
    _accepts_sparse_gradients = False
    _sparse_gradients_error = None
    # Whether the rule refuses complex parameters (PyTorch: "<class name> does not support
    # complex parameters", checked with the gradients' layouts).
    _rejects_complex = False

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._optimizer_state_dict_pre_hooks = OrderedDict()
        self._optimizer_state_dict_post_hooks = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks = OrderedDict()
        self._optimizer_load_state_dict_post_hooks = OrderedDict()
        self._patch_step_function()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # ---- pickling and printing --------------------------------------------------------------
    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ---- step and its hooks -------------------------------------------------------------------
    def _patch_step_function(self):
        """Wrap the concrete class's ``step`` once so that the step hooks run around it (a
        subclass calling ``super().step()`` still runs them once)."""
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _with_step_hooks(cls.step)
            cls.step.hooked = True

    def _keeps_state(self, group):
        """Whether the rule has per-parameter state in ``group`` (SGD without momentum has none,
        and PyTorch's state_dict then has no entry for its parameters)."""
        return True

    def _check_gradient_layouts(self, group):
        """PyTorch's refusal of complex parameters and sparse gradients, parameter by
        parameter, raised before any parameter of ``group`` moves."""
        if self._accepts_sparse_gradients and not self._rejects_complex:
            return
        for param in group["params"]:
            if param.grad is None:
                continue
            if self._rejects_complex and param.is_complex():
                raise RuntimeError(f"{type(self).__name__} does not support complex parameters")
            if not self._accepts_sparse_gradients and is_sparse_gradient(param.grad):
                raise RuntimeError(self._sparse_gradients_error or
                                   f"{type(self).__name__} does not support sparse gradients")

    def step(self, closure=None):
        """One optimisation step; ``closure`` re-evaluates the model and returns the loss."""
        if type(self)._update is Optimizer._update:
            raise NotImplementedError
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._check_gradient_layouts(group)
                self._step_group(group)
        return loss

    def _step_group(self, group):
        """``_init_state`` (first time) and ``_update`` for each parameter of ``group`` that has
        a gradient."""
        keeps_state = self._keeps_state(group)
        for param in group["params"]:
            grad = param.grad
            if grad is None:
                continue
            state = self.state[param] if keeps_state else None
            if keeps_state and len(state) == 0:
                self._init_state(group, param, state)
            self._update(group, param, grad, state)
            param._bump_version()

    def _init_state(self, group, param, state):
        raise NotImplementedError

    def _update(self, group, param, grad, state):
        raise NotImplementedError

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` before ``step``; it may return ``(args, kwargs)``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` after ``step``."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    # ---- gradients ---------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    grad = p.grad
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    # ---- parameter groups --------------------------------------------------------------------
    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names

        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        if len(tensors) != len(set(tensors)):
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- checkpoints ---------------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``, with
        parameters numbered in group order, as PyTorch does."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index_of = {}
        next_index = 0
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], next_index):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            next_index += len(packed["params"])
            packed_groups.append(packed)
        packed_state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": packed_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        param_of = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                            chain.from_iterable(g["params"] for g in groups)))
        group_of = {index: saved for saved in state_dict["param_groups"]
                    for index in saved["params"]}

        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in param_of:
                param = param_of[key]
                state[param] = _cast_state(param, value, group_of.get(key, {}))
            else:
                state[key] = value

        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` before ``state_dict`` builds its result."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` after; it may return a replacement dict."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` before loading; it may return a replacement dict."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` after loading."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)


def _with_step_hooks(step):
    @functools.wraps(step)
    def hooked_step(self, *args, **kwargs):
        for hook in chain(_global_step_pre_hooks.values(),
                          self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{step} must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {result}.")
        out = step(self, *args, **kwargs)
        for hook in chain(self._optimizer_step_post_hooks.values(),
                          _global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    return hooked_step


def _cast_state(param, value, group, key=None):
    """A loaded state value on ``param``'s device, floating tensors in its dtype; ``step`` keeps
    its dtype (float32 on the CPU) unless the group is fused or capturable."""
    if isinstance(value, Tensor):
        if key == "step":
            if group.get("capturable", False) or group.get("fused", False):
                return value.to(dtype=dt.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, group, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v, group) for v in value)
    return value
