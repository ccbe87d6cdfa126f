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

# The CuPy conformance device (tests/conformance/: Ember's real CUDA backend over a NumPy-backed
# stand-in that refuses what CuPy 14.2 lacks; a conformance device, not a GPU) joins DEVICES as
# a third device when CUPYCONF_IN_DEVICES is on: "testdev" stays, since it proves the
# third-party registration path. EMBER_TEST_CUPYCONF=1/0 overrides the default for one run;
# EMBER_TEST_DEVICE=cupyconf (the older switch) runs it in place of "testdev".
CUPYCONF_IN_DEVICES = True
# ...for these suites (the op table, nn, optim, and what is about devices); the rest of the
# suite's device-parametrised tests run on "cpu" and "testdev" only, which keeps the whole
# suite inside CI's time. EMBER_TEST_CUPYCONF=1 runs every test on it.
CUPYCONF_SUITES = ("test_ops.py", "nn/", "optim/", "conformance/", "cuda/", "amp/", "data/",
                   "sparse/", "test_device", "test_backend_primitives.py", "test_tensor.py",
                   "test_multiprocessing.py", "serialization/", "test_random.py")
_cupyconf_everywhere = False
_cupyconf = os.environ.get("EMBER_TEST_CUPYCONF")
if _cupyconf is not None:
    CUPYCONF_IN_DEVICES = _cupyconf not in ("", "0")
    _cupyconf_everywhere = CUPYCONF_IN_DEVICES
if os.environ.get("EMBER_TEST_DEVICE") == "cupyconf":
    DEVICES = ["cpu", "cupyconf"]
elif os.environ.get("EMBER_TEST_DEVICE") == "cuda":  # on a GPU (benchmarks/gpu_check.py)
    DEVICES = ["cpu", "cuda"]
elif os.environ.get("EMBER_TEST_DEVICE") == "regdev":
    # a registry-backed device (ember.library): kernels for a few aten ops, the CPU fallback
    # for everything else; run the op table on it with EMBER_TEST_DEVICE=regdev
    DEVICES = ["cpu", "regdev"]
    from ember import library as _library
    from test_library_registry import RegDevBackend, _register_kernels
    if not is_known_device_type("regdev"):
        register_backend("regdev", RegDevBackend)
        _register_kernels(_library.Library("aten", "IMPL"))
elif CUPYCONF_IN_DEVICES:
    DEVICES = ["cpu", "testdev", "cupyconf"]
if "cupyconf" in DEVICES:
    from conformance.backend import CupyConformanceBackend
    if not is_known_device_type("cupyconf"):
        register_backend("cupyconf", CupyConformanceBackend)
# The devices other than "cpu": tests about a second device (mixing devices, transfers,
# refusing .numpy()) iterate this rather than naming "testdev".
OTHER_DEVICES = [d for d in DEVICES if d != "cpu"]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    ember.manual_seed(0)
    yield


def _outside_cupyconf_suites(item):
    if "[" not in item.nodeid or "cupyconf" not in item.nodeid.split("[", 1)[1]:
        return False
    path = item.nodeid.split("::", 1)[0]
    path = path[len("tests/"):] if path.startswith("tests/") else path
    return not path.startswith(CUPYCONF_SUITES)


def pytest_collection_modifyitems(config, items):
    if "cupyconf" in DEVICES and not _cupyconf_everywhere and \
            os.environ.get("EMBER_TEST_DEVICE") != "cupyconf":
        deselected = [item for item in items if _outside_cupyconf_suites(item)]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            kept = set(map(id, deselected))
            items[:] = [item for item in items if id(item) not in kept]
    try:
        import cupy  # noqa: F401
        has_cuda = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_cuda = False
    if not has_cuda:
        skip = pytest.mark.skip(reason="no CUDA device present")
        for item in items:
            # The marker, not the keyword: every test under tests/cuda/ has "cuda" as a keyword.
            if item.get_closest_marker("cuda") is not None:
                item.add_marker(skip)


def _bfloat16_not_established(exc):
    """The stand-in's refusal of bfloat16 where CuPy 14.2's support is unknown, anywhere in
    ``exc``'s chain (conformance/strict_cupy.py)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ == "BFloat16NotEstablished":
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # A test the conformance device cannot decide (does CuPy 14.2 take bfloat16 in this
    # kernel?) is reported as skipped with that question, not as passed or failed: only a GPU
    # run (benchmarks/gpu_check.py) answers it.
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        refusal = _bfloat16_not_established(call.excinfo.value)
        if refusal is not None:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0,
                               f"Skipped: not decidable on the CuPy conformance device: {refusal}")


@pytest.fixture
def cupyconf_accelerator(monkeypatch):
    """A machine whose accelerator is the CuPy conformance device (issue 16: device
    transfers): "testdev" is unregistered for the test, "cupyconf" registered, and the registry
    restored afterwards in its order (the accelerator is the first registered device type).
    Where CuPy is installed CUDA would be the accelerator, so the choice is pinned to
    "cupyconf". It is a conformance device, not a GPU: copies are synchronous NumPy copies."""
    from ember import accelerator
    from ember.backends import _FACTORIES, unregister_backend
    from conformance.backend import CupyConformanceBackend
    saved = dict(_FACTORIES)
    unregister_backend("testdev")
    if not is_known_device_type("cupyconf"):
        register_backend("cupyconf", CupyConformanceBackend)
    monkeypatch.setattr(accelerator, "_built_type", lambda: "cupyconf")
    try:
        yield "cupyconf"
    finally:
        _FACTORIES.clear()
        _FACTORIES.update(saved)
