"""Importing a package's parts by name: ``from package.part import *`` for a list of parts."""
import importlib


def import_parts(package, names, namespace):
    """``from package.name import *`` into ``namespace`` for each name (its ``__all__``, or its
    public names). Every part must exist: a missing one is an ImportError, not a skip."""
    for name in names:
        module = importlib.import_module(f"{package}.{name}")
        exported = getattr(module, "__all__", None)
        if exported is None:
            exported = [n for n in vars(module) if not n.startswith("_")]
        for n in exported:
            namespace[n] = getattr(module, n)
