"""An MNIST-style CNN trained from IDX files, the format MNIST and Fashion-MNIST ship in.

    python examples/mnist_cnn.py --data DIR     # DIR holds train-images-idx3-ubyte(.gz) etc.
    python examples/mnist_cnn.py                # offline: the bundled UCI digits, as IDX

``ember.vision`` will bring data sets later; the IDX reader lives here for now. Without
``--data`` the example writes the digits that ship with Ember (8x8, upscaled to 28x28 like
MNIST) as IDX files into a temporary folder and reads them back through the same loader, so
it runs anywhere without a download.
"""
import argparse
import gzip
import os
import struct
import tempfile

import numpy as np

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, Dataset

# IDX: two zero bytes, a type code, the number of dims, then each dim as a big-endian uint32.
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09}
FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def read_idx(path):
    """The array in an IDX file (optionally gzip-compressed)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number {data[:4]!r})")
    dtype, ndim = np.dtype(_IDX_TYPES[data[2]]), data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: truncated IDX header")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - header != expected:
        raise ValueError(f"{path}: IDX header promises {expected} bytes of data for shape "
                         f"{shape}, the file has {len(data) - header}")
    return np.frombuffer(data, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path, array):
    """Write a uint8/int8 array as an IDX file (atomically: temporary name, then rename)."""
    array = np.ascontiguousarray(array)
    header = bytes([0, 0, _IDX_CODES[array.dtype], array.ndim])
    header += struct.pack(f">{array.ndim}I", *array.shape)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(header + array.tobytes())
    os.replace(tmp, path)


def _find(folder, name):
    for candidate in (name, name + ".gz"):
        path = os.path.join(folder, candidate)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{name}(.gz) not found in {folder}")


class IDXDataset(Dataset):
    """Images (N, 1, H, W) scaled to [0, 1] with int64 labels, from a pair of IDX files."""

    def __init__(self, folder, split="train"):
        images_file, labels_file = FILES[split]
        images = read_idx(_find(folder, images_file))
        labels = read_idx(_find(folder, labels_file))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise ValueError(f"IDX files in {folder} disagree: images {images.shape}, labels "
                             f"{labels.shape}")
        self.images = torch.from_numpy(images.astype(np.float32)[:, None] / 255.0)
        self.labels = torch.from_numpy(labels.astype(np.int64))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]


def write_bundled_digits_as_idx(folder, size=28):
    """Ember's 1,797 UCI digits, upscaled to MNIST's 28x28 and split 1,437/360, as IDX files."""
    from ember.demo import load_digits, split
    (train_x, train_y), (test_x, test_y) = split(*load_digits())
    for name, images, labels in (("train", train_x, train_y), ("test", test_x, test_y)):
        with torch.no_grad():
            big = nn.functional.interpolate(torch.from_numpy(images), size=(size, size),
                                            mode="bilinear", align_corners=False)
        pixels = (big.squeeze(1).clamp(0, 1) * 255).round().numpy().astype(np.uint8)
        write_idx(os.path.join(folder, FILES[name][0]), pixels)
        write_idx(os.path.join(folder, FILES[name][1]), labels.astype(np.uint8))


class MnistCNN(nn.Module):
    """The classic two-conv MNIST network (as in PyTorch's examples/mnist)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(32 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = nn.functional.relu(self.conv1(x))
        x = nn.functional.max_pool2d(nn.functional.relu(self.conv2(x)), 2)
        x = self.dropout(torch.flatten(x, 1))
        return self.fc2(nn.functional.relu(self.fc1(x)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", help="folder with MNIST-style IDX files")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="use only this many samples")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.data
        if folder is None:
            folder = scratch
            write_bundled_digits_as_idx(folder)
            print("no --data given: training on Ember's bundled UCI digits, written as IDX files")
        train, test = IDXDataset(folder, "train"), IDXDataset(folder, "test")
    if args.limit:
        train = torch.utils.data.Subset(train, range(min(args.limit, len(train))))
    loader = DataLoader(train, batch_size=args.batch_size, shuffle=True)
    model = MnistCNN()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for images, labels in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            accuracy = (model(test.images).argmax(1) == test.labels).float().mean().item()
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}, test accuracy "
              f"{100 * accuracy:.2f}%")
    return {"loss": loss.item(), "accuracy": accuracy}


if __name__ == "__main__":
    main()
