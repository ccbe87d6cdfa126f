"""``serialization`` workloads: ``save`` / ``load`` of a 1 GiB state_dict, Ember vs PyTorch.

The state_dict is 256 float32 tensors of 1M elements (4 MiB each), the shape of a mid-sized
model's checkpoint. Both frameworks write the same zip format to the same folder; Ember's save
also fsyncs the file and renames it into place (atomic replace), which PyTorch's does not.
Throughput in MB/s is 1073.7 / (seconds per call). Files go to the system temporary folder and
are removed at exit. Each call moves 1 GiB, so these take a while even with ``--quick``."""
import atexit
import os
import tempfile

import numpy as np

from workloads import workload

_TENSORS, _ELEMENTS = 256, 1 << 20  # 256 x 4 MiB = 1 GiB


def _state_dict(lib, seed=0):
    rng = np.random.default_rng(seed)
    return {f"layer{i}.weight": lib.from_numpy(rng.standard_normal(_ELEMENTS, dtype=np.float32))
            for i in range(_TENSORS)}


def _checkpoint_path(lib, suffix):
    path = os.path.join(tempfile.gettempdir(),
                        f"ember_bench_{lib.__name__}_{os.getpid()}_{suffix}.pt")
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    return path


@workload("save_1gb", "`save` of a 1 GiB float32 state_dict (256 tensors) to a file",
          target=("torch", 1.25))
def save_1gb(lib):
    state_dict = _state_dict(lib)
    path = _checkpoint_path(lib, "save")

    def step():
        lib.save(state_dict, path)
    return step


@workload("load_1gb", "`load(weights_only=True)` of a 1 GiB float32 state_dict (256 tensors)",
          target=("torch", 1.25))
def load_1gb(lib):
    path = _checkpoint_path(lib, "load")
    lib.save(_state_dict(lib), path)

    def step():
        return lib.load(path, weights_only=True)
    return step


@workload("load_mmap_1gb", "`load(mmap=True)` of a 1 GiB float32 state_dict (256 tensors)",
          number=3, quick_number=1, target=("torch", 4.0))
def load_mmap_1gb(lib):
    path = _checkpoint_path(lib, "mmap")
    lib.save(_state_dict(lib), path)

    def step():
        return lib.load(path, weights_only=True, mmap=True)
    return step
