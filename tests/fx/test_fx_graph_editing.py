"""The Graph editing API and GraphModule: building graphs by hand, insertion points, erasing,
replacing uses, dead-code elimination, lint, recompile and printing, checked against torch.fx
where both can run the same edit."""
import copy
import operator

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx
from fx_models import build, signature, normalised_code, to_numpy


def _edit_add_to_mul_and_insert_relu(lib):
    """The same edit, in either library: every ``+`` becomes ``*``, and a relu goes after
    the first ``*``."""
    class M(lib.nn.Module):
        def forward(self, x, y):
            return (x + y) + 1
    gm = lib.fx.symbolic_trace(M())
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is operator.add:
            node.target = operator.mul
    first = next(n for n in gm.graph.nodes if n.target is operator.mul)
    with gm.graph.inserting_after(first):
        relu = gm.graph.call_function(lib.relu, (first,))
    first.replace_all_uses_with(relu, delete_user_cb=lambda user: user is not relu)
    gm.graph.lint()
    gm.recompile()
    return gm


def test_edit_and_recompile_change_behaviour_like_torch():
    tg, eg = _edit_add_to_mul_and_insert_relu(torch), _edit_add_to_mul_and_insert_relu(ember)
    assert signature(eg) == signature(tg)
    assert normalised_code(eg, "ember") == normalised_code(tg, "torch")
    x, y = ember.tensor([1.0, -2.0]), ember.tensor([3.0, 4.0])
    np.testing.assert_array_equal(to_numpy(eg(x, y)), [3.0, 0.0])  # relu(x*y) * 1


def test_build_graph_by_hand_and_graph_module_from_dict():
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        w = g.get_attr("lin.weight")
        mm = g.call_function(lib.matmul, (x, g.call_method("t", (w,))))
        out = g.call_module("act", (mm,))
        g.output(out)
        g.lint()
        lin = lib.nn.Linear(2, 3)
        gm = lib.fx.GraphModule({"lin.weight": lin.weight, "act": lib.nn.Tanh()}, g)
        names = [n.name for n in gm.graph.nodes]
        assert names == ["x", "lin_weight", "t", "matmul", "act", "output"]
        assert isinstance(gm.lin, lib.nn.Module) and gm.lin.weight is lin.weight
        xv = lib.ones(1, 2)
        np.testing.assert_allclose(to_numpy(gm(xv)),
                                   to_numpy(lib.tanh(xv @ lin.weight.t())), rtol=1e-6)
    with pytest.raises(RuntimeError, match="not provided in ``root``"):
        ember.fx.GraphModule({}, g)


def test_inserting_before_keeps_creation_order_and_names_are_unique():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    out_val = g.call_function(operator.add, (x, 1))
    g.output(out_val)
    with g.inserting_before(out_val):
        a = g.call_function(operator.neg, (x,))
        b = g.call_function(operator.neg, (a,))
    assert [n.name for n in g.nodes] == ["x", "neg", "neg_1", "add", "output"]
    out_val.args = (b, 1)
    assert set(b.users) == {out_val} and out_val not in x.users
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    np.testing.assert_array_equal(to_numpy(gm(ember.tensor([2.0]))), [3.0])


def test_erase_node_with_users_raises_and_dead_code_is_eliminated():
    for lib in (torch, ember):
        class M(lib.nn.Module):
            def forward(self, x):
                unused = x * 2  # noqa: F841
                kept = lib.relu(x)
                return kept + 1
        gm = lib.fx.symbolic_trace(M())
        relu = next(n for n in gm.graph.nodes if n.name == "relu")
        with pytest.raises(RuntimeError, match="Tried to erase Node relu but it still had 1 "
                                               "users in the graph"):
            gm.graph.erase_node(relu)
        assert gm.graph.eliminate_dead_code() is True
        assert [n.name for n in gm.graph.nodes] == ["x", "relu", "add", "output"]
        assert gm.graph.eliminate_dead_code() is False
        gm.recompile()
        assert "mul" not in gm.code
    # In-place method calls are kept: they act on their argument.
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.call_method("add_", (x, 1))
    g.output(x)
    assert g.eliminate_dead_code() is False


def test_lint_catches_use_before_definition_and_missing_targets():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.neg, (x,))
    b = g.call_function(operator.neg, (a,))
    g.output(b)
    b.prepend(a)  # fine: a still precedes b
    g.lint()
    x.append(b)  # b now runs before a, which it reads
    with pytest.raises(RuntimeError, match="was used before it has been defined"):
        g.lint()
    g2 = ember.fx.Graph()
    g2.output(g2.get_attr("missing"))
    gm = ember.fx.GraphModule({"missing": ember.ones(1)}, g2)
    del gm.missing
    with pytest.raises(RuntimeError, match="nonexistent"):
        gm.graph.lint()


def test_node_users_args_kwargs_and_replace_input():
    gm = ember.fx.symbolic_trace(build(ember, "Functional"))
    nodes = {n.name: n for n in gm.graph.nodes}
    assert nodes["sum_1"].kwargs == {"dim": 1, "keepdim": True}
    assert set(nodes["view"].users) == {nodes["relu"], nodes["sum_1"]}
    assert nodes["view"].all_input_nodes == [nodes["mul"], nodes["size"]]
    nodes["sum_1"].update_kwarg("keepdim", False)
    nodes["sum_1"].replace_input_with(nodes["view"], nodes["mul"])
    assert nodes["sum_1"] not in nodes["view"].users and nodes["sum_1"] in nodes["mul"].users
    gm.recompile()
    x = ember.randn(2, 4)
    out = gm(x)
    assert out[1].shape == (2,)


