"""ember.func.vmap against torch.func.vmap: batching rules by family, in_dims/out_dims,
nested vmap, chunk_size, randomness, the loop fallback and torch's error messages."""
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as EF
from ember.func import vmap


def E(t):
    return ember.tensor(t.detach().numpy())


def close(a, b, tol=1e-5):
    assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
    np.testing.assert_allclose(a.detach().numpy() if hasattr(a, "detach") else a,
                               b.detach().numpy(), rtol=tol, atol=tol)


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


# (ember fn, torch fn, input shapes, in_dims)
CASES = [
    ("elementwise", lambda a, b: (a * 2 + b).exp() - b.sigmoid() / (1 + a.abs()),
     lambda a, b: (a * 2 + b).exp() - b.sigmoid() / (1 + a.abs()), [(4, 3), (3,)], (0, None)),
    ("broadcast", lambda a, b: ember.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b),
     [(4, 2, 3), (4, 3)], (0, 0)),
    ("reductions", lambda a: a.sum() + a.mean(0).sum() + a.amax(-1).sum() + a.std(1).sum(),
     lambda a: a.sum() + a.mean(0).sum() + a.amax(-1).sum() + a.std(1).sum(), [(5, 3, 4)], 0),
    ("max_dim", lambda a: a.max(1)[0] + a.argmax(0).float().sum() + a.max(),
     lambda a: a.max(1)[0] + a.argmax(0).float().sum() + a.max(), [(3, 4, 5)], 0),
    ("more_reductions", lambda a: (a > 0).all().float() + ember.count_nonzero(a > 0)
     + a.prod(1).sum() + a.median() + ember.linalg.matrix_norm(a).sum() + a.norm(dim=(0, 1)),
     lambda a: (a > 0).all().float() + torch.count_nonzero(a > 0)
     + a.prod(1).sum() + a.median() + torch.linalg.matrix_norm(a).sum() + a.norm(dim=(0, 1)),
     [(3, 4, 5)], 0),
    ("cross_take_along", lambda a: ember.cross(a[:3, :3], a[1:4, :3], dim=1).sum()
     + ember.take_along_dim(a, a.argsort(1), 1),
     lambda a: torch.cross(a[:3, :3], a[1:4, :3], dim=1).sum()
     + torch.take_along_dim(a, a.argsort(1), 1), [(3, 4, 5)], 0),
    ("softmax", lambda a: EF.log_softmax(a, -1) + a.softmax(0) + a.cumsum(1),
     lambda a: torch.log_softmax(a, -1) + a.softmax(0) + a.cumsum(1), [(3, 4, 5)], 1),
    ("shapes", lambda a: a.t().reshape(-1)[2:7].unsqueeze(0).expand(2, 5).flatten(),
     lambda a: a.t().reshape(-1)[2:7].unsqueeze(0).expand(2, 5).flatten(), [(3, 4, 2)], 2),
    ("permute_cat", lambda a, b: ember.cat([a.permute(1, 0), b], 0).transpose(0, 1).squeeze(),
     lambda a, b: torch.cat([a.permute(1, 0), b], 0).transpose(0, 1).squeeze(),
     [(4, 2, 3), (1, 2)], (0, None)),
    ("stack_split", lambda a: ember.stack(a.chunk(2, 1), 0).sum(0) + a.split(2, 1)[1],
     lambda a: torch.stack(a.chunk(2, 1), 0).sum(0) + a.split(2, 1)[1], [(3, 2, 4)], 0),
    ("getitem", lambda a, i: a[1:, ::2][..., None] * a[i].sum() + a[:, 0].unsqueeze(-1),
     lambda a, i: a[1:, ::2][..., None] * a[i].sum() + a[:, 0].unsqueeze(-1),
     [(4, 3, 6), None], (0, None)),
    ("batched_index", lambda a, i: a[i] + a.gather(0, i.unsqueeze(-1).expand(2, 5)).sum(),
     lambda a, i: a[i] + a.gather(0, i.unsqueeze(-1).expand(2, 5)).sum(),
     [(3, 4, 5), "idx"], (0, 0)),
    ("index_select", lambda a: a.index_select(1, ember.tensor([2, 0])),
     lambda a: a.index_select(1, torch.tensor([2, 0])), [(3, 4, 5)], 0),
    ("matmul", lambda a, b: (a @ b).mm(b.t()) + ember.matmul(a[0], b) @ b.t(),
     lambda a, b: (a @ b).mm(b.t()) + torch.matmul(a[0], b) @ b.t(), [(3, 2, 4), (4, 4)],
     (0, None)),
    ("matmul_batched_both", lambda a, b: ember.bmm(a, b).sum(0) + a[0, 0].dot(b[0, :, 0]),
     lambda a, b: torch.bmm(a, b).sum(0) + a[0, 0].dot(b[0, :, 0]), [(3, 2, 2, 4), (3, 2, 4, 4)],
     (0, 0)),
    ("vector_matmul",
     lambda a, b: ember.matmul(a, b) + ember.mv(b.t(), a).sum() + ember.outer(a, a).sum(),
     lambda a, b: torch.matmul(a, b) + torch.mv(b.t(), a).sum() + torch.outer(a, a).sum(),
     [(5, 4), (4, 3)], (0, None)),
    ("einsum", lambda a, b: ember.einsum("ij,jk->ik", a, b) + ember.einsum("ij->j", a).sum(),
     lambda a, b: torch.einsum("ij,jk->ik", a, b) + torch.einsum("ij->j", a).sum(),
     [(3, 2, 4), (3, 4, 2)], (0, 0)),
    ("linear_act", lambda x, w, b: EF.gelu(EF.linear(x, w, b)) + EF.leaky_relu(x @ w.t()),
     lambda x, w, b: torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b))
     + torch.nn.functional.leaky_relu(x @ w.t()), [(4, 3, 5), (6, 5), (6,)], (0, None, None)),
    ("linear_batched_weight", lambda x, w, b: EF.linear(x, w, b),
     lambda x, w, b: torch.nn.functional.linear(x, w, b), [(3, 5), (4, 6, 5), (4, 6)],
     (None, 0, 0)),
    ("conv2d", lambda x, w: EF.conv2d(x, w, padding=1),
     lambda x, w: torch.nn.functional.conv2d(x, w, padding=1), [(3, 2, 2, 5, 5), (4, 2, 3, 3)],
     (0, None)),
    ("conv2d_batched_weight", lambda x, w, b: EF.conv2d(x, w, b, stride=2),
     lambda x, w, b: torch.nn.functional.conv2d(x, w, b, stride=2),
     [(3, 2, 5, 5), (3, 4, 2, 3, 3), (3, 4)], (0, 0, 0)),
    ("conv_transpose_batched_weight",
     lambda x, w, b: EF.conv_transpose2d(x, w, b, stride=2, groups=2),
     lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, stride=2, groups=2),
     [(3, 2, 4, 4), (3, 2, 3, 3, 3), (3, 6)], (0, 0, 0)),
    ("pool_pad",
     lambda x: EF.max_pool2d(EF.pad(x, (1, 1, 1, 1)), 2) + EF.avg_pool2d(x, 1)[..., :3, :3],
     lambda x: torch.nn.functional.max_pool2d(torch.nn.functional.pad(x, (1, 1, 1, 1)), 2)
     + torch.nn.functional.avg_pool2d(x, 1)[..., :3, :3], [(3, 2, 2, 4, 4)], 0),
    ("norms", lambda x, w: EF.layer_norm(x, (4,), w) + EF.batch_norm(x, None, None, training=True)
     + EF.group_norm(x, 2, w),
     lambda x, w: torch.nn.functional.layer_norm(x, (4,), w)
     + torch.nn.functional.batch_norm(x, None, None, training=True)
     + torch.nn.functional.group_norm(x, 2, w), [(3, 5, 4), (3, 4)], (0, 0)),
    ("losses", lambda x, t, c: EF.mse_loss(x, t) + EF.cross_entropy(x, c)
     + EF.l1_loss(x, t, reduction="sum") + EF.nll_loss(x.log_softmax(-1), c)
     + EF.binary_cross_entropy_with_logits(x, t.sigmoid()),
     lambda x, t, c: torch.nn.functional.mse_loss(x, t) + torch.nn.functional.cross_entropy(x, c)
     + torch.nn.functional.l1_loss(x, t, reduction="sum")
     + torch.nn.functional.nll_loss(x.log_softmax(-1), c)
     + torch.nn.functional.binary_cross_entropy_with_logits(x, t.sigmoid()),
     [(3, 5, 4), (3, 5, 4), "cls"], (0, 0, 0)),
    ("cross_entropy_single", lambda x, c: EF.cross_entropy(x, c, reduction="none"),
     lambda x, c: torch.nn.functional.cross_entropy(x, c, reduction="none"), [(6, 4), "cls1"],
     (0, 0)),
]


