"""``ember.utils.checkpoint`` against ``torch.utils.checkpoint``: gradients, recomputation with
the same random draws, both variants where they differ, nesting, ``checkpoint_sequential``,
errors and warnings, and the memory a checkpointed network holds after its forward."""
import gc
import tracemalloc
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint

import ember
import ember.utils.checkpoint as ecp
from tests.torch_compare import assert_same

tcp = torch.utils.checkpoint
VARIANTS = [True, False]


def _pair(widths=(6, 16, 16, 3), activation="Tanh"):
    """The same MLP in torch and in Ember (Ember's weights copied from torch's)."""
    torch.manual_seed(0)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [torch.nn.Linear(a, b), getattr(torch.nn, activation)()]
    tnet = torch.nn.Sequential(*layers[:-1])
    enet = ember.nn.Sequential(*[
        ember.nn.Linear(m.in_features, m.out_features) if isinstance(m, torch.nn.Linear)
        else getattr(ember.nn, activation)() for m in layers[:-1]])
    enet.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                          tnet.state_dict().items()})
    return tnet, enet


def _inputs(shape=(5, 6), requires_grad=True):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return (torch.tensor(x, requires_grad=requires_grad),
            ember.tensor(x, requires_grad=requires_grad))


def _grads(net):
    return [None if p.grad is None else p.grad.clone() for p in net.parameters()]


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_mlp_gradients_match_torch(use_reentrant):
    tnet, enet = _pair()
    tx, ex = _inputs()
    ty = tcp.checkpoint(tnet, tx, use_reentrant=use_reentrant)
    ey = ecp.checkpoint(enet, ex, use_reentrant=use_reentrant)
    assert_same(ty, ey)
    assert ey.requires_grad and ey.grad_fn is not None
    (ty ** 2).sum().backward()
    (ey ** 2).sum().backward()
    assert_same(tx.grad, ex.grad)
    assert_same(_grads(tnet), _grads(enet), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_backward_recomputes_the_function_once(use_reentrant):
    calls = {"torch": 0, "ember": 0}

    def run(lib):
        def fn(x):
            calls[lib.__name__] += 1
            return (x.sin() * x).exp()
        x = lib.linspace(-1, 1, 7, requires_grad=True)
        y = (lib.utils.checkpoint.checkpoint(fn, x, use_reentrant=use_reentrant)).sum()
        after_forward = calls[lib.__name__]
        y.backward()
        return after_forward, calls[lib.__name__], x.grad

    t_fwd, t_total, t_grad = run(torch)
    e_fwd, e_total, e_grad = run(ember)
    assert (e_fwd, e_total) == (t_fwd, t_total) == (1, 2)
    assert_same(t_grad, e_grad)


def test_non_reentrant_forward_keeps_no_saved_tensors():
    x = ember.randn(4, 4, requires_grad=True)
    y = ecp.checkpoint(lambda t: t.sin().exp() * t, x, use_reentrant=False)
    node, seen = y.grad_fn, []
    while node is not None and type(node).__name__ != "AccumulateGrad":
        seen.append((node.name(), node._saved))
        node = next((e[0] for e in node._edges if e is not None), None)
    assert [name for name, _ in seen] == ["MulBackward0", "ExpBackward0", "SinBackward0"]
    assert all(saved == () for _, saved in seen)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _torch_grad(x.detach().numpy()), rtol=1e-6)


def _torch_grad(x):
    t = torch.tensor(x, requires_grad=True)
    (t.sin().exp() * t).sum().backward()
    return t.grad.numpy()


def test_non_reentrant_hooks_run_once_as_without_checkpointing():
    counts = []
    for lib in (torch, ember):
        calls = []
        w = lib.ones(3, requires_grad=True)
        w.register_hook(lambda g: calls.append(g.tolist()))
        y = lib.utils.checkpoint.checkpoint(lambda t: (t * w).exp(), lib.ones(3),
                                            use_reentrant=False)
        y.sum().backward()
        counts.append((len(calls), calls[0], w.grad.tolist()))
    assert counts[0][0] == counts[1][0] == 1
    np.testing.assert_allclose(counts[1][1:], counts[0][1:], rtol=1e-6)


