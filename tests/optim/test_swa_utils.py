"""ember.optim.swa_utils against torch.optim.swa_utils: averaged weights and buffers after
several updates from identical models, state_dict layout, SWALR's learning rates, update_bn."""
import copy
import importlib

import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare_error


def swa_utils(lib):
    return importlib.import_module(lib.__name__ + ".optim.swa_utils")


def make_model(lib, dtype="float32"):
    """Parameters of several shapes, a float buffer, an integer buffer, and a submodule, so that
    state_dict keys nest. Built the same way for both libraries; weights set by the caller."""
    nn = lib.nn
    float_type = getattr(lib, dtype)

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.zeros(4, 3, dtype=float_type))
            self.register_buffer("running", lib.zeros(3, dtype=float_type))

        def forward(self, x):
            return x @ self.weight + self.running

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(lib.zeros(4, dtype=float_type))
            self.inner = Inner()
            self.bias = nn.Parameter(lib.zeros(2, 1, 3, dtype=float_type))
            self.register_buffer("counter", lib.zeros((), dtype=lib.long))

        def forward(self, x):
            return self.inner(x * self.scale) + self.bias

    return Model()


def set_state(models, rng, step):
    """Give both models the same new random weights and buffers."""
    torch_model, ember_model = models
    for (name, t_value), (e_name, e_value) in zip(torch_model.state_dict().items(),
                                                  ember_model.state_dict().items(), strict=True):
        assert name == e_name
        if t_value.is_floating_point():
            values = rng.standard_normal(tuple(t_value.shape))
        else:
            values = np.full(tuple(t_value.shape), 3 * step + 1)
        with torch.no_grad():
            t_value.copy_(torch.tensor(values, dtype=t_value.dtype))
        with ember.no_grad():
            e_value.copy_(ember.tensor(values, dtype=e_value.dtype))


AVERAGING = {
    "swa": lambda S: {},
    "swa_buffers": lambda S: {"use_buffers": True},
    "swa_multi": lambda S: {"multi_avg_fn": S.get_swa_multi_avg_fn()},
    "swa_avg_fn": lambda S: {"avg_fn": S.get_swa_avg_fn()},
    "ema_multi": lambda S: {"multi_avg_fn": S.get_ema_multi_avg_fn(0.9)},
    "ema_multi_buffers": lambda S: {"multi_avg_fn": S.get_ema_multi_avg_fn(0.75),
                                    "use_buffers": True},
    "ema_avg_fn": lambda S: {"avg_fn": S.get_ema_avg_fn(0.8)},
    "ema_avg_fn_buffers": lambda S: {"avg_fn": S.get_ema_avg_fn(), "use_buffers": True},
    "custom_avg_fn": lambda S: {"avg_fn": lambda avg, new, n: avg * 0.5 + new * 0.5 + n},
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("averaging", list(AVERAGING))
def test_averaged_model_matches_torch(averaging, dtype):
    rng = np.random.default_rng(0)
    models = (make_model(torch, dtype), make_model(ember, dtype))
    set_state(models, rng, 0)
    averaged = [swa_utils(lib).AveragedModel(model, **AVERAGING[averaging](swa_utils(lib)))
                for lib, model in zip((torch, ember), models)]
    assert list(averaged[1].state_dict()) == list(averaged[0].state_dict())
    x = rng.standard_normal((5, 4))
    for step in range(6):
        set_state(models, rng, step)
        for average, model in zip(averaged, models):
            average.update_parameters(model)
        tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 0}
        assert_same(dict(averaged[0].state_dict()), dict(averaged[1].state_dict()), **tol)
        assert_same(averaged[0](torch.tensor(x, dtype=getattr(torch, dtype))),
                    averaged[1](ember.tensor(x, dtype=getattr(ember, dtype))), rtol=1e-5, atol=1e-5)


def test_averaged_model_takes_torch_state_dict_and_keeps_its_own_copy():
    rng = np.random.default_rng(1)
    models = (make_model(torch), make_model(ember))
    set_state(models, rng, 0)
    t_avg = swa_utils(torch).AveragedModel(models[0], device="cpu")
    e_avg = swa_utils(ember).AveragedModel(models[1], device="cpu")
    assert e_avg.n_averaged.device == ember.device("cpu")
    for step in range(3):
        set_state(models, rng, step)
        t_avg.update_parameters(models[0])
    e_avg.load_state_dict({key: ember.tensor(value.numpy())
                           for key, value in t_avg.state_dict().items()})
    assert int(e_avg.n_averaged) == 3
    set_state(models, rng, 3)
    t_avg.update_parameters(models[0])
    e_avg.update_parameters(models[1])
    assert_same(dict(t_avg.state_dict()), dict(e_avg.state_dict()))
    # The averaged copy is independent of the model it was built from.
    assert e_avg.module.scale is not models[1].scale
    assert not np.allclose(np.asarray(e_avg.module.scale.detach()),
                           np.asarray(models[1].scale.detach()))


