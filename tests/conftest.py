"""Test set-up: a second, NumPy-backed device ("testdev") registered as a third-party backend
would be, so the whole op suite proves that ops compute through their tensor's backend."""
import os

import numpy as np
import pytest
from hypothesis import settings

# Property tests draw the same examples on every run, so a run's result depends on the code
# alone (a new machine's CI cannot fail on an example nobody saw before). To search for new
# failing examples locally: HYPOTHESIS_EXPLORE=1 python -m pytest tests/...
settings.register_profile("reproducible", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile("explore" if os.environ.get("HYPOTHESIS_EXPLORE") else "reproducible")

import ember
from ember.backends import register_backend, is_known_device_type
from ember.backends.numpy_backend import NumpyBackend


class TestDeviceBackend(NumpyBackend):
    """NumPy arrays, but a distinct device: tensors here never mix with "cpu" ones."""
    device_type = "testdev"

    def __init__(self, index=0):
        super().__init__()
        self.index = index


if not is_known_device_type("testdev"):
    register_backend("testdev", TestDeviceBackend)

DEVICES = ["cpu", "testdev"]

# EMBER_TEST_DEVICE=cupyconf swaps "testdev" for the CuPy conformance device (a NumPy-backed
# stand-in that refuses what CuPy 14.2 lacks; not a GPU): see tests/conformance/.
if os.environ.get("EMBER_TEST_DEVICE") == "cupyconf":
    from conformance.backend import CupyConformanceBackend
    if not is_known_device_type("cupyconf"):
        register_backend("cupyconf", CupyConformanceBackend)
    DEVICES = ["cpu", "cupyconf"]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    ember.manual_seed(0)
    yield


def pytest_collection_modifyitems(config, items):
    try:
        import cupy  # noqa: F401
        has_cuda = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="no CUDA device present")
        for item in items:
            if "cuda" in item.keywords:
                item.add_marker(skip)
