"""Quantize and prune the digits models: int8 (dynamic and static) and 90% sparsity.

    python examples/quantize_digits.py                  # train, quantize, prune; print a table
    python examples/quantize_digits.py --plot           # also write docs/pruning_sparsity.png
    python examples/quantize_digits.py --quick          # a few-second smoke run

The same code runs on PyTorch with ``import torch`` in place of ``import ember as torch``.
Two models learn the UCI digits bundled with Ember (``ember.demo.load_digits``): the demo's
CNN (with a QuantStub/DeQuantStub around it) and an MLP. Each is then

- dynamically quantized (``quantize_dynamic``: int8 Linear weights, activations quantized per
  batch; for the CNN also with its convolutions, named in ``mapping``),
- statically quantized (``fuse_modules`` conv-bn-relu/linear-relu, ``prepare``, calibration on
  training batches, ``convert``: int8 weights and activations end to end),

and the table shows accuracy and the bytes of the saved state_dict against float32. Last, the
CNN is pruned by global L1 magnitude to rising sparsity (each level fine-tuned for a moment
with the mask in place), its accuracy recorded, and the 90%-sparse model saved compactly
(``ember.nn.utils.sparse_state_dict``).
"""
import argparse
import copy
import os
import sys
import time
import warnings

import numpy as np

import ember as torch
from ember import nn
from ember.ao import quantization as tq
from ember.demo import load_digits, split
from ember.nn.utils import prune
from ember.nn.utils.sparse_state_dict import compact_state_dict, load_compact_state_dict

SPARSITIES = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class DigitsCNN(nn.Module):
    """The demo's CNN, between a QuantStub and a DeQuantStub (identities until convert).

    Ember's quantized tensors have no max-pooling kernel yet, so the pooling runs in float
    between a DeQuantStub and a QuantStub (in PyTorch it could stay in int8; the numbers
    are the same, max pooling commutes with the affine quantization)."""

    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU())
        self.dequant_pool = tq.DeQuantStub()
        self.pool = nn.MaxPool2d(2)                                     # 8x8 -> 4x4
        self.quant_pool = tq.QuantStub()
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(),
            nn.Linear(128, 10))
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.dequant_pool(self.features(self.quant(x)))
        x = self.quant_pool(self.pool(x))
        return self.dequant(self.classifier(x))

    fuse_list = [["features.0", "features.1", "features.2"],
                 ["features.3", "features.4", "features.5"], ["classifier.2", "classifier.3"]]


class DigitsMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(),
                                    nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.layers(self.quant(x)))

    fuse_list = [["layers.1", "layers.2"], ["layers.3", "layers.4"]]


def batches(x, y, batch_size, rng=None):
    order = rng.permutation(len(y)) if rng is not None else np.arange(len(y))
    for i in range(0, len(y), batch_size):
        idx = order[i:i + batch_size]
        yield torch.from_numpy(x[idx]), torch.from_numpy(y[idx])


def train(model, data, epochs, lr=2e-3, seed=0):
    (x, y), _ = data
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        for xb, yb in batches(x, y, 64, rng):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    return model.eval()


def accuracy(model, data):
    _, (x, y) = data
    correct = 0
    with torch.no_grad():
        for xb, yb in batches(x, y, 256):
            correct += int((model(xb).argmax(1) == yb).sum())
    return 100.0 * correct / len(y)


