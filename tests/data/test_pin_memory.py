"""``DataLoader(pin_memory=True)`` and ``_utils.pin_memory`` (issue 16), against torch's.

Pinning needs an accelerator. The one here is the CuPy conformance device ("cupyconf", via the
``cupyconf_accelerator`` fixture, or registered in the scripts run in their own process): a
conformance device, not a GPU, whose page-locked memory is NumPy memory the stand-in driver
records as pinned. torch answers what it can on a CPU: the structure ``pin_memory`` rebuilds,
the warnings without an accelerator, the batches themselves.
"""
import collections
import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from torch.utils.data._utils.pin_memory import pin_memory as torch_pin_memory

import ember
import ember.utils.data as eud
from ember.backends import registered_device_types, unregister_backend
from ember.utils.data._utils.pin_memory import pin_memory

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

Point = collections.namedtuple("Point", "x y")


class Marker:
    """An object with its own ``pin_memory``, which both libraries must call."""

    def __init__(self, pinned=False):
        self.pinned = pinned

    def pin_memory(self):
        return Marker(pinned=True)


def _shape(data):
    """The structure of a batch with each leaf named by its type (and pinned state)."""
    if isinstance(data, Marker):
        return ("Marker", data.pinned)
    if isinstance(data, (ember.Tensor, torch.Tensor)):
        return ("Tensor", tuple(data.shape))
    if isinstance(data, dict):
        return (type(data).__name__, {k: _shape(v) for k, v in data.items()})
    if isinstance(data, (list, tuple)):
        return (type(data).__name__, [_shape(v) for v in data])
    return (type(data).__name__, data)


def test_pin_memory_rebuilds_batches_as_torch_does():
    batch = {"a": [Marker(), (Marker(), "s")], "p": Point(Marker(), 3), "r": range(2),
             "o": collections.OrderedDict(z=Marker(), y=b"raw"), "n": None, "f": 1.5}
    assert _shape(pin_memory(batch)) == _shape(torch_pin_memory(batch))
    assert isinstance(pin_memory(batch)["o"], collections.OrderedDict)
    assert isinstance(pin_memory(batch)["p"], Point)
    dd = collections.defaultdict(list, k=Marker())
    pinned = pin_memory(dd)
    assert isinstance(pinned, collections.defaultdict) and pinned.default_factory is list
    assert pinned["k"].pinned and not dd["k"].pinned  # the input is left as it was


def test_pin_memory_pins_every_tensor(cupyconf_accelerator):
    x, y = ember.ones(2, 3), ember.arange(4)
    pinned = pin_memory({"x": x, "pair": (y, "label"), "list": [x]})
    assert pinned["x"].is_pinned() and pinned["pair"][0].is_pinned()
    assert pinned["list"][0].is_pinned() and pinned["pair"][1] == "label"
    assert not x.is_pinned()
    np.testing.assert_array_equal(pinned["pair"][0].numpy(), y.numpy())


