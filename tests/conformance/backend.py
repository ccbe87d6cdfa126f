"""The CuPy conformance device's backend: Ember's CUDA backend class over the strict namespace.

Device type "cupyconf". It runs the real ``CupyBackend`` (ember/backends/cupy_backend.py) with
``strict_cupy`` in place of ``cupy``/``cupyx``, so a test passing here proves that the backend
and every op ask CuPy 14.2 only for what it has. It is a conformance device, not a GPU:
nothing here says anything about CUDA kernels, precision on the device or speed.
"""
from ember.backends.cupy_backend import CupyBackend

from . import strict_cupy


class CupyConformanceBackend(CupyBackend):
    device_type = "cupyconf"

    def __init__(self, index=0):
        super().__init__(index, modules=(strict_cupy.xp, strict_cupy.cupyx))

    def sparse(self):
        # cupyx.scipy.sparse's COO/CSR/CSC over SciPy, refusing what CuPy refuses.
        from . import strict_sparse
        return strict_sparse

    def __repr__(self):
        return f"<CupyConformanceBackend cupyconf:{self.index}>"
