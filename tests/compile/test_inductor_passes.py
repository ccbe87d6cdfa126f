"""The graph passes of ``ember._inductor`` one by one: the graph before and after, and the
compiled numbers against eager."""
import operator

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.fx.experimental.proxy_tensor import make_fx
from ember._inductor.compile_fx import compile_fx
from ember._inductor.compile_fx import resolve_attrs
from ember._inductor import fx_passes
from ember._inductor.fx_passes import FusedElementwise


def _targets(graph):
    return [n.target for n in graph.nodes if n.op in ("call_function", "call_method")]


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_dead_code_erases_unused_pure_nodes_and_keeps_random_ones():
    def f(x):
        unused = x.exp()  # noqa: F841  (dead)
        F.dropout(x, 0.5, True)  # dead, but it draws from the generator
        return x + 1
    gm = make_fx(f)(ember.randn(3))
    assert "exp" in _targets(gm.graph)
    assert fx_passes.eliminate_dead_code(gm.graph)
    targets = _targets(gm.graph)
    assert "exp" not in targets and F.dropout in targets and operator.add in targets


def test_dead_code_erases_inactive_dropout():
    def f(x):
        F.dropout(x.exp(), 0.5, False)
        return x * 2
    gm = make_fx(f)(ember.randn(3))
    fx_passes.eliminate_dead_code(gm.graph)
    assert _targets(gm.graph) == [operator.mul]


def test_cse_merges_repeated_pure_calls_but_not_random_ones():
    def f(x):
        return x.exp() + x.exp() + F.dropout(x, 0.5, True) + F.dropout(x, 0.5, True)
    x = ember.randn(4)
    gm = make_fx(f)(x)
    assert _targets(gm.graph).count("exp") == 2
    assert fx_passes.eliminate_common_subexpressions(gm.graph)
    assert _targets(gm.graph).count("exp") == 1
    assert _targets(gm.graph).count(F.dropout) == 2
    gm.recompile()
    ember.manual_seed(0)
    expected = f(x)
    ember.manual_seed(0)
    _close(gm(x), expected)


def test_cse_keeps_different_literals_apart():
    gm = make_fx(lambda x: x * 2 + x * 2.5)(ember.randn(3))
    assert not fx_passes.eliminate_common_subexpressions(gm.graph)


def test_constant_folding_folds_ops_on_traced_constants_only():
    def f(x):
        c = ember.ones(3)  # a constant: made from nothing traced
        y = x + c  # here c becomes a graph constant ...
        return y * (c * 2 + 1)  # ... so this subexpression is constant
    x = ember.randn(2, 3)
    gm = make_fx(f)(x)
    attrs = resolve_attrs(gm, gm.graph)
    before = len(list(gm.graph.nodes))
    assert fx_passes.fold_constants(gm.graph, attrs)
    fx_passes.eliminate_dead_code(gm.graph)
    folded = [n.target for n in gm.graph.nodes if n.op == "get_attr"
              and n.target.startswith("_folded_constant")]
    assert len(folded) == 1 and len(list(gm.graph.nodes)) == before - 1
    np.testing.assert_allclose(attrs[folded[0]].numpy(), np.full(3, 3.0))
    compiled = compile_fx(make_fx(f)(x), [x])
    with ember.no_grad():
        _close(compiled(x), f(x))


class _Gram(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ember.randn(3, 3))

    def forward(self, x):
        return x @ (self.w.t() @ self.w)


def test_constant_folding_does_not_fold_parameters_unless_frozen():
    m = _Gram()
    x = ember.randn(2, 3)
    gm = make_fx(m)(x)
    attrs = resolve_attrs(gm, gm.graph)
    assert not fx_passes.fold_constants(gm.graph, dict(attrs))
    assert fx_passes.fold_constants(gm.graph, dict(attrs), freezing=True)
    compiled = compile_fx(make_fx(m)(x), [x], freezing=True)
    with ember.no_grad():
        _close(compiled(x), m(x))
        assert compiled.source.count("__K.matmul(") == 1  # only x @ (folded Gram matrix)


def _cnn_bn(seed=0):
    ember.manual_seed(seed)
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
    m[1].running_mean.normal_()
    m[1].running_var.uniform_(0.5, 2.0)
    with ember.no_grad():
        m[1].weight.normal_()
        m[1].bias.normal_()
    return m.eval()


def test_conv_batch_norm_folding_removes_the_norm_and_matches_eager():
    m = _cnn_bn()
    x = ember.randn(2, 3, 6, 6)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        out = compiled(x)
        _close(out, m(x))
    assert F.batch_norm not in _targets(compiled.graph)
    assert any(n.meta.get("folded_batch_norm") for n in compiled.graph.nodes)


def test_batch_norm_folding_refolds_when_a_parameter_changes():
    m = _cnn_bn()
    x = ember.randn(1, 3, 5, 5)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        compiled(x)
        m[0].weight.mul_(-0.5)
        m[1].running_var.add_(1.0)
        _close(compiled(x), m(x))


