"""``ember.jit.save``/``load``: one zip of the graph as data and the tensors; a fresh process
that never imports the models' module loads and runs it; a tampered file is refused."""
import io
import json
import zipfile

import numpy as np
import pytest

import ember
from jit_models import build, NAMES
from jit_helpers import run_in_fresh_process, flat_tensors


def test_load_in_a_fresh_process_without_the_model_class(tmp_path):
    programs, wants = [], []
    for name in NAMES:
        m, args = build(name)
        path = tmp_path / f"{name}.pt"
        ember.jit.trace(m, args).save(str(path))
        programs.append((path, args))
        with ember.no_grad():
            wants.append([t.numpy() for t in flat_tensors(m(*args))])
    for name, got, want in zip(NAMES, run_in_fresh_process("jit", programs, tmp_path), wants):
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_loaded_module_matches_in_process():
    m, args = build("cnn")
    traced = ember.jit.trace(m, args)
    buf = io.BytesIO()
    ember.jit.save(traced, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    assert isinstance(loaded, ember.jit.ScriptModule)
    assert sorted(loaded.state_dict()) == sorted(m.state_dict())
    assert sorted(n for n, _ in loaded.named_parameters()) == \
        sorted(n for n, _ in m.named_parameters())
    assert not loaded.training
    with ember.no_grad():
        np.testing.assert_allclose(loaded(*args).numpy(), m(*args).numpy(), rtol=1e-6)
    frozen = ember.jit.freeze(loaded)
    buf = io.BytesIO()
    frozen.save(buf)
    buf.seek(0)
    with ember.no_grad():
        np.testing.assert_allclose(ember.jit.load(buf)(*args).numpy(), m(*args).numpy(),
                                   rtol=1e-5, atol=1e-5)


def test_archive_is_data_only(tmp_path):
    m, args = build("mlp")
    path = tmp_path / "m.pt"
    ember.jit.save(ember.jit.trace(m, args), str(path))
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        header = json.loads(z.read("graph.json"))
    assert all(n == "graph.json" or n.endswith(".npy") for n in names)
    targets = {n["target"] for n in header["graph"] if n["op"] == "call_function"}
    assert "ember.nn.functional.linear" in targets or "ember.nn.functional._linear.linear" in \
        targets or any("linear" in t for t in targets)


def _tamper(path, out, edit):
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    header = json.loads(files["graph.json"])
    edit(header)
    files["graph.json"] = json.dumps(header).encode()
    with zipfile.ZipFile(out, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)


def test_unknown_or_foreign_targets_are_refused(tmp_path):
    m, args = build("mlp")
    path = tmp_path / "m.pt"
    ember.jit.save(ember.jit.trace(m, args), str(path))

    def set_target(value, op="call_function"):
        def edit(header):
            next(n for n in header["graph"] if n["op"] == op)["target"] = value
        return edit
    cases = [(set_target("os.system"), "not an Ember op"),
             (set_target("ember.no_such_op"), "unknown target"),
             (set_target("ember.jit.save"), "not an Ember op"),
             (set_target("__class__", "call_method"), "not a public Tensor method")]
    for i, (edit, message) in enumerate(cases):
        bad = tmp_path / f"bad{i}.pt"
        _tamper(path, bad, edit)
        with pytest.raises(RuntimeError, match=message):
            ember.jit.load(str(bad))
    with pytest.raises(RuntimeError, match="not a zip file"):
        ember.jit.load(io.BytesIO(b"not a zip"))


def test_save_errors():
    m, args = build("mlp")
    with pytest.raises(RuntimeError, match="expects a ScriptModule"):
        ember.jit.save(m, io.BytesIO())
    ep_buf = io.BytesIO()
    ember.export.save(ember.export.export(m, args), ep_buf)
    ep_buf.seek(0)
    with pytest.raises(RuntimeError, match="not a 'jit' one"):
        ember.jit.load(ep_buf)


def test_dtypes_gradients_and_map_location_round_trip():
    import ember.nn as nn
    m = nn.Linear(2, 3).to(ember.bfloat16)
    m.bias.requires_grad_(False)
    traced = ember.jit.trace(m, (ember.ones(1, 2, dtype=ember.bfloat16),))
    buf = io.BytesIO()
    traced.save(buf)
    buf.seek(0)
    loaded = ember.jit.load(buf, map_location="cpu")
    assert loaded.weight.dtype == ember.bfloat16 and loaded.weight.requires_grad
    assert not loaded.bias.requires_grad
    np.testing.assert_array_equal(loaded.weight.float().detach().numpy(),
                                  m.weight.float().detach().numpy())
    with pytest.raises(NotImplementedError, match="map_location"):
        ember.jit.load(buf, map_location={"cuda:0": "cpu"})


def test_a_traced_function_round_trips():
    def f(x, y):
        return (x @ y.t()).clamp(min=0) + ember.ones(1)
    x, y = ember.randn(2, 3), ember.randn(4, 3)
    buf = io.BytesIO()
    ember.jit.trace(f, (x, y)).save(buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    assert isinstance(loaded, ember.jit.ScriptFunction)
    assert loaded.state_dict() == {}  # the constant ones(1) is program, not state
    np.testing.assert_allclose(loaded(x, y).numpy(), f(x, y).numpy(), rtol=1e-6)


def test_scripted_modules_save_when_their_graph_is_ember_ops():
    m, args = build("mlp")
    scripted = ember.jit.script(m)
    assert not [n for n in scripted.graph.nodes if n.op == "call_module"]
    buf = io.BytesIO()
    scripted.save(buf)
    buf.seek(0)
    with ember.no_grad():
        np.testing.assert_allclose(ember.jit.load(buf)(*args).numpy(), m(*args).numpy(),
                                   rtol=1e-6)
    cnn, _ = build("cnn")  # BatchNorm's input checks keep it a leaf module: not saveable
    with pytest.raises(RuntimeError, match="use jit.trace"):
        ember.jit.script(cnn).save(io.BytesIO())


def test_ops_exposed_under_torch_names_save_by_their_public_path():
    # ember.linalg.norm is defined as a private function of ember.ops.linalg: the archive names
    # the public path, which the loader resolves, and never the private one
    def f(x, y):
        return ember.linalg.norm(x, dim=1) + ember.linalg.cross(x, y).sum(1)
    x, y = ember.randn(4, 3), ember.randn(4, 3)
    buf = io.BytesIO()
    ember.jit.save(ember.jit.trace(f, (x, y)), buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        graph = json.loads(z.read("graph.json"))["graph"]
    targets = {n["target"] for n in graph if n["op"] == "call_function"}
    assert {"ember.linalg.norm", "ember.linalg.cross"} <= targets, targets
    buf.seek(0)
    np.testing.assert_array_equal(ember.jit.load(buf)(x, y).numpy(), f(x, y).numpy())