class _DropoutNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ember.nn.Linear(8, 32)
        self.drop = ember.nn.Dropout(0.5)
        self.b = ember.nn.Linear(32, 4)

    def block(self, x):
        return self.drop(self.a(x).relu())

    def forward(self, x, checkpointed, use_reentrant=False, preserve_rng_state=True):
        if checkpointed:
            h = ecp.checkpoint(self.block, x, use_reentrant=use_reentrant,
                               preserve_rng_state=preserve_rng_state)
        else:
            h = self.block(x)
        return self.b(h)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_dropout_masks_replayed_in_recomputation(use_reentrant):
    ember.manual_seed(0)
    net = _DropoutNet()
    x = ember.randn(16, 8, requires_grad=True)

    def step(checkpointed, **kw):
        net.zero_grad()
        x.grad = None
        ember.manual_seed(123)
        out = net(x, checkpointed, use_reentrant=use_reentrant, **kw)
        out.pow(2).sum().backward()
        return out.detach().clone(), x.grad.clone(), _grads(net), ember.rand(3)

    plain = step(False)
    checked = step(True)
    # Same arithmetic on the same masks: bit-identical, and the stream after the step is the
    # same (the recomputation replayed the draws on a forked stream).
    for p, c in zip(plain[:2] + tuple(plain[2]) + (plain[3],),
                    checked[:2] + tuple(checked[2]) + (checked[3],)):
        assert np.array_equal(p.numpy(), c.numpy())
    # Without preserve_rng_state the recomputation draws new masks, as in PyTorch.
    unpreserved = step(True, preserve_rng_state=False)
    assert np.array_equal(unpreserved[0].numpy(), plain[0].numpy())
    assert not np.array_equal(unpreserved[1].numpy(), plain[1].numpy())