def test_batch_norm_folding_with_freezing_keeps_the_first_fold():
    m = _cnn_bn()
    x = ember.randn(1, 3, 5, 5)
    compiled = compile_fx(make_fx(m)(x), [x], freezing=True)
    with ember.no_grad():
        first = compiled(x)
        m[0].weight.mul_(2.0)
        _close(compiled(x), first)


def test_linear_batch_norm_folding():
    ember.manual_seed(1)
    m = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4)).eval()
    m[1].running_mean.normal_()
    x = ember.randn(3, 5)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        _close(compiled(x), m(x))
    assert F.batch_norm not in _targets(compiled.graph)


def test_batch_norm_in_training_mode_is_not_folded():
    m = _cnn_bn().train()
    x = ember.randn(2, 3, 4, 4)
    gm = make_fx(m)(x)
    attrs = resolve_attrs(gm, gm.graph)
    assert not fx_passes.fold_batch_norms(gm.graph, attrs)


def test_elementwise_fusion_makes_one_in_place_node():
    def f(x, y):
        return ember.relu((x * 0.5 + y).tanh()) - 1.0
    x, y = ember.randn(4, 5), ember.randn(4, 5)
    gm = make_fx(f)(x, y)
    assert fx_passes.fuse_elementwise(gm.graph)
    fused = [n for n in gm.graph.nodes if isinstance(n.target, FusedElementwise)]
    assert len(fused) == 1 and len(_targets(gm.graph)) == 1
    assert [s[0] for s in fused[0].target.steps] == ["multiply", "add", "tanh", "maximum",
                                                      "subtract"]
    gm.recompile()
    _close(gm(x, y), f(x, y))  # the fused node runs through Ember ops too
    compiled = compile_fx(make_fx(f)(x, y), [x, y])
    with ember.no_grad():
        _close(compiled(x, y), f(x, y))
    # every step after the first writes into the first one's result
    assert compiled.source.count(", out=") >= 4


def test_fusion_stops_at_a_value_read_twice_and_at_a_shape_change():
    def f(x, b):
        h = x * 2.0
        return (h + 1.0) * h, (x.exp() + b)
    x, b = ember.randn(3, 4), ember.randn(4)
    gm = make_fx(f)(x, b)
    fx_passes.fuse_elementwise(gm.graph)
    # h has two readers, so the chains start after it
    fused = [n.target for n in gm.graph.nodes if isinstance(n.target, FusedElementwise)]
    assert [[s[0] for s in t.steps] for t in fused] == [["add", "multiply"], ["exp", "add"]]
    assert _targets(gm.graph).count(operator.mul) == 1  # h itself stays a node
    gm.recompile()
    for a, e in zip(gm(x, b), f(x, b)):
        _close(a, e)


def test_buffers_are_reused_within_and_between_calls():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6),
                      nn.ReLU(), nn.Linear(6, 3))
    x = ember.randn(2, 6)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        out1 = compiled(x)
        buffers = list(compiled.buffers)
        out2 = compiled(x)
    plan = compiled.buffer_plan
    # six (2, 6) intermediates, at most two live at once: two buffers
    assert len(plan.assignment) == 6 and len(plan.slots) == 2
    assert all(a is b for a, b in zip(buffers, compiled.buffers))
    # the output is fresh each call, never a planned buffer
    assert not np.shares_memory(out1.numpy(), out2.numpy())
    assert not any(np.shares_memory(out2.numpy(), b) for b in compiled.buffers)
    with ember.no_grad():
        _close(out2, m(x))


def test_buffer_planning_can_be_turned_off():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    x = ember.randn(3, 4)
    compiled = compile_fx(make_fx(m)(x), [x], buffer_planning=False, fusion=False)
    with ember.no_grad():
        _close(compiled(x), m(x))
    assert compiled.buffers == [] and "out=" not in compiled.source


def test_unknown_option_raises_as_torch_compile():
    x = ember.randn(2)
    with pytest.raises(RuntimeError, match="Unexpected optimization option no_such_option"):
        compile_fx(make_fx(lambda x: x + 1)(x), [x], no_such_option=True)
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        compile_fx(make_fx(lambda x: x + 1)(x), [x], mode="fastest")


def test_each_thread_gets_its_own_buffers():
    import threading
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    x = ember.randn(4, 8)
    compiled = compile_fx(make_fx(m)(x), [x])
    with ember.no_grad():
        expected = m(x)
    results, buffers = [], []

    def work():
        with ember.no_grad():
            for _ in range(20):
                results.append(compiled(x))
        buffers.append(compiled.buffers)
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 40 and len(buffers) == 2
    assert all(a is not b for a, b in zip(*buffers))
    for r in results:
        _close(r, expected)
