"""MNIST and its drop-in relatives (Fashion-MNIST, Kuzushiji-MNIST, EMNIST), read from the
IDX files in torchvision's layout ``root/<ClassName>/raw/``. Images come out as PIL ``L``
images, targets as ints, as torchvision's."""
import codecs
import gzip
import os
import shutil
import string

import numpy as np

import ember

from .utils import (DownloadError, check_integrity, download_and_extract_archive,
                    extract_archive, verify_str_arg)
from .vision import VisionDataset

_IDX_TYPES = {8: np.uint8, 9: np.int8, 11: np.dtype(">i2"), 12: np.dtype(">i4"),
              13: np.dtype(">f4"), 14: np.dtype(">f8")}


def get_int(b):
    return int(codecs.encode(b, "hex"), 16)


def _read_bytes(path):
    # The IDX file itself, or its .gz when only the download was kept.
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path = path + ".gz"
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read()


def read_sn3_pascalvincent_tensor(path, strict=True):
    """An IDX file (LeCun's format: magic ``0x0000TTNN``, ``NN`` dims of big-endian sizes,
    then the data) as an Ember tensor of its type."""
    data = _read_bytes(path)
    magic = get_int(data[0:4])
    nd = magic % 256
    ty = magic // 256
    if not (1 <= nd <= 3) or ty not in _IDX_TYPES:
        raise ValueError(f"{path} is not an IDX file: magic number {magic:#010x}")
    s = [get_int(data[4 * (i + 1):4 * (i + 2)]) for i in range(nd)]
    parsed = np.frombuffer(data, dtype=_IDX_TYPES[ty], offset=4 * (nd + 1))
    if strict and parsed.size != int(np.prod(s)):
        raise ValueError(f"{path}: the header announces {s} but the file holds {parsed.size} "
                         f"values")
    arr = parsed[:int(np.prod(s))].reshape(*s)
    return ember.from_numpy(arr.astype(arr.dtype.newbyteorder("="), copy=True))


def read_label_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8 or x.ndim != 1:
        raise ValueError(f"{path}: expected 1-D uint8 labels, got {x.dtype} of shape "
                         f"{tuple(x.shape)}")
    return x.long()


def read_image_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8 or x.ndim != 3:
        raise ValueError(f"{path}: expected 3-D uint8 images, got {x.dtype} of shape "
                         f"{tuple(x.shape)}")
    return x


def _pil_l(arr):
    from PIL import Image
    return Image.fromarray(arr)  # a 2-D uint8 array is mode "L"


class MNIST(VisionDataset):
    """The MNIST digits: ``root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte``
    (or their ``.gz``). ``download=True`` fetches them from ``mirrors`` with ``resources``'
    MD5s (class attributes, so a subclass or a test can point them elsewhere)."""

    mirrors = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    training_file = "training.pt"
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    @property
    def train_labels(self):
        return self.targets

    @property
    def test_labels(self):
        return self.targets

    @property
    def train_data(self):
        return self.data

    @property
    def test_data(self):
        return self.data

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if self._check_legacy_exist():
            self.data, self.targets = self._load_legacy_data()
            return
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        self.data, self.targets = self._load_data()

    def _check_legacy_exist(self):
        if not os.path.exists(self.processed_folder):
            return False
        return all(check_integrity(os.path.join(self.processed_folder, f))
                   for f in (self.training_file, self.test_file))

    def _load_legacy_data(self):
        # torchvision < 0.9 cached (data, targets) with torch.save; Ember reads those files.
        data_file = self.training_file if self.train else self.test_file
        return ember.load(os.path.join(self.processed_folder, data_file), weights_only=True)

    def _load_data(self):
        prefix = "train" if self.train else "t10k"
        data = read_image_file(os.path.join(self.raw_folder, f"{prefix}-images-idx3-ubyte"))
        targets = read_label_file(os.path.join(self.raw_folder, f"{prefix}-labels-idx1-ubyte"))
        return data, targets

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        img = _pil_l(img.numpy())
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)

    @property
    def raw_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "processed")

    @property
    def class_to_idx(self):
        return {_class: i for i, _class in enumerate(self.classes)}

    def _check_exists(self):
        def present(name):
            path = os.path.join(self.raw_folder, os.path.splitext(os.path.basename(name))[0])
            return check_integrity(path) or check_integrity(path + ".gz")
        return all(present(url) for url, _ in self.resources)

    def download(self):
        """Fetch and decompress each resource, trying the mirrors in order."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            errors = []
            for mirror in self.mirrors:
                url = f"{mirror}{filename}"
                try:
                    download_and_extract_archive(url, download_root=self.raw_folder,
                                                 filename=filename, md5=md5)
                except (RuntimeError, DownloadError) as e:
                    errors.append(e)
                    continue
                break
            else:
                s = f"Error downloading {filename}:\n"
                for mirror, err in zip(self.mirrors, errors):
                    s += f"Tried {mirror}, got:\n{err}\n"
                raise RuntimeError(s)

    def extra_repr(self):
        return f"Split: {'Train' if self.train is True else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's format and layout, ten clothing classes."""
    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: ten cursive Japanese characters in MNIST's format."""
    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """Extended MNIST (letters and digits) in one of its ``split``s:
    ``root/EMNIST/raw/emnist-<split>-{train,test}-{images-idx3,labels-idx1}-ubyte``.
    The images are stored transposed, as NIST ships them and torchvision returns them."""
    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split, **kwargs):
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file = f"training_{split}.pt"
        self.test_file = f"test_{split}.pt"
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    @property
    def _file_prefix(self):
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def images_file(self):
        return os.path.join(self.raw_folder, f"{self._file_prefix}-images-idx3-ubyte")

    @property
    def labels_file(self):
        return os.path.join(self.raw_folder, f"{self._file_prefix}-labels-idx1-ubyte")

    def _load_data(self):
        return read_image_file(self.images_file), read_label_file(self.labels_file)

    def _check_exists(self):
        return all(check_integrity(f) or check_integrity(f + ".gz")
                   for f in (self.images_file, self.labels_file))

    def download(self):
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for gzip_file in os.listdir(gzip_folder):
            if gzip_file.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, gzip_file), self.raw_folder)
        shutil.rmtree(gzip_folder)
