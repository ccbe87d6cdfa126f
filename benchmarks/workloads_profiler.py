"""Profiler workloads: what ``ember.profiler`` costs, Ember vs PyTorch.

``profiler_off_eager_add`` is ``eager_add`` in a process that imported the profiler and never
started it: with the profiler off no op is swapped, so it must time as ``eager_add`` does.
``profiler_on_op_overhead`` is the same ``a + b`` while a profile records (entered once, in
the untimed set-up); its time minus ``eager_add``'s is the profiler's cost per op."""
import numpy as np

from workloads import workload


def _pair(lib):
    rng = np.random.default_rng(0)
    return [lib.from_numpy(rng.standard_normal((1,), dtype=np.float32)) for _ in range(2)]


@workload("profiler_off_eager_add", "`a + b` on 1-element tensors, profiler imported but never "
          "started (must equal eager_add)", number=20000, quick_number=2000,
          target=("torch", 4.0))
def profiler_off_eager_add(lib):
    import importlib
    importlib.import_module(lib.__name__ + ".profiler")
    a, b = _pair(lib)

    def step():
        return a + b
    return step


@workload("profiler_on_op_overhead", "`a + b` on 1-element tensors while `profiler.profile()` "
          "records (minus eager_add: the per-op cost of profiling)", number=5000,
          quick_number=500)
def profiler_on_op_overhead(lib):
    import importlib
    profiler = importlib.import_module(lib.__name__ + ".profiler")
    a, b = _pair(lib)
    prof = profiler.profile(activities=[profiler.ProfilerActivity.CPU])
    prof.start()
    # Recording goes on through the timing; stopped at the child's exit (torch's profiler
    # aborts the process if it is still running then).
    import atexit
    atexit.register(prof.stop)

    def step():
        return a + b
    return step
