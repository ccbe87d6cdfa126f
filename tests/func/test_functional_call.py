"""functional_call and stack_module_state against torch.func: swapping state for a call (and
restoring it, even on exception), tied weights, strict mode, model ensembling under vmap."""
import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
from ember.func import functional_call, stack_module_state, vmap, grad


def E(t):
    return ember.tensor(t.detach().numpy())


def close(a, b, tol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def _pair(make):
    tm, em = make(torch.nn), make(enn)
    em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})
    return tm, em


def test_functional_call_swaps_and_restores():
    tm, em = _pair(lambda nn: nn.Linear(3, 2))
    w, b = torch.randn(2, 3), torch.randn(2)
    x = torch.randn(4, 3)
    before = em.weight
    close(functional_call(em, {"weight": E(w), "bias": E(b)}, (E(x),)),
          torch.func.functional_call(tm, {"weight": w, "bias": b}, (x,)))
    # A tuple of dicts, a single non-tuple argument, kwargs.
    close(functional_call(em, ({"weight": E(w)}, {"bias": E(b)}), E(x)),
          torch.func.functional_call(tm, ({"weight": w}, {"bias": b}), x))
    assert em.weight is before and isinstance(em.weight, enn.Parameter)

    class Boom(enn.Module):
        def __init__(self):
            super().__init__()
            self.lin = enn.Linear(3, 2)

        def forward(self, x):
            raise ValueError("boom")
    m = Boom()
    original = m.lin.weight
    with pytest.raises(ValueError, match="boom"):
        functional_call(m, {"lin.weight": ember.zeros(2, 3)}, (E(x),))
    assert m.lin.weight is original


def test_functional_call_buffers_and_gradients():
    tm, em = _pair(lambda nn: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)))
    tm.eval()
    em.eval()
    x = torch.randn(5, 3)
    state_t = {k: v.clone() for k, v in tm.state_dict().items()}
    state_t["1.running_mean"] = torch.randn(4)
    state_e = {k: E(v) for k, v in state_t.items()}
    close(functional_call(em, state_e, (E(x),)), torch.func.functional_call(tm, state_t, (x,)))
    params = {k: v.detach() for k, v in tm.named_parameters()}
    tg = torch.func.grad(lambda p: torch.func.functional_call(tm, p, (x,)).pow(2).sum())(params)
    eg = grad(lambda p: functional_call(em, p, (E(x),)).pow(2).sum())(
        {k: E(v) for k, v in params.items()})
    for k in tg:
        close(eg[k], tg[k], 1e-4)


def test_tied_weights_and_strict_messages():
    def make(nn):
        class Tied(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(2, 2)
                self.b = nn.Linear(2, 2)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))
        return Tied()
    tm, em = _pair(make)
    x = torch.randn(1, 2)
    close(functional_call(em, {"a.weight": ember.zeros(2, 2)}, (E(x),)),
          torch.func.functional_call(tm, {"a.weight": torch.zeros(2, 2)}, (x,)))
    close(functional_call(em, {"a.weight": ember.zeros(2, 2)}, (E(x),), tie_weights=False),
          torch.func.functional_call(tm, {"a.weight": torch.zeros(2, 2)}, (x,),
                                     tie_weights=False))

    def message(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - both libraries' errors are compared
            return type(e), str(e)
    tl, el = torch.nn.Linear(2, 3), enn.Linear(2, 3)
    cases = [
        (lambda: torch.func.functional_call(tm, {"a.weight": torch.zeros(2, 2),
                                                 "b.weight": torch.ones(2, 2)}, (x,)),
         lambda: functional_call(em, {"a.weight": ember.zeros(2, 2),
                                      "b.weight": ember.ones(2, 2)}, (E(x),))),
        (lambda: torch.func.functional_call(tl, {"weight": torch.zeros(3, 2)}, (x,), strict=True),
         lambda: functional_call(el, {"weight": ember.zeros(3, 2)}, (E(x),), strict=True)),
        (lambda: torch.func.functional_call(tl, {"weight": torch.zeros(3, 2), "bias": torch.ones(3),
                                                 "foo": torch.ones(1)}, (x,), strict=True),
         lambda: functional_call(el, {"weight": ember.zeros(3, 2), "bias": ember.ones(3),
                                      "foo": ember.ones(1)}, (E(x),), strict=True)),
        (lambda: torch.func.functional_call(tl, ({"weight": torch.zeros(3, 2)},
                                                 {"weight": torch.zeros(3, 2)}), (x,)),
         lambda: functional_call(el, ({"weight": ember.zeros(3, 2)},
                                      {"weight": ember.zeros(3, 2)}), (E(x),))),
        (lambda: torch.func.stack_module_state([]), lambda: stack_module_state([])),
    ]
    for t_fn, e_fn in cases:
        assert message(e_fn) == message(t_fn)


def test_model_ensembling_with_stack_module_state_and_vmap():
    def make(nn):
        return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    pairs = [_pair(make) for _ in range(4)]
    t_models, e_models = [p[0] for p in pairs], [p[1] for p in pairs]
    t_params, t_buffers = torch.func.stack_module_state(t_models)
    e_params, e_buffers = stack_module_state(e_models)
    for k in t_params:
        close(e_params[k], t_params[k])
        assert e_params[k].requires_grad and e_params[k].is_leaf
    base_t, base_e = make(torch.nn), make(enn)

    def t_call(p, b, x):
        return torch.func.functional_call(base_t, (p, b), (x,))

    def e_call(p, b, x):
        return functional_call(base_e, (p, b), (x,))
    x = torch.randn(6, 5)
    # The same minibatch for every model, then a minibatch per model.
    close(vmap(e_call, in_dims=(0, 0, None))(e_params, e_buffers, E(x)),
          torch.func.vmap(t_call, in_dims=(0, 0, None))(t_params, t_buffers, x), 1e-5)
    xs = torch.randn(4, 6, 5)
    close(vmap(e_call)(e_params, e_buffers, E(xs)),
          torch.func.vmap(t_call)(t_params, t_buffers, xs), 1e-5)
    # The ensemble trains through ordinary autograd on the stacked leaves.
    out = vmap(e_call, in_dims=(0, 0, None))(e_params, e_buffers, E(x))
    out.sum().backward()
    t_out = torch.func.vmap(t_call, in_dims=(0, 0, None))(t_params, t_buffers, x)
    t_out.sum().backward()
    for k in t_params:
        close(e_params[k].grad, t_params[k].grad, 1e-5)


def test_nn_utils_stateless_is_the_same_call_deprecated():
    import ember.nn.utils.stateless as stateless
    tm, em = _pair(lambda nn: nn.Linear(3, 2))
    w, x = torch.randn(2, 3), torch.randn(4, 3)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        got = stateless.functional_call(em, {"weight": E(w)}, (E(x),))
    close(got, torch.func.functional_call(tm, {"weight": w}, (x,)))
