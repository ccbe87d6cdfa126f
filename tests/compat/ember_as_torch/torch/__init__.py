"""``import torch`` answered by Ember, for running unmodified PyTorch programs on Ember.

Put this folder first on ``PYTHONPATH`` (``tests/compat/run_program.py --framework ember``
does). Then ``import torch`` finds this file, which replaces itself in ``sys.modules`` with
the ``ember`` module, and a finder at the front of ``sys.meta_path`` answers every
``torch.X.Y`` import with ``ember.X.Y`` — the same module object under both names, so
``torch.nn is ember.nn`` and objects pickled by reference (``torch.nn.modules.linear.Linear``)
resolve to Ember's. A name Ember does not have fails as it would for a missing torch module:
``ModuleNotFoundError: No module named 'torch.X'``. The environment variable is inherited, so
processes a program starts (``torch.multiprocessing`` with "spawn", DataLoader workers) get
Ember too.
"""
import importlib
import importlib.abc
import importlib.util
import sys

_ALIAS = "torch"
_TARGET = "ember"


class _ExistingModuleLoader(importlib.abc.Loader):
    """Hands the import system an already imported Ember module instead of executing code."""

    def __init__(self, module):
        self._module = module
        self._own_spec, self._own_loader = module.__spec__, module.__loader__

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        # The import system has just stamped the alias's spec on the module; Ember's own
        # spec (name "ember.X") goes back, so importlib and pickle still see the real module.
        module.__spec__, module.__loader__ = self._own_spec, self._own_loader


class EmberAsTorchFinder(importlib.abc.MetaPathFinder):
    """Maps ``torch.X.Y`` to ``ember.X.Y``."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_ALIAS + "."):
            return None
        real_name = _TARGET + fullname[len(_ALIAS):]
        if importlib.util.find_spec(real_name) is None:
            return None
        module = importlib.import_module(real_name)
        return importlib.util.spec_from_loader(fullname, _ExistingModuleLoader(module))


if not any(isinstance(finder, EmberAsTorchFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, EmberAsTorchFinder())

# Submodules Ember imported eagerly are registered under the alias now, so that a later
# ``import torch.nn.functional as F`` returns exactly the module ``torch.nn.functional`` is.
import ember as _ember  # noqa: E402

for _name, _module in list(sys.modules.items()):
    if _name == _TARGET or _name.startswith(_TARGET + "."):
        sys.modules.setdefault(_ALIAS + _name[len(_TARGET):], _module)
sys.modules[_ALIAS] = _ember

# EMBER_COMPAT_DEVICE=cupyconf (run_program.py --device cupyconf) registers the CuPy
# conformance device as this process's accelerator, so a program that picks its device through
# ``torch.accelerator`` runs its tensors there: the real CUDA backend over a NumPy-backed
# stand-in for CuPy 14.2 (a conformance device, not a GPU). The variable is inherited, so the
# processes a program starts (workers, spawned children) have the same device.
import os as _os  # noqa: E402

if _os.environ.get("EMBER_COMPAT_DEVICE") == "cupyconf":
    from ember.backends import is_known_device_type as _known, register_backend as _register

    if not _known("cupyconf"):
        _repo = _os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.dirname(
            _os.path.dirname(_os.path.abspath(__file__))))))
        sys.path.insert(0, _os.path.join(_repo, "tests"))
        from conformance.backend import CupyConformanceBackend as _Conformance
        _register("cupyconf", _Conformance)
elif _os.environ.get("EMBER_COMPAT_DEVICE") not in (None, "", "cpu"):
    raise RuntimeError(f"EMBER_COMPAT_DEVICE={_os.environ['EMBER_COMPAT_DEVICE']!r}: the compat "
                       "harness knows 'cpu' and 'cupyconf'")
