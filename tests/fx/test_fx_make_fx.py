"""The concrete tracer, ``ember.fx.experimental.proxy_tensor.make_fx``: records the ops that
run on example inputs, with shapes and dtypes on each node; the GraphModule it returns computes
what the model computes, on other inputs of the same shapes too."""
import numpy as np
import pytest

import ember
from ember.fx.experimental.proxy_tensor import make_fx
from ember.fx.passes.shape_prop import TensorMetadata
from fx_models import build, example_input, to_numpy

MODELS = ["MLP", "ConvBN", "Functional", "Residual", "Encoder", "Unpack"]


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("name", MODELS)
def test_traced_graph_computes_the_model_on_new_inputs(name):
    model = build(ember, name)
    model.eval()
    gm = make_fx(model)(example_input(ember, name))
    gm.graph.lint()
    x2 = example_input(ember, name, seed=7)
    for got, want in zip(_as_tuple(gm(x2)), _as_tuple(model(x2))):
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-6, atol=1e-6)
    # Parameters are read by their own paths: the module's state_dict keys, no constants.
    targets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert all(not t.startswith("_tensor_constant") for t in targets)
    assert set(targets) <= set(model.state_dict())
    assert "call_module" not in [n.op for n in gm.graph.nodes]


def test_every_tensor_node_carries_tensor_meta():
    model = build(ember, "ConvBN")
    model.eval()
    x = example_input(ember, "ConvBN")
    gm = make_fx(model)(x)
    for node in gm.graph.nodes:
        if node.op == "output":
            continue
        meta = node.meta["tensor_meta"]
        assert isinstance(meta, TensorMetadata), node.name
        assert meta.dtype is ember.float32
    placeholder = next(iter(gm.graph.nodes))
    assert placeholder.name == "arg0_1"
    assert tuple(placeholder.meta["tensor_meta"].shape) == (2, 3, 5, 5)
    conv = next(n for n in gm.graph.nodes if n.op == "call_function")
    assert conv.target is ember.nn.functional.conv2d
    assert tuple(conv.meta["tensor_meta"].shape) == (2, 4, 5, 5)
    assert conv.meta["tensor_meta"].stride == (100, 25, 5, 1)


def test_python_control_flow_is_resolved_by_the_example_values():
    def f(x, y):
        if x.sum() > 0:
            x = x * 2
        for row in y:  # unrolled: one indexing node per row
            x = x + row
        return x, x.shape[0]
    x, y = ember.ones(3), ember.arange(6.0).reshape(2, 3)
    gm = make_fx(f)(x, y)
    out = gm(ember.full((3,), 5.0), y)
    np.testing.assert_array_equal(to_numpy(out[0]), to_numpy(ember.full((3,), 10.0) + y[0] + y[1]))
    assert out[1] == 3
    getitems = [n for n in gm.graph.nodes
                if n.op == "call_function" and n.name.startswith("getitem")]
    assert len(getitems) == 2


def test_constants_in_place_ops_and_ops_by_direct_name():
    from ember import relu as relu_by_name  # a closure variable of f: patched too

    def f(x):
        c = ember.ones(3) * 2  # computed from nothing traced: a constant
        y = x.clone()
        y.add_(c)
        y[0] = -1.0
        return relu_by_name(y).T
    x = ember.zeros(3)
    gm = make_fx(f)(x)
    assert "_tensor_constant0" in gm.code
    np.testing.assert_array_equal(to_numpy(gm(ember.ones(3))), [0.0, 3.0, 3.0])
    assert gm.graph.eliminate_dead_code() is False  # add_ and the setitem are kept
    assert any(n.target is ember.relu for n in gm.graph.nodes if n.op == "call_function")
    assert "= relu.T" in gm.code  # a property read, written as one


def test_patches_are_undone_and_options_without_meaning_raise():
    before = (ember.relu, ember.Tensor.__add__, ember.Tensor.view, ember.Tensor.T)
    with pytest.raises(ZeroDivisionError):
        make_fx(lambda x: x + 1 / 0)(ember.ones(1))
    assert (ember.relu, ember.Tensor.__add__, ember.Tensor.view, ember.Tensor.T) == before
    with pytest.raises(NotImplementedError, match="fake tensors"):
        make_fx(lambda x: x, tracing_mode="fake")
    with pytest.raises(NotImplementedError, match="decompositions"):
        make_fx(lambda x: x, decomposition_table={1: 2})


def test_the_same_tensor_passed_twice_keeps_both_inputs():
    # torch's make_fx binds by identity and leaves one placeholder unused (then answers 0
    # here); torch.jit.trace keeps both. Ember traces the repeat as a copy, so both count.
    import torch

    def f(x, y):
        return x * 2 + y

    a = torch.ones(2)
    assert torch.jit.trace(f, (a, a))(torch.ones(2), torch.zeros(2)).tolist() == [2.0, 2.0]
    e = ember.ones(2)
    from ember.fx.experimental.proxy_tensor import make_fx
    assert make_fx(f)(e, e)(ember.ones(2), ember.zeros(2)).tolist() == [2.0, 2.0]
    assert ember.jit.trace(f, (e, e))(ember.ones(2), ember.zeros(2)).tolist() == [2.0, 2.0]
