"""ember.utils.tensorboard.SummaryWriter: files read back with TensorBoard's own reader
(EventAccumulator), and histograms equal to torch's SummaryWriter's on the same values."""
import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.utils.tensorboard import SummaryWriter

pytest.importorskip("tensorboardX")
event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _read(path):
    ea = event_accumulator.EventAccumulator(str(path), size_guidance={"images": 0, "tensors": 0})
    ea.Reload()
    return ea


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))).sum(1)


def test_scalars_histograms_and_text_read_back(tmp_path):
    ember.manual_seed(0)
    net = _Net()
    net(ember.randn(5, 3)).sum().backward()
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
        w.add_histogram("fc1.weight.grad", net.fc1.weight.grad, 0)
        w.add_text("note", "hello *ember*", 0)
        w.add_scalars("run", {"a": 1.0, "b": ember.tensor(2.0)}, 0)
        w.add_scalar("new", ember.tensor(0.25), 4, new_style=True)
    ea = _read(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in ea.Scalars("loss")] == \
        [(0, 1.0), (1, 0.5), (2, round(1 / 3, 6))]
    hist = ea.Histograms("fc1.weight.grad")[0].histogram_value
    grad = net.fc1.weight.grad.numpy().astype(np.float64)
    assert hist.num == grad.size and hist.sum == pytest.approx(grad.sum(), abs=1e-6)
    assert hist.min == pytest.approx(grad.min()) and hist.max == pytest.approx(grad.max())
    text = ea.Tensors("note/text_summary")[0].tensor_proto.string_val[0].decode()
    assert text == "hello *ember*"
    new = ea.Tensors("new")[0]
    assert new.step == 4 and new.tensor_proto.float_val[0] == 0.25
    assert ea.summary_metadata["new"].plugin_data.plugin_name == "scalars"
    runs = sorted(d for d in os.listdir(tmp_path) if os.path.isdir(tmp_path / d))
    assert runs == ["run_a", "run_b"]
    assert _read(tmp_path / "run_b").Scalars("run")[0].value == 2.0


def test_histogram_buckets_equal_torchs(tmp_path):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    values = np.random.default_rng(1).normal(size=200).astype(np.float32)
    with SummaryWriter(tmp_path / "ember") as w:
        w.add_histogram("h", ember.tensor(values), 0)
    with TorchWriter(str(tmp_path / "torch")) as w:
        import torch
        w.add_histogram("h", torch.tensor(values), 0)
    mine = _read(tmp_path / "ember").Histograms("h")[0].histogram_value
    theirs = _read(tmp_path / "torch").Histograms("h")[0].histogram_value
    assert list(mine.bucket_limit) == pytest.approx(list(theirs.bucket_limit))
    assert list(mine.bucket) == list(theirs.bucket)


def test_images_decode_to_the_pixels_written(tmp_path):
    from PIL import Image
    from ember.vision.utils import make_grid
    ember.manual_seed(0)
    chw = ember.rand(3, 6, 5)
    batch = ember.rand(4, 3, 6, 5)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", chw, 0)
        w.add_image("hwc_uint8", (chw.permute(1, 2, 0) * 255).to(ember.uint8), 0,
                    dataformats="HWC")
        w.add_images("batch", batch, 0)
        w.add_image("grid", make_grid(batch, nrow=2, padding=1), 0)
    ea = _read(tmp_path)

    def pixels(tag):
        return np.asarray(Image.open(io.BytesIO(ea.Images(tag)[0].encoded_image_string)))
    expected = (chw.permute(1, 2, 0).numpy() * 255).clip(0, 255)
    assert np.abs(pixels("chw").astype(float) - expected).max() <= 1
    assert np.abs(pixels("hwc_uint8").astype(float) - expected).max() <= 1
    assert pixels("batch").shape == (6, 20, 3)  # 4 images tiled in one row, as torch tiles them
    assert pixels("grid").shape == (6 * 2 + 3, 5 * 2 + 3, 3)


