"""Importing a package's parts by name, where a part may not exist yet in this build."""
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
    """``from package.name import *`` into ``namespace`` for each name whose module exists.

    Only a missing module itself is skipped; an ImportError raised inside one is not hidden."""
    for name in names:
        module = import_module_if_present(f"{package}.{name}")
        if module is None:
            continue
        exported = getattr(module, "__all__", None)
        if exported is None:
            exported = [n for n in vars(module) if not n.startswith("_")]
        for n in exported:
            namespace[n] = getattr(module, n)
