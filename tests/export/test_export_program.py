"""``ember.export``: ExportedProgram with torch's graph signature, a guarded ``module()``,
dynamic dims where the graph does not bake them (and a clear refusal where it does), and
save/load into a fresh process without the model's class."""
import io
import os
import sys

import numpy as np
import pytest

import ember
from ember.export import export, Dim, InputKind, OutputKind

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jit"))
from jit_models import build, NAMES  # noqa: E402
from jit_helpers import run_in_fresh_process, flat_tensors  # noqa: E402


def test_exported_program_equals_eager_and_survives_a_fresh_process(tmp_path):
    programs, wants = [], []
    for name in NAMES:
        m, args = build(name)
        ep = export(m, args)
        with ember.no_grad():
            want = [t.numpy() for t in flat_tensors(m(*args))]
            got = [t.numpy() for t in flat_tensors(ep.module()(*args))]
        with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
            ep(*args)  # as torch's
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, err_msg=name)
        path = tmp_path / f"{name}.pt2"
        ember.export.save(ep, str(path))
        programs.append((path, args))
        wants.append(want)
    for name, got, want in zip(NAMES, run_in_fresh_process("export", programs, tmp_path), wants):
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_graph_signature_kinds_and_order():
    m, args = build("cnn")
    ep = export(m, args)
    sig = ep.graph_signature
    kinds = [s.kind for s in sig.input_specs]
    assert kinds[-1] == InputKind.USER_INPUT and kinds.count(InputKind.USER_INPUT) == 1
    first_buffer = kinds.index(InputKind.BUFFER)
    assert set(kinds[:first_buffer]) == {InputKind.PARAMETER}
    assert set(sig.parameters) == {n for n, _ in m.named_parameters()}
    assert {"bn.running_mean", "bn.running_var"} <= set(sig.buffers)
    assert all(s.persistent for s in sig.input_specs if s.kind == InputKind.BUFFER)
    assert [s.kind for s in sig.output_specs] == [OutputKind.USER_OUTPUT]
    placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert placeholders == [s.arg.name for s in sig.input_specs]
    assert placeholders[0] == "p_conv_weight"
    assert sig.inputs_to_parameters["p_conv_weight"] == "conv.weight"
    assert set(ep.state_dict) == set(sig.parameters) | set(sig.buffers)
    # The lifted graph module takes the state as inputs, as torch's does.
    flat = [ep.state_dict[s.target] for s in sig.input_specs if s.kind != InputKind.USER_INPUT]
    with ember.no_grad():
        np.testing.assert_allclose(ep.graph_module(*flat, *args).numpy(), m(*args).numpy(),
                                   rtol=1e-6)
    assert "Graph signature" in str(ep)


def test_constants_are_lifted_as_constant_tensors():
    m, args = build("lstm")  # the zero initial states are constants of the trace
    ep = export(m, args)
    kinds = [s.kind for s in ep.graph_signature.input_specs]
    assert InputKind.CONSTANT_TENSOR in kinds
    assert ep.constants and not set(ep.constants) & set(ep.state_dict)


def test_static_shapes_are_guarded():
    m, args = build("mlp")
    mod = export(m, args).module()
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[0\] == 2 \(got 5\)"):
        mod(ember.randn(5, 4))
    with pytest.raises(AssertionError, match=r"Guard failed: x.dim\(\) == 2"):
        mod(ember.randn(2, 4, 1))
    with pytest.raises(TypeError, match="expects 1 positional inputs"):
        mod(ember.randn(2, 4), ember.randn(2, 4))


def test_dynamic_dim_accepts_other_sizes_within_its_range():
    m, args = build("cnn")
    batch = Dim("batch", min=1, max=8)
    ep = export(m, args, dynamic_shapes={"x": {0: batch}})
    assert ep.range_constraints == {"batch": (1, 8)}
    x = ember.randn(6, 3, 8, 8)
    with ember.no_grad():
        np.testing.assert_allclose(ep.module()(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[0\] <= 8"):
        ep.module()(ember.randn(9, 3, 8, 8))
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[2\] == 8"):
        ep.module()(ember.randn(2, 3, 9, 8))
    buf = io.BytesIO()
    ember.export.save(ep, buf)
    buf.seek(0)
    loaded = ember.export.load(buf)
    assert loaded.range_constraints == {"batch": (1, 8)}
    with ember.no_grad():
        np.testing.assert_allclose(loaded.module()(x).numpy(), m(x).numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_a_dynamic_dim_the_graph_specialised_is_refused():
    m, args = build("transformer")  # attention reshapes to literal (batch, heads, …) sizes
    with pytest.raises(NotImplementedError, match=r"dims marked dynamic \(batch\) were "
                                                  "specialised"):
        export(m, args, dynamic_shapes=({0: Dim("batch")},))


def test_export_argument_errors():
    m, args = build("mlp")
    with pytest.raises(ValueError, match="Expected `mod` to be an instance"):
        export(lambda x: x, args)
    with pytest.raises(ValueError, match="tuple of example positional inputs"):
        export(m, args[0])
    with pytest.raises(ValueError, match="not a positional argument"):
        export(m, args, dynamic_shapes={"y": {0: Dim("b")}})
    with pytest.raises(ValueError, match="outside the range"):
        export(m, args, dynamic_shapes=({0: Dim("b", min=3)},))
    with pytest.raises(ValueError, match="inconsistent"):
        Dim("b", min=4, max=2)
    with pytest.raises(TypeError, match="must be an instance of 'ExportedProgram'"):
        ember.export.save(m, io.BytesIO())
    with pytest.raises(NotImplementedError, match="ATen decompositions"):
        export(m, args).run_decompositions()
