"""Dynamic shapes in ``ember.compile``: how many graphs a sequence of input sizes compiles under
``dynamic=None`` (automatic), ``True`` and ``False``, with ``mark_dynamic``/``mark_static``,
against torch.compile's own count (a Python backend counting its calls: no C++ toolchain
needed), and the numerics of graphs reused at other sizes against eager."""
import numpy as np
import pytest
import torch
import torch._dynamo

import ember
import ember._dynamo
import ember.nn as enn


def _count(lib, dynamo, fn, sizes, dynamic, mark=None, static=None, feat=5):
    dynamo.reset()
    n = [0]

    def backend(gm, example_inputs):
        n[0] += 1
        return gm.forward
    compiled = lib.compile(fn, backend=backend, dynamic=dynamic)
    for b in sizes:
        x = lib.randn(b, feat)
        if mark is not None:
            dynamo.mark_dynamic(x, mark)
        if static is not None:
            dynamo.mark_static(x, static)
        compiled(x)
    return n[0]


def _elementwise(x):
    return (x.relu() * 2 + 1).sum(-1)


CASES = [(None, [2, 3, 4, 5]), (None, [1, 2, 3]), (None, [2, 3, 1, 4]), (None, [0, 2, 3]),
         (True, [2, 3, 4]), (True, [1, 2, 3]), (True, [2, 3, 1, 4]),
         (False, [2, 3, 4]), (False, [3, 3, 3])]


@pytest.mark.parametrize("dynamic,sizes", CASES)
def test_graph_count_matches_torch(dynamic, sizes):
    ours = _count(ember, ember._dynamo, _elementwise, sizes, dynamic)
    theirs = _count(torch, torch._dynamo, _elementwise, sizes, dynamic)
    assert ours == theirs


def test_mark_dynamic_and_mark_static_match_torch():
    for kw in ({"dynamic": False, "mark": 0}, {"dynamic": None, "mark": 0},
               {"dynamic": True, "static": 0}, {"dynamic": None, "static": 0}):
        ours = _count(ember, ember._dynamo, _elementwise, [2, 3, 4], **kw)
        theirs = _count(torch, torch._dynamo, _elementwise, [2, 3, 4], **kw)
        assert ours == theirs, kw


def test_counters_and_recompile_reasons():
    ember._dynamo.reset()
    f = ember.compile(_elementwise, backend="eager")
    for b in (2, 3, 4, 1):
        f(ember.randn(b, 5))
    stats = ember._dynamo.utils.counters
    assert f.recompile_reasons == ["input 0 size mismatch at index 0. expected 2, actual 3",
                                   "input 0 size at index 0: expected >= 2, actual 1"]
    assert sum(stats["recompiles"].values()) == 2
    assert stats["stats"]["unique_graphs"] == 3      # 2, then s0 >= 2, then 1
    f2 = ember.compile(_elementwise)
    for b in (2, 3, 4):
        f2(ember.randn(b, 5))
    assert stats["stats"]["unique_graphs"] == 5
    text = "\n".join(f2._entries[0].guard_text)
    assert "s0_0 >= 2" in text
    ember._dynamo.reset()
    assert not ember._dynamo.utils.counters


def _mlp(lib, seed):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))


def _copy(em, tm):
    with torch.no_grad():
        for (_, p), (_, q) in zip(em.named_parameters(), tm.named_parameters()):
            q.copy_(torch.from_numpy(np.array(p.detach().numpy())))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_dynamic_graph_numerics_inference_and_training(backend):
    em, tm = _mlp(ember, 0), _mlp(torch, 0)
    _copy(em, tm)
    compiled = ember.compile(em, backend=backend)
    rng = np.random.default_rng(0)
    for b in (2, 3, 6, 1, 4):
        xn = rng.standard_normal((b, 5)).astype(np.float32)
        with ember.no_grad():
            np.testing.assert_allclose(compiled(ember.tensor(xn)).numpy(),
                                       tm(torch.from_numpy(xn)).detach().numpy(), atol=1e-5)
        x, xt = ember.tensor(xn, requires_grad=True), torch.tensor(xn, requires_grad=True)
        (compiled(x) ** 2).sum().backward()
        (tm(xt) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-5)
        np.testing.assert_allclose(em[0].weight.grad.numpy(), tm[0].weight.grad.numpy(),
                                   atol=1e-5)
        em.zero_grad()
        tm.zero_grad()
    # 2 and 3 (automatic dynamic), then 1 (0/1 specialised): per grad mode
    assert compiled.dynamo_ctx._recordings == 6


def test_size_read_into_python_stays_specialised():
    # x.shape[0] is baked into the view: reusing the graph at another size would be wrong
    def f(x):
        return x.reshape(x.shape[0] // 2, -1).sum(1)
    compiled = ember.compile(f, backend="eager")
    for b in (4, 6, 8):
        x = ember.randn(b, 3)
        np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), atol=1e-6)
    assert compiled._recordings == 3
    with pytest.warns(UserWarning, match="marked dynamic but are specialised"):
        x = ember.randn(4, 3)
        ember._dynamo.mark_dynamic(x, 0)
        ember.compile(f, backend="eager")(x)


def test_dynamic_graph_with_dropout_keeps_eager_random_stream():
    model = enn.Sequential(enn.Linear(5, 6), enn.Dropout(0.5))
    compiled = ember.compile(model)
    for b in (2, 3, 5):
        x = ember.randn(b, 5)
        ember.manual_seed(b)
        with ember.no_grad():
            got = compiled(x)
        ember.manual_seed(b)
        with ember.no_grad():
            want = model(x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-6)
    assert compiled.dynamo_ctx._recordings == 2