def _inputs(shapes):
    ts = []
    for s in shapes:
        if s is None:
            ts.append(torch.tensor(2))
        elif s == "idx":
            ts.append(torch.randint(0, 4, (3, 2)))
        elif s == "cls":
            ts.append(torch.randint(0, 4, (3, 5)))
        elif s == "cls1":
            ts.append(torch.randint(0, 4, (6,)))
        else:
            ts.append(torch.randn(*s))
    return ts


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_batching_rules_match_torch(case):
    _, ef, tf, shapes, in_dims = case
    ts = _inputs(shapes)
    expected = torch.func.vmap(tf, in_dims=in_dims)(*ts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no loop fallback for these families
        got = vmap(ef, in_dims=in_dims)(*[E(t) for t in ts])
    close(got, expected, 1e-4)


def test_in_dims_out_dims_and_pytrees():
    x, y = torch.randn(3, 4), torch.randn(4, 3)

    def f(d, z):
        return {"s": d["a"] * z, "t": (d["b"].sum(), d["a"] + 1)}
    kw = dict(in_dims=({"a": 1, "b": 0}, None), out_dims={"s": 1, "t": (0, -1)})
    expected = torch.func.vmap(f, **kw)({"a": y, "b": x}, torch.tensor(2.0))
    got = vmap(f, **kw)({"a": E(y), "b": E(x)}, ember.tensor(2.0))
    close(got["s"], expected["s"])
    close(got["t"][0], expected["t"][0])
    close(got["t"][1], expected["t"][1])
    # Negative in_dims, a list input, kwargs passed through unbatched.
    expected = torch.func.vmap(lambda l, scale=1.0: l[0] * l[1] * scale, in_dims=([-1, 0],))(
        [y, x], scale=3.0)
    got = vmap(lambda l, scale=1.0: l[0] * l[1] * scale, in_dims=([-1, 0],))([E(y), E(x)],
                                                                           scale=3.0)
    close(got, expected)
    with pytest.raises(ValueError, match="Cannot return a BatchedTensor when out_dim is None"):
        vmap(lambda a: a, out_dims=None)(E(x))
    # An output that does not depend on the batch is returned as is with out_dim None.
    g = vmap(lambda a, c: (a + 1, c), in_dims=(1, None), out_dims=(-1, None))
    ga, gc = g(E(y), ember.tensor(5.0))
    ta, tc = torch.func.vmap(lambda a, c: (a + 1, c), in_dims=(1, None), out_dims=(-1, None))(
        y, torch.tensor(5.0))
    close(ga, ta)
    close(gc, tc)


def test_unbatched_output_is_expanded():
    got = vmap(lambda a: ember.ones(2))(ember.randn(3, 4))
    assert tuple(got.shape) == (3, 2)


def test_nested_vmap_matches_torch():
    x, y = torch.randn(2, 3, 4), torch.randn(3, 4, 5)

    def f(a, b):
        return (a @ b).relu().sum(-1)
    expected = torch.func.vmap(torch.func.vmap(f, in_dims=(0, None)), in_dims=(0, None))(x, y[0])
    got = vmap(vmap(f, in_dims=(0, None)), in_dims=(0, None))(E(x), E(y[0]))
    close(got, expected, 1e-5)
    expected = torch.func.vmap(torch.func.vmap(f, in_dims=(None, 0)), in_dims=(0, None))(x, y)
    got = vmap(vmap(f, in_dims=(None, 0)), in_dims=(0, None))(E(x), E(y))
    close(got, expected, 1e-5)


def test_chunk_size_gives_the_same_result():
    x = torch.randn(7, 3)
    f = lambda a: (a.sin() * a.sum()).unsqueeze(0)  # noqa: E731
    expected = torch.func.vmap(f, out_dims=1)(x)
    for chunk in (1, 3, 7, 10):
        close(vmap(f, out_dims=1, chunk_size=chunk)(E(x)), expected)


def test_randomness_modes():
    x = ember.ones(4, 100)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness "
                                           "error mode"):
        vmap(lambda a: EF.dropout(a, 0.5))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: a + ember.rand(100))(x)
    diff = vmap(lambda a: EF.dropout(a, 0.5), randomness="different")(x)
    same = vmap(lambda a: EF.dropout(a, 0.5), randomness="same")(x)
    assert tuple(diff.shape) == tuple(same.shape) == (4, 100)
    assert not ember.equal(diff[0], diff[1])
    assert ember.equal(same[0], same[1]) and ember.equal(same[0], same[3])
    r_diff = vmap(lambda a: a + ember.rand(100), randomness="different")(x)
    r_same = vmap(lambda a: a + ember.rand(100), randomness="same")(x)
    assert not ember.equal(r_diff[0], r_diff[1]) and ember.equal(r_same[0], r_same[2])
    # Dropout in eval mode draws nothing, so error mode allows it.
    vmap(lambda a: EF.dropout(a, 0.5, training=False))(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda a: a, randomness="x")(x)