def test_averaged_model_on_another_device_averages_models_from_the_cpu():
    """The copy lives on ``device`` (the test backend); each update moves the model's tensors
    there. Values as PyTorch's average kept on the CPU."""
    rng = np.random.default_rng(7)
    models = (make_model(torch), make_model(ember))
    set_state(models, rng, 0)
    t_avg = swa_utils(torch).AveragedModel(models[0], use_buffers=True,
                                           multi_avg_fn=swa_utils(torch).get_ema_multi_avg_fn(0.5))
    e_avg = swa_utils(ember).AveragedModel(models[1], device="testdev", use_buffers=True,
                                           multi_avg_fn=swa_utils(ember).get_ema_multi_avg_fn(0.5))
    for step in range(4):
        set_state(models, rng, step)
        t_avg.update_parameters(models[0])
        e_avg.update_parameters(models[1])
    assert {value.device.type for value in e_avg.state_dict().values()} == {"testdev"}
    assert_same(dict(t_avg.state_dict()),
                {key: value.to("cpu") for key, value in e_avg.state_dict().items()})


def test_averaged_model_rejects_two_averaging_functions():
    def build(lib):
        S = swa_utils(lib)
        return S.AveragedModel(make_model(lib), avg_fn=S.get_swa_avg_fn(),
                               multi_avg_fn=S.get_swa_multi_avg_fn())
    compare_error(build)


@pytest.mark.parametrize("factory", ["get_ema_multi_avg_fn", "get_ema_avg_fn"])
@pytest.mark.parametrize("decay", [-0.1, 1.5])
def test_ema_decay_must_be_in_unit_interval(factory, decay):
    compare_error(lambda lib: getattr(swa_utils(lib), factory)(decay))


def test_averaging_functions_alone_match_torch():
    rng = np.random.default_rng(2)
    shapes = [(3, 2), (4,)]
    averaged_np = [rng.standard_normal(s) for s in shapes]
    current_np = [rng.standard_normal(s) for s in shapes]
    for factory, args in [("get_swa_multi_avg_fn", ()), ("get_ema_multi_avg_fn", (0.6,))]:
        for num_averaged in (3, "tensor"):
            results = {}
            for lib in (torch, ember):
                averaged = [lib.tensor(a, dtype=lib.float32) for a in averaged_np]
                current = [lib.tensor(c, dtype=lib.float32) for c in current_np]
                n = lib.tensor(3) if num_averaged == "tensor" else num_averaged
                getattr(swa_utils(lib), factory)(*args)(averaged, current, n)
                results[lib] = averaged
            assert_same(results[torch], results[ember])
    for factory, args in [("get_swa_avg_fn", ()), ("get_ema_avg_fn", (0.6,))]:
        results = {lib: getattr(swa_utils(lib), factory)(*args)(
            lib.tensor(averaged_np[0]), lib.tensor(current_np[0]), lib.tensor(2))
            for lib in (torch, ember)}
        assert_same(results[torch], results[ember])


def test_ema_multi_avg_fn_updates_integer_tensors_like_torch():
    results = {}
    for lib in (torch, ember):
        ema = [lib.tensor([10, 20, -7]), lib.tensor([4])]
        swa_utils(lib).get_ema_multi_avg_fn(0.3)(ema, [lib.tensor([1, 5, 6]), lib.tensor([9])], 2)
        results[lib] = ema
    assert_same(results[torch], results[ember])


@pytest.mark.parametrize("num_averaged", ["int", "tensor"])
def test_swa_multi_avg_fn_refuses_integer_tensors_like_torch(num_averaged):
    def update(lib):
        n = lib.tensor(2) if num_averaged == "tensor" else 2
        swa_utils(lib).get_swa_multi_avg_fn()([lib.tensor([10, 20])], [lib.tensor([1, 5])], n)
    compare_error(update)


