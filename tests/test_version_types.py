"""ember.version, ember.types and ember.__version__'s comparisons, against torch's."""
import os
import subprocess
import sys
import typing

import pytest
import torch
from torch.torch_version import TorchVersion as TorchTorchVersion

import ember
from ember.torch_version import TorchVersion


def test_version_module_names_match_torch():
    assert sorted(ember.version.__all__) == sorted(torch.version.__all__)
    assert ember.version.__version__ == ember.__version__ == "0.1.0"
    assert ember.version.debug is False
    for name in ("cuda", "hip", "rocm", "xpu"):
        assert getattr(ember.version, name) is None  # no toolkit: CUDA is reached via CuPy
    git_dir = os.path.join(os.path.dirname(os.path.dirname(ember.__file__)), ".git")
    if os.path.exists(git_dir):
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(git_dir)).stdout.strip()
        assert ember.version.git_version == head
    else:
        assert ember.version.git_version == "Unknown"


PAIRS = ["1.10", "1.9", "0.1", "0.1.0", "0.1.0+cpu", "0.1.0a1", "0.1.0rc1", "0.1.0.post1",
         "0.1.0.dev3", "2.13.0+cpu", "2.13.0", "2.13", "2.13.1", "1.0.0a", "1!0.1", "parrot",
         "abc", "1.0.0-1", (0, 1), (0, 1, 1), (2, 13), (1,)]


@pytest.mark.parametrize("left", ["0.1.0", "2.13.0+cpu", "1.10.0a", "0.1.0rc1", "parrot"])
def test_torch_version_comparisons_match_torch(left):
    for right in PAIRS:
        for op in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__"):
            expected = getattr(TorchTorchVersion(left), op)(right)
            assert getattr(TorchVersion(left), op)(right) == expected, (left, op, right)
    assert isinstance(ember.__version__, str) and ember.__version__ >= "0.1"
    assert ember.__version__ > (0, 0, 9) and ember.__version__ < "0.10"


def test_types_aliases_match_torch():
    assert sorted(ember.types.__all__) == sorted(torch.types.__all__)
    assert typing.get_args(ember.types.Number) == typing.get_args(torch.types.Number)
    assert ember.types._Number == torch.types._Number
    assert typing.get_args(ember.types.FileLike) == typing.get_args(torch.types.FileLike)
    device_args = typing.get_args(ember.types.Device)
    assert device_args[0] is ember.device
    assert device_args[1:] == typing.get_args(torch.types.Device)[1:]
    storage_methods = {n for n in vars(torch.types.Storage) if not n.startswith("__")
                       or n == "__deepcopy__"}
    public = {n for n in storage_methods if not n.startswith("_") or n == "__deepcopy__"}
    assert public <= set(vars(ember.types.Storage))
    with pytest.raises(NotImplementedError):
        ember.types.Storage().nbytes()


def test_new_namespaces_keep_import_ember_light():
    code = ("import sys, ember; print(sorted(m for m in ('ember.testing', 'ember.cpu', "
            "'ember.types') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
    assert {"testing", "cpu", "types"} <= ember._LAZY_SUBMODULES
