"""``torch.utils.benchmark``: ``Timer``, ``Measurement`` and ``Compare`` tables.

The layout mirrors torch's (``utils/common.py``, ``utils/timer.py``, ``utils/compare.py``).
What Ember leaves out says why: Callgrind collection (``Timer.collect_callgrind``) and C++
timers need torch's compiled harness, and the ``Fuzzer`` family generates torch tensors with
constraints Ember has not reimplemented, so those names raise an AttributeError naming the
reason instead of half-working."""
from .utils.common import (  # noqa: F401
    Measurement, TaskSpec, ordered_unique, select_unit, set_torch_threads, trim_sigfig,
    unit_to_english)
from .utils.compare import Colorize, Compare  # noqa: F401
from .utils.timer import Language, Timer, timer  # noqa: F401
from . import utils  # noqa: F401

__all__ = ["Timer", "Measurement", "TaskSpec", "Compare", "Colorize", "Language", "timer",
           "select_unit", "trim_sigfig", "unit_to_english", "ordered_unique",
           "set_torch_threads"]

_ABSENT = {
    "Fuzzer": "the benchmark Fuzzer draws torch tensors under constraints (probabilities, "
              "sizes, strides) that Ember has not reimplemented",
    "FuzzedParameter": "see Fuzzer", "FuzzedTensor": "see Fuzzer",
    "FuzzedSparseTensor": "see Fuzzer", "ParameterAlias": "see Fuzzer", "Number": "see Fuzzer",
    "CallgrindStats": "Callgrind collection needs torch's compiled valgrind bindings",
    "FunctionCount": "see CallgrindStats", "FunctionCounts": "see CallgrindStats",
    "CopyIfCallgrind": "see CallgrindStats",
}


def __getattr__(name):
    if name in _ABSENT:
        raise AttributeError(f"ember.utils.benchmark has no {name}: {_ABSENT[name]}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
