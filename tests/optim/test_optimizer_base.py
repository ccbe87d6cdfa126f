"""The Optimizer base against torch.optim.Optimizer: parameter groups, hooks, zero_grad,
state_dict loading rules, and PyTorch's errors for bad arguments."""
import copy
import importlib

import numpy as np
import pytest
import torch

import ember
from torch_compare import compare_error


def params(lib, n=3):
    return [lib.tensor(np.arange(i + 2, dtype="float32"), requires_grad=True) for i in range(n)]


def with_grads(lib, ps):
    for i, p in enumerate(ps):
        p.grad = lib.ones_like(p) * (i + 1)
    return ps


# ---- bad arguments ----------------------------------------------------------------------------

BAD_ARGUMENTS = [
    ("SGD", dict(lr=-0.1)),
    ("SGD", dict(lr=0.1, momentum=-0.5)),
    ("SGD", dict(lr=0.1, weight_decay=-1e-2)),
    ("SGD", dict(lr=0.1, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-0.1)),
    ("Adam", dict(betas=(1.0, 0.999))),
    ("Adam", dict(betas=(0.9, -0.1))),
    ("Adam", dict(betas=(0, 0.9))),
    ("Adam", dict(eps=-1e-8)),
    ("Adam", dict(weight_decay=-0.1)),
    ("AdamW", dict(betas=(0.9, 1.5))),
    ("Adamax", dict(betas=(-0.1, 0.9))),
    ("Adamax", dict(eps=-1.0)),
    ("NAdam", dict(momentum_decay=-1.0)),
    ("NAdam", dict(weight_decay=-1.0)),
    ("RAdam", dict(betas=(0.9, 1.0))),
    ("RMSprop", dict(alpha=-0.1)),
    ("RMSprop", dict(momentum=-0.1)),
    ("RMSprop", dict(eps=-0.1)),
    ("Adagrad", dict(lr_decay=-0.1)),
    ("Adagrad", dict(initial_accumulator_value=-0.1)),
    ("Adadelta", dict(rho=1.5)),
    ("Adadelta", dict(lr=-1.0)),
    ("ASGD", dict(weight_decay=-1.0)),
    ("Rprop", dict(etas=(1.5, 1.2))),
    ("Rprop", dict(etas=(0.5, 0.9))),
    ("LBFGS", dict(lr=-1.0)),
]


@pytest.mark.parametrize("name,options", BAD_ARGUMENTS,
                         ids=[f"{n}-{'-'.join(o)}" for n, o in BAD_ARGUMENTS])
def test_bad_hyperparameters_raise_like_torch(name, options):
    compare_error(lambda lib: getattr(lib.optim, name)(params(lib), **options))


def test_negative_learning_rate_message():
    with pytest.raises(ValueError, match="^Invalid learning rate: -0.1$"):
        ember.optim.SGD(params(ember), lr=-0.1)


def test_tensor_lr_must_have_one_element():
    compare_error(lambda lib: lib.optim.Adam(params(lib), lr=lib.tensor([0.1, 0.2])))


def test_bad_parameter_lists():
    compare_error(lambda lib: lib.optim.SGD([], lr=0.1))
    compare_error(lambda lib: lib.optim.SGD(lib.ones(2, requires_grad=True), lr=0.1))
    compare_error(lambda lib: lib.optim.SGD([{"params": set(params(lib))}], lr=0.1))
    compare_error(lambda lib: lib.optim.SGD([1.0], lr=0.1))
    compare_error(lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True) * 2], lr=0.1))

    def in_two_groups(lib):
        ps = params(lib)
        lib.optim.Adam([{"params": ps[:2]}, {"params": ps[1:]}])
    compare_error(in_two_groups)

    def added_twice(lib):
        ps = params(lib)
        opt = lib.optim.SGD(ps[:2], lr=0.1)
        opt.add_param_group({"params": ps[0]})
    compare_error(added_twice)


def test_required_hyperparameter():
    compare_error(lambda lib: _custom(lib)(params(lib)))


