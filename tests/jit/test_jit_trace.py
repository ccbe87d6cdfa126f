"""``ember.jit.trace``/``script``/``freeze``/``optimize_for_inference``: the traced module runs
its graph and equals the eager model, keeps the original's state names, and refuses what it
cannot capture with torch's errors and warnings."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from jit_models import build, NAMES, DataDependent, MLP


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _assert_same(a, b, atol=1e-6):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("name", NAMES)
def test_traced_module_equals_eager_on_new_inputs(name):
    m, args = build(name)
    traced = ember.jit.trace(m, args)
    assert isinstance(traced, ember.jit.TracedModule)
    assert isinstance(traced, ember.jit.ScriptModule)
    assert sorted(traced.state_dict()) == sorted(m.state_dict())
    assert sorted(n for n, _ in traced.named_parameters()) == \
        sorted(n for n, _ in m.named_parameters())
    new = tuple(ember.randn(*a.shape) for a in args)
    with ember.no_grad():
        _assert_same(traced(*new), m(*new))
    assert "def forward" in traced.code
    assert any(n.op == "call_function" for n in traced.graph.nodes)


def test_trace_leaves_the_model_untouched():
    m, args = build("lstm")
    before = sorted(m.state_dict())
    ember.jit.trace(m, args)
    assert sorted(m.state_dict()) == before
    assert not [k for k in vars(m) if k.startswith("_constant")]


def test_traced_module_backpropagates_like_eager():
    m, args = build("mlp")
    traced = ember.jit.trace(m, args)
    x = ember.randn(3, 4)
    traced(x).pow(2).sum().backward()
    grads = [p.grad.numpy().copy() for p in m.parameters()]  # traced shares the parameters
    m.zero_grad()
    m(x).pow(2).sum().backward()
    for g, p in zip(grads, m.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_trace_of_a_function():
    def f(x, y):
        return ember.tanh(x) * y + 1
    x, y = ember.randn(3), ember.randn(3)
    traced = ember.jit.trace(f, (x, y))
    assert isinstance(traced, ember.jit.ScriptFunction)
    _assert_same(traced(y, x), f(y, x))
    assert ember.jit.trace(f, [x, y])(x, y).shape == (3,)


def test_check_trace_warns_when_outputs_differ():
    m, args = DataDependent(), (ember.ones(3),)
    with pytest.raises(ember.jit.TracingCheckError, match="Graphs differed"):
        ember.jit.trace(m, args, check_inputs=[(-ember.ones(3),)])

    class Noisy(nn.Module):
        def forward(self, x):
            return x + ember.randn(3)  # a constant of the trace: re-running differs
    with pytest.warns(ember.jit.TracerWarning, match="Output nr 1. of the traced function"):
        ember.jit.trace(Noisy(), (ember.ones(3),), check_trace=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.jit.trace(Noisy(), (ember.ones(3),), check_trace=False)


def test_is_tracing_inside_the_trace_only():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(ember.jit.is_tracing())
            return x + 1
    ember.jit.trace(M(), (ember.ones(2),), check_trace=False)
    assert seen == [True]
    assert not ember.jit.is_tracing()
    assert not ember.jit.is_scripting()


def test_strict_refuses_list_outputs():
    class L(nn.Module):
        def forward(self, x):
            return [x + 1, x * 2]
    with pytest.raises(RuntimeError, match="pass strict=False"):
        ember.jit.trace(L(), (ember.ones(2),))
    out = ember.jit.trace(L(), (ember.ones(2),), strict=False)(ember.zeros(2))
    assert isinstance(out, list) and out[1].tolist() == [0.0, 0.0]


def test_trace_argument_errors():
    with pytest.raises(NotImplementedError, match="example_kwarg_inputs"):
        ember.jit.trace(MLP(), example_kwarg_inputs={"x": ember.ones(1, 4)})
    with pytest.raises(RuntimeError, match="example_inputs"):
        ember.jit.trace(MLP())
    with pytest.raises(NotImplementedError, match="other than forward"):
        ember.jit.trace_module(MLP(), {"forward": ember.ones(1, 4), "other": ember.ones(1)})
    traced = ember.jit.trace_module(MLP(), {"forward": (ember.ones(1, 4),)})
    assert traced(ember.ones(2, 4)).shape == (2, 3)


# ---- script ------------------------------------------------------------------------------------

def test_script_captures_a_symbolically_traceable_module():
    m, args = build("cnn")
    scripted = ember.jit.script(m)
    assert isinstance(scripted, ember.jit.ScriptModule)
    assert sorted(scripted.state_dict()) == sorted(m.state_dict())
    assert not scripted.training
    with ember.no_grad():
        _assert_same(scripted(*args), m(*args))
    assert ember.jit.script(scripted) is scripted


def test_script_names_the_construct_it_cannot_capture():
    with pytest.raises(RuntimeError, match="jit.script could not capture DataDependent.forward"):
        ember.jit.script(DataDependent())
    with pytest.raises(NotImplementedError, match="Modules only"):
        ember.jit.script(lambda x: x)


def test_unused_and_export_markers():
    class U(nn.Module):
        @ember.jit.unused
        def helper(self, x):
            return x

        def forward(self, x):
            return self.helper(x) + 1
    assert U()(ember.ones(1)).tolist() == [2.0]  # eager runs it
    with pytest.raises(RuntimeError, match="marked @torch.jit.unused"):
        ember.jit.script(U())

    class E(nn.Module):
        @ember.jit.export
        def other(self, x):
            return x

        def forward(self, x):
            return x
    with pytest.raises(NotImplementedError, match="@jit.export"):
        ember.jit.script(E())

    @ember.jit.ignore
    def plain(x):
        return x + 1
    assert plain(1) == 2


# ---- freeze / optimize_for_inference -----------------------------------------------------------

def test_freeze_folds_state_into_constants_and_batch_norms_into_convs():
    m, args = build("cnn")
    traced = ember.jit.trace(m, args)
    frozen = ember.jit.freeze(traced)
    assert list(frozen.parameters()) == [] and frozen.state_dict() == {}
    names = [getattr(n.target, "__name__", n.target) for n in frozen.graph.nodes]
    assert "batch_norm" not in names  # both the conv's and the linear's were folded
    new = (ember.randn(4, 3, 8, 8),)
    with ember.no_grad():
        _assert_same(frozen(*new), m(*new), atol=1e-5)
    unfolded = ember.jit.freeze(traced, optimize_numerics=False)
    assert "batch_norm" in [getattr(n.target, "__name__", "") for n in unfolded.graph.nodes]


def test_freeze_needs_eval_mode_and_a_script_module():
    m, args = build("mlp")
    traced = ember.jit.trace(m, args)
    traced.train()
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        ember.jit.freeze(traced)
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule"):
        ember.jit.freeze(m)
    with pytest.raises(RuntimeError, match="optimize_for_inference expects a ScriptModule"):
        ember.jit.optimize_for_inference(m)


def test_optimize_for_inference_drops_dropout():
    m, args = build("transformer")
    traced = ember.jit.trace(m, args)
    opt = ember.jit.optimize_for_inference(traced)
    assert "dropout" not in [getattr(n.target, "__name__", "") for n in opt.graph.nodes]
    assert not opt.training
    with ember.no_grad():
        _assert_same(opt(*args), m(*args))


def test_freeze_keeps_a_submodule_script_kept_whole():
    # ReLU calls its function through a class attribute the symbolic tracer does not see, so
    # script keeps it as a call_module; freeze keeps that submodule and folds the rest.
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(),
                                ember.nn.Linear(8, 2)).eval()
    scripted = ember.jit.script(model)
    assert [n.op for n in scripted.graph.nodes].count("call_module") == 1
    frozen = ember.jit.freeze(scripted)
    assert list(frozen.parameters()) == []
    x = ember.randn(3, 4)
    assert ember.allclose(frozen(x), model(x))
