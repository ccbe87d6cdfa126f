"""Quantization workloads: int8 inference against float32, Ember vs PyTorch's quantized CPU
kernels (FBGEMM/x86), at batch 1 (latency, dispatch-bound) and batch 64 (throughput).

The same script quantizes both frameworks' models (``lib.ao.quantization``): an MLP
(784-512-256-10) dynamically quantized (int8 weights, activations quantized per call), and
the digits-style CNN statically quantized (fused conv-bn-relu, calibrated, converted). Each
int8 row has a float32 row of the same model beside it; the target is that Ember's int8
model is no slower than 3x PyTorch's."""
import numpy as np

from workloads import workload


def _mlp(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10)).eval()


def _cnn(lib):
    nn, tq = lib.nn, lib.ao.quantization
    lib.manual_seed(0)
    # max pooling runs in float for both frameworks (Ember's quantized tensors have no
    # pooling kernel), as in examples/quantize_digits.py
    return nn.Sequential(
        tq.QuantStub(), nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), tq.DeQuantStub(),
        nn.MaxPool2d(2), tq.QuantStub(), nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU(),
        nn.Linear(128, 10), tq.DeQuantStub()).eval()


def _input(lib, shape, seed=0):
    return lib.from_numpy(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))


def _dynamic_mlp(lib):
    return lib.ao.quantization.quantize_dynamic(_mlp(lib), {lib.nn.Linear}, dtype=lib.qint8)


def _static_cnn(lib):
    tq = lib.ao.quantization
    model = tq.fuse_modules(_cnn(lib), [["1", "2", "3"], ["4", "5", "6"], ["11", "12"]])
    model.qconfig = tq.get_default_qconfig("x86")
    prepared = tq.prepare(model)
    with lib.no_grad():
        for seed in range(4):
            prepared(_input(lib, (32, 1, 8, 8), seed))
    return tq.convert(prepared)


def _inference(build, shape):
    def setup(lib):
        model = build(lib)
        x = _input(lib, shape)

        def step():
            with lib.no_grad():
                return model(x)
        return step
    return setup


for batch, number in ((1, 200), (64, 50)):
    workload(f"quant_mlp_float32_b{batch}", f"MLP 784-512-256-10 float32 inference, batch {batch}",
             number=number, quick_number=5)(_inference(_mlp, (batch, 784)))
    workload(f"quant_mlp_dynamic_int8_b{batch}",
             f"same MLP, quantize_dynamic int8 Linear layers, batch {batch}",
             number=number, quick_number=5, target=("torch", 3.0))(
        _inference(_dynamic_mlp, (batch, 784)))
    workload(f"quant_cnn_float32_b{batch}",
             f"digits CNN (2 conv-bn-relu, maxpool, 2 linear) float32 inference, batch {batch}",
             number=number, quick_number=5)(_inference(_cnn, (batch, 1, 8, 8)))
    workload(f"quant_cnn_static_int8_b{batch}",
             f"same CNN fused and statically quantized to int8, batch {batch}",
             number=number, quick_number=5, target=("torch", 3.0))(
        _inference(_static_cnn, (batch, 1, 8, 8)))