def test_torch_dropout_reference_behaves_the_same():
    """The property the previous test asserts of Ember, checked on PyTorch itself."""
    torch.manual_seed(0)
    lin, drop = torch.nn.Linear(8, 32), torch.nn.Dropout(0.5)
    x = torch.randn(16, 8, requires_grad=True)
    grads = []
    for checkpointed in (False, True):
        x.grad = None
        torch.manual_seed(123)
        block = lambda t: drop(lin(t).relu())  # noqa: E731
        h = tcp.checkpoint(block, x, use_reentrant=False) if checkpointed else block(x)
        h.pow(2).sum().backward()
        grads.append(x.grad.clone())
    assert torch.equal(grads[0], grads[1])


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_inputs_without_grad(use_reentrant):
    """Non-reentrant: the parameters inside still get gradients. Reentrant: a warning, the
    output does not require grad, and the parameters get none."""
    tnet, enet = _pair()
    tx, ex = _inputs(requires_grad=False)
    results = []
    for lib, net, x in ((tcp, tnet, tx), (ecp, enet, ex)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = lib.checkpoint(net, x, use_reentrant=use_reentrant)
        results.append((y.requires_grad, [str(w.message) for w in caught]))
        if y.requires_grad:
            y.sum().backward()
    assert results[0] == results[1]
    assert results[1][0] is (not use_reentrant)
    if use_reentrant:
        assert results[1][1] == ["None of the inputs have requires_grad=True. Gradients will be "
                                 "None"]
    assert_same(_grads(tnet), _grads(enet))


def test_autograd_grad_non_reentrant_and_reentrant_error():
    tnet, enet = _pair()
    tx, ex = _inputs()
    ty = tcp.checkpoint(tnet, tx, use_reentrant=False).sum()
    ey = ecp.checkpoint(enet, ex, use_reentrant=False).sum()
    tg = torch.autograd.grad(ty, [tx, tnet[0].weight])
    eg = ember.autograd.grad(ey, [ex, enet[0].weight])
    assert_same(tg, eg)
    assert enet[0].weight.grad is None  # autograd.grad leaves .grad alone

    messages = []
    for lib, net, x in ((torch, tnet, tx), (ember, enet, ex)):
        y = lib.utils.checkpoint.checkpoint(net, x, use_reentrant=True).sum()
        with pytest.raises(RuntimeError) as info:
            lib.autograd.grad(y, x)
        messages.append(str(info.value))
        y = lib.utils.checkpoint.checkpoint(net, x, use_reentrant=True).sum()
        with pytest.raises(RuntimeError) as info:
            y.backward(inputs=[x])
        messages.append(str(info.value))
    assert messages[2:] == [m.replace("torch", "ember") for m in messages[:2]]


def test_keyword_arguments():
    def fn(lib):
        def f(x, *, scale, shift=0.0):
            return (x * scale + shift).tanh()
        x = lib.linspace(-2, 2, 5, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(f, x, use_reentrant=False, scale=1.5, shift=0.25)
        y.sum().backward()
        return y, x.grad
    assert_same(fn(torch), fn(ember))
    messages = []
    for lib in (torch, ember):
        with pytest.raises(ValueError) as info:
            lib.utils.checkpoint.checkpoint(lambda x, **k: x, lib.ones(2), use_reentrant=True,
                                            scale=1, shift=2)
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Unexpected keyword arguments: scale,shift"


def test_use_reentrant_not_passed_warns_and_means_reentrant():
    messages = []
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        with pytest.warns(UserWarning) as caught:
            y = lib.utils.checkpoint.checkpoint(lambda t: t * 2, x)
        messages.append(str(caught[0].message))
        assert type(y.grad_fn).__name__.startswith("CheckpointFunction")
        with pytest.warns(UserWarning) as caught:
            lib.utils.checkpoint.checkpoint_sequential([lambda t: t * 2] * 2, 2, x)
        messages.append(str(caught[0].message))
    assert messages[2:] == [m.replace("torch", "ember") for m in messages[:2]]


def test_argument_errors_match_torch():
    cases = [
        dict(use_reentrant=True, debug=True),
        dict(use_reentrant=True, context_fn=lambda: (None, None)),
        dict(use_reentrant=False, determinism_check="strict"),
        dict(use_reentrant=False, debug=True, context_fn=lambda: (None, None)),
    ]
    for kwargs in cases:
        messages = []
        for lib in (torch, ember):
            with pytest.raises(ValueError) as info:
                lib.utils.checkpoint.checkpoint(lambda t: t * 2, lib.ones(2, requires_grad=True),
                                                **kwargs)
            messages.append(str(info.value))
        assert messages[0] == messages[1], kwargs
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Unexpected keyword arguments: extra"):
            lib.utils.checkpoint.checkpoint_sequential([lambda t: t], 1, lib.ones(2),
                                                       use_reentrant=False, extra=1)


def test_recomputation_that_saves_differently_raises_checkpoint_error():
    def make(first, later):
        state = {"calls": 0}

        def f(x):
            state["calls"] += 1
            return first(x) if state["calls"] == 1 else later(x)
        return f

    once, twice = (lambda x: x.exp()), (lambda x: x.exp().exp())
    for first, later in ((once, twice), (twice, once)):
        errors = []
        for lib in (torch, ember):
            x = lib.ones(3, requires_grad=True)
            # torch's early stop would end its recomputation before an extra tensor is saved.
            y = lib.utils.checkpoint.checkpoint(make(first, later), x, use_reentrant=False,
                                                early_stop=False)
            with pytest.raises(lib.utils.checkpoint.CheckpointError) as info:
                y.sum().backward()
            errors.append(str(info.value))
        head = errors[0].split("\n")[:3]
        assert errors[1].split("\n")[:3] == [line.replace("torch", "ember") for line in head]
    assert issubclass(ecp.CheckpointError, RuntimeError)

    # Same count of saved tensors, different shapes.
    def shapes(lib):
        state = {"calls": 0}

        def f(x):
            state["calls"] += 1
            other = lib.ones(3) if state["calls"] == 1 else lib.ones(1)
            return (x * other).sum()
        return f

    errors = []
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(shapes(lib), x, use_reentrant=False)
        with pytest.raises(lib.utils.checkpoint.CheckpointError) as info:
            y.backward()
        errors.append(str(info.value))
    # The lines naming the differing tensor agree; its position does not (torch's mul saves
    # its operands in the other order).
    ember_lines = errors[1].split("\n")[:4]
    torch_lines = errors[0].replace("torch", "ember").split("\n")[:4]
    assert ember_lines[0] == torch_lines[0] and ember_lines[2:] == torch_lines[2:]
    assert "recomputed metadata: {'shape': ember.Size([1])" in errors[1]

    # debug=True names the recorded operations; determinism_check="none" skips the metadata.
    x = ember.ones(3, requires_grad=True)
    y = ecp.checkpoint(shapes(ember), x, use_reentrant=False, debug=True)
    with pytest.raises(ecp.CheckpointError, match="(?s)during the original forward:.*MulBackward0"):
        y.backward()
    grads = []
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(shapes(lib), x, use_reentrant=False,
                                            determinism_check="none")
        y.backward()  # the recomputed (broadcasting) operand is used as it is
        grads.append(x.grad)
    assert_same(*grads)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_nested_checkpoints(use_reentrant):
    def run(lib):
        torch.manual_seed(0)
        w = torch.randn(6, 6).numpy()
        weight = lib.tensor(w, requires_grad=True)
        c = lib.utils.checkpoint.checkpoint

        def inner(h):
            return (h @ weight).tanh()

        def outer(h):
            h = c(inner, h.sin(), use_reentrant=use_reentrant)
            return c(inner, h, use_reentrant=use_reentrant) * h

        x = lib.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6),
                       requires_grad=True)
        y = c(outer, x, use_reentrant=use_reentrant)
        (y ** 2).sum().backward()
        return y, x.grad, weight.grad
    assert_same(run(torch), run(ember))


