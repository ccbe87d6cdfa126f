"""vmap carrying forward-mode tangents (``vmap(jvp(f))``, ``jacfwd`` as vmap over the basis),
``linearize`` traced once, and the op swap the transforms share with make_fx, against
torch.func."""
import numpy as np
import pytest
import torch

import ember
from ember.func import jacfwd, jvp, linearize, vmap
from ember.fx.experimental.proxy_tensor import make_fx


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * 0.5 for s in ((6, 4), (6,), (3, 6), (3,))]


def _mlp(lib, params):
    w1, b1, w2, b2 = (lib.tensor(p) for p in params)

    def f(x):
        h = lib.nn.functional.gelu(lib.nn.functional.linear(x, w1, b1))
        h = lib.nn.functional.layer_norm(lib.tanh(h), (6,))
        return lib.softmax(lib.nn.functional.linear(h, w2, b2), -1)
    return f


def _close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)


def _rng(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def test_vmap_of_jvp_matches_torch_func():
    params = _params(1)
    x, tangents = _rng(2, 2, 4), _rng(3, 5, 2, 4)

    def per_tangent(lib, func):
        f = _mlp(lib, params)
        return lambda t: func.jvp(f, (lib.tensor(x),), (t,))

    got = vmap(per_tangent(ember, ember.func))(ember.tensor(tangents))
    want = torch.func.vmap(per_tangent(torch, torch.func))(torch.tensor(tangents))
    _close(got[0], want[0])
    _close(got[1], want[1])


def test_jacfwd_of_an_mlp_matches_torch_func():
    params = _params(4)
    x = _rng(5, 2, 4)
    got = jacfwd(_mlp(ember, params))(ember.tensor(x))
    want = torch.func.jacfwd(_mlp(torch, params))(torch.tensor(x))
    assert tuple(got.shape) == (2, 3, 2, 4)
    _close(got, want)

    # several arguments, and has_aux
    def g(lib):
        f = _mlp(lib, params)
        return lambda a, b: ((f(a) * b.sum()).sum(0), f(a).detach())
    a, b = _rng(6, 2, 4), _rng(7, 3)
    (ja, jb), aux = jacfwd(g(ember), argnums=(0, 1), has_aux=True)(ember.tensor(a),
                                                                   ember.tensor(b))
    (ta, tb), taux = torch.func.jacfwd(g(torch), argnums=(0, 1), has_aux=True)(
        torch.tensor(a), torch.tensor(b))
    _close(ja, ta)
    _close(jb, tb)
    _close(aux, taux)


def test_jacfwd_runs_o1_backend_matmuls_in_the_basis_size(monkeypatch):
    """One batched forward pass for all the columns: the matrix products do not grow with the
    number of input elements."""
    from ember.backends.numpy_backend import NumpyBackend
    calls = []
    original = NumpyBackend.matmul

    def counting(self, a, b):
        calls.append(a.shape)
        return original(self, a, b)
    w1, w2 = ember.randn(6, 8, dtype=ember.float64), ember.randn(3, 6, dtype=ember.float64)

    def f(x):
        return ember.nn.functional.linear(ember.nn.functional.linear(x, w1).tanh(), w2)
    monkeypatch.setattr(NumpyBackend, "matmul", counting)
    counts = []
    for n in (2, 16):
        calls.clear()
        jac = jacfwd(f)(ember.randn(n, 8, dtype=ember.float64))
        assert tuple(jac.shape) == (n, 3, n, 8)
        counts.append(len(calls))
    assert counts[0] == counts[1] and counts[0] > 0, counts


def test_linearize_traces_once_and_matches_torch_func():
    params = _params(8)
    runs = []

    def counted(lib):
        f = _mlp(lib, params)

        def g(x):
            runs.append(1)
            return f(x) * lib.linalg.vector_norm(x)
        return g
    x = _rng(9, 2, 4)
    t_out, t_fn = torch.func.linearize(counted(torch), torch.tensor(x))
    runs.clear()
    out, jvp_fn = linearize(counted(ember), ember.tensor(x))
    assert len(runs) == 1
    _close(out, t_out)
    for seed in (10, 11, 12):
        v = _rng(seed, 2, 4)
        _close(jvp_fn(ember.tensor(v)), t_fn(torch.tensor(v)))
    assert len(runs) == 1  # jvp_fn replays the traced graph
    with pytest.raises(RuntimeError, match="Mismatch in tangent shape"):
        jvp_fn(ember.ones(3, 4, dtype=ember.float64))


def test_make_fx_records_the_linalg_wrappers():
    """The functions ``ember.linalg`` / ``special`` expose through wrappers no op family holds
    (``matrix_norm``, ``cross``, ``xlog1py``) are nodes of their own: a graph that computes on
    new inputs, not a constant baked from the example."""
    def f(lib):
        return lambda x: (lib.linalg.matrix_norm(x, "nuc") + lib.special.xlog1py(x, x).sum()
                          + lib.linalg.cross(x, x.flip(0), dim=1))
    gm = make_fx(f(ember))(ember.tensor(np.exp(_rng(13, 3, 3))))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    for fn in (ember.linalg.matrix_norm, ember.special.xlog1py, ember.linalg.cross):
        assert fn in targets, fn
    b = np.exp(_rng(14, 3, 3))
    _close(gm(ember.tensor(b)), f(torch)(torch.tensor(b)))


def test_swap_sites_are_shared_and_follow_rebinding(monkeypatch):
    """make_fx, vmap and the profiler swap through one cached scan; rebinding an op in an
    Ember module is noticed (the next swap rescans)."""
    from ember.fx.experimental import proxy_tensor as pt

    def use_all():
        vmap(lambda t: t.sin())(ember.randn(3, 2))
        make_fx(lambda t: ember.sin(t))(ember.randn(2))
        with ember.profiler.profile():
            ember.sin(ember.randn(2))
        return pt._SwapSites.key, pt._SwapSites.globals_sites
    first = use_all()  # the users' own modules load on first use
    second = use_all()
    assert second[0] == first[0] and second[1] is first[1]  # no rescan between the users
    seen = []

    def replaced(t):
        seen.append(1)
        return ember.sin(t)  # looked up when called: the swapped op
    monkeypatch.setattr(ember, "cos", replaced)
    assert not pt._SwapSites.valid()
    out = vmap(lambda t: ember.cos(t))(ember.tensor(_rng(15, 3, 2)))
    assert seen == [1]  # the user's function runs once, on the batch
    _close(out, torch.sin(torch.tensor(_rng(15, 3, 2))))
