"""The benchmark workloads, each written once against a framework module.

A workload is one function ``setup(lib) -> step``: ``lib`` is ``ember``, ``torch`` or (for the
large-array workloads) NumPy seen through ``NumpyLib``; ``setup`` builds the inputs, untimed, and
returns ``step``, the zero-argument callable that is timed. To add a workload, write one such
function and decorate it with ``@workload(...)``.

``number`` is how many calls of ``step`` make one timing sample (many for microsecond-scale
steps, so the timer's resolution does not matter); results are reported per call.
"""
import numpy as np

WORKLOADS = {}


class Workload:
    def __init__(self, name, setup, description, number, quick_number, frameworks, target):
        self.name = name
        self.setup = setup
        self.description = description
        self.number = number
        self.quick_number = quick_number
        self.frameworks = frameworks
        #: (reference framework, largest acceptable Ember/reference time ratio)
        self.target = target


def workload(name, description, *, number=1, quick_number=None, numpy_baseline=False,
             target=None):
    frameworks = ("ember", "torch", "numpy") if numpy_baseline else ("ember", "torch")

    def register(setup):
        WORKLOADS[name] = Workload(name, setup, description, number, quick_number or number,
                                   frameworks, target)
        return setup
    return register


class NumpyLib:
    """NumPy under the two names the workloads use that NumPy spells differently."""
    from_numpy = staticmethod(np.asarray)

    def __getattr__(self, name):
        return getattr(np, name)


def _inputs(lib, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.from_numpy(rng.standard_normal(s, dtype=np.float32)) for s in shapes]


# ---------------------------------------------------------------------------------------------
# Framework overhead: tiny tensors, so the time is Python/C++ dispatch, not arithmetic.
# ---------------------------------------------------------------------------------------------

@workload("eager_add", "`a + b` on two 1-element float32 tensors (no autograd)",
          number=20000, quick_number=2000, target=("torch", 4.0))
def eager_add(lib):
    a, b = _inputs(lib, (1,), (1,))

    def step():
        return a + b
    return step


def _chain(x, w):
    """100 element-wise ops, cycling through mul/add/tanh/exp/sin/sub and tensor operands."""
    for _ in range(10):
        x = x * 0.9
        x = x + w
        x = x.tanh()
        x = x * w
        x = x.exp()
        x = x - 1.0
        x = x.sin()
        x = x + 0.5
        x = x / 1.5
        x = x.sigmoid()
    return x


@workload("chain_backward", "forward + backward of a 100-op element-wise chain on a 4x4 "
          "float32 tensor, then `.sum().backward()`", number=20, quick_number=5,
          target=("torch", 4.0))
def chain_backward(lib):
    x, w = _inputs(lib, (4, 4), (4, 4))
    x.requires_grad_(True)
    w.requires_grad_(True)

    def step():
        x.grad = None
        w.grad = None
        _chain(x, w).sum().backward()
    return step


# ---------------------------------------------------------------------------------------------
# Large arrays: the time is the kernels; Ember should be close to plain NumPy.
# ---------------------------------------------------------------------------------------------

@workload("elementwise_16m", "`tanh((x * 1.5 + y) * x)` on two 16M-element float32 tensors",
          numpy_baseline=True, target=("numpy", 1.2))
def elementwise_16m(lib):
    x, y = _inputs(lib, (4096, 4096), (4096, 4096))

    def step():
        return lib.tanh((x * 1.5 + y) * x)
    return step


def _matmul(n):
    def setup(lib):
        a, b = _inputs(lib, (n, n), (n, n))

        def step():
            return lib.matmul(a, b)
        return step
    return setup


workload("matmul_1024", "1024x1024 @ 1024x1024 float32 matmul", number=5, quick_number=2,
         numpy_baseline=True, target=("numpy", 1.2))(_matmul(1024))
workload("matmul_2048", "2048x2048 @ 2048x2048 float32 matmul",
         numpy_baseline=True, target=("numpy", 1.2))(_matmul(2048))


# Workloads of later areas live in files of their own (workloads_<area>.py, next to this one)
# and register themselves on import.
def _import_area_workloads():
    import importlib
    from pathlib import Path
    for path in sorted(Path(__file__).parent.glob("workloads_*.py")):
        importlib.import_module(path.stem)


_import_area_workloads()
