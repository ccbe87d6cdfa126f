"""``nn`` workloads: whole training steps of small convolutional networks, Ember vs PyTorch.

Each step is forward, cross-entropy loss, backward and a hand-written SGD update
(``p -= lr * p.grad`` under ``no_grad``), so the time is the layers' forward and backward."""
import numpy as np

from workloads import workload


def _batch(lib, shape, classes, seed=0):
    rng = np.random.default_rng(seed)
    images = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32))
    labels = lib.from_numpy(rng.integers(0, classes, shape[0]))
    return images, labels


def _training_step(lib, model, images, labels, lr=0.01):
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss = lib.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= lr * p.grad
        return loss
    return step


def _lenet5(lib):
    nn = lib.nn

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, 10)

        def forward(self, x):
            F = lib.nn.functional
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = x.flatten(1)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))
    return LeNet5()


@workload("lenet5_train_step", "LeNet-5 training step (conv5-pool-conv5-pool-fc x3, ReLU), "
          "batch 64 of 1x28x28, cross-entropy, hand-written SGD", number=5, quick_number=2,
          target=("torch", 2.0))
def lenet5_train_step(lib):
    lib.manual_seed(0)
    images, labels = _batch(lib, (64, 1, 28, 28), 10)
    return _training_step(lib, _lenet5(lib), images, labels)


def _resnet_stack(lib, channels=64, blocks=3):
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            F = lib.nn.functional
            out = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(out)) + x)

    class ResNetStack(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, channels, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(channels)
            self.blocks = nn.Sequential(*[BasicBlock() for _ in range(blocks)])
            self.fc = nn.Linear(channels, 10)

        def forward(self, x):
            F = lib.nn.functional
            x = self.blocks(F.relu(self.bn(self.stem(x))))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))
    return ResNetStack()


@workload("resnet_stack_train_step", "ResNet-style training step: 3x3 conv stem + 3 residual "
          "blocks (two 3x3 convs with BatchNorm, 64 channels), global average pool, linear; "
          "batch 32 of 3x32x32, cross-entropy, hand-written SGD", number=1,
          target=("torch", 2.0))
def resnet_stack_train_step(lib):
    lib.manual_seed(0)
    images, labels = _batch(lib, (32, 3, 32, 32), 10)
    return _training_step(lib, _resnet_stack(lib), images, labels)
