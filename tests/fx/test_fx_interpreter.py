"""Interpreter, Transformer and ShapeProp against torch.fx on the same models."""
import operator

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

import ember
import ember.fx
from ember.fx.passes.shape_prop import ShapeProp, TensorMetadata
from fx_models import build, copy_weights, example_input, signature, to_numpy

MODELS = ["MLP", "ConvBN", "Functional", "Residual", "Encoder"]


def _pair(name):
    tm, em = build(torch, name), build(ember, name)
    copy_weights(tm, em)
    tm.eval()
    em.eval()
    return torch.fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)


def _flat(x):
    # TensorMetadata is a namedtuple: one value, not a sequence of them.
    return list(x) if isinstance(x, (tuple, list)) and not hasattr(x, "_fields") else [x]


@pytest.mark.parametrize("name", MODELS)
def test_interpreter_runs_like_the_module(name):
    _, eg = _pair(name)
    x = example_input(ember, name)
    for got, want in zip(_flat(ember.fx.Interpreter(eg).run(x)), _flat(eg(x))):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want))


def test_interpreter_hooks_see_every_op_and_can_change_results():
    class CountingNegRelu(ember.fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.seen = []

        def run_node(self, n):
            self.seen.append(n.op)
            return super().run_node(n)

        def call_function(self, target, args, kwargs):
            if target is ember.relu:
                return ember.neg(*args)
            return super().call_function(target, args, kwargs)
    _, eg = _pair("MLP")
    x = example_input(ember, "MLP")
    interp = CountingNegRelu(eg)
    got = interp.run(x)
    assert interp.seen == [n.op for n in eg.graph.nodes]
    want = eg.fc2(-eg.fc1(x))
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-6)
    assert interp.env == {} or all(n.op == "output" for n in interp.env)  # values released


def test_interpreter_defaults_initial_env_and_missing_argument():
    class M(ember.nn.Module):
        def forward(self, x, k=2.0):
            return x * k
    gm = ember.fx.symbolic_trace(M())
    interp = ember.fx.Interpreter(gm)
    np.testing.assert_array_equal(to_numpy(interp.run(ember.ones(2))), [2.0, 2.0])
    x_node = next(iter(gm.graph.nodes))
    np.testing.assert_array_equal(
        to_numpy(interp.run(initial_env={x_node: ember.ones(2) * 3})), [6.0, 6.0])
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        interp.run()


def _add_to_mul(lib):
    class AddToMul(lib.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is operator.add:
                target = operator.mul
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "sum":
                return lib.relu(args[0])  # an op written in the library, on Proxies
            return super().call_method(target, args, kwargs)
    return AddToMul


def test_transformer_returns_a_new_graph_module_like_torch():
    tg, eg = _pair("Functional")
    tt, et = _add_to_mul(torch)(tg).transform(), _add_to_mul(ember)(eg).transform()
    assert signature(et) == signature(tt)
    assert [n.target for n in eg.graph.nodes if n.op == "call_function"].count(operator.add) == 1
    x = example_input(ember, "Functional")
    got, want = et(x), tt(example_input(torch, "Functional"))
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(to_numpy(g_), w_.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert isinstance(et, ember.fx.GraphModule) and et.fc is eg.fc


@pytest.mark.parametrize("name", MODELS)
def test_shape_prop_metadata_matches_torch(name):
    tg, eg = _pair(name)
    TorchShapeProp(tg).propagate(example_input(torch, name))
    ShapeProp(eg).propagate(example_input(ember, name))
    for tn, en in zip(tg.graph.nodes, eg.graph.nodes):
        assert ("tensor_meta" in tn.meta) == ("tensor_meta" in en.meta), en.name
        if "tensor_meta" not in tn.meta:
            continue
        tms, ems = _flat(tn.meta["tensor_meta"]), _flat(en.meta["tensor_meta"])
        assert len(tms) == len(ems)
        for tmeta, emeta in zip(tms, ems):
            assert isinstance(emeta, TensorMetadata)
            assert tuple(emeta.shape) == tuple(tmeta.shape), en.name
            assert str(emeta.dtype).split(".")[-1] == str(tmeta.dtype).split(".")[-1]
            assert emeta.requires_grad == tmeta.requires_grad, en.name
            assert tuple(emeta.stride) == tuple(tmeta.stride), en.name
            assert str(emeta.memory_format).split(".")[-1] == \
                str(tmeta.memory_format).split(".")[-1], en.name
            assert emeta.is_quantized is False and emeta.qparams == {}
        assert en.meta["type"].__name__ == tn.meta["type"].__name__


def test_shape_prop_on_non_tensor_values():
    _, eg = _pair("Functional")
    ShapeProp(eg).propagate(example_input(ember, "Functional"))
    nodes = {n.name: n for n in eg.graph.nodes}
    assert nodes["size"].meta["type"] is int and "tensor_meta" not in nodes["size"].meta
    assert nodes["getitem"].meta["type"] is int
