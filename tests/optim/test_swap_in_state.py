"""ember.optim.swap_in_optimizer_params_and_state against torch.optim's: a step inside the block
moves the swapped-in parameters and state as torch's does, and the live optimizer is back as it
was on exit."""
import copy

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error


def _setup(lib):
    """An Adam optimizer with initialised state on two parameters in two groups, and the
    swap-in parameters and state_dict (copies, with other values)."""
    rng = np.random.default_rng(0)
    live = [lib.tensor(rng.standard_normal((3, 2)).astype(np.float32), requires_grad=True),
            lib.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)]
    opt = lib.optim.Adam([{"params": [live[0]]}, {"params": [live[1]], "lr": 0.01}], lr=0.1)
    for p in live:
        p.grad = lib.ones_like(p)
    opt.step()
    swap_params = {"w": live[0].detach().clone() * 2, "b": live[1].detach().clone() - 1}
    for i, p in enumerate(swap_params.values()):
        p.requires_grad_(True)
        p.grad = lib.full_like(p, 0.5 + i)
    swap_state = copy.deepcopy(opt.state_dict())
    swap_state["param_groups"][0]["lr"] = 0.3
    return live, opt, swap_params, swap_state


def _snapshot(tree):
    if isinstance(tree, (torch.Tensor, ember.Tensor)):
        return tree.detach().numpy().copy()
    if isinstance(tree, dict):
        return {k: _snapshot(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_snapshot(v) for v in tree]
    return tree


def test_step_inside_moves_the_swapped_in_values_as_torch():
    results = {}
    for lib in (torch, ember):
        live, opt, swap_params, swap_state = _setup(lib)
        live_before = [p.detach().clone() for p in live]
        state_before = _snapshot(opt.state_dict())
        group_lists = [g["params"] for g in opt.param_groups]
        with lib.optim.swap_in_optimizer_params_and_state(opt, swap_params, swap_state):
            assert opt.param_groups[0]["params"][0] is swap_params["w"]
            assert opt.param_groups[0]["lr"] == 0.3
            opt.step()
        # The live optimizer is untouched and restored.
        for p, before in zip(live, live_before):
            assert lib.equal(p.detach(), before)
        np.testing.assert_equal(_snapshot(opt.state_dict()), state_before)
        assert all(a is b for a, b in zip((g["params"] for g in opt.param_groups), group_lists))
        assert opt.param_groups[0]["lr"] == 0.1
        results[lib] = (list(swap_params.values()), swap_state["state"])
    assert_same(results[torch][0], results[ember][0])
    # In-place edits of the state tensors (step, exp_avg, exp_avg_sq) reach the swap-in dict.
    assert_same(results[torch][1], results[ember][1])
    assert float(results[ember][1][0]["step"]) == 2.0


def test_live_state_is_restored_exactly():
    live, opt, swap_params, swap_state = _setup(ember)
    before = _snapshot(opt.state_dict())
    with ember.optim.swap_in_optimizer_params_and_state(opt, swap_params, swap_state):
        opt.step()
    after = _snapshot(opt.state_dict())
    np.testing.assert_equal(after, before)


def test_the_live_optimizer_is_restored_when_the_block_raises():
    live, opt, swap_params, swap_state = _setup(ember)
    with pytest.raises(ValueError, match="inside"):
        with ember.optim.swap_in_optimizer_params_and_state(opt, swap_params, swap_state):
            raise ValueError("inside")
    assert opt.param_groups[0]["params"][0] is live[0]
    assert set(opt.state) == set(live)


def test_uninitialised_state_is_refused():
    def run(lib):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.Adam([p])
        with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, opt.state_dict()):
            pass
    compare_error(run)


@pytest.mark.parametrize("edit", ["not_a_dict", "groups_not_a_list", "group_count",
                                  "missing_key", "extra_state", "param_count", "tensor_key"])
def test_malformed_swap_in_state_fails_as_torch(edit):
    def run(lib):
        live, opt, swap_params, swap_state = _setup(lib)
        if edit == "not_a_dict":
            swap_state = [swap_state]
        elif edit == "groups_not_a_list":
            swap_state["param_groups"] = tuple(swap_state["param_groups"])
        elif edit == "group_count":
            swap_state["param_groups"] = swap_state["param_groups"][:1]
        elif edit == "missing_key":
            del swap_state["param_groups"][1]["amsgrad"]
        elif edit == "extra_state":
            swap_state["state"][7] = {}
        elif edit == "param_count":
            swap_state["param_groups"][1]["params"] = [1, 2]
        elif edit == "tensor_key":
            swap_state["state"] = {live[0]: {}}
        with lib.optim.swap_in_optimizer_params_and_state(opt, swap_params, swap_state):
            pass
    compare_error(run)


def test_too_few_swap_in_parameters_fail_as_torch():
    def run(lib):
        live, opt, swap_params, swap_state = _setup(lib)
        del swap_params["b"]
        with lib.optim.swap_in_optimizer_params_and_state(opt, swap_params, swap_state):
            pass
    compare_error(run)