def tensor_bytes(value):
    """Bytes of tensor data in a state_dict value (packed int8 weights come as tuples)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0


def state_dict_bytes(model):
    """Tensor bytes of the state_dict: what a checkpoint of the model stores."""
    return tensor_bytes(model.state_dict())


def quantize_static(model, data, calibration_batches, backend="x86"):
    (x, y), _ = data
    fused = tq.fuse_modules(copy.deepcopy(model).eval(), model.fuse_list)
    fused.qconfig = tq.get_default_qconfig(backend)
    prepared = tq.prepare(fused)
    with torch.no_grad():
        for i, (xb, _) in enumerate(batches(x, y, 64)):
            if i == calibration_batches:
                break
            prepared(xb)
    return tq.convert(prepared)


def quantize_dynamic(model, convolutions=False):
    """int8 Linear weights; with ``convolutions``, the Conv2d weights too (the default mapping
    leaves convolutions float, as torch's: they are named in ``mapping``)."""
    if not convolutions:
        return tq.quantize_dynamic(copy.deepcopy(model).eval(), {nn.Linear}, dtype=torch.qint8)
    from ember.ao.nn.quantized import dynamic as nnqd
    with warnings.catch_warnings():  # torch's own: "poor numerical accuracy" (see the table)
        warnings.simplefilter("ignore", UserWarning)
        return tq.quantize_dynamic(copy.deepcopy(model).eval(), {nn.Linear, nn.Conv2d},
                                   dtype=torch.qint8,
                                   mapping={nn.Linear: nnqd.Linear, nn.Conv2d: nnqd.Conv2d})


def quantization_rows(name, model, data, calibration_batches):
    float_acc, float_bytes = accuracy(model, data), state_dict_bytes(model)
    rows = [dict(model=name, variant="float32", accuracy=float_acc, bytes=float_bytes)]
    variants = [("dynamic int8", lambda: quantize_dynamic(model))]
    if any(isinstance(m, nn.Conv2d) for m in model.modules()):
        variants.append(("dynamic int8, conv too", lambda: quantize_dynamic(model, True)))
    variants.append(("static int8", lambda: quantize_static(model, data, calibration_batches)))
    for variant, build in variants:
        start = time.perf_counter()
        qmodel = build()
        seconds = time.perf_counter() - start
        rows.append(dict(model=name, variant=variant, accuracy=accuracy(qmodel, data),
                         bytes=state_dict_bytes(qmodel), seconds=seconds))
    for row in rows:
        row["drop"] = float_acc - row["accuracy"]
        row["size_ratio"] = row["bytes"] / float_bytes
    return rows


def _prunable(model):
    return [(m, "weight") for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def sparsity_curve(model, data, sparsities, finetune_epochs):
    """Accuracy of ``model`` pruned (global L1, all conv/linear weights) to each sparsity,
    after ``finetune_epochs`` of training with the mask held; and the 90% model's compact
    checkpoint size."""
    curve, compact_bytes = [], None
    for sparsity in sparsities:
        pruned = copy.deepcopy(model)
        if sparsity > 0:
            prune.global_unstructured(_prunable(pruned), pruning_method=prune.L1Unstructured,
                                      amount=sparsity)
            if finetune_epochs:
                train(pruned, data, finetune_epochs, lr=1e-3)
        curve.append((sparsity, accuracy(pruned, data)))
        if sparsity == 0.9:
            compact = compact_state_dict(pruned)
            compact_bytes = tensor_bytes(compact)
            # the compact checkpoint loads back into the plain (unpruned) architecture
            dense = type(model)()
            load_compact_state_dict(dense, compact)
            assert abs(accuracy(dense.eval(), data) - curve[-1][1]) < 1e-9
    return curve, compact_bytes


def save_plot(path, curve):
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: `pip install 'ember[demo]'`") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sparsity, acc = zip(*curve)
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    ax.plot([100 * s for s in sparsity], acc, marker="o")
    ax.set_xlabel("weights pruned (%) — global L1, conv + linear")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("Digits CNN: accuracy vs sparsity (Ember)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--plot", action="store_true",
                        help="write the accuracy-vs-sparsity curve (docs/pruning_sparsity.png)")
    parser.add_argument("--plot-path", default=os.path.join(REPO, "docs", "pruning_sparsity.png"))
    parser.add_argument("--epochs", type=int, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    images, labels = load_digits()
    if args.quick:
        images, labels = images[:400], labels[:400]
    data = split(images, labels, seed=0)
    epochs = args.epochs if args.epochs is not None else (1 if args.quick else 8)
    calibration = 2 if args.quick else 10

    cnn = train(DigitsCNN(), data, epochs)
    mlp = train(DigitsMLP(), data, epochs * 2)
    rows = (quantization_rows("CNN", cnn, data, calibration)
            + quantization_rows("MLP", mlp, data, calibration))
    print(f"{'model':5} {'variant':22} {'accuracy':>9} {'drop':>6} {'bytes':>9} {'x f32':>6}")
    for r in rows:
        print(f"{r['model']:5} {r['variant']:22} {r['accuracy']:8.2f}% {r['drop']:6.2f} "
              f"{r['bytes']:9d} {r['size_ratio']:6.3f}")

    sparsities = (0.0, 0.9) if args.quick else SPARSITIES
    curve, compact_bytes = sparsity_curve(cnn, data, sparsities, 0 if args.quick else 1)
    print("\nCNN pruned (global L1) — sparsity: accuracy")
    for sparsity, acc in curve:
        print(f"  {100 * sparsity:4.0f}%: {acc:6.2f}%")
    print(f"90%-sparse CNN, compact (CSR) checkpoint: {compact_bytes} bytes "
          f"({compact_bytes / rows[0]['bytes']:.3f}x float32)")
    if args.plot:
        save_plot(args.plot_path, curve)
        print(f"wrote {args.plot_path}")
    return {"rows": rows, "curve": curve, "compact_bytes": compact_bytes}


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
