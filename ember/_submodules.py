"""Importing a package's parts by name: ``from package.part import *`` for a list of parts."""
import importlib


def import_module_if_present(full_name):
    """The module ``full_name``, or None if that module itself does not exist. An ImportError
    raised inside an existing module is not hidden."""
    try:
        return importlib.import_module(full_name)
    except ModuleNotFoundError as exc:
        if exc.name != full_name:
            raise
        return None


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
