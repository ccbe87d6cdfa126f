"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: the learning rates (and cycled
momenta) after every step, state_dict contents and round trips, warnings and errors."""
import copy
import importlib
import math
import warnings

import numpy as np
import pytest
import torch

import ember
from torch_compare import compare_error

GROUP_LRS = [0.1, 0.05, 0.3]
# Everything a scheduler may write into a param group.
SCHEDULED_KEYS = ("lr", "initial_lr", "momentum", "betas", "max_lr", "min_lr", "max_momentum",
                  "base_momentum", "swa_lr")


def lr_scheduler(lib):
    return importlib.import_module(lib.__name__ + ".optim.lr_scheduler")


def make_optimizer(lib, kind="sgd", lrs=GROUP_LRS, tensor_lr=False):
    """One small parameter per group, each group with its own lr."""
    groups = [{"params": [lib.zeros(2, requires_grad=True)],
               "lr": lib.tensor(lr) if tensor_lr else lr} for lr in lrs]
    optim = importlib.import_module(lib.__name__ + ".optim")
    if kind == "sgd":
        return optim.SGD(groups, lr=0.01, momentum=0.9)
    if kind == "adam":
        return optim.Adam(groups, lr=0.01, betas=(0.9, 0.999))
    return optim.Adagrad(groups, lr=0.01)


def assert_value_same(expected, actual):
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, ember.Tensor), actual
        assert actual.dtype == getattr(ember, str(expected.dtype).split(".")[-1])
        np.testing.assert_allclose(actual.item(), expected.item(), rtol=1e-6)
    elif isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected), actual
        for e, a in zip(expected, actual):
            assert_value_same(e, a)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_value_same(expected[key], actual[key])
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual)
    else:
        # Python floats: the same operations in the same order give the very same number.
        assert actual == expected and type(actual) is type(expected), (actual, expected)


def assert_schedulers_agree(torch_pair, ember_pair):
    (t_opt, t_sched), (e_opt, e_sched) = torch_pair, ember_pair
    assert_value_same(t_sched.get_last_lr(), e_sched.get_last_lr())
    for t_group, e_group in zip(t_opt.param_groups, e_opt.param_groups, strict=True):
        for key in SCHEDULED_KEYS:
            assert (key in t_group) == (key in e_group), key
            if key in t_group:
                assert_value_same(t_group[key], e_group[key])


def recorded_warnings(action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [(w.category, str(w.message)) for w in caught if w.category is UserWarning]


def run_both(build, steps=45, kind="sgd", lrs=GROUP_LRS, step_args=None, tensor_lr=False,
             step_optimizer=True):
    """Build the scheduler on a torch and an Ember optimizer and step both ``steps`` times,
    comparing learning rates, scheduled group entries and warnings after every step."""
    pairs = {}
    for lib in (torch, ember):
        optimizer = make_optimizer(lib, kind, lrs, tensor_lr)
        pairs[lib] = (optimizer, build(lr_scheduler(lib), optimizer))
    assert_schedulers_agree(pairs[torch], pairs[ember])
    for step in range(steps):
        args = step_args[step] if step_args is not None else ()
        caught = {}
        for lib, (optimizer, scheduler) in pairs.items():
            def advance():
                if step_optimizer:
                    optimizer.step()
                scheduler.step(*args)
            caught[lib] = recorded_warnings(advance)
        assert caught[ember] == caught[torch], step
        assert_schedulers_agree(pairs[torch], pairs[ember])
    return pairs


class Halving:
    """A callable object: LambdaLR saves its attributes in state_dict."""

    def __init__(self, every):
        self.every = every

    def __call__(self, epoch):
        return 0.5 ** (epoch // self.every)


SCHEDULES = {
    "lambda": lambda L, o: L.LambdaLR(o, lambda e: 0.95 ** e),
    "lambda_per_group": lambda L, o: L.LambdaLR(
        o, [lambda e: 0.95 ** e, Halving(6), lambda e: 1.0 / (1 + e)]),
    "multiplicative": lambda L, o: L.MultiplicativeLR(o, lambda e: 0.97),
    "multiplicative_per_group": lambda L, o: L.MultiplicativeLR(
        o, [lambda e: 0.97, lambda e: 1.01, lambda e: 0.9 if e % 3 == 0 else 1.0]),
    "step": lambda L, o: L.StepLR(o, step_size=7, gamma=0.5),
    "step_default_gamma": lambda L, o: L.StepLR(o, 3),
    "multistep": lambda L, o: L.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3),
    "constant": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=8),
    "constant_default": lambda L, o: L.ConstantLR(o),
    "linear": lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=20),
    "linear_default": lambda L, o: L.LinearLR(o),
    "linear_decay": lambda L, o: L.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=30),
    "exponential": lambda L, o: L.ExponentialLR(o, gamma=0.93),
    "polynomial": lambda L, o: L.PolynomialLR(o, total_iters=25, power=2.0),
    "polynomial_default": lambda L, o: L.PolynomialLR(o),
    "cosine": lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "cosine_no_min": lambda L, o: L.CosineAnnealingLR(o, T_max=7),
    "warm_restarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=5, eta_min=0.01),
    "warm_restarts_mult": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "cyclic_triangular": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                                 step_size_down=6),
    "cyclic_triangular2": lambda L, o: L.CyclicLR(o, base_lr=[0.01, 0.02, 0.005],
                                                  max_lr=[0.1, 0.2, 0.3], step_size_up=5,
                                                  mode="triangular2"),
    "cyclic_exp_range": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                mode="exp_range", gamma=0.97,
                                                base_momentum=[0.7, 0.8, 0.85],
                                                max_momentum=0.95),
    "cyclic_scale_fn_cycle": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=4,
                                                     scale_fn=lambda x: 1 / x),
    "cyclic_scale_fn_iterations": lambda L, o: L.CyclicLR(
        o, 0.01, 0.1, step_size_up=4, scale_fn=lambda x: 0.99 ** x, scale_mode="iterations"),
    "cyclic_no_momentum": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=6,
                                                  cycle_momentum=False),
    "onecycle_cos": lambda L, o: L.OneCycleLR(o, max_lr=0.5, total_steps=45),
    "onecycle_linear": lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 0.3, 1.0], total_steps=50,
                                                 anneal_strategy="linear", pct_start=0.25),
    "onecycle_three_phase": lambda L, o: L.OneCycleLR(o, max_lr=0.5, epochs=9, steps_per_epoch=5,
                                                      three_phase=True, div_factor=10.0,
                                                      final_div_factor=100.0),
    "onecycle_momenta": lambda L, o: L.OneCycleLR(o, max_lr=0.5, total_steps=45,
                                                  base_momentum=[0.8, 0.85, 0.7],
                                                  max_momentum=0.99),
    "onecycle_no_momentum": lambda L, o: L.OneCycleLR(o, max_lr=0.5, total_steps=60,
                                                      cycle_momentum=False),
    "sequential": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=5), L.CosineAnnealingLR(o, T_max=20)],
        milestones=[5]),
    "sequential_three": lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, factor=0.2, total_iters=10), L.ExponentialLR(o, 0.9),
            L.StepLR(o, 4, gamma=0.5)], milestones=[4, 15]),
    "chained": lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.1, total_iters=4),
                                                L.ExponentialLR(o, gamma=0.9)]),
    "chained_with_optimizer": lambda L, o: L.ChainedScheduler(
        [L.LinearLR(o, total_iters=10), L.MultiStepLR(o, [8, 20]), L.CosineAnnealingLR(o, 12)],
        optimizer=o),
    "chained_with_sequential": lambda L, o: L.ChainedScheduler([
        L.SequentialLR(o, [L.LinearLR(o, total_iters=6), L.ExponentialLR(o, 0.95)],
                       milestones=[6]),
        L.StepLR(o, 10, gamma=0.5)]),
}
MOMENTUM_SCHEDULES = [name for name in SCHEDULES
                      if name.startswith(("cyclic", "onecycle")) and "no_momentum" not in name]


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_learning_rates_match_torch(name):
    steps = {"onecycle_linear": 50, "onecycle_no_momentum": 60}.get(name, 45)
    run_both(SCHEDULES[name], steps=steps)


@pytest.mark.parametrize("name", MOMENTUM_SCHEDULES)
def test_adam_beta1_is_cycled_like_torch(name):
    run_both(SCHEDULES[name], kind="adam")


@pytest.mark.parametrize("name", ["step", "multistep", "linear", "exponential", "cosine",
                                  "warm_restarts_mult", "cyclic_triangular2", "onecycle_cos",
                                  "sequential", "chained", "multiplicative", "polynomial"])
def test_tensor_lr_is_filled_in_place(name):
    pairs = run_both(SCHEDULES[name], tensor_lr=True, steps=20)
    optimizer, scheduler = pairs[ember]
    lr_tensors = [group["lr"] for group in optimizer.param_groups]
    handed_out = scheduler.get_last_lr()
    values = [lr.item() for lr in handed_out]
    for opt, sched in pairs.values():
        opt.step()
        sched.step()
    assert_schedulers_agree(pairs[torch], pairs[ember])
    assert all(group["lr"] is lr for group, lr in zip(optimizer.param_groups, lr_tensors))
    # get_last_lr hands out copies, which later steps leave alone.
    assert [lr.item() for lr in handed_out] == values


def epoch_steps(epochs):
    return [(epoch,) for epoch in epochs]


CLOSED_FORM_EPOCHS = [1, 2, 3, 7, 8, 8, 5, 12, 20, 13, 30, 31, 0, 44, 9, 60]


@pytest.mark.parametrize("name", ["step", "multistep", "constant", "linear", "exponential",
                                  "polynomial", "cosine", "lambda", "warm_restarts",
                                  "warm_restarts_mult"])
def test_explicit_epoch_uses_closed_form_like_torch(name):
    run_both(SCHEDULES[name], steps=len(CLOSED_FORM_EPOCHS),
             step_args=epoch_steps(CLOSED_FORM_EPOCHS))


@pytest.mark.parametrize("name", ["warm_restarts", "warm_restarts_mult"])
def test_warm_restarts_with_fractional_epochs(name):
    batches = 4
    epochs = [epoch + batch / batches for epoch in range(12) for batch in range(batches)]
    run_both(SCHEDULES[name], steps=len(epochs), step_args=epoch_steps(epochs))


def test_onecycle_refuses_to_step_past_total_steps():
    pairs = run_both(SCHEDULES["onecycle_cos"], steps=45)

    def one_more(lib):
        pairs[lib][1].step()
    compare_error(one_more)


PLATEAU_CONFIGS = {
    "default": {},
    "patience_factor": {"patience": 2, "factor": 0.5},
    "max_mode": {"mode": "max", "patience": 1},
    "abs_threshold": {"threshold_mode": "abs", "threshold": 0.05, "patience": 1},
    "max_abs": {"mode": "max", "threshold_mode": "abs", "threshold": 0.1, "patience": 0},
    "cooldown": {"patience": 1, "cooldown": 3, "factor": 0.7},
    "min_lr_list": {"patience": 0, "factor": 0.5, "min_lr": [0.01, 0.02, 0.001]},
    "min_lr_scalar": {"patience": 1, "factor": 0.3, "min_lr": 0.004},
    "large_eps": {"patience": 0, "factor": 0.5, "eps": 0.01},
}


def metric_sequence():
    """Improves, stalls, gets noisy, improves again: every branch of the plateau logic."""
    rng = np.random.default_rng(3)
    values = np.concatenate([np.linspace(1.0, 0.5, 12), np.full(10, 0.5),
                             0.5 + 0.05 * rng.standard_normal(18), np.linspace(0.5, 0.2, 10),
                             0.2 + 0.01 * rng.standard_normal(10)])
    return [float(v) for v in values]


@pytest.mark.parametrize("config", list(PLATEAU_CONFIGS))
def test_reduce_on_plateau_matches_torch(config):
    metrics = metric_sequence()
    pairs = run_both(lambda L, o: L.ReduceLROnPlateau(o, **PLATEAU_CONFIGS[config]),
                     steps=len(metrics), step_args=[(m,) for m in metrics])
    t_sched, e_sched = pairs[torch][1], pairs[ember][1]
    for attr in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch"):
        assert getattr(e_sched, attr) == getattr(t_sched, attr), attr
    assert_value_same(t_sched.state_dict(), e_sched.state_dict())


def test_reduce_on_plateau_takes_tensor_metrics_and_tensor_lr():
    metrics = metric_sequence()[:40]
    pairs = {}
    for lib in (torch, ember):
        optimizer = make_optimizer(lib, tensor_lr=True)
        scheduler = lr_scheduler(lib).ReduceLROnPlateau(optimizer, patience=1, factor=0.5)
        for metric in metrics:
            scheduler.step(lib.tensor(metric))
        pairs[lib] = (optimizer, scheduler)
    assert_schedulers_agree(pairs[torch], pairs[ember])


# Schedulers whose state_dict holds only Python values, so torch's loads into Ember as it is.
ROUND_TRIP = ["lambda_per_group", "multiplicative", "step", "multistep", "constant", "linear",
              "exponential", "polynomial", "cosine", "warm_restarts_mult", "cyclic_triangular2",
              "cyclic_exp_range", "onecycle_three_phase", "sequential_three", "chained",
              "chained_with_sequential"]


def copy_group_settings(source, target):
    for s_group, t_group in zip(source.param_groups, target.param_groups, strict=True):
        t_group.update({key: value for key, value in s_group.items() if key in SCHEDULED_KEYS})


@pytest.mark.parametrize("name", ROUND_TRIP)
@pytest.mark.parametrize("source", ["ember", "torch"])
def test_state_dict_round_trip_mid_schedule(name, source):
    """Stop after 20 steps, rebuild optimizer and scheduler, load both state_dicts (saved by
    Ember, or by PyTorch), go on for 25 more: every lr as in an uninterrupted PyTorch run."""
    build = SCHEDULES[name]
    pairs = run_both(build, steps=20)
    saver = pairs[ember if source == "ember" else torch]
    saved_state = copy.deepcopy(saver[1].state_dict())
    if source == "torch":
        assert_value_same(saved_state, pairs[ember][1].state_dict())

    optimizer = make_optimizer(ember)
    scheduler = build(lr_scheduler(ember), optimizer)
    copy_group_settings(saver[0], optimizer)
    scheduler.load_state_dict(saved_state)
    resumed = (optimizer, scheduler)
    assert_schedulers_agree(pairs[torch], resumed)
    t_opt, t_sched = pairs[torch]
    for _ in range(25):
        for opt, sched in ((t_opt, t_sched), resumed):
            opt.step()
            sched.step()
        assert_schedulers_agree(pairs[torch], resumed)


@pytest.mark.parametrize("name", ["step", "cyclic_exp_range", "onecycle_linear", "sequential",
                                  "chained", "warm_restarts"])
def test_state_dict_has_torch_keys_and_values(name):
    pairs = run_both(SCHEDULES[name], steps=7)
    assert_value_same(pairs[torch][1].state_dict(), pairs[ember][1].state_dict())


def test_lambda_state_dict_saves_callable_objects_only():
    optimizer = make_optimizer(ember)
    halving = Halving(6)
    scheduler = lr_scheduler(ember).LambdaLR(optimizer, [lambda e: 1.0, halving, halving])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [None, {"every": 6}, {"every": 6}]
    halving.every = 2
    scheduler.load_state_dict(state)
    assert halving.every == 6
    assert "lr_lambdas" in state


def test_resume_with_last_epoch_needs_initial_lr():
    compare_error(lambda lib: lr_scheduler(lib).StepLR(make_optimizer(lib), 3, last_epoch=4))


def test_resume_with_last_epoch_continues_schedule():
    def build(L, o):
        for group in o.param_groups:
            group["initial_lr"] = group["lr"] * 2
        return L.CosineAnnealingLR(o, T_max=10, last_epoch=4)
    run_both(build, steps=20)


def test_warns_when_scheduler_steps_before_optimizer():
    messages = {}
    for lib in (torch, ember):
        scheduler = lr_scheduler(lib).ExponentialLR(make_optimizer(lib), 0.9)
        messages[lib] = recorded_warnings(scheduler.step)
    assert messages[ember] == messages[torch]
    assert "before `optimizer.step()`" in messages[torch][0][1]
    run_both(SCHEDULES["step"], steps=3, step_optimizer=False)


def test_warns_when_optimizer_step_replaced_after_scheduler():
    messages = {}
    for lib in (torch, ember):
        optimizer = make_optimizer(lib)
        scheduler = lr_scheduler(lib).ExponentialLR(optimizer, 0.9)
        optimizer.step = lambda: None
        messages[lib] = recorded_warnings(scheduler.step)
    assert messages[ember] == messages[torch]
    assert "overridden after learning rate scheduler" in messages[torch][0][1]


def test_get_lr_outside_step_warns_like_torch():
    messages = {}
    for lib in (torch, ember):
        scheduler = lr_scheduler(lib).StepLR(make_optimizer(lib), 3)
        messages[lib] = recorded_warnings(scheduler.get_lr)
    assert messages[ember] == messages[torch] and messages[torch]


def test_not_an_optimizer():
    compare_error(lambda lib: lr_scheduler(lib).StepLR(object(), 3))


BAD_ARGUMENTS = {
    "constant_factor": lambda L, o: L.ConstantLR(o, factor=1.5),
    "linear_start": lambda L, o: L.LinearLR(o, start_factor=0.0),
    "linear_end": lambda L, o: L.LinearLR(o, end_factor=1.5),
    "lambda_count": lambda L, o: L.LambdaLR(o, [lambda e: 1.0]),
    "multiplicative_not_callable": lambda L, o: L.MultiplicativeLR(o, [0.9, 0.9, 0.9]),
    "warm_restarts_T_0": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=0),
    "warm_restarts_T_mult": lambda L, o: L.CosineAnnealingWarmRestarts(o, 3, T_mult=1.5),
    "warm_restarts_eta_min": lambda L, o: L.CosineAnnealingWarmRestarts(o, 3, eta_min="0"),
    "warm_restarts_negative_epoch": lambda L, o: L.CosineAnnealingWarmRestarts(o, 3).step(-1),
    "cyclic_mode": lambda L, o: L.CyclicLR(o, 0.01, 0.1, mode="square"),
    "cyclic_max_lr_count": lambda L, o: L.CyclicLR(o, 0.01, [0.1, 0.2]),
    "onecycle_no_length": lambda L, o: L.OneCycleLR(o, 0.1),
    "onecycle_total_steps": lambda L, o: L.OneCycleLR(o, 0.1, total_steps=0),
    "onecycle_epochs": lambda L, o: L.OneCycleLR(o, 0.1, epochs=2.5, steps_per_epoch=3),
    "onecycle_steps_per_epoch": lambda L, o: L.OneCycleLR(o, 0.1, epochs=2, steps_per_epoch=0),
    "onecycle_pct_start": lambda L, o: L.OneCycleLR(o, 0.1, total_steps=10, pct_start=1),
    "onecycle_anneal": lambda L, o: L.OneCycleLR(o, 0.1, total_steps=10, anneal_strategy="x"),
    "plateau_factor": lambda L, o: L.ReduceLROnPlateau(o, factor=1.0),
    "plateau_mode": lambda L, o: L.ReduceLROnPlateau(o, mode="up"),
    "plateau_threshold_mode": lambda L, o: L.ReduceLROnPlateau(o, threshold_mode="pct"),
    "plateau_min_lr_count": lambda L, o: L.ReduceLROnPlateau(o, min_lr=[0.1]),
    "sequential_empty": lambda L, o: L.SequentialLR(o, [], milestones=[]),
    "sequential_milestones": lambda L, o: L.SequentialLR(o, [L.StepLR(o, 2)], milestones=[3]),
    "sequential_plateau": lambda L, o: L.SequentialLR(o, [L.ReduceLROnPlateau(o)], []),
    "sequential_no_optimizer": lambda L, o: L.SequentialLR(o, [object()], []),
    "chained_empty": lambda L, o: L.ChainedScheduler([]),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_like_torch(case):
    compare_error(lambda lib: BAD_ARGUMENTS[case](lr_scheduler(lib), make_optimizer(lib)))


@pytest.mark.parametrize("scheduler", ["CyclicLR", "OneCycleLR"])
def test_cycle_momentum_needs_momentum(scheduler):
    def build(lib):
        L = lr_scheduler(lib)
        optimizer = make_optimizer(lib, kind="adagrad")
        if scheduler == "CyclicLR":
            return L.CyclicLR(optimizer, 0.01, 0.1)
        return L.OneCycleLR(optimizer, 0.1, total_steps=10)
    compare_error(build)


def test_sequential_rejects_scheduler_of_another_optimizer():
    def build(lib):
        L = lr_scheduler(lib)
        first, second = make_optimizer(lib), make_optimizer(lib)
        return L.SequentialLR(first, [L.StepLR(first, 2), L.StepLR(second, 2)], milestones=[3])
    compare_error(build, gist="expects all schedulers to belong to the same optimizer")
