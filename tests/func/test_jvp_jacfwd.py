"""torch.func's forward-mode side (ember._functorch.forward_transforms: jvp, jacfwd, linearize,
hessian) and torch.autograd.functional's forward-mode jacobian / hessian, against torch on
small MLPs."""
import numpy as np
import pytest
import torch

import ember
from ember._functorch import forward_transforms as eft
from ember.autograd import functional as efunc


def _mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * 0.5 for s in ((5, 3), (5,), (2, 5), (2,))]


def _mlp(lib, params):
    w1, b1, w2, b2 = (lib.tensor(p) for p in params)

    def f(x):
        h = lib.nn.functional.gelu(lib.nn.functional.linear(x, w1, b1))
        return lib.nn.functional.linear(lib.tanh(h), w2, b2)
    return f


def _np(t):
    return t.detach().numpy()


def _close(e, t, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


X = np.random.default_rng(1).standard_normal((4, 3))
V = np.random.default_rng(2).standard_normal((4, 3))


def test_jvp_matches_torch_func_on_an_mlp():
    params = _mlp_params()
    e_out, e_tan = eft.jvp(_mlp(ember, params), (ember.tensor(X),), (ember.tensor(V),))
    t_out, t_tan = torch.func.jvp(_mlp(torch, params), (torch.tensor(X),), (torch.tensor(V),))
    _close(e_out, t_out)
    _close(e_tan, t_tan)
    assert not e_tan.requires_grad and e_tan._fw_grad is None


def test_jvp_has_aux_pytrees_and_errors():
    def f(lib):
        return lambda d: ({"s": (d["a"] * d["b"]).sum()}, d["a"].exp())
    primals = {"a": np.arange(3.0), "b": np.ones(3) * 2}
    tangents = {"a": np.ones(3), "b": np.arange(3.0)}

    def run(lib, jvp):
        p = {k: lib.tensor(v) for k, v in primals.items()}
        t = {k: lib.tensor(v) for k, v in tangents.items()}
        return jvp(f(lib), (p,), (t,), has_aux=True)
    (eo, et, ea), (to, tt, ta) = run(ember, eft.jvp), run(torch, torch.func.jvp)
    _close(eo["s"], to["s"])
    _close(et["s"], tt["s"])
    _close(ea, ta)
    x = ember.ones(3)
    tx = torch.ones(3)
    for e_call, t_call in [
            (lambda: eft.jvp(lambda a: a, [x], (x,)), lambda: torch.func.jvp(lambda a: a, [tx], (tx,))),
            (lambda: eft.jvp(lambda a: a, (x,), (ember.ones(4),)),
             lambda: torch.func.jvp(lambda a: a, (tx,), (torch.ones(4),))),
            (lambda: eft.jvp(lambda a: a, (x,), (x,), has_aux=True),
             lambda: torch.func.jvp(lambda a: a, (tx,), (tx,), has_aux=True))]:
        with pytest.raises(RuntimeError) as t_info:
            t_call()
        with pytest.raises(RuntimeError) as e_info:
            e_call()
        assert str(e_info.value) == str(t_info.value)
    with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
        eft.jvp(lambda a: eft.jvp(ember.sin, (a,), (a,))[1], (x,), (x,))


def test_jacfwd_matches_torch_func():
    params = _mlp_params(3)
    x = X[0]
    e_jac = eft.jacfwd(_mlp(ember, params))(ember.tensor(x))
    t_jac = torch.func.jacfwd(_mlp(torch, params))(torch.tensor(x))
    assert tuple(e_jac.shape) == tuple(t_jac.shape) == (2, 3)
    _close(e_jac, t_jac)

    def g(lib):
        return lambda a, b: (lib.sin(a) * b.sum(), (a ** 2).sum())
    a, b = np.arange(1.0, 4.0), np.array([[0.5, -1.0]])
    e = eft.jacfwd(g(ember), argnums=(0, 1), has_aux=True)(ember.tensor(a), ember.tensor(b))
    t = torch.func.jacfwd(g(torch), argnums=(0, 1), has_aux=True)(torch.tensor(a), torch.tensor(b))
    for ej, tj in zip(e[0], t[0]):
        assert tuple(ej.shape) == tuple(tj.shape)
        _close(ej, tj)
    _close(e[1], t[1])
    for e_call, t_call in [(lambda: eft.jacfwd(ember.sin, argnums=3)(ember.ones(2)),
                            lambda: torch.func.jacfwd(torch.sin, argnums=3)(torch.ones(2))),
                           (lambda: eft.jacfwd(ember.sin, argnums=1.0)(ember.ones(2)),
                            lambda: torch.func.jacfwd(torch.sin, argnums=1.0)(torch.ones(2)))]:
        with pytest.raises(RuntimeError) as t_info:
            t_call()
        with pytest.raises(RuntimeError) as e_info:
            e_call()
        assert str(e_info.value) == str(t_info.value)


def test_linearize_matches_jvp():
    params = _mlp_params(4)
    e_out, e_fn = eft.linearize(_mlp(ember, params), ember.tensor(X))
    t_out, t_fn = torch.func.linearize(_mlp(torch, params), torch.tensor(X))
    _close(e_out, t_out)
    for seed in (5, 6):
        v = np.random.default_rng(seed).standard_normal(X.shape)
        _close(e_fn(ember.tensor(v)), t_fn(torch.tensor(v)))
    with pytest.raises(RuntimeError):
        e_fn(ember.ones(2, 2, dtype=ember.float64))


def test_hessian_of_an_mlp_loss_matches_torch_func():
    params = _mlp_params(7)

    def loss(lib):
        f = _mlp(lib, params)
        return lambda x: (f(x) ** 2).sum()
    x = X[1]
    e_h = eft.hessian(loss(ember))(ember.tensor(x))
    t_h = torch.func.hessian(loss(torch))(torch.tensor(x))
    assert tuple(e_h.shape) == (3, 3)
    _close(e_h, t_h, rtol=1e-9, atol=1e-11)


def test_functional_jacobian_and_hessian_forward_mode():
    params = _mlp_params(8)

    def two(lib):
        f = _mlp(lib, params)
        return lambda x, y: (f(x) * y.sum(), (x ** 3).sum(-1))
    x, y = X[:2], np.array([0.3, -0.7])
    e = efunc.jacobian(two(ember), (ember.tensor(x), ember.tensor(y)), vectorize=True,
                       strategy="forward-mode")
    t = torch.autograd.functional.jacobian(two(torch), (torch.tensor(x), torch.tensor(y)),
                                           vectorize=True, strategy="forward-mode")
    for i in range(2):
        for j in range(2):
            assert tuple(e[i][j].shape) == tuple(t[i][j].shape)
            _close(e[i][j], t[i][j])

    def scalar(lib):
        return lambda a: (lib.sin(a) * a).sum()
    e_h = efunc.hessian(scalar(ember), ember.tensor(x), vectorize=True,
                        outer_jacobian_strategy="forward-mode")
    t_h = torch.autograd.functional.hessian(scalar(torch), torch.tensor(x), vectorize=True,
                                            outer_jacobian_strategy="forward-mode")
    _close(e_h, t_h)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        efunc.jacobian(scalar(ember), ember.tensor(x), strategy="forward-mode")


def test_jacfwd_over_jacrev_keeps_the_tangent_of_its_input():
    # forward over reverse: jacrev's fresh roots must stay on the dual input's tangent
    def f(lib):
        return lambda x: (x.sin() * x.exp()).sum() + (x[0] * x[2]) ** 2
    rng = np.random.default_rng(3)
    x = rng.standard_normal(4)
    got = ember.func.jacfwd(ember.func.jacrev(f(ember)))(ember.tensor(x))
    want = torch.func.jacfwd(torch.func.jacrev(f(torch)))(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