def test_averaged_model_swa_multi_with_integer_buffers_raises_like_torch():
    def update_twice(lib):
        S = swa_utils(lib)
        model = make_model(lib)
        averaged = S.AveragedModel(model, multi_avg_fn=S.get_swa_multi_avg_fn(), use_buffers=True)
        averaged.update_parameters(model)
        averaged.update_parameters(model)
    compare_error(update_twice)


# ---- SWALR -------------------------------------------------------------------------------------

GROUP_LRS = [0.1, 0.05, 0.3]


def make_optimizer(lib):
    optim = importlib.import_module(lib.__name__ + ".optim")
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in GROUP_LRS]
    return optim.SGD(groups, lr=0.01, momentum=0.9)


def assert_lrs_identical(torch_pair, ember_pair):
    (t_opt, t_sched), (e_opt, e_sched) = torch_pair, ember_pair
    assert e_sched.get_last_lr() == t_sched.get_last_lr()
    for t_group, e_group in zip(t_opt.param_groups, e_opt.param_groups, strict=True):
        for key in ("lr", "initial_lr", "swa_lr"):
            assert e_group[key] == t_group[key] and type(e_group[key]) is type(t_group[key])


SWALR_CONFIGS = {
    "cos": {"swa_lr": 0.02},
    "linear": {"swa_lr": 0.02, "anneal_strategy": "linear", "anneal_epochs": 5},
    "per_group": {"swa_lr": [0.01, 0.2, 0.03], "anneal_epochs": 7},
    "no_annealing": {"swa_lr": 0.05, "anneal_epochs": 0},
    "one_epoch": {"swa_lr": 0.05, "anneal_epochs": 1, "anneal_strategy": "linear"},
}


def build_pairs(build):
    pairs = {}
    for lib in (torch, ember):
        optimizer = make_optimizer(lib)
        pairs[lib] = (optimizer, build(swa_utils(lib), importlib.import_module(
            lib.__name__ + ".optim.lr_scheduler"), optimizer))
    return pairs


def step_all(pairs):
    for optimizer, scheduler in pairs.values():
        optimizer.step()
        scheduler.step()


@pytest.mark.parametrize("config", list(SWALR_CONFIGS))
def test_swalr_matches_torch(config):
    pairs = build_pairs(lambda S, L, o: S.SWALR(o, **SWALR_CONFIGS[config]))
    assert_lrs_identical(pairs[torch], pairs[ember])
    for _ in range(40):
        step_all(pairs)
        assert_lrs_identical(pairs[torch], pairs[ember])
    assert pairs[ember][1].state_dict() == pairs[torch][1].state_dict()


def test_swalr_after_cosine_schedule_as_in_the_swa_recipe():
    """Cosine annealing until swa_start, SWALR afterwards (both act on the same optimizer)."""
    swa_start = 15
    schedulers = {}
    for lib in (torch, ember):
        optimizer = make_optimizer(lib)
        L = importlib.import_module(lib.__name__ + ".optim.lr_scheduler")
        schedulers[lib] = (optimizer, L.CosineAnnealingLR(optimizer, T_max=30),
                           swa_utils(lib).SWALR(optimizer, swa_lr=0.01, anneal_epochs=6))
    for epoch in range(45):
        for optimizer, cosine, swa in schedulers.values():
            optimizer.step()
            (swa if epoch >= swa_start else cosine).step()
        for t_group, e_group in zip(schedulers[torch][0].param_groups,
                                    schedulers[ember][0].param_groups):
            assert e_group["lr"] == t_group["lr"]


def test_swalr_state_dict_round_trip():
    pairs = build_pairs(lambda S, L, o: S.SWALR(o, swa_lr=0.02, anneal_epochs=12,
                                                anneal_strategy="linear"))
    for _ in range(5):
        step_all(pairs)
    state = copy.deepcopy(pairs[torch][1].state_dict())
    optimizer = make_optimizer(ember)
    resumed = swa_utils(ember).SWALR(optimizer, swa_lr=0.5)
    for e_group, t_group in zip(optimizer.param_groups, pairs[torch][0].param_groups):
        e_group.update({key: t_group[key] for key in ("lr", "initial_lr", "swa_lr")})
    resumed.load_state_dict(state)
    assert resumed.anneal_func(0.5) == 0.5  # linear again after loading
    pairs[ember] = (optimizer, resumed)
    for _ in range(15):
        step_all(pairs)
        assert_lrs_identical(pairs[torch], pairs[ember])


