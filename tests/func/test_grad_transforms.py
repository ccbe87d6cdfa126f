"""ember.func's reverse-mode transforms against torch.func: grad/grad_and_value/vjp/jacrev,
their composition with each other and with vmap (per-sample gradients of an MLP and a CNN)."""
import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
import ember.nn.functional as EF
from ember.func import grad, grad_and_value, jacrev, vjp, vmap, functional_call


def E(t):
    return ember.tensor(t.detach().numpy())


def close(a, b, tol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def _copy_state(tm, em):
    em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def _per_sample(tm, em, x, y, loss_t, loss_e):
    tp = {k: v.detach() for k, v in tm.named_parameters()}
    ep = {k: v.detach() for k, v in em.named_parameters()}

    def t_loss(p, xi, yi):
        return loss_t(torch.func.functional_call(tm, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    def e_loss(p, xi, yi):
        return loss_e(functional_call(em, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))
    expected = torch.func.vmap(torch.func.grad(t_loss), in_dims=(None, 0, 0))(tp, x, y)
    got = vmap(grad(e_loss), in_dims=(None, 0, 0))(ep, E(x), E(y))
    assert set(got) == set(expected)
    for k in expected:
        close(got[k], expected[k], 1e-5)
        assert not got[k].requires_grad
    # The same as one backward per sample.
    for i in (0, len(x) - 1):
        em.zero_grad()
        loss_e(em(E(x[i:i + 1])), E(y[i:i + 1])).backward()
        for k, p in em.named_parameters():
            close(got[k][i], p.grad, 1e-5)


def test_per_sample_gradients_of_an_mlp():
    tm = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.Linear(12, 4))
    em = enn.Sequential(enn.Linear(6, 12), enn.ReLU(), enn.Linear(12, 4))
    _copy_state(tm, em)
    x, y = torch.randn(10, 6), torch.randint(0, 4, (10,))
    _per_sample(tm, em, x, y, torch.nn.functional.cross_entropy, EF.cross_entropy)


def test_per_sample_gradients_of_a_cnn():
    def make(nn):
        return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(3 * 3 * 3, 5))
    tm, em = make(torch.nn), make(enn)
    _copy_state(tm, em)
    x, y = torch.randn(4, 2, 6, 6), torch.randint(0, 5, (4,))
    _per_sample(tm, em, x, y, torch.nn.functional.cross_entropy, EF.cross_entropy)


def test_grad_argnums_has_aux_and_value():
    x, w = torch.randn(3), torch.randn(3)

    def f(lib):
        def inner(a, b):
            out = (lib.sin(a) * b).sum()
            return out, {"aux": a * 2}
        return inner
    tg, (tv, taux) = torch.func.grad_and_value(f(torch), argnums=(0, 1), has_aux=True)(x, w)
    eg, (ev, eaux) = grad_and_value(f(ember), argnums=(0, 1), has_aux=True)(E(x), E(w))
    close(eg[0], tg[0])
    close(eg[1], tg[1])
    close(ev, tv)
    close(eaux["aux"], taux["aux"])
    g1, aux = grad(f(ember), argnums=1, has_aux=True)(E(x), E(w))
    close(g1, tg[1])
    assert not ev.requires_grad and not g1.requires_grad


def test_grad_of_grad_and_jacrev_of_jacrev():
    x = torch.randn(4)

    def f(lib):
        return lambda a: (lib.tanh(a) * a ** 2).sum()
    close(grad(grad(lambda a: f(ember)(a)))(E(x[0])) if False else
          grad(lambda a: grad(f(ember))(a).sum())(E(x)),
          torch.func.grad(lambda a: torch.func.grad(f(torch))(a).sum())(x), 1e-5)
    close(jacrev(jacrev(f(ember)))(E(x)), torch.func.jacrev(torch.func.jacrev(f(torch)))(x), 1e-5)
    close(grad(grad(lambda a: a ** 3))(ember.tensor(2.0)), torch.tensor(12.0))


def test_jacrev_of_a_small_network_argnums_and_chunks():
    tm = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    em = enn.Sequential(enn.Linear(3, 5), enn.Tanh(), enn.Linear(5, 2))
    _copy_state(tm, em)
    x = torch.randn(4, 3)
    expected = torch.func.jacrev(tm)(x)
    for chunk in (None, 3):
        close(jacrev(em, chunk_size=chunk)(E(x)), expected, 1e-5)
    tw = dict(tm.named_parameters())
    ew = dict(em.named_parameters())

    def tf(w, b, a):
        return torch.tanh(a @ w.T + b)

    def ef(w, b, a):
        return ember.tanh(a @ w.T + b)
    tj = torch.func.jacrev(tf, argnums=(0, 1))(tw["0.weight"], tw["0.bias"], x)
    ej = jacrev(ef, argnums=(0, 1))(E(tw["0.weight"]), E(tw["0.bias"]), E(x))
    close(ej[0], tj[0], 1e-5)
    close(ej[1], tj[1], 1e-5)
    del ew
    # Hessian of a network's scalar output, as jacrev(jacrev).
    th = torch.func.jacrev(torch.func.jacrev(lambda a: tm(a).sum()))(x[0])
    close(jacrev(jacrev(lambda a: em(a).sum()))(E(x[0])), th, 1e-5)


def test_vmap_of_jacrev_and_of_vjp():
    x = torch.randn(5, 3)

    def f(lib):
        return lambda a: lib.sin(a) * a.sum()
    close(vmap(jacrev(f(ember)))(E(x)), torch.func.vmap(torch.func.jacrev(f(torch)))(x), 1e-5)
    ct = torch.randn(5, 3)
    t_out, t_fn = torch.func.vjp(f(torch), x)
    e_out, e_fn = vjp(f(ember), E(x))
    close(e_out, t_out)
    close(e_fn(E(ct))[0], t_fn(ct)[0])
    # vjp_fn vmapped over cotangents, the graph built outside vmap.
    cts = torch.randn(2, 5, 3)
    from ember._functorch import vmap as vmap_module
    vmap_module._warned.discard("vjp_fn")
    with pytest.warns(UserWarning, match="batching rule for vjp_fn"):
        got = vmap(e_fn)(E(cts))[0]
    close(got, torch.func.vmap(t_fn)(cts)[0], 1e-5)


def test_vjp_has_aux_and_structure():
    x = torch.randn(3)
    (t_out, t_fn, t_aux) = torch.func.vjp(lambda a: ((a * 2, a.sum()), a + 1), x, has_aux=True)
    (e_out, e_fn, e_aux) = vjp(lambda a: ((a * 2, a.sum()), a + 1), E(x), has_aux=True)
    close(e_out[0], t_out[0])
    close(e_aux, t_aux)
    ct = (torch.ones(3), torch.tensor(2.0))
    close(e_fn((E(ct[0]), E(ct[1])))[0], t_fn(ct)[0])


def test_grad_composes_with_ordinary_autograd():
    x = torch.randn(3, requires_grad=True)
    ex = E(x).requires_grad_()
    tg = torch.func.grad(lambda a: (a ** 3).sum())(x)
    eg = grad(lambda a: (a ** 3).sum())(ex)
    tg.sum().backward()
    eg.sum().backward()
    close(ex.grad, x.grad)


def test_transform_error_messages_match_torch():
    x = torch.randn(2, 3)
    checks = [
        (lambda g: g(lambda t: t)(x), {}),
        (lambda g: g(lambda t: t.sum(), argnums=2)(x), {}),
        (lambda g: g(lambda t: (t.sum(),), has_aux=True)(x), {}),
        (lambda g: g(lambda t: t.sum())(1.0), {}),
        (lambda g: g(lambda t, u: t.sum(), argnums=(0, 0))(x, x), {}),
        (lambda g: g(lambda t: t.sum(), argnums=())(x), {}),
        (lambda g: g(lambda t: t.sum(), argnums=1.0)(x), {}),
    ]
    for check, _ in checks:
        results = []
        for lib_grad, conv in ((torch.func.grad, lambda a: a), (grad, None)):
            try:
                if conv is None:
                    check(lambda f, **kw: (lambda *a: grad(f, **kw)(
                        *[E(v) if isinstance(v, torch.Tensor) else v for v in a])))
                else:
                    check(lib_grad)
            except Exception as e:  # noqa: BLE001 - both libraries' errors are compared
                results.append((type(e), str(e)))
        assert len(results) == 2 and results[0] == results[1], results


def test_nested_compositions_match_torch():
    x, xx, w = torch.randn(3, 4), torch.randn(2, 3, 4), torch.randn(4)

    def f(a):
        return (a.sin() * a.sum()).sum()

    def g(a, v):
        return (a * v).sin().sum()
    close(grad(lambda z: vmap(f)(z).sum())(E(x)),
          torch.func.grad(lambda z: torch.func.vmap(f)(z).sum())(x))
    close(vmap(vmap(grad(f)))(E(xx)), torch.func.vmap(torch.func.vmap(torch.func.grad(f)))(xx))
    # Per-example gradients of an unbatched argument under two vmaps.
    close(vmap(vmap(grad(g, argnums=1), in_dims=(0, None)), in_dims=(0, None))(E(xx), E(w)),
          torch.func.vmap(torch.func.vmap(torch.func.grad(g, argnums=1), in_dims=(0, None)),
                          in_dims=(0, None))(xx, w))
    close(vmap(jacrev(jacrev(f)))(E(x)),
          torch.func.vmap(torch.func.jacrev(torch.func.jacrev(f)))(x))


def test_vjp_error_messages_match_torch():
    x = torch.randn(3)
    cases = [
        (lambda: torch.func.vjp(lambda a: 1.0, x), lambda: vjp(lambda a: 1.0, E(x))),
        (lambda: torch.func.vjp(lambda a: a, x, has_aux=True),
         lambda: vjp(lambda a: a, E(x), has_aux=True)),
        (lambda: torch.func.vjp(lambda a: a * 2, x)[1]((torch.ones(3), torch.ones(3))),
         lambda: vjp(lambda a: a * 2, E(x))[1]((ember.ones(3), ember.ones(3)))),
        (lambda: torch.func.vjp(lambda a: a * 2, x)[1](torch.ones(2)),
         lambda: vjp(lambda a: a * 2, E(x))[1](ember.ones(2))),
        (lambda: torch.func.jacrev(lambda a: a, chunk_size=0)(x),
         lambda: jacrev(lambda a: a, chunk_size=0)(E(x))),
    ]
    for t_fn, e_fn in cases:
        got = []
        for fn in (t_fn, e_fn):
            with pytest.raises(Exception) as info:
                fn()
            got.append((info.type, str(info.value).replace("torch.Size", "ember.Size")))
        assert got[0] == got[1]


def test_jacrev_has_aux_and_output_structure():
    x = torch.randn(3)
    tj, ta = torch.func.jacrev(lambda a: (a.sin() * 2, a.sum()), has_aux=True)(x)
    ej, ea = jacrev(lambda a: (a.sin() * 2, a.sum()), has_aux=True)(E(x))
    close(ej, tj)
    close(ea, ta)
    assert not ej.requires_grad and not ea.requires_grad
    # Several outputs and several argnums: nested as (per output)(per argnum).
    t = torch.func.jacrev(lambda a, b: (a * b, (a + b).sum()), argnums=(0, 1))(x, x.cos())
    e = jacrev(lambda a, b: (a * b, (a + b).sum()), argnums=(0, 1))(E(x), E(x.cos()))
    for i in range(2):
        for j in range(2):
            close(e[i][j], t[i][j])
