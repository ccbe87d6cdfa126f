"""Every ember.optim algorithm and option against torch.optim: the same parameters given the same
gradients follow the same trajectory, end with the same state, and checkpoints move both ways.
Ember's parameters live on each test device ("cpu" and "testdev"), torch's on the CPU; the
update and the optimizer's state stay on the parameter's device."""
import copy

import numpy as np
import pytest
import torch

import ember

# (shape, dtype): a matrix, a vector, a 0-d parameter and a float64 one.
PARAM_SPECS = [((3, 4), "float32"), ((5,), "float32"), ((), "float32"), ((2, 3, 2), "float64")]
STEPS = 12


def _on(lib, device):
    return {"device": device} if lib is ember else {}


def make_params(lib, seed=0, device="cpu"):
    rng = np.random.default_rng(seed)
    return [lib.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True,
                       **_on(lib, device))
            for shape, dtype in PARAM_SPECS]


def _targets(lib, device):
    rng = np.random.default_rng(1)
    return [lib.tensor(rng.standard_normal(shape).astype(dtype), **_on(lib, device))
            for shape, dtype in PARAM_SPECS]


def set_grads(lib, params):
    """Gradients of a fixed quadratic-plus-sine loss, by each framework's own autograd."""
    for p in params:
        p.grad = None
    loss = 0
    for i, (p, target) in enumerate(zip(params, _targets(lib, params[0].device.type))):
        loss = loss + ((p - target) ** 2 * (0.5 + i)).sum() + lib.sin(3 * p).sum() * 0.2
    loss.backward()
    return loss


def to_numpy(tree):
    """A state_dict (or part) with every tensor as a NumPy array, for comparison."""
    if isinstance(tree, (torch.Tensor, ember.Tensor)):
        return tree.detach().cpu().numpy().copy()
    if isinstance(tree, dict):
        return {k: to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_numpy(v) for v in tree)
    return tree


def assert_tree_equal(expected, actual, rtol=1e-5, atol=1e-6):
    if isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), actual
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for k in expected:
            assert_tree_equal(expected[k], actual[k], rtol, atol)
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for e, a in zip(expected, actual):
            assert_tree_equal(e, a, rtol, atol)
    else:
        assert actual == expected


def convert_state_dict(state_dict, lib, device="cpu"):
    """A state_dict's tensors rebuilt in ``lib`` (on ``device`` for Ember) with the same values
    and dtypes."""
    def convert(value):
        if isinstance(value, (torch.Tensor, ember.Tensor)):
            return lib.tensor(to_numpy(value), **_on(lib, device))
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(convert(v) for v in value)
        return value
    return convert(state_dict)


def assert_params_equal(torch_params, ember_params, rtol=1e-5, atol=1e-6):
    for t, e in zip(torch_params, ember_params):
        assert e.dtype.__repr__().split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(np.asarray(e.detach()), t.detach().numpy(), rtol=rtol,
                                   atol=atol)


# name -> list of option dicts; each runs with the options as defaults and as one group's options.
CASES = {
    "SGD": [dict(lr=0.05), dict(lr=0.05, momentum=0.9),
            dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
            dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
            dict(lr=0.05, momentum=0.5, maximize=True, weight_decay=0.1),
            dict(lr=0.05, maximize=True)],
    "Adam": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, amsgrad=True),
             dict(lr=0.05, maximize=True), dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3),
             dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True),
             dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)],
    "AdamW": [dict(lr=0.05), dict(lr=0.05, amsgrad=True, weight_decay=0.1),
              dict(lr=0.05, maximize=True, betas=(0.5, 0.9))],
    "Adamax": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1, eps=1e-3),
               dict(lr=0.05, maximize=True, betas=(0.7, 0.8))],
    "NAdam": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1),
              dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
              dict(lr=0.05, momentum_decay=0.05, betas=(0.8, 0.95)),
              dict(lr=0.05, maximize=True)],
    "RAdam": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1),
              dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
              dict(lr=0.05, maximize=True, betas=(0.8, 0.9)), dict(lr=0.05, eps=1e-2)],
    "RMSprop": [dict(lr=0.01), dict(lr=0.01, centered=True), dict(lr=0.01, momentum=0.9),
                dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1),
                dict(lr=0.01, maximize=True, alpha=0.9, eps=1e-3)],
    "Adagrad": [dict(lr=0.1), dict(lr=0.1, lr_decay=0.1),
                dict(lr=0.1, initial_accumulator_value=0.5, weight_decay=0.1, eps=1e-3),
                dict(lr=0.1, maximize=True)],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.5, weight_decay=0.1),
                 dict(lr=0.5, maximize=True, eps=1e-3)],
    "ASGD": [dict(lr=0.05), dict(lr=0.05, t0=4, lambd=1e-2, alpha=0.5),
             dict(lr=0.05, t0=2, weight_decay=0.1, maximize=True)],
    "Rprop": [dict(lr=0.05), dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)),
              dict(lr=0.05, maximize=True)],
}