def test_graph_has_a_node_per_op_with_shapes_and_scopes(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(_Net(), ember.randn(2, 3))
    graph = _read(tmp_path).Graph()
    nodes = {n.name: n for n in graph.node}
    shapes = {name: [[d.size for d in s.dim] for s in n.attr["_output_shapes"].list.shape]
              for name, n in nodes.items()}
    assert nodes["Net/Linear[fc1]/linear".replace("Net", "_Net")].op == "ember::linear"
    assert shapes["_Net/Linear[fc1]/linear"] == [[2, 4]]
    assert shapes["_Net/Linear[fc1]/weight"] == [[4, 3]]
    assert list(nodes["_Net/ReLU[act]/relu"].input) == ["_Net/Linear[fc1]/linear"]
    assert shapes["_Net/Linear[fc2]/linear_1"] == [[2, 2]]
    assert shapes["input/arg0_1"] == [[2, 3]] and shapes["output/output.1"] == [[2]]
    with SummaryWriter(tmp_path / "x") as w, pytest.raises(ValueError, match="input_to_model"):
        w.add_graph(_Net())


def test_hparams_embedding_pr_curve_and_figure(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "bs": 4}, {"hparam/acc": ember.tensor(0.9)}, run_name="hp")
        w.add_embedding(ember.randn(6, 4), metadata=list("abcdef"), tag="emb")
        w.add_pr_curve("pr", ember.tensor([0, 1, 1, 0]), ember.tensor([0.1, 0.9, 0.6, 0.4]), 0)
        fig = plt.figure()
        plt.plot([1, 2, 3])
        w.add_figure("fig", fig, 0)
    hp = _read(tmp_path / "hp")
    assert "_hparams_/experiment" in hp.summary_metadata
    assert hp.Scalars("hparam/acc")[0].value == pytest.approx(0.9)
    ea = _read(tmp_path)
    assert "pr" in ea.Tags()["tensors"] and "fig" in ea.Tags()["images"]
    assert "emb" in open(tmp_path / "projector_config.pbtxt").read()
    tsv = [f for root, _, files in os.walk(tmp_path) for f in files if f == "tensors.tsv"]
    assert tsv


def test_default_log_dir_as_torch_and_torch_never_imported(tmp_path):
    code = ("import sys, ember; from ember.utils.tensorboard import SummaryWriter\n"
            "w = SummaryWriter(comment='_x'); w.add_scalar('a', 1.0, 0); w.close()\n"
            "print(w.log_dir); assert 'torch' not in sys.modules, 'torch imported'")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"runs/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+_x", out.stdout.strip())


def test_file_writer_and_absent_names(tmp_path):
    import ember.utils.tensorboard as tb
    from tensorboardX import summary
    fw = tb.FileWriter(tmp_path)
    fw.add_summary(summary.scalar("x", 3.0), 2)
    fw.close()
    assert fw.get_logdir() == str(tmp_path)
    assert [(e.step, e.value) for e in _read(tmp_path).Scalars("x")] == [(2, 3.0)]
    with pytest.raises(AttributeError, match="Ember tensors"):
        tb.summary
    assert not hasattr(tb, "RecordWriter")


def test_missing_tensorboardx_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match=r"pip install 'ember\[tb\]'"):
        SummaryWriter(tmp_path)


def test_onnx_graph_from_embers_export(tmp_path):
    pytest.importorskip("onnx")
    path = str(tmp_path / "model.onnx")
    ember.onnx.export(nn.Sequential(nn.Linear(3, 4), nn.ReLU()), (ember.randn(2, 3),), path)
    with SummaryWriter(tmp_path / "run") as w:
        w.add_onnx_graph(path)
    assert [n.op for n in _read(tmp_path / "run").Graph().node][-2:] == ["Gemm", "Relu"]
