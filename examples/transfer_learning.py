"""Transfer learning: a torchvision ResNet-18 checkpoint, loaded through ``weights=``, fine-tuned
on a small image set with a new classification head.

    python examples/transfer_learning.py                       # offline, a few minutes
    python examples/transfer_learning.py --checkpoint resnet18-f37072fd.pth --image-size 96

The checkpoint is found the way torchvision finds it: ``ResNet18_Weights.IMAGENET1K_V1`` names
``resnet18-f37072fd.pth``, looked up in ``$TORCH_HOME/hub/checkpoints``. ``--checkpoint``
copies a file you have (torchvision's real download, or any ResNet-18 state dict with
torchvision's keys) there; ``--torch-home`` points at an existing cache instead (``~/.cache/
torch`` holds what torchvision downloaded). With neither, the example writes a randomly
initialised ResNet-18 checkpoint into a temporary cache, so everything runs offline: the
pipeline is the same, only the starting features are not ImageNet's.

The images are generated: discs, squares and triangles in random colours, sizes and positions
on a noisy background. Training updates ``layer4`` and the new ``fc`` head (``--train-all``:
every layer), with the inference preset's normalisation and random flips. A grid of test
images with their predictions (green border: right, red: wrong) is written as a PNG.
"""
import argparse
import os
import shutil
import tempfile

import numpy as np

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, TensorDataset
from ember.vision import models, transforms
from ember.vision.utils import make_grid, save_image

CLASSES = ("disc", "square", "triangle")


def make_shapes(n, size, seed):
    """``n`` RGB images (uint8, N×3×size×size) of the three shapes, and their labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASSES), n)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    centre = rng.uniform(0.35, 0.65, (n, 2, 1, 1)).astype(np.float32)
    radius = rng.uniform(0.15, 0.3, (n, 1, 1)).astype(np.float32)
    dy, dx = yy - centre[:, 0], xx - centre[:, 1]
    disc = dy ** 2 + dx ** 2 < radius ** 2
    square = (np.abs(dy) < radius * 0.85) & (np.abs(dx) < radius * 0.85)
    triangle = (dy < radius * 0.8) & (dy > -radius) & (np.abs(dx) < (dy + radius) * 0.6)
    masks = np.choose(labels[:, None, None], [disc, square, triangle])
    background = rng.uniform(0, 90, (n, 3, size, size))
    colour = rng.uniform(120, 255, (n, 3, 1, 1))
    images = np.where(masks[:, None], colour, background)
    return images.astype(np.uint8), labels


def prepare_checkpoint(torch_home, checkpoint):
    """Put ``checkpoint`` (or, with none, a random ResNet-18) where ``weights=`` looks."""
    weights = models.ResNet18_Weights.IMAGENET1K_V1
    cache = os.path.join(torch_home, "hub", "checkpoints")
    os.makedirs(cache, exist_ok=True)
    target = os.path.join(cache, os.path.basename(weights.url))
    if checkpoint is not None:
        shutil.copyfile(checkpoint, target)
    elif not os.path.exists(target):
        print(f"no checkpoint given: writing a randomly initialised ResNet-18 to {target}")
        torch.save(models.resnet18().state_dict(), target)
    return weights


def build_model(weights, train_all):
    """ResNet-18 with the checkpoint's features and a new 3-way ``fc`` head."""
    model = models.resnet18(weights=weights, progress=False)
    model.fc = nn.Linear(model.fc.in_features, len(CLASSES))
    for name, p in model.named_parameters():
        p.requires_grad_(train_all or name.startswith(("layer4.", "fc.")))
    return model


def _bordered(images, correct):
    """Frame each image green (right) or red (wrong), for the prediction grid."""
    framed = images.clone()
    colours = torch.tensor([[1.0, 0.1, 0.1], [0.1, 0.9, 0.1]])[correct.long()]
    colour = colours[:, :, None, None]
    for rows, cols in ((slice(0, 3), slice(None)), (slice(-3, None), slice(None)),
                       (slice(None), slice(0, 3)), (slice(None), slice(-3, None))):
        framed[:, :, rows, cols] = colour.expand_as(framed[:, :, rows, cols])
    return framed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", help="a ResNet-18 state dict with torchvision's keys")
    parser.add_argument("--torch-home", help="use this TORCH_HOME (default: a temporary one)")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--train-images", type=int, default=384)
    parser.add_argument("--test-images", type=int, default=96)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop after this many optimizer steps (for a quick check)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--train-all", action="store_true", help="fine-tune every layer")
    parser.add_argument("--out", default="transfer-learning", help="folder for the PNG")
    args = parser.parse_args(argv)
    torch.manual_seed(0)

    temporary = None
    torch_home = args.torch_home
    if torch_home is None:
        temporary = tempfile.TemporaryDirectory()
        torch_home = temporary.name
    previous_home = os.environ.get("TORCH_HOME")
    os.environ["TORCH_HOME"] = torch_home
    try:
        weights = prepare_checkpoint(torch_home, args.checkpoint)
        model = build_model(weights, args.train_all)
    finally:
        if previous_home is None:
            os.environ.pop("TORCH_HOME", None)
        else:
            os.environ["TORCH_HOME"] = previous_home
        if temporary is not None:
            temporary.cleanup()

    # The checkpoint's own preset says how its inputs were normalised.
    preset = weights.transforms()
    normalize = transforms.Normalize(preset.mean, preset.std)
    augment = transforms.RandomHorizontalFlip()

    def to_inputs(images, train):
        x = images.float() / 255
        if train:
            x = augment(x)
        return normalize(x)

    train_x, train_y = make_shapes(args.train_images, args.image_size, seed=1)
    test_x, test_y = make_shapes(args.test_images, args.image_size, seed=2)
    loader = DataLoader(TensorDataset(torch.from_numpy(train_x), torch.from_numpy(train_y)),
                        batch_size=args.batch_size, shuffle=True)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=args.lr)

    try:
        from tqdm import tqdm
    except ImportError:  # the bar comes with the demo extra
        def tqdm(iterable, **kwargs):
            return iterable

    losses = []
    steps = 0
    total = args.epochs * len(loader)
    if args.max_steps is not None:
        total = min(total, args.max_steps)
    with tqdm(total=total, desc="fine-tuning") as bar:
        for _ in range(args.epochs):
            model.train()
            for images, labels in loader:
                loss = nn.functional.cross_entropy(model(to_inputs(images, True)), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
                steps += 1
                if hasattr(bar, "set_postfix"):
                    bar.update(1)
                    bar.set_postfix(loss=f"{loss.item():.3f}")
                if args.max_steps is not None and steps >= args.max_steps:
                    break
            if args.max_steps is not None and steps >= args.max_steps:
                break

    model.eval()
    images = torch.from_numpy(test_x)
    with torch.no_grad():
        predictions = model(to_inputs(images, False)).argmax(1)
    correct = predictions == torch.from_numpy(test_y)
    accuracy = correct.float().mean().item()
    print(f"test accuracy: {accuracy:.3f} on {len(test_y)} images "
          f"({', '.join(CLASSES)}; chance {1 / len(CLASSES):.3f})")

    os.makedirs(args.out, exist_ok=True)
    shown = min(32, len(test_y))
    grid = make_grid(_bordered(images[:shown].float() / 255, correct[:shown]), nrow=8, padding=2)
    png = os.path.join(args.out, "predictions.png")
    save_image(grid, png)
    print(f"wrote {png}")
    return {"losses": losses, "accuracy": accuracy, "png": png, "model": model}


if __name__ == "__main__":
    main()