def test_error_messages_match_torch():
    x, y = torch.randn(3, 4), torch.randn(4)

    def messages(fn):
        got = []
        for v, lib in ((fn, torch), (fn, ember)):
            try:
                v(lib)
            except Exception as e:  # noqa: BLE001 - both libraries' errors are compared
                got.append((type(e), str(e).replace("torch", "ember")))
        return got
    checks = [
        lambda lib: lib.func.vmap(lambda t: t.item())(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda t: t if t.sum() > 0 else -t)(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda a, b: a.mul_(b), in_dims=(None, 0))(
            *((y, x) if lib is torch else (E(y), E(x)))),
        lambda lib: lib.func.vmap(lambda t: t, in_dims=2)(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda t: t, in_dims=(0, 1))(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda t: t, in_dims="a")(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda t, u: t)(*((x, torch.randn(2, 4)) if lib is torch
                                                    else (E(x), ember.randn(2, 4)))),
        lambda lib: lib.func.vmap(lambda t: t)(1.0),
        lambda lib: lib.func.vmap(lambda t: 1.0)(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda t: t)(),
        lambda lib: lib.func.vmap(lambda t: t, in_dims=(None,))(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda t: t, out_dims="x")(x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lambda t: (t, t), out_dims=(0, 0, 0))(
            x if lib is torch else E(x)),
        lambda lib: lib.func.vmap(lib.nn.BatchNorm1d(4))(
            torch.randn(2, 5, 4) if lib is torch else ember.randn(2, 5, 4)),
    ]
    for check in checks:
        (tt, tm), (et, em) = messages(check)
        assert et is tt and em == tm, (em, tm)


