"""``swap_in_optimizer_params_and_state``: run an optimizer, for the length of a ``with`` block,
on other parameter tensors and an ``optimizer.state_dict()``-shaped state, as
``torch.optim.swap_in_optimizer_params_and_state``; the live parameters, hyperparameters and
state come back on exit."""
import contextlib
from collections import defaultdict

from .._tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_state(state):
    """``state`` must map packed parameter ids to per-parameter state dicts."""
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           "packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           "packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    return state


def _check_param_groups(optimizer, param_groups):
    if not isinstance(param_groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(param_groups).__name__}.")
    if len(optimizer.param_groups) != len(param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    return param_groups


def _check_group(index, group, swapin_group):
    """The packed ids of ``swapin_group``, which must match the live ``group`` in size and
    keys."""
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           "param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {index} has a different number of "
                           "params than the live optimizer param group.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           "exactly match the live optimizer group keys for "
                           f"group {index}. Keys only in swap-in: {swapin_only}. Keys only in "
                           f"live: {live_only}.")
    return ids


def _prepare(optimizer, swapin_parameters, swapin_optim_state):
    """Validate the swap-in values; returns the packed state and, per group, (live group,
    swap-in group, swap-in parameters)."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    swapin_groups = _check_param_groups(optimizer, swapin_optim_state.get("param_groups"))
    flat_parameters = list(swapin_parameters.values())
    offset = 0
    seen_ids = set()
    plan = []
    for index, (group, swapin_group) in enumerate(zip(optimizer.param_groups, swapin_groups)):
        ids = _check_group(index, group, swapin_group)
        seen_ids.update(ids)
        end = offset + len(ids)
        if end > len(flat_parameters):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        plan.append((group, swapin_group, flat_parameters[offset:end]))
        offset = end
    extra = [k for k in state if k not in seen_ids]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           "packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the block, ``optimizer`` sees ``swapin_parameters`` (a dict of tensors in the
    order of its parameters, e.g. ``model.named_parameters()``'s) as its parameters and
    ``swapin_optim_state`` (shaped as ``optimizer.state_dict()``) as its hyperparameters and
    state. Each parameter's state dict is a shallow copy: in-place edits of its tensors reach
    ``swapin_optim_state``, new entries do not. Everything is restored on exit."""
    state, plan = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    # Shallow copies keep the identity of each group's original ``params`` list.
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapin_state = defaultdict(dict)
        for group, swapin_group, params in plan:
            group["params"] = params
            for key, value in swapin_group.items():
                if key != "params":
                    group[key] = value
            for param, param_id in zip(params, swapin_group["params"]):
                swapin_state[param] = dict(state.get(param_id, {}))
        optimizer.state = swapin_state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
