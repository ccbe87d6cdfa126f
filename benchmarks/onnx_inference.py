"""ONNX export and onnxruntime inference of Ember's models, beside Ember's and PyTorch's eager
inference (issue 19's "ONNX export + onnxruntime inference vs Ember, recorded").

    python benchmarks/onnx_inference.py [--rounds 3]

Each engine runs in its own process, the rounds alternating: ``ember`` (eager, ``no_grad``),
``onnxruntime`` (the model Ember exported, a session with 2 intra-op threads), ``torch``
(eager, ``no_grad``, the same weights). Times are per call, best of 7 repeats; the table gives
the median over rounds of those bests, and the export's own time. Needs ``ember[onnx]``.
"""
import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def _lstm(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lib.nn.LSTM(128, 256, batch_first=True)
            self.fc = lib.nn.Linear(256, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])
    return Net()


def _transformer(lib):
    nn = lib.nn
    layer = nn.TransformerEncoderLayer(256, 4, 512, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


# name -> (builder(lib) -> module, input shape at a batch size)
MODELS = {
    "mlp": (_mlp, lambda b: (b, 784)),
    "cnn": (_cnn, lambda b: (b, 1, 28, 28)),
    "lstm": (_lstm, lambda b: (b, 32, 128)),
    "transformer": (_transformer, lambda b: (b, 32, 256)),
}
BATCHES = (1, 64)


def _weights(name):
    """The same weights for every engine: Ember's module, initialised with seed 0."""
    import ember
    ember.manual_seed(0)
    return {k: v.detach().numpy().copy() for k, v in MODELS[name][0](ember).state_dict().items()}


def _best(fn, number):
    fn()
    return min(timeit.repeat(fn, number=number, repeat=7)) / number


def _number(batch):
    return 50 if batch == 1 else 5


def run_engine(engine):
    results = {}
    rng = np.random.default_rng(0)
    for name, (build, shape) in MODELS.items():
        weights = _weights(name)
        if engine == "torch":
            import torch
            torch.set_num_threads(2)
            lib = torch
        else:
            import ember
            lib = ember
        model = build(lib).eval()
        model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in weights.items()})
        inputs = {b: rng.standard_normal(shape(b)).astype(np.float32) for b in BATCHES}
        if engine == "onnxruntime":
            import onnxruntime as ort
            buf = io.BytesIO()
            start = time.perf_counter()
            import ember
            ember.onnx.export(model, (lib.from_numpy(inputs[1]),), buf, input_names=["x"],
                              output_names=["y"], dynamic_axes={"x": {0: "batch"}})
            results[f"{name}/export"] = time.perf_counter() - start
            options = ort.SessionOptions()
            options.intra_op_num_threads = 2
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(buf.getvalue(), options,
                                           providers=["CPUExecutionProvider"])
            for b, x in inputs.items():
                results[f"{name}/b{b}"] = _best(lambda: session.run(None, {"x": x}), _number(b))
        else:
            for b, x in inputs.items():
                t = lib.from_numpy(x)
                with lib.no_grad():
                    results[f"{name}/b{b}"] = _best(lambda: model(t), _number(b))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        print(json.dumps(run_engine(args.engine)))
        return
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    samples = {}
    for _ in range(args.rounds):
        for engine in ("ember", "onnxruntime", "torch"):
            out = subprocess.run([sys.executable, __file__, "--engine", engine], env=env,
                                 check=True, stdout=subprocess.PIPE, text=True).stdout
            for key, value in json.loads(out.strip().splitlines()[-1]).items():
                samples.setdefault((engine, key), []).append(value)

    def med(engine, key):
        values = samples.get((engine, key))
        return statistics.median(values) if values else None

    def fmt(seconds):
        return f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"
    print(f"| model | batch | Ember eager | onnxruntime (Ember's export) | PyTorch eager | "
          f"onnxruntime / Ember | Ember / PyTorch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in MODELS:
        for b in BATCHES:
            key = f"{name}/b{b}"
            e, o, t = med("ember", key), med("onnxruntime", key), med("torch", key)
            print(f"| {name} | {b} | {fmt(e)} | {fmt(o)} | {fmt(t)} | {o / e:.2f}× | "
                  f"{e / t:.2f}× |")
    print()
    print("Export time (ember.onnx.export, with the dynamic-batch traces): " + ", ".join(
        f"{name} {med('onnxruntime', f'{name}/export') * 1e3:.0f} ms" for name in MODELS))


if __name__ == "__main__":
    main()