def test_fallback_warns_once_per_op_and_stacks():
    from ember._functorch import vmap as vmap_module
    vmap_module._warned.discard("trace")
    x = torch.randn(5, 3, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = vmap(lambda a: ember.trace(a) * 2)(E(x))
        vmap(lambda a: ember.trace(a))(E(x))
    fallback = [w for w in caught if "batching rule for trace" in str(w.message)]
    assert len(fallback) == 1 and fallback[0].category is UserWarning
    close(got, torch.func.vmap(lambda a: torch.trace(a) * 2)(x))


def test_vmap_issues_o1_array_calls():
    """The batch is one array op per op, not one per example: matmul calls do not grow with B."""
    from ember.backends.numpy_backend import NumpyBackend
    calls = []
    original = NumpyBackend.matmul

    def counting(self, a, b):
        calls.append(a.shape)
        return original(self, a, b)
    w1, w2 = ember.randn(6, 8), ember.randn(3, 6)

    def loss(w1, w2, x):
        return (EF.linear(EF.linear(x, w1).tanh(), w2) ** 2).sum()
    counts = []
    NumpyBackend.matmul = counting
    try:
        for batch in (2, 16):
            calls.clear()
            ember.func.vmap(ember.func.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))(
                w1, w2, ember.randn(batch, 8))
            counts.append(len(calls))
    finally:
        NumpyBackend.matmul = original
    assert counts[0] == counts[1] and counts[0] > 0, counts


def test_eager_ops_are_unpatched_outside_vmap():
    before = ember.Tensor.__add__, ember.add, EF.linear
    vmap(lambda a: a + 1)(ember.randn(2, 3))
    assert (ember.Tensor.__add__, ember.add, EF.linear) == before
    with pytest.raises(ZeroDivisionError):
        vmap(lambda a: 1 / 0)(ember.randn(2, 3))
    assert (ember.Tensor.__add__, ember.add, EF.linear) == before


def test_namespace():
    assert ember.vmap is ember.func.vmap
    import ember.func as func
    for name in ("grad", "grad_and_value", "vjp", "jacrev", "vmap", "functional_call",
                 "stack_module_state"):
        assert callable(getattr(func, name)), name


def test_modules_under_vmap_batch_without_the_loop():
    """Whole layers (recurrent, attention, transposed convolution) run as batched ops."""
    def pairs():
        yield (lambda nn: nn.LSTM(4, 6, batch_first=True)), (3, 2, 5, 4), lambda o: o[0]
        yield (lambda nn: nn.GRU(4, 5, bidirectional=True)), (3, 5, 2, 4), lambda o: o[1]
        yield ((lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)),
               (2, 2, 3, 8), lambda o: o)
        yield (lambda nn: nn.ConvTranspose2d(2, 3, 3)), (2, 1, 2, 4, 4), lambda o: o
    for make, shape, pick in pairs():
        tm, em = make(torch.nn), make(ember.nn)
        em.load_state_dict({k: E(v) for k, v in tm.state_dict().items()})
        tm.eval()
        em.eval()
        x = torch.randn(*shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = pick(vmap(em)(E(x)))
        close(got, torch.stack([pick(tm(xi)) for xi in x]), 1e-4)
