"""Training through compiled graphs: the graph's own backward, one autograd node, and loss,
gradients and parameters after a few SGD steps equal to eager."""
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.fx.experimental.proxy_tensor import make_fx
from ember._inductor import aot_eager
from ember._inductor.compile_fx import compile_fx


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


class _WithLoss(nn.Module):
    def __init__(self, model, loss=F.cross_entropy):
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, x, y):
        return self.loss(self.model(x), y)


def _train_side_by_side(make, x, y, backend=compile_fx, steps=3, loss=F.cross_entropy,
                        tol=1e-5):
    """Train a model eagerly and a deep copy through the compiled graph; compare every step."""
    ember.manual_seed(0)
    eager = make()
    compiled_model = copy.deepcopy(eager)
    gm = make_fx(_WithLoss(compiled_model, loss))(x, y)
    compiled_model.load_state_dict(eager.state_dict())  # undo the trace's batch-norm update
    compiled = backend(gm, [x, y])
    opt_e = ember.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = ember.optim.SGD(compiled_model.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        ember.manual_seed(100 + step)  # dropout draws the same masks in both
        loss_e = loss(eager(x), y)
        opt_e.zero_grad()
        loss_e.backward()
        ember.manual_seed(100 + step)
        loss_c = compiled(x, y)
        opt_c.zero_grad()
        loss_c.backward()
        _close(loss_c, loss_e, tol)
        for (name, pe), pc in zip(eager.named_parameters(), compiled_model.parameters()):
            assert pc.grad is not None, name
            _close(pc.grad, pe.grad, tol)
        opt_e.step()
        opt_c.step()
        for pe, pc in zip(eager.parameters(), compiled_model.parameters()):
            _close(pc, pe, tol)
    for be, bc in zip(eager.buffers(), compiled_model.buffers()):
        _close(bc.float(), be.float(), tol)
    return compiled


def _mlp():
    return nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 24), nn.GELU(),
                         nn.Linear(24, 4))


def test_mlp_training_matches_eager():
    x, y = ember.randn(6, 10), ember.tensor([0, 1, 2, 3, 1, 0])
    compiled = _train_side_by_side(_mlp, x, y)
    (key,) = [k for k in compiled.sources if k.startswith("training")]
    src = compiled.sources[key]
    assert "def backward(ctx, *__grads):" in src and "__grad(" not in src  # all lowered


def test_transformer_encoder_layer_training_with_dropout_matches_eager():
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.layer(x).mean(1))
    x, y = ember.randn(3, 5, 16), ember.tensor([0, 2, 1])
    _train_side_by_side(Encoder, x, y)


def test_cnn_training_with_batch_norm_statistics_matches_eager():
    def make():
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 3))
    x, y = ember.randn(4, 2, 4, 4), ember.tensor([0, 1, 2, 0])
    _train_side_by_side(make, x, y, tol=1e-4)


def test_mse_regression_training_matches_eager():
    def make():
        return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    x, y = ember.randn(5, 3), ember.randn(5, 2)
    _train_side_by_side(make, x, y, loss=F.mse_loss)


def test_aot_eager_training_matches_eager():
    x, y = ember.randn(4, 10), ember.tensor([3, 1, 2, 0])
    _train_side_by_side(_mlp, x, y, backend=aot_eager)


def test_gradient_with_respect_to_an_input_and_one_node_per_graph():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.Sigmoid(), nn.Linear(6, 2))
    x = ember.randn(3, 4, requires_grad=True)
    compiled = compile_fx(make_fx(m)(x), [x])
    out = compiled(x)
    assert out.grad_fn is not None and out.grad_fn.next_functions  # one node over the graph
    g = ember.randn(3, 2)
    out.backward(g)
    gx_compiled = x.grad.clone()
    grads_compiled = [p.grad.clone() for p in m.parameters()]
    x.grad = None
    m.zero_grad()
    m(x).backward(g)
    _close(gx_compiled, x.grad)
    for a, p in zip(grads_compiled, m.parameters()):
        _close(a, p.grad)


def test_frozen_parameters_get_no_gradient():
    m = _mlp()
    m[0].weight.requires_grad_(False)
    x = ember.randn(2, 10)
    compiled = compile_fx(make_fx(m)(x), [x])
    compiled(x).sum().backward()
    assert m[0].weight.grad is None and m[0].bias.grad is not None


def test_shared_parameter_gradients_are_summed():
    lin = nn.Linear(4, 4)
    tied = nn.Sequential(lin, nn.ReLU(), lin)
    x = ember.randn(3, 4)
    compiled = compile_fx(make_fx(tied)(x), [x])
    compiled(x).sum().backward()
    g = lin.weight.grad.clone()
    lin.zero_grad()
    tied(x).sum().backward()
    _close(g, lin.weight.grad)


def test_second_backward_through_a_compiled_graph_raises():
    m = _mlp()
    x = ember.randn(2, 10)
    compiled = compile_fx(make_fx(m)(x), [x])
    loss = compiled(x).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_training_buffers_never_hold_what_backward_reads():
    """Two forwards before one backward (gradient accumulation over a summed loss)."""
    ember.manual_seed(0)
    m = _mlp()
    x1, x2 = ember.randn(2, 10), ember.randn(2, 10)
    compiled = compile_fx(make_fx(m)(x1), [x1])
    (compiled(x1).sum() + compiled(x2).sum()).backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    (m(x1).sum() + m(x2).sum()).backward()
    for a, p in zip(grads, m.parameters()):
        _close(a, p.grad)


