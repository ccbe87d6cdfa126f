"""ember.onnx.export: models exported from Ember's traced graph pass onnx.checker and run in
onnxruntime with Ember's outputs, at the traced batch size and, with dynamic_axes, at others."""
import io
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _session(data):
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def _export(model, args, **kw):
    buf = io.BytesIO()
    ember.onnx.export(model, args, buf, **kw)
    data = buf.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    return data


def _flat(out):
    if isinstance(out, ember.Tensor):
        return [out.numpy()]
    return [a for o in out for a in _flat(o)]


def _assert_runs_like(model, data, inputs, names):
    session = _session(data)
    for xs in inputs:
        with ember.no_grad():
            expected = _flat(model(*xs))
        got = session.run(None, {n: x.numpy() for n, x in zip(names, xs)})
        assert len(got) == len(expected)
        for e, g in zip(expected, got):
            assert e.shape == g.shape
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


def _mlp():
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 3))


def _cnn():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, stride=1, padding="same"),
                         nn.BatchNorm2d(6), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 4 * 4, 5))


def test_mlp_to_path_with_names_and_dynamic_batch(tmp_path):
    ember.manual_seed(0)
    model = _mlp()
    path = tmp_path / "mlp.onnx"
    ember.onnx.export(model, (ember.randn(2, 4),), str(path), input_names=["features"],
                      output_names=["logits"],
                      dynamic_axes={"features": {0: "batch"}, "logits": {0: "batch"}})
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["features"]
    assert [o.name for o in proto.graph.output] == ["logits"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.opset_import[0].version == 17
    # Parameters are initializers under their state_dict names, with their values.
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    for name, p in model.state_dict().items():
        np.testing.assert_array_equal(inits[name], p.numpy())
    data = path.read_bytes()
    _assert_runs_like(model, data, [(ember.randn(2, 4),), (ember.randn(7, 4),),
                                    (ember.randn(1, 4),)], ["features"])


def test_cnn_with_batchnorm_exports_in_eval_and_keeps_the_training_mode():
    ember.manual_seed(0)
    model = _cnn()
    model.train()
    with ember.no_grad():  # running statistics that are not the defaults
        model(ember.randn(8, 3, 8, 8))
    data = _export(model, (ember.randn(2, 3, 8, 8),), input_names=["img"],
                   dynamic_axes={"img": [0]})
    assert model.training and all(m.training for m in model.modules())
    proto = onnx.load_from_string(data)
    assert "BatchNormalization" in {n.op_type for n in proto.graph.node}
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == \
        "img_dynamic_axes_1"
    model.eval()
    _assert_runs_like(model, data, [(ember.randn(2, 3, 8, 8),), (ember.randn(5, 3, 8, 8),)],
                      ["img"])


@pytest.mark.parametrize("batch_first,activation,norm_first",
                         [(True, "relu", False), (False, "gelu", True)])
def test_transformer_encoder_layer(batch_first, activation, norm_first):
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation=activation,
                                       batch_first=batch_first, norm_first=norm_first).eval()
    batch_axis = 0 if batch_first else 1

    def example(b):
        return ember.randn(b, 5, 8) if batch_first else ember.randn(5, b, 8)
    data = _export(layer, (example(2),), input_names=["src"], output_names=["out"],
                   dynamic_axes={"src": {batch_axis: "batch"}, "out": {batch_axis: "batch"}})
    _assert_runs_like(layer, data, [(example(2),), (example(3),), (example(6),)], ["src"])