def test_nested_outputs_and_retain_graph():
    def run(lib):
        def f(x, y):
            return {"sum": x + y, "pair": (x * y, 3), "prod": (x * y).exp()}
        x = lib.linspace(0, 1, 4, requires_grad=True)
        y = lib.linspace(1, 2, 4, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint(f, x, y, use_reentrant=False)
        loss = out["sum"].sum() + out["pair"][0].pow(2).sum() + out["prod"].sum()
        loss.backward(retain_graph=True)
        first = (x.grad.clone(), y.grad.clone())
        loss.backward()
        return out["pair"][1], first, x.grad, y.grad
    assert_same(run(torch), run(ember))


def test_second_backward_without_retain_graph_raises():
    x = ember.ones(3, requires_grad=True)
    y = ecp.checkpoint(lambda t: t.exp().sum(), x, use_reentrant=False)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_double_backward_through_non_reentrant_checkpoint():
    def run(lib):
        x = lib.linspace(-1, 1, 5, dtype=lib.float64, requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(lambda t: (t.sin() * t ** 3).sum(), x,
                                            use_reentrant=False)
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg
    assert_same(run(torch), run(ember), rtol=1e-12, atol=1e-12)


def test_input_modified_in_place_before_recomputation_raises():
    messages = []
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        h = x * 2
        y = lib.utils.checkpoint.checkpoint(lambda t: t.exp(), h, use_reentrant=False)
        h.add_(1)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        messages.append(str(info.value))
    assert messages[1] == messages[0].replace("torch", "ember")


def test_under_no_grad_the_function_just_runs():
    for use_reentrant in VARIANTS:
        x = ember.ones(3, requires_grad=True)
        with ember.no_grad():
            y = ecp.checkpoint(lambda t: t * 2, x, use_reentrant=use_reentrant)
        assert not y.requires_grad and y.tolist() == [2.0, 2.0, 2.0]


def test_convolution_block():
    def run(lib):
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        if lib is ember:
            ec = ember.nn.Conv2d(3, 4, 3, padding=1)
            ec.load_state_dict({k: ember.tensor(v.detach().numpy())
                                for k, v in conv.state_dict().items()})
            conv = ec
        x = lib.tensor(np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32),
                       requires_grad=True)
        y = lib.utils.checkpoint.checkpoint(lambda t: conv(t).relu().mean((2, 3)), x,
                                            use_reentrant=False)
        y.pow(2).sum().backward()
        return y, x.grad, conv.weight.grad, conv.bias.grad
    assert_same(run(torch), run(ember), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_matches_torch(use_reentrant, segments):
    tnet, enet = _pair(widths=(6, 8, 8, 8, 3))
    tx, ex = _inputs()
    ty = tcp.checkpoint_sequential(tnet, segments, tx, use_reentrant=use_reentrant)
    ey = ecp.checkpoint_sequential(enet, segments, ex, use_reentrant=use_reentrant)
    assert_same(ty, ey)
    ty.sum().backward()
    ey.sum().backward()
    assert_same(tx.grad, ex.grad)
    assert_same(_grads(tnet), _grads(enet))


def _held_after_forward(checkpointed, use_reentrant=False):
    """Bytes still allocated (tracemalloc sees NumPy's buffers) after the forward of a deep
    GELU network, and its input gradient."""
    ember.manual_seed(0)
    blocks = [ember.nn.Sequential(*[m for _ in range(4)
                                    for m in (ember.nn.Linear(128, 128), ember.nn.GELU())])
              for _ in range(8)]
    x = ember.randn(256, 128, requires_grad=True)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        h = x
        for block in blocks:
            h = (ecp.checkpoint(block, h, use_reentrant=use_reentrant) if checkpointed
                 else block(h))
        loss = h.sum()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    loss.backward()
    return held, x.grad


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_checkpointing_holds_much_less_memory_after_forward(use_reentrant):
    plain, plain_grad = _held_after_forward(False)
    checked, checked_grad = _held_after_forward(True, use_reentrant)
    activation = 256 * 128 * 4
    # Unchecked: two saved arrays per Linear+GELU pair (the Linear's input, the GELU's input),
    # 32 pairs. Checkpointed: each of the 8 blocks' input and output only, 9 arrays.
    assert plain > 60 * activation
    assert checked < 14 * activation
    assert plain > 4 * checked
    assert np.array_equal(plain_grad.numpy(), checked_grad.numpy())


def _library_modules():
    return {
        "transformer_layer": lambda: ember.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1,
                                                                      batch_first=True),
        "lstm": lambda: ember.nn.LSTM(16, 8, batch_first=True, num_layers=2),
        "conv_batchnorm": lambda: ember.nn.Sequential(ember.nn.Conv1d(5, 16, 3),
                                                      ember.nn.BatchNorm1d(16), ember.nn.ReLU()),
    }


@pytest.mark.parametrize("use_reentrant", VARIANTS)
@pytest.mark.parametrize("name", sorted(_library_modules()))
def test_library_modules_checkpointed_give_identical_gradients(name, use_reentrant):
    """Attention with dropout, a recurrent layer returning a nested (out, (h, c)) tuple,
    convolution and batch norm: checkpointed, the same arithmetic runs on the same values."""
    ember.manual_seed(0)
    module = _library_modules()[name]()
    x = ember.randn(2, 5, 16, requires_grad=True)

    def run(checkpointed):
        module.zero_grad()
        x.grad = None
        ember.manual_seed(7)
        out = ecp.checkpoint(module, x, use_reentrant=use_reentrant) if checkpointed else module(x)
        out = out[0] if isinstance(out, tuple) else out
        out.pow(2).sum().backward()
        return [out.detach().numpy().copy(), x.grad.numpy().copy()] + [
            p.grad.numpy().copy() for p in module.parameters()]

    plain, checked = run(False), run(True)
    assert len(plain) == len(checked)
    for p, c in zip(plain, checked):
        assert np.array_equal(p, c)


def test_reachable_as_ember_utils_checkpoint_without_slowing_import():
    import subprocess
    import sys
    code = ("import sys, ember; assert 'ember.utils.checkpoint' not in sys.modules; "
            "f = ember.utils.checkpoint.checkpoint; import ember.utils.checkpoint as m; "
            "assert f is m.checkpoint; assert not hasattr(ember.utils, 'no_such_name'); "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
    assert set(ecp.__all__) <= set(tcp.__all__)