def _kitchen_sink(a, b, w):
    h = ember.matmul(a, w)                          # (4, 5) @ (5, 3)
    s = F.softmax(h, dim=1) + F.log_softmax(h, dim=-1).exp() * 0.5
    t = (s - b[:, :3]) / (b[:, 3:].abs() + 1.0)
    u = ember.cat([t, t.t().permute(1, 0) * 2.0], 1).transpose(0, 1)  # (6, 4)
    v = (u * u + 1e-3).sqrt().log() + ember.sigmoid(u) * ember.tanh(u)
    r = v[1:5, ::2].sum(1) + v.mean(1, keepdim=True).expand(6, 4)[0]
    c = ember.cumsum(v, 1).flip(1)[:, :2].sum()  # no lowering: the engine's backward
    return r.sum() * 0.3 + c


def test_every_lowered_rule_and_a_fallback_differentiate_as_eager():
    ember.manual_seed(0)
    a = ember.randn(4, 5, requires_grad=True)
    b = ember.randn(4, 6, requires_grad=True)
    w = ember.randn(5, 3, requires_grad=True)
    compiled = compile_fx(make_fx(_kitchen_sink)(a, b, w), [a, b, w])
    out = compiled(a, b, w)
    got = ember.autograd.grad(out, (a, b, w))
    want = ember.autograd.grad(_kitchen_sink(a, b, w), (a, b, w))
    _close(out, _kitchen_sink(a, b, w))
    for g, e in zip(got, want):
        _close(g, e)
    (key,) = [k for k in compiled.sources if k.startswith("training")]
    assert "__grad(" in compiled.sources[key]  # cumsum/flip went through the engine


def test_gradient_through_a_tuple_valued_fallback_runs_the_captured_graph():
    def f(x):
        return x.sort(dim=1).values.exp().sum()  # sort's (values, indices) pair
    x = ember.randn(3, 4, requires_grad=True)
    compiled = compile_fx(make_fx(f)(x), [x])
    (g,) = ember.autograd.grad(compiled(x), (x,))
    (e,) = ember.autograd.grad(f(x), (x,))
    _close(g, e)
    assert not any(k.startswith("training") for k in compiled.sources)


def test_attention_without_dropout_is_lowered_and_differentiates_as_eager():
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

        def forward(self, x):
            return self.layer(x).sum(1)
    x, y = ember.randn(2, 3, 8), ember.randn(2, 8)
    compiled = _train_side_by_side(Encoder, x, y, loss=F.mse_loss)
    (key,) = [k for k in compiled.sources if k.startswith("training")]
    assert "__K.attention_backward(" in compiled.sources[key]
    assert "__grad(" not in compiled.sources[key]


def test_compiled_graph_computes_through_the_inputs_backend(device):
    """On "testdev" (and on the CuPy conformance device with EMBER_TEST_CUPYCONF=1) the
    generated code's array calls must go through the inputs' backend, as ops' do."""
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3)).to(device)
    x = ember.randn(4, 6, device=device)
    y = ember.tensor([0, 1, 2, 0], device=device)
    twin = copy.deepcopy(m)
    compiled = compile_fx(make_fx(_WithLoss(twin))(x, y), [x, y])
    F.cross_entropy(m(x), y).backward()
    loss = compiled(x, y)
    loss.backward()
    assert loss.device == x.device
    for a, b in zip(m.parameters(), twin.parameters()):
        assert b.grad.device == a.device
        _close(b.grad.cpu(), a.grad.cpu())
    with ember.no_grad():
        _close(compiled(x, y).cpu(), F.cross_entropy(m(x), y).cpu())


def test_generated_functions_free_each_local_after_its_last_read():
    from ember._inductor.memory_planning import release_dead_locals
    source = ("def f(a, b):\n"
              "    c = a + b\n"
              "    if a > 0:\n"
              "        d = c * 2\n"
              "    with memoryview(b'x') as view:\n"
              "        e = c - 1\n"
              "    g = e + sum(x for x in (c, b))\n"
              "    return g + (d if a > 0 else 0)\n")
    out = release_dead_locals(source)
    ns = {}
    exec(out, ns)
    exec(source, ref := {})
    assert ns["f"](1, 2) == ref["f"](1, 2) and ns["f"](-1, 2) == ref["f"](-1, 2)
    # b, c and e die after the line computing g (the generator's x is its own scope's),
    # the with target after its block; d, bound in a branch, and a, read by the last
    # statement, are never deleted
    assert "del b, c, e\n" in out and "del view\n" in out
    assert "del d" not in out and "del a" not in out and "del x" not in out
    # a function defining a function is left as it is
    closure = "def f(a):\n    k = lambda: a\n    return k()\n"
    assert release_dead_locals(closure) == closure


def test_compiled_training_backward_frees_what_it_saved_as_it_goes():
    # the backward's peak is what eager's is, not all saved values plus every gradient
    import tracemalloc
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    compiled = ember.compile(layer)
    x = ember.randn(8, 32, 64)
    peaks = []
    for fn in (layer, compiled):
        fn(x).sum().backward()  # warm-up: the compile, the buffers
        out = fn(x)
        tracemalloc.start()
        out.sum().backward()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] <= 1.3 * peaks[0], peaks