@pytest.mark.parametrize("make", [
    lambda: nn.LSTM(4, 6, batch_first=True),
    lambda: nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True),
    lambda: nn.GRU(4, 6, num_layers=2, batch_first=True),
    lambda: nn.RNN(4, 6, nonlinearity="relu", bidirectional=True, batch_first=True),
])
def test_recurrent_layers(make):
    ember.manual_seed(0)
    model = make().eval()
    n_out = 3 if isinstance(model, nn.LSTM) else 2
    names = ["output", "h_n", "c_n"][:n_out]
    data = _export(model, (ember.randn(2, 5, 4),), input_names=["x"], output_names=names,
                   dynamic_axes={"x": {0: "batch"}})
    assert [o.name for o in onnx.load_from_string(data).graph.output] == names
    _assert_runs_like(model, data, [(ember.randn(2, 5, 4),), (ember.randn(4, 5, 4),)], ["x"])
    # the sequence length too: the layer is ONNX's own LSTM/GRU/RNN node, whatever the steps
    data = _export(model, (ember.randn(2, 5, 4),), input_names=["x"], output_names=names,
                   dynamic_axes={"x": {0: "batch", 1: "steps"}})
    _assert_runs_like(model, data, [(ember.randn(3, 9, 4),), (ember.randn(1, 1, 4),),
                                    (ember.randn(2, 5, 4),)], ["x"])


def test_recurrent_layer_time_major_with_dynamic_steps_and_state():
    ember.manual_seed(0)
    model = nn.GRU(3, 5).eval()  # (steps, batch, features)
    data = _export(model, (ember.randn(4, 2, 3), ember.randn(1, 2, 5)), input_names=["x", "h0"],
                   output_names=["y", "h_n"],
                   dynamic_axes={"x": {0: "steps", 1: "batch"}, "h0": {1: "batch"}})
    _assert_runs_like(model, data, [(ember.randn(7, 3, 3), ember.randn(1, 3, 5)),
                                    (ember.randn(1, 1, 3), ember.randn(1, 1, 5))], ["x", "h0"])


def test_default_names_file_like_and_model_proto():
    ember.manual_seed(0)
    model = _mlp().eval()

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = model

        def forward(self, a, b):
            y = self.mlp(a + b)
            return y, y * 2

    x, x2 = ember.randn(3, 4), ember.randn(3, 4)
    buf = io.BytesIO()
    assert ember.onnx.export(Two(), (x, x2), buf) is None
    proto = onnx.load_from_string(buf.getvalue())
    assert [i.name for i in proto.graph.input] == ["a", "b"]
    assert len(proto.graph.output) == 2
    returned = ember.onnx.export(Two(), (x, x2), None, output_names=["y"])
    assert isinstance(returned, onnx.ModelProto)
    assert [o.name for o in returned.graph.output][0] == "y"
    _assert_runs_like(Two(), buf.getvalue(), [(x, ember.randn(3, 4))], ["a", "b"])
    class Twice(nn.Module):
        def forward(self, a):
            y = a.relu()
            return y, y, a
    twice = ember.onnx.export(Twice(), (x,), None, input_names=["a"],
                              output_names=["y1", "y2", "same"])
    onnx.checker.check_model(twice, full_check=True)
    assert [o.name for o in twice.graph.output] == ["y1", "y2", "same"]
    _assert_runs_like(Twice(), twice.SerializeToString(), [(x,)], ["a"])
    # One tensor given twice is still two inputs.
    same = io.BytesIO()
    ember.onnx.export(Two(), (x, x), same)
    _assert_runs_like(Two(), same.getvalue(), [(x, ember.randn(3, 4))], ["a", "b"])


