"""The ops package's one registration rule, held for every family: each file declares
``__all__`` (the ops it adds to ``ember``), ``METHODS`` (ops that are also ``Tensor`` methods,
the same function) and ``INPLACE`` (ops whose ``name_`` method writes into self). From a method
a reader gets back to the function that implements it."""
import importlib
import inspect

import pytest
import torch

import ember
import ember.ops
import ember.sparse  # noqa: F401 (ops/sparse.py is entered through ember.sparse, its front end)

FAMILIES = [importlib.import_module(f"ember.ops.{name}") for name in ember.ops._FAMILIES]


def _unwrapped(fn):
    return inspect.unwrap(fn)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_family_declares_what_it_exports_and_binds(family):
    assert isinstance(family.__all__, list)
    assert not [n for n in family.__all__ if inspect.ismodule(getattr(family, n))]
    for name in family.__all__ + list(getattr(family, "METHODS", [])) + list(getattr(family, "INPLACE", [])):
        assert callable(getattr(family, name)), (family.__name__, name)
    for name in family.__all__:
        assert _unwrapped(getattr(ember.ops, name)) is _unwrapped(getattr(family, name)), name
    for name in getattr(family, "METHODS", []):
        assert _unwrapped(getattr(ember.Tensor, name)) is _unwrapped(getattr(family, name)), name
    for name in getattr(family, "INPLACE", []):
        method = getattr(ember.Tensor, name + "_")
        # The in-place wrapper says where its op lives.
        assert method.__module__ == family.__name__, (name, method.__module__)


def test_no_two_families_export_one_name():
    owners = {}
    for family in FAMILIES:
        for name in family.__all__:
            assert name not in owners, f"{name} exported by {owners.get(name)} and {family.__name__}"
            owners[name] = family.__name__


def test_only_families_bind_tensor_methods():
    # The other op files (conv, pooling, loss, ...) serve nn.functional, which imports them by
    # path; a file that binds Tensor methods is a family, named in ops/__init__'s _FAMILIES.
    import pathlib
    here = pathlib.Path(ember.ops.__file__).parent
    declared = set(ember.ops._FAMILIES)
    others = []
    for path in sorted(here.glob("*.py")):
        if path.stem.startswith("_") or path.stem in declared:
            continue
        module = importlib.import_module(f"ember.ops.{path.stem}")
        assert not hasattr(module, "METHODS") and not hasattr(module, "INPLACE"), path.name
        assert isinstance(module.__all__, list), path.name
        others.append(path.stem)
    assert {"conv", "pooling", "loss"} <= set(others)


def test_exports_are_torch_names():
    # Helpers and Tensor-only methods stay off ember's namespace, as off torch's.
    assert [n for n in ember.ops.__all__ if not hasattr(torch, n)] == []


@pytest.mark.parametrize("method", ["mul", "add_", "sum", "matmul", "view", "exp_", "sort", "det"])
def test_a_method_leads_back_to_its_definition(method):
    fn = getattr(ember.Tensor, method)
    module = importlib.import_module(fn.__module__)
    name = method.rstrip("_") if method.endswith("_") and not hasattr(module, method) else method
    source = inspect.getsourcefile(_unwrapped(getattr(module, name)))
    assert source.replace("\\", "/").endswith(fn.__module__.replace(".", "/") + ".py")
    assert name in module.METHODS or name in module.INPLACE
