"""``ember.optim``: optimizers, learning-rate schedulers and weight averaging, as ``torch.optim``."""
import importlib

from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
from .adam import Adam  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .adamax import Adamax  # noqa: F401
from .nadam import NAdam  # noqa: F401
from .radam import RAdam  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .asgd import ASGD  # noqa: F401
from .rprop import Rprop  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .sparse_adam import SparseAdam  # noqa: F401
from .adafactor import Adafactor  # noqa: F401
from .muon import Muon  # noqa: F401
from .swap_in_state import swap_in_optimizer_params_and_state  # noqa: F401


def _import_submodule(name):
    """Import ``ember.optim.<name>`` if that module exists in this build; an ImportError raised
    inside it is not hidden."""
    full = f"{__name__}.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name != full:
            raise
        return None


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
           "Adagrad", "Adadelta", "ASGD", "Rprop", "LBFGS", "SparseAdam", "Adafactor", "Muon",
           "swap_in_optimizer_params_and_state"]

for _name in ("lr_scheduler", "swa_utils"):
    _module = _import_submodule(_name)
    if _module is not None:
        globals()[_name] = _module
        __all__.append(_name)
del _name, _module


def __getattr__(name):
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