def test_export_params_false_opset_and_folding_switch():
    ember.manual_seed(0)
    model = nn.LSTM(4, 6, batch_first=True).eval()
    x = ember.randn(2, 5, 4)
    data = _export(model, (x,), input_names=["x"], export_params=False)
    proto = onnx.load_from_string(data)
    assert not {t.name for t in proto.graph.initializer} & set(model.state_dict())
    assert set(model.state_dict()) <= {i.name for i in proto.graph.input}
    for opset in (18, 20):
        _assert_runs_like(model, _export(model, (x,), input_names=["x"], opset_version=opset,
                                         do_constant_folding=False), [(x,)], ["x"])
    # Nodes of constants only are evaluated at export (an LSTM without biases: its zero bias
    # is a Concat of constants); parameters keep their names either way.
    plain = nn.LSTM(4, 6, bias=False, batch_first=True).eval()
    folded = onnx.load_from_string(_export(plain, (x,), input_names=["x"]))
    unfolded = onnx.load_from_string(_export(plain, (x,), input_names=["x"],
                                             do_constant_folding=False,
                                             keep_initializers_as_inputs=True))
    assert len(folded.graph.node) < len(unfolded.graph.node)
    assert set(plain.state_dict()) <= {t.name for t in folded.graph.initializer}
    assert {t.name for t in unfolded.graph.initializer} <= {i.name for i in
                                                             unfolded.graph.input}
    _assert_runs_like(plain, folded.SerializeToString(), [(x,)], ["x"])
    with pytest.raises(ValueError, match="opset version: 11"):
        ember.onnx.export(model, (x,), io.BytesIO(), opset_version=11)


def test_an_op_without_onnx_mapping_raises_naming_it():
    class Cumulative(nn.Module):
        def forward(self, x):
            return ember.cumsum(x, 0)
    with pytest.raises(ember.onnx.UnsupportedOperatorError,
                       match="Exporting the operator 'ember::cumsum' to ONNX opset version 17 "
                             "is not supported"):
        ember.onnx.export(Cumulative(), (ember.randn(3),), io.BytesIO())
    assert issubclass(ember.onnx.UnsupportedOperatorError, ember.onnx.OnnxExporterError)
    assert issubclass(ember.onnx.OnnxExporterError, RuntimeError)


def test_dynamic_axes_sizes_the_graph_cannot_compute_raise():
    class Flat(nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0] * x.shape[1])

    class FlatSliced(nn.Module):
        def forward(self, x):
            return x.reshape(-1)[:x.shape[0] * x.shape[1] - 1]
    # A product of two dynamic sizes is fine as the one size a Reshape infers...
    data = _export(Flat(), (ember.randn(2, 3),), input_names=["x"],
                   dynamic_axes={"x": {0: "b", 1: "n"}})
    _assert_runs_like(Flat(), data, [(ember.randn(5, 4),)], ["x"])
    # ...and nowhere else.
    with pytest.raises(ember.onnx.OnnxExporterError, match="not an affine function"):
        ember.onnx.export(FlatSliced(), (ember.randn(2, 3),), io.BytesIO(), input_names=["x"],
                          dynamic_axes={"x": {0: "b", 1: "n"}})
    # One dynamic axis at a time is affine: computed from the input's shape.
    data = _export(FlatSliced(), (ember.randn(2, 3),), input_names=["x"],
                   dynamic_axes={"x": {0: "b"}})
    _assert_runs_like(FlatSliced(), data, [(ember.randn(5, 3),)], ["x"])
    with pytest.raises(ValueError, match="neither an input name"):
        ember.onnx.export(Flat(), (ember.randn(2, 3),), io.BytesIO(),
                          dynamic_axes={"nope": [0]})


def test_transformer_with_dynamic_batch_and_sequence():
    ember.manual_seed(0)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                    enable_nested_tensor=False).eval()
    data = _export(encoder, (ember.randn(2, 5, 8),), input_names=["src"],
                   dynamic_axes={"src": {0: "batch", 1: "seq"}})
    _assert_runs_like(encoder, data, [(ember.randn(3, 7, 8),), (ember.randn(1, 2, 8),)],
                      ["src"])


def test_training_mode_dropout_refuses():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    with pytest.raises(ember.onnx.OnnxExporterError, match="eval mode"):
        ember.onnx.export(model, (ember.randn(2, 4),), io.BytesIO(),
                          training=ember.onnx.TrainingMode.TRAINING)


def test_missing_onnx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"ember\[onnx\]"):
        ember.onnx.export(_mlp(), (ember.randn(2, 4),), io.BytesIO())