def _optimizer_module(lib):
    # torch.optim deletes its ``optimizer`` attribute; the module itself is importable.
    return importlib.import_module(lib.__name__ + ".optim.optimizer")


def _custom(lib):
    class Custom(lib.optim.Optimizer):
        def __init__(self, ps, lr=_optimizer_module(lib).required):
            super().__init__(ps, {"lr": lr})

        @lib.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.sub_(p.grad * group["lr"])
    return Custom


def test_user_subclass_with_its_own_step_runs_hooks_once():
    for lib in (torch, ember):
        ps = with_grads(lib, params(lib, 1))
        opt = _custom(lib)(ps, lr=0.5)
        calls = []
        opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
        opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
        opt.step()
        assert calls == ["pre", "post"]
        np.testing.assert_allclose(np.asarray(ps[0].detach()), [-0.5, 0.5])


def test_sparse_adam_is_provided():
    # its behaviour against torch: tests/sparse/test_sparse_gradients.py
    assert hasattr(torch.optim, "SparseAdam") and hasattr(ember.optim, "SparseAdam")
    assert "SparseAdam" in ember.optim.__all__


# ---- parameter groups ----------------------------------------------------------------------

def test_groups_are_filled_with_defaults_like_torch():
    def groups(lib):
        ps = params(lib)
        opt = lib.optim.Adam([{"params": ps[:1]}, {"params": ps[1:2], "lr": 0.5,
                                                   "amsgrad": True}], lr=0.01)
        opt.add_param_group({"params": ps[2], "betas": (0.5, 0.6)})
        return [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups], \
            [len(g["params"]) for g in opt.param_groups]
    assert groups(ember) == groups(torch)


def test_named_parameters_are_kept_in_the_state_dict():
    def named(lib):
        ps = params(lib, 2)
        opt = lib.optim.SGD([("a", ps[0]), ("b", ps[1])], lr=0.1, momentum=0.9)
        with_grads(lib, ps)
        opt.step()
        sd = opt.state_dict()
        return sd["param_groups"], sorted(sd["state"])
    assert named(ember) == named(torch)


def test_repr_matches_torch():
    def text(lib):
        ps = params(lib)
        return repr(lib.optim.RMSprop([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.5}]))
    assert text(ember) == text(torch)


def test_zero_grad():
    for set_to_none in (True, False):
        ps = with_grads(ember, params(ember))
        opt = ember.optim.SGD(ps, lr=0.1)
        opt.zero_grad(set_to_none=set_to_none)
        for p in ps:
            if set_to_none:
                assert p.grad is None
            else:
                assert p.grad is not None and not p.grad.requires_grad
                np.testing.assert_array_equal(np.asarray(p.grad), np.zeros(p.shape))


def test_closure_runs_with_grad_enabled_and_its_loss_is_returned():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        assert ember.is_grad_enabled()
        loss = (p ** 2).sum()
        loss.backward()
        return loss
    with ember.no_grad():
        loss = opt.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(np.asarray(p.detach()), [0.8, 1.6])
    assert p.grad_fn is None


# ---- hooks ------------------------------------------------------------------------------------

def test_step_hooks():
    ps = with_grads(ember, params(ember))
    opt = ember.optim.SGD(ps, lr=0.1)
    seen = []

    def pre(optimizer, args, kwargs):
        seen.append(("pre", optimizer is opt, args, kwargs))

    def post(optimizer, args, kwargs):
        seen.append(("post", optimizer is opt, args, kwargs))
    pre_handle = opt.register_step_pre_hook(pre)
    opt.register_step_post_hook(post)
    global_handle = ember.optim.optimizer.register_optimizer_step_pre_hook(
        lambda o, a, k: seen.append("global"))
    opt.step()
    assert seen == ["global", ("pre", True, (), {}), ("post", True, (), {})]
    pre_handle.remove()
    global_handle.remove()
    seen.clear()
    opt.step()
    assert seen == [("post", True, (), {})]


