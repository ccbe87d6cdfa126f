"""Vision workloads: ResNet-18 from ``ember.vision.models`` against torchvision's on torch CPU.

Inference at batch 1 (per-layer overhead: 21 convolutions on small maps) and batch 32 (the
im2col matrix products dominate), and a training step at batch 16 (forward, cross-entropy,
backward through every convolution and BatchNorm, SGD). All at 224x224, float32, the models in
the mode the step needs. The report's time ratio is the inverse of the samples/s ratio, and
the peak RSS column is each framework's memory at that batch; the targets ask for at least a
third of PyTorch's inference and a quarter of its training throughput.

torchvision is imported as the tests import it (tests/vision/torchvision_oracle.py): its
compiled-op registrations are skipped, which the pure-Python models do not need."""
import sys
import types

import numpy as np

from workloads import workload


def _models(lib):
    if lib.__name__ == "ember":
        import ember.vision.models
        return ember.vision.models
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
    import torchvision.models
    return torchvision.models


def _images(lib, batch, seed=0):
    rng = np.random.default_rng(seed)
    return lib.from_numpy(rng.standard_normal((batch, 3, 224, 224), dtype=np.float32))


def _inference(batch):
    def setup(lib):
        lib.manual_seed(0)
        model = _models(lib).resnet18().eval()
        images = _images(lib, batch)

        def step():
            with lib.no_grad():
                return model(images)
        return step
    return setup


workload("resnet18_infer_b1", "ResNet-18 (ember.vision vs torchvision) inference, batch 1, "
         "224x224, float32, eval mode under no_grad", number=5, quick_number=1,
         target=("torch", 3.0))(_inference(1))
workload("resnet18_infer_b32", "ResNet-18 (ember.vision vs torchvision) inference, batch 32, "
         "224x224, float32, eval mode under no_grad", number=1, quick_number=1,
         target=("torch", 3.0))(_inference(32))


@workload("resnet18_train_step_b16", "ResNet-18 (ember.vision vs torchvision) training step, "
          "batch 16, 224x224, float32: forward in train mode, cross-entropy, backward, SGD "
          "with momentum", number=1, quick_number=1, target=("torch", 4.0))
def resnet18_train_step(lib):
    lib.manual_seed(0)
    model = _models(lib).resnet18().train()
    images = _images(lib, 16)
    labels = lib.from_numpy(np.random.default_rng(1).integers(0, 1000, 16))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        optimizer.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss
    return step
