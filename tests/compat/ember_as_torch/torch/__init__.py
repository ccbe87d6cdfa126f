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