def test_step_pre_hook_may_replace_the_arguments():
    p = ember.tensor([1.0], requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * 3).sum()
        loss.backward()
        return loss
    opt.register_step_pre_hook(lambda o, args, kwargs: ((closure,), {}))
    assert float(opt.step()) == 3.0
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.register_step_pre_hook(lambda o, args, kwargs: "bad")
        opt.step()


def test_state_dict_hooks_like_torch():
    def run(lib):
        ps = with_grads(lib, params(lib))
        opt = lib.optim.Adam(ps, lr=0.1)
        opt.step()
        log = []
        opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
        opt.register_state_dict_post_hook(
            lambda o, sd: log.append("post") or {**sd, "extra": 1})
        opt.register_state_dict_post_hook(lambda o, sd: log.append("first"), prepend=True)
        sd = opt.state_dict()
        assert sd["extra"] == 1

        def load_pre(o, sd):
            log.append("load_pre")
            sd = dict(sd)
            sd.pop("extra")
            sd["param_groups"] = [dict(g, lr=0.25) for g in sd["param_groups"]]
            return sd
        opt.register_load_state_dict_pre_hook(load_pre)
        opt.register_load_state_dict_post_hook(lambda o: log.append("load_post"))
        opt.load_state_dict(sd)
        return log, opt.param_groups[0]["lr"]
    assert run(ember) == run(torch)


# ---- loading state ----------------------------------------------------------------------------

def test_load_state_dict_mismatches_raise_like_torch():
    def fewer_groups(lib):
        ps = with_grads(lib, params(lib))
        opt = lib.optim.Adam([{"params": ps[:1]}, {"params": ps[1:]}])
        opt.step()
        sd = opt.state_dict()
        lib.optim.Adam(ps).load_state_dict(sd)
    compare_error(fewer_groups)

    def different_sizes(lib):
        ps = with_grads(lib, params(lib))
        opt = lib.optim.Adam([{"params": ps[:1]}, {"params": ps[1:]}])
        opt.step()
        lib.optim.Adam([{"params": ps[:2]}, {"params": ps[2:]}]).load_state_dict(
            opt.state_dict())
    compare_error(different_sizes)


def test_load_casts_state_to_the_parameter_dtype_but_not_step():
    def loaded(lib):
        p64 = lib.tensor(np.ones(3), requires_grad=True)
        p64.grad = lib.ones(3, dtype=lib.float64)
        source = lib.optim.NAdam([p64])
        source.step()
        p32 = lib.tensor(np.ones(3, dtype="float32"), requires_grad=True)
        target = lib.optim.NAdam([p32])
        target.load_state_dict(source.state_dict())
        return {k: str(v.dtype).split(".")[-1] for k, v in target.state[p32].items()}
    assert loaded(ember) == loaded(torch) == {"step": "float32", "mu_product": "float32",
                                              "exp_avg": "float32", "exp_avg_sq": "float32"}


def test_loaded_state_is_a_copy_and_groups_keep_their_params():
    ps = with_grads(ember, params(ember))
    opt = ember.optim.Adam(ps, lr=0.1)
    opt.step()
    sd = opt.state_dict()
    other = ember.optim.Adam(ps, lr=0.5)
    other.load_state_dict(sd)
    assert other.param_groups[0]["params"] == ps or all(
        a is b for a, b in zip(other.param_groups[0]["params"], ps))
    assert other.param_groups[0]["lr"] == 0.1
    sd["param_groups"][0]["lr"] = 7.0
    assert other.param_groups[0]["lr"] == 0.1


def test_deepcopy_of_an_optimizer():
    ps = with_grads(ember, params(ember))
    opt = ember.optim.Adam(ps, lr=0.1)
    opt.step()
    clone = copy.deepcopy(opt)
    assert clone.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    clone.step()
    assert float(clone.state[clone.param_groups[0]["params"][0]]["step"]) == 2.0
    assert float(opt.state[ps[0]]["step"]) == 1.0