class Squares:
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"x": np.full((3,), i, dtype=np.float32), "y": i}


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_pins_batches_with_torchs_values(cupyconf_accelerator, num_workers):
    loader = eud.DataLoader(Squares(), batch_size=4, pin_memory=True, num_workers=num_workers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns: no accelerator to pin for
        expected = list(tud.DataLoader(Squares(), batch_size=4, pin_memory=True))
    for epoch in range(2):
        got = list(loader)
        assert len(got) == len(expected) == 3
        for mine, theirs in zip(got, expected):
            assert mine["x"].is_pinned() and mine["y"].is_pinned()
            np.testing.assert_array_equal(mine["x"].numpy(), theirs["x"].numpy())
            np.testing.assert_array_equal(mine["y"].numpy(), theirs["y"].numpy())
            on_device = mine["x"].to(cupyconf_accelerator, non_blocking=True)
            np.testing.assert_array_equal(on_device.cpu().numpy(), theirs["x"].numpy())


def test_pinning_thread_runs_only_while_the_iterator_lives(cupyconf_accelerator):
    before = {t.name for t in threading.enumerate()}
    assert "ember_data_pin" not in before
    it = iter(eud.DataLoader(Squares(), batch_size=2, pin_memory=True, num_workers=2))
    next(it)
    assert "ember_data_pin" in {t.name for t in threading.enumerate()}
    list(it)  # the epoch's end shuts the workers and the thread down
    assert "ember_data_pin" not in {t.name for t in threading.enumerate()}


class Unpinnable:
    def pin_memory(self):
        raise ValueError("cannot pin this")


def _unpinnable(batch):
    return Unpinnable()


def test_a_batch_that_fails_to_pin_raises_in_the_loop(cupyconf_accelerator):
    loader = eud.DataLoader([0, 1], batch_size=1, pin_memory=True, num_workers=1,
                            collate_fn=_unpinnable)
    it = iter(loader)
    with pytest.raises(ValueError, match="in pin memory thread for device 0"):
        next(it)
    del it
    import gc
    gc.collect()  # a collected iterator stops its thread with its workers
    assert "ember_data_pin" not in {t.name for t in threading.enumerate()}


def _only_builtin_backends():
    """No accelerator, as on a CPU-only machine: the suite's own devices ("testdev", and
    "cupyconf" under EMBER_TEST_DEVICE=cupyconf) unregistered; the returned function restores
    the registry in its order (the accelerator is the first registered type)."""
    from ember.backends import _FACTORIES
    saved = dict(_FACTORIES)
    for device_type in registered_device_types():
        if device_type not in ("cpu", "cuda"):
            unregister_backend(device_type)

    def restore():
        _FACTORIES.clear()
        _FACTORIES.update(saved)
    return restore


@pytest.mark.parametrize("kwargs", [{}, {"pin_memory_device": "cuda"}])
def test_without_an_accelerator_warns_as_torch_and_does_not_pin(kwargs):
    if ember.cuda.is_available():
        pytest.skip("CUDA is this machine's accelerator")
    restore = _only_builtin_backends()
    try:
        caught = {}
        for name, lib in (("torch", tud), ("ember", eud)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                batches = list(lib.DataLoader([1, 2, 3], batch_size=2, pin_memory=True, **kwargs))
            caught[name] = [(x.category, str(x.message)) for x in w]
            assert [b.tolist() for b in batches] == [[1, 2], [3]]
            assert not any(b.is_pinned() for b in batches)
        assert caught["ember"] == caught["torch"] and caught["torch"]
    finally:
        restore()


def test_no_warning_without_pin_memory():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(eud.DataLoader([1, 2], batch_size=1, num_workers=0))) == 2


# ---- teardown stays silent and leak-free with the pinning thread -----------------------------

SCRIPT = """
import gc, os, sys, threading
import numpy as np
import ember
from ember.backends import register_backend
from tests.conformance.backend import CupyConformanceBackend
register_backend("cupyconf", CupyConformanceBackend)  # the accelerator (not a GPU)
from ember.utils.data import DataLoader

class Rows:
    def __len__(self):
        return 32
    def __getitem__(self, i):
        return np.full((4096,), i, dtype=np.float32)   # 64 KiB batches: through /dev/shm

def leftover_shm():
    prefix = f"ember_dl_{os.getpid()}_"
    return [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]

def pin_threads():
    return [t for t in threading.enumerate() if t.name == "ember_data_pin"]
"""


def _run_silently(body):
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, "-c", SCRIPT + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=90, env=env, cwd=REPO)
    assert done.stderr == ""
    assert done.stdout.split() == ["ok"]


def test_half_consumed_pinned_iterator_is_collected_silently():
    _run_silently("""
        loader = DataLoader(Rows(), batch_size=4, num_workers=2, pin_memory=True)
        it = iter(loader)
        b = next(it); assert b.is_pinned() and b[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
        next(it)
        workers = list(it._workers)
        del it
        gc.collect()
        assert pin_threads() == []
        assert all(w.exitcode is not None for w in workers)  # joined by the shutdown
        assert leftover_shm() == []
        print("ok")
    """)


def test_persistent_pinned_workers_end_with_the_loader_and_an_exception_stays_its_own():
    _run_silently("""
        loader = DataLoader(Rows(), batch_size=8, num_workers=2, pin_memory=True,
                            persistent_workers=True)
        for epoch in range(2):
            rows = [b[:, 0].tolist() for b in loader]
            assert rows == [[float(8 * k + j) for j in range(8)] for k in range(4)], rows
        del loader
        gc.collect()
        assert pin_threads() == [] and leftover_shm() == []
        try:
            for b in DataLoader(Rows(), batch_size=4, num_workers=2, pin_memory=True):
                raise KeyError("in the training loop")
        except KeyError:
            pass
        gc.collect()
        assert pin_threads() == [] and leftover_shm() == []
        print("ok")
    """)


class DiesAtThree:
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os._exit(7)
        return i


def test_a_dead_worker_is_reported_with_pinning_on(cupyconf_accelerator):
    loader = eud.DataLoader(DiesAtThree(), batch_size=1, pin_memory=True, num_workers=1)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly\. Worker \d+ exited with code 7\."):
        list(loader)
    assert "ember_data_pin" not in {t.name for t in threading.enumerate()}