TRAJECTORY_CASES = [pytest.param(name, options, id=f"{name}-{i}")
                    for name, cases in CASES.items() for i, options in enumerate(cases)]


def build(lib, name, params, options, placement):
    """``placement="defaults"``: the options are the optimizer's defaults and the second group
    only changes lr; ``"group"``: the first group uses the constructor defaults, the second the
    options, so per-group options are exercised."""
    cls = getattr(lib.optim, name)
    if placement == "defaults":
        lr = options.get("lr", 1.0)
        groups = [{"params": params[:2]}, {"params": params[2:], "lr": lr * 0.5}]
        return cls(groups, **options)
    groups = [{"params": params[:2]}, {"params": params[2:], **options}]
    return cls(groups)


# Scalar state torch's default (not capturable, not fused) optimizers keep on the host.
HOST_SCALARS = {"step", "mu_product"}


def assert_state_on(device, optimizer):
    """The parameters, and every state tensor but the host-side scalars, are on ``device``."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            assert p.device.type == device
            for key, value in optimizer.state.get(p, {}).items():
                if not isinstance(value, ember.Tensor) or value.device.type == device:
                    continue
                # torch's ASGD keeps even its step on the parameter's device
                assert not isinstance(optimizer, ember.optim.ASGD), \
                    f"ASGD state {key!r} on {value.device}, not {device}"
                assert key in HOST_SCALARS, f"state {key!r} on {value.device}, not {device}"


def run_both(name, options, placement, steps=STEPS, device="cpu"):
    torch_params, ember_params = make_params(torch), make_params(ember, device=device)
    torch_opt = build(torch, name, torch_params, options, placement)
    ember_opt = build(ember, name, ember_params, options, placement)
    for _ in range(steps):
        set_grads(torch, torch_params)
        set_grads(ember, ember_params)
        torch_opt.step()
        ember_opt.step()
        assert_params_equal(torch_params, ember_params)
    return torch_opt, ember_opt


@pytest.mark.parametrize("placement", ["defaults", "group"])
@pytest.mark.parametrize("name,options", TRAJECTORY_CASES)
def test_trajectory_matches_torch(name, options, placement, device):
    torch_opt, ember_opt = run_both(name, options, placement, device=device)
    # PyTorch's kernels fuse some multiply-adds (one rounding instead of two), so state that
    # cancels (RMSprop's centred variance) differs by more than its rounding, in absolute terms.
    assert_tree_equal(to_numpy(torch_opt.state_dict()), to_numpy(ember_opt.state_dict()),
                      atol=1e-5)
    assert repr(ember_opt) == repr(torch_opt)
    assert_state_on(device, ember_opt)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
                                  "Adagrad", "Adadelta", "ASGD", "Rprop"])
def test_lr_as_a_tensor(name, device):
    options = dict(CASES[name][-1])
    options["lr"] = 0.05
    torch_params, ember_params = make_params(torch), make_params(ember, device=device)
    torch_opt = getattr(torch.optim, name)(torch_params, **{**options, "lr": torch.tensor(0.05)})
    ember_opt = getattr(ember.optim, name)(ember_params, **{**options, "lr": ember.tensor(0.05)})
    for _ in range(STEPS):
        set_grads(torch, torch_params)
        set_grads(ember, ember_params)
        torch_opt.step()
        ember_opt.step()
    assert_params_equal(torch_params, ember_params)
    assert isinstance(ember_opt.param_groups[0]["lr"], ember.Tensor)
    assert_state_on(device, ember_opt)


def test_parameters_without_gradients_are_skipped(device):
    torch_params, ember_params = make_params(torch), make_params(ember, device=device)
    torch_opt = torch.optim.Adam(torch_params, lr=0.1)
    ember_opt = ember.optim.Adam(ember_params, lr=0.1)
    for _ in range(3):
        set_grads(torch, torch_params)
        set_grads(ember, ember_params)
        torch_params[1].grad = None
        ember_params[1].grad = None
        torch_opt.step()
        ember_opt.step()
    assert_params_equal(torch_params, ember_params)
    assert sorted(ember_opt.state_dict()["state"]) == sorted(torch_opt.state_dict()["state"])


def test_step_bumps_the_parameter_version(device):
    p = ember.ones(3, requires_grad=True, device=device)
    p.grad = ember.ones(3, device=device)
    before = p._version
    ember.optim.SGD([p], lr=0.1).step()
    assert p._version == before + 1


def test_update_is_in_place_and_not_recorded(device):
    p = ember.ones(3, requires_grad=True, device=device)
    data = p._data
    p.grad = ember.ones(3, device=device)
    ember.optim.Adam([p], lr=0.1).step()
    assert p._data is data and p.grad_fn is None and p.requires_grad


# ---- checkpoints move between the frameworks mid-training ------------------------------------

ROUND_TRIP_CASES = [pytest.param(name, CASES[name][min(3, len(CASES[name]) - 1)], id=name)
                    for name in CASES]


def _continue(lib, params, opt, steps):
    for _ in range(steps):
        set_grads(lib, params)
        opt.step()


def _copy_params(values, lib, device="cpu"):
    return [lib.tensor(to_numpy(v), requires_grad=True, **_on(lib, device)) for v in values]


@pytest.mark.parametrize("name,options", ROUND_TRIP_CASES)
def test_state_dict_round_trip_ember_to_ember(name, options, device):
    params = make_params(ember, device=device)
    opt = build(ember, name, params, options, "defaults")
    _continue(ember, params, opt, 6)
    saved = copy.deepcopy(opt.state_dict())
    resumed_params = _copy_params(params, ember, device)
    resumed = build(ember, name, resumed_params, {**options, "lr": 0.123}, "group")
    resumed.load_state_dict(saved)
    assert resumed.param_groups[1]["lr"] == opt.param_groups[1]["lr"]
    _continue(ember, params, opt, 6)
    _continue(ember, resumed_params, resumed, 6)
    # Loading casts scalar state (NAdam's mu_product, ASGD's eta) to a float64 parameter's
    # dtype, as PyTorch does, so that parameter's trajectory moves by float32 rounding.
    for a, b in zip(params, resumed_params):
        np.testing.assert_allclose(to_numpy(b), to_numpy(a), rtol=1e-6)
    assert_state_on(device, resumed)


@pytest.mark.parametrize("source_lib", ["torch", "ember"])
@pytest.mark.parametrize("name,options", ROUND_TRIP_CASES)
def test_state_dict_moves_between_frameworks(name, options, source_lib, device):
    """A checkpoint taken mid-training in one framework loads into both; the two resumed
    optimizers hold the same state and continue along the same trajectory."""
    source_lib = torch if source_lib == "torch" else ember
    source_params = make_params(source_lib, device=device)
    source = build(source_lib, name, source_params, options, "defaults")
    _continue(source_lib, source_params, source, 6)
    saved = source.state_dict()
    resumed = {}
    for lib in (torch, ember):
        params = _copy_params(source_params, lib, device)
        opt = build(lib, name, params, options, "defaults")
        opt.load_state_dict(convert_state_dict(saved, lib, device))
        resumed[lib] = params, opt
    (torch_params, torch_opt), (ember_params, ember_opt) = resumed[torch], resumed[ember]
    assert_tree_equal(to_numpy(torch_opt.state_dict()), to_numpy(ember_opt.state_dict()), 0, 0)
    _continue(torch, torch_params, torch_opt, 6)
    _continue(ember, ember_params, ember_opt, 6)
    assert_params_equal(torch_params, ember_params)
    assert_state_on(device, ember_opt)


# ---- complex parameters: PyTorch updates their real and imaginary parts as independent reals --

COMPLEX_CASES = [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=0.05, amsgrad=True)),
                 ("AdamW", dict(lr=0.05)), ("Adamax", dict(lr=0.05)), ("NAdam", dict(lr=0.05)),
                 ("RAdam", dict(lr=0.05)),
                 ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
                 ("Adagrad", dict(lr=0.1)), ("Adadelta", dict(lr=0.5)),
                 ("ASGD", dict(lr=0.05, t0=2)), ("Rprop", dict(lr=0.05))]


@pytest.mark.parametrize("name,options", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_parameters(name, options, device):
    rng = np.random.default_rng(0)

    def complex_array(shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype("complex64")
    initial = [complex_array((3, 2)), complex_array(())]
    torch_params = [torch.tensor(a, requires_grad=True) for a in initial]
    ember_params = [ember.tensor(a, requires_grad=True, device=device) for a in initial]
    torch_opt = getattr(torch.optim, name)(torch_params, **options)
    ember_opt = getattr(ember.optim, name)(ember_params, **options)
    for _ in range(8):
        for t, e in zip(torch_params, ember_params):
            grad = complex_array(t.shape)
            t.grad, e.grad = torch.tensor(grad), ember.tensor(grad, device=device)
        torch_opt.step()
        ember_opt.step()
    for t, e in zip(torch_params, ember_params):
        np.testing.assert_allclose(to_numpy(e), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_tree_equal(to_numpy(torch_opt.state_dict()), to_numpy(ember_opt.state_dict()),
                      atol=1e-5)
    assert_state_on(device, ember_opt)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "RMSprop"])
def test_zero_learning_rate_leaves_parameters_unchanged(name, device):
    torch_params, ember_params = make_params(torch), make_params(ember, device=device)
    torch_opt = getattr(torch.optim, name)(torch_params, lr=0.0)
    ember_opt = getattr(ember.optim, name)(ember_params, lr=0.0)
    for _ in range(2):
        set_grads(torch, torch_params)
        set_grads(ember, ember_params)
        torch_opt.step()
        ember_opt.step()
    assert_params_equal(torch_params, ember_params, rtol=0, atol=0)
