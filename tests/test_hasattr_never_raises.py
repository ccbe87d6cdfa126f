"""``hasattr``/``getattr(x, name, None)`` on Ember's namespaces never raise anything but
AttributeError, for every public name torch has there: scripts probe for optional features
(``hasattr(torch.optim, "SparseAdam")``) and must get an answer, not an exception."""
import importlib
import pathlib
import re
import warnings

import pytest
import torch

import ember

_NAMESPACES = ["", "nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.parametrize",
               "nn.utils.parametrizations", "nn.utils.rnn", "nn.modules", "nn.parameter", "optim",
               "optim.lr_scheduler", "optim.swa_utils", "autograd", "autograd.functional",
               "linalg", "fft", "special", "cuda", "backends", "backends.cudnn", "backends.mps",
               "backends.cuda", "backends.cpu", "backends.mkldnn", "backends.openmp",
               "backends.mkl", "accelerator", "distributions", "serialization", "utils",
               "utils.data", "utils.hooks"]


def _import_both(suffix):
    t_name = "torch" + (f".{suffix}" if suffix else "")
    e_name = "ember" + (f".{suffix}" if suffix else "")
    try:
        torch_module = importlib.import_module(t_name)
    except ImportError:
        pytest.skip(f"{t_name} is not in this torch")
    try:
        ember_module = importlib.import_module(e_name)
    except ModuleNotFoundError as exc:
        if exc.name != e_name:
            raise
        pytest.skip(f"{e_name} is not part of this build")
    return torch_module, ember_module


# Prefixed ids: an id equal to "cuda" would be skipped as a GPU test by conftest.
@pytest.mark.parametrize("suffix", _NAMESPACES, ids=[f"ns:{s or 'ember'}" for s in _NAMESPACES])
def test_probing_torchs_names_never_raises(suffix):
    torch_module, ember_module = _import_both(suffix)
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated names may warn; they must not raise
        for name in dir(torch_module):
            for probe in (lambda: hasattr(ember_module, name),
                          lambda: getattr(ember_module, name, None)):
                try:
                    probe()
                except Exception as exc:  # anything but AttributeError is a failure
                    failures.append(f"{name}: {type(exc).__name__}: {exc}")
                    break
    assert not failures, failures


def test_missing_names_raise_attribute_error_saying_why():
    assert hasattr(torch.optim, "SparseAdam") and hasattr(ember.optim, "SparseAdam")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ember.no_such_name
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ember.nn.no_such_name
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ember.autograd.no_such_name
    with pytest.raises(AttributeError):
        ember.backends.no_such_name


def test_every_module_getattr_in_ember_is_probed():
    """Each module-level ``__getattr__`` under ember/ sits in a namespace tested above (or in
    a module listed here), so a new one cannot slip past this file."""
    root = pathlib.Path(ember.__file__).parent
    tested = {"ember" + (f".{s}" if s else "") for s in _NAMESPACES}
    found = []
    for path in root.rglob("*.py"):
        if re.search(r"^def __getattr__\(", path.read_text(encoding="utf-8"), re.MULTILINE):
            parts = path.relative_to(root.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    untested = []
    for name in found:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if name in tested:
            continue
        # A namespace not in the list: probe it with the names torch has nowhere.
        for attr in ("no_such_name", "SparseAdam", "cudnn", "__wrapped__"):
            try:
                getattr(module, attr, None)
            except Exception as exc:
                untested.append(f"{name}.{attr}: {type(exc).__name__}")
    assert not untested, untested


def test_a_module_instance_and_tensor_answer_hasattr():
    layer, tensor = ember.nn.Linear(2, 2), ember.ones(2, 2)
    for name in dir(torch.nn.Linear(2, 2)):
        getattr(layer, name, None)
    for name in ("no_such_attribute", "weight_g", "_foo"):
        assert hasattr(layer, name) is False
    for name in ("is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "no_such"):
        getattr(tensor, name, None)