def test_graph_module_code_str_and_print_readable(capsys):
    tg = torch.fx.symbolic_trace(build(torch, "MLP"))
    eg = ember.fx.symbolic_trace(build(ember, "MLP"))
    assert eg.code.startswith("\n\n\ndef forward(self, x):\n")
    assert str(eg.graph).replace("ember.", "torch.") == str(tg.graph)
    text = eg.print_readable(print_output=False)
    assert text.splitlines()[0] == "class MLP(ember.nn.Module):"
    assert "    def forward(self, x):" in text
    eg.graph.print_tabular()
    table = capsys.readouterr().out
    assert table.split()[:5] == ["opcode", "name", "target", "args", "kwargs"]
    assert "call_module" in table and "fc1" in table
    assert "# To see more debug info" in str(eg)


def test_deepcopy_is_independent_and_pickling_says_why_not():
    gm = ember.fx.symbolic_trace(build(ember, "MLP"))
    clone = copy.deepcopy(gm)
    assert clone.code == gm.code and clone.fc1 is not gm.fc1
    x = ember.randn(2, 6)
    np.testing.assert_array_equal(to_numpy(clone(x)), to_numpy(gm(x)))
    for n in clone.graph.nodes:
        if n.op == "call_function":
            n.target = ember.sigmoid
    clone.recompile()
    assert "relu" in gm.code and "sigmoid" in clone.code
    import pickle
    with pytest.raises(TypeError, match="Pickling a GraphModule"):
        pickle.dumps(gm)


def test_graph_copy_and_node_copy_carry_meta():
    gm = ember.fx.symbolic_trace(build(ember, "MLP"))
    for n in gm.graph.nodes:
        n.meta["tag"] = n.name
    g2 = ember.fx.Graph()
    val_map = {}
    out = g2.graph_copy(gm.graph, val_map)
    g2.output(out)
    assert [n.meta.get("tag") for n in g2.nodes][:-1] == [n.name for n in gm.graph.nodes][:-1]
    assert len(g2.nodes) == len(gm.graph.nodes)
    gm2 = ember.fx.GraphModule(gm, g2)
    x = ember.randn(2, 6)
    np.testing.assert_array_equal(to_numpy(gm2(x)), to_numpy(gm(x)))


def test_find_nodes_and_errors_for_bad_nodes():
    gm = ember.fx.symbolic_trace(build(ember, "Residual"))
    assert [n.target for n in gm.graph.find_nodes(op="call_module")] == \
        ["blocks.0", "blocks.1", "norm"]
    assert len(gm.graph.find_nodes(op="call_function", target=ember.tanh)) == 2
    g = ember.fx.Graph()
    with pytest.raises(ValueError, match="Callable is expected"):
        g.create_node("call_function", "not_callable")
    with pytest.raises(ValueError, match="op must be one of"):
        g.create_node("call_everything", "x")


def test_submodule_management_and_assigning_a_graph_recompiles():
    gm = ember.fx.symbolic_trace(build(ember, "MLP"))
    node = next(n for n in gm.graph.nodes if n.target == "fc2")
    assert gm.add_submodule("extra.act", ember.nn.Sigmoid())
    with gm.graph.inserting_after(node):
        act = gm.graph.call_module("extra.act", (node,))
    node.replace_all_uses_with(act, delete_user_cb=lambda u: u is not act)
    gm.recompile()
    x = ember.randn(2, 6)
    np.testing.assert_allclose(to_numpy(gm(x)), to_numpy(ember.sigmoid(gm.fc2(
        ember.relu(gm.fc1(x))))), rtol=1e-6)
    act.replace_all_uses_with(node)
    gm.graph.erase_node(act)
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra") and hasattr(gm, "fc1")
    new_graph = copy.deepcopy(gm.graph)
    for n in new_graph.nodes:
        if n.op == "call_function":
            n.target = ember.tanh
    gm.graph = new_graph  # assigning re-owns the graph and regenerates forward
    assert "ember.tanh" in gm.code and gm.graph.owning_module is gm
    with pytest.raises(TypeError, match="Expected a Graph"):
        gm.graph = "not a graph"


def test_a_failing_node_is_named_in_the_error():
    def f(x):
        return x.view(7, 7)
    gm = ember.fx.symbolic_trace(f)
    with pytest.raises(RuntimeError) as info:
        ember.fx.Interpreter(gm).run(ember.ones(3))
    assert any("While executing %view" in note for note in getattr(info.value, "__notes__", []))


def test_generated_code_spells_literals_that_evaluate_back():
    def f(x):
        y = (-2.0) ** x + x[1:, ::2].sum() - x[..., None][0, :, 0]
        z = y.to(ember.float64).clamp(max=float("inf"))
        return z, x.new_zeros((2,), device=ember.device("cpu")), x.reshape(ember.Size([3, 2]))
    gm = ember.fx.symbolic_trace(f)
    assert "(-2.0) ** x" in gm.code and "x[1:, ::2]" in gm.code and "x[..., None]" in gm.code
    assert "ember.float64" in gm.code and "max = inf" in gm.code
    assert "device(type='cpu')" in gm.code
    x = ember.arange(6.0).reshape(2, 3)
    for got, want in zip(gm(x), f(x)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want))