@pytest.mark.parametrize("kwargs", [{"swa_lr": 0.1, "anneal_strategy": "exp"},
                                    {"swa_lr": 0.1, "anneal_epochs": -1},
                                    {"swa_lr": 0.1, "anneal_epochs": 2.5},
                                    {"swa_lr": [0.1, 0.2]}])
def test_swalr_bad_arguments_raise_like_torch(kwargs):
    compare_error(lambda lib: swa_utils(lib).SWALR(make_optimizer(lib), **kwargs))


# ---- update_bn ---------------------------------------------------------------------------------

def make_bn_network(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6, momentum=0.3), nn.ReLU(),
                         nn.Linear(6, 3), nn.BatchNorm1d(3))


def twin_networks(rng):
    torch_net = make_bn_network(torch)
    ember_net = make_bn_network(ember)
    state = {}
    for key, value in torch_net.state_dict().items():
        # Stale statistics, as left by training with other weights.
        if key.endswith(("running_mean", "running_var")):
            value = torch.tensor(rng.uniform(0.5, 2.0, tuple(value.shape)), dtype=value.dtype)
        elif key.endswith("num_batches_tracked"):
            value = torch.tensor(17)
        state[key] = value
    torch_net.load_state_dict(state)
    ember_net.load_state_dict({key: ember.tensor(value.numpy()) for key, value in state.items()})
    return torch_net, ember_net


@pytest.mark.parametrize("batches_as", ["tensors", "tuples"])
def test_update_bn_recomputes_running_statistics_like_torch(batches_as):
    rng = np.random.default_rng(4)
    nets = twin_networks(rng)
    for net in nets:
        net.eval()
    inputs = [rng.standard_normal((5, 4)) for _ in range(4)]
    for lib, net in zip((torch, ember), nets):
        batches = [lib.tensor(x, dtype=lib.float32) for x in inputs]
        if batches_as == "tuples":
            batches = [(x, lib.zeros(5)) for x in batches]
        swa_utils(lib).update_bn(batches, net, device="cpu" if batches_as == "tuples" else None)
    assert_same(dict(nets[0].state_dict()), dict(nets[1].state_dict()), rtol=1e-5, atol=1e-6)
    assert not nets[1].training
    assert [m.momentum for m in nets[1] if isinstance(m, ember.nn.BatchNorm1d)] == [0.3, 0.1]


def test_update_bn_keeps_training_mode_and_ignores_models_without_batchnorm():
    rng = np.random.default_rng(5)
    net = twin_networks(rng)[1]
    net.train()
    swa_utils(ember).update_bn([ember.randn(3, 4)], net)
    assert net.training
    plain = ember.nn.Linear(4, 2)
    before = {key: np.asarray(value).copy() for key, value in plain.state_dict().items()}
    swa_utils(ember).update_bn([ember.randn(3, 4)], plain)
    for key, value in plain.state_dict().items():
        np.testing.assert_array_equal(np.asarray(value), before[key])


def test_swa_recipe_averaged_network_then_update_bn():
    """AveragedModel over a few snapshots of a BatchNorm network, then update_bn on the average:
    weights, statistics and outputs as PyTorch's."""
    rng = np.random.default_rng(6)
    nets = twin_networks(rng)
    averaged = [swa_utils(lib).AveragedModel(net) for lib, net in zip((torch, ember), nets)]
    for _ in range(4):
        snapshot = {key: rng.standard_normal(tuple(value.shape))
                    for key, value in nets[0].state_dict().items() if value.is_floating_point()}
        nets[0].load_state_dict({k: torch.tensor(v, dtype=torch.float32)
                                 for k, v in snapshot.items()}, strict=False)
        nets[1].load_state_dict({k: ember.tensor(v, dtype=ember.float32)
                                 for k, v in snapshot.items()}, strict=False)
        for average, net in zip(averaged, nets):
            average.update_parameters(net)
    inputs = [rng.standard_normal((6, 4)) for _ in range(3)]
    for lib, average in zip((torch, ember), averaged):
        swa_utils(lib).update_bn([lib.tensor(x, dtype=lib.float32) for x in inputs], average)
    assert_same(dict(averaged[0].state_dict()), dict(averaged[1].state_dict()),
                rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((2, 4))
    assert_same(averaged[0].eval()(torch.tensor(x, dtype=torch.float32)),
                averaged[1].eval()(ember.tensor(x, dtype=ember.float32)), rtol=1e-4, atol=1e-5)
