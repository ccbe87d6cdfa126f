"""Importing a package's parts by name, where a part may not exist yet in this build."""
import importlib


def import_parts(package, names, namespace):
    """``from package.name import *`` into ``namespace`` for each name whose module exists.

    Only a missing module itself is skipped; an ImportError raised inside one is not hidden."""
    for name in names:
        full = f"{package}.{name}"
        try:
            module = importlib.import_module(full)
        except ModuleNotFoundError as exc:
            if exc.name != full:
                raise
            continue
        exported = getattr(module, "__all__", None)
        if exported is None:
            exported = [n for n in vars(module) if not n.startswith("_")]
        for n in exported:
            namespace[n] = getattr(module, n)
