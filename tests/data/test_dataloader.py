"""DataLoader: batches as PyTorch's, the same with and without workers, and every failure mode
ending in a clear error or a clean shutdown within seconds."""
import gc
import os
import time
import warnings

import numpy as np
import pytest
import torch.utils.data as tud

import ember
import ember.utils.data as eud
from loader_datasets import (ArrayDataset, FailingDataset, PageFaultCounter, ShardedRange,
                             SlowDataset, SuicidalDataset, WorkerIdentity)
from torch_compare import assert_same


def _batches(loader):
    return [b for b in loader]


def _gone(pids, within=5.0):
    """All ``pids`` have exited (and been reaped) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and
                 open(f"/proc/{p}/stat").read().split()[2] != "Z"]
        if not alive:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("kwargs", [dict(batch_size=5), dict(batch_size=5, drop_last=True),
                                    dict(batch_size=None)])
def test_batches_match_torch_with_and_without_workers(kwargs):
    expected = _batches(tud.DataLoader(ArrayDataset(), **kwargs))
    single = _batches(eud.DataLoader(ArrayDataset(), **kwargs))
    assert_same(expected, single)
    assert_same(expected, _batches(eud.DataLoader(ArrayDataset(), num_workers=2, **kwargs)))
    assert len(eud.DataLoader(ArrayDataset(), **kwargs)) == len(tud.DataLoader(ArrayDataset(), **kwargs))


def test_shuffle_is_deterministic_given_a_generator():
    def order(num_workers, seed):
        loader = eud.DataLoader(list(range(30)), batch_size=4, shuffle=True, num_workers=num_workers,
                                generator=ember.Generator().manual_seed(seed))
        return [b.tolist() for b in loader]
    first = order(0, 5)
    assert sorted(sum(first, [])) == list(range(30))
    assert order(0, 5) == first and order(2, 5) == first and order(0, 6) != first


def test_worker_exception_is_reraised_with_its_traceback():
    loader = eud.DataLoader(FailingDataset(bad_index=5), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0.0, 1.0]
    assert next(it).tolist() == [2.0, 3.0]
    with pytest.raises(ValueError) as error:
        next(it)
    message = str(error.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback")
    assert "bad sample 5" in message and "__getitem__" in message
    assert next(it).tolist() == [6.0, 7.0]  # the loader carries on, as PyTorch's does
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process 0"):
        next(iter(eud.DataLoader(FailingDataset(bad_index=0), num_workers=1)))


def test_killed_worker_is_reported_not_hung():
    loader = eud.DataLoader(SuicidalDataset(fatal_index=6), batch_size=2, num_workers=2)
    it = iter(loader)
    pids = [w.pid for w in it._workers]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        for _ in it:
            pass
    assert time.monotonic() - start < 5
    assert _gone(pids)


def test_timeout_is_honoured():
    loader = eud.DataLoader(SlowDataset(delay=3.0), num_workers=1, timeout=0.3)
    it = iter(loader)
    pids = [w.pid for w in it._workers]
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        next(it)
    assert time.monotonic() - start < 2
    del it
    gc.collect()
    assert _gone(pids)


def test_abandoned_iterator_leaves_no_workers_or_shared_memory():
    loader = eud.DataLoader(ArrayDataset(n=64, shape=(64, 64)), batch_size=8, num_workers=2)
    it = iter(loader)
    next(it)
    pids, prefix = [w.pid for w in it._workers], it._shm_prefix
    del it
    gc.collect()
    assert _gone(pids)
    assert not [f for f in os.listdir(eud._utils.shared_memory.SHM_DIR) if f.startswith(prefix)]


def test_exhausted_iterator_shuts_workers_down():
    it = iter(eud.DataLoader(list(range(10)), batch_size=3, num_workers=2))
    pids = [w.pid for w in it._workers]
    assert sum(len(b) for b in it) == 10
    assert _gone(pids)


def test_sharded_iterable_dataset_yields_each_item_once():
    loader = eud.DataLoader(ShardedRange(23), batch_size=4, num_workers=2)
    items = [x for b in loader for x in b.tolist()]
    assert sorted(items) == list(range(23))
    assert [x for b in eud.DataLoader(ShardedRange(23), batch_size=4) for x in b.tolist()] == list(range(23))


def test_iterable_len_and_overrun_warning_as_torch():
    for ud in (tud, eud):
        class Stream(ud.IterableDataset):
            def __iter__(self):
                return iter(range(7))

            def __len__(self):
                return 5
        assert len(ud.DataLoader(Stream(), batch_size=2)) == 3
        assert len(ud.DataLoader(Stream(), batch_size=2, drop_last=True)) == 2
        loader = ud.DataLoader(Stream(), batch_size=None)
        len(loader)
        with pytest.warns(UserWarning, match="Length of IterableDataset .* was reported to be 5"):
            list(loader)


def test_worker_info_and_per_worker_seeds():
    loader = eud.DataLoader(WorkerIdentity(), batch_size=None, num_workers=2,
                            generator=ember.Generator().manual_seed(1))
    samples = list(loader)
    by_worker = {s["worker"]: s for s in samples}
    assert set(by_worker) == {0, 1}
    assert by_worker[1]["seed"] == by_worker[0]["seed"] + 1
    for key in ("py", "np", "ember"):
        assert by_worker[0][key] != by_worker[1][key]
    again = list(eud.DataLoader(WorkerIdentity(), batch_size=None, num_workers=2,
                                generator=ember.Generator().manual_seed(1)))
    assert [s["np"] for s in again] == [s["np"] for s in samples]
    assert eud.get_worker_info() is None


def test_worker_init_fn_runs_in_each_worker():
    loader = eud.DataLoader(WorkerIdentity(), batch_size=None, num_workers=2,
                            worker_init_fn=np.random.seed)
    samples = list(loader)
    for s in samples[:2]:
        np.random.seed(s["worker"])
        assert s["np"] == float(np.random.rand())


def test_persistent_workers_are_reused_across_epochs():
    loader = eud.DataLoader(WorkerIdentity(), batch_size=None, num_workers=2, persistent_workers=True)
    first = {s["pid"] for s in loader}
    second = {s["pid"] for s in loader}
    assert first == second and len(first) == 2
    it = iter(loader)
    next(it)  # abandon mid-epoch; the next epoch still starts from the beginning
    assert len(list(loader)) == 8
    loader._iterator._shutdown_workers()


def test_in_order_false_yields_everything():
    loader = eud.DataLoader(list(range(40)), batch_size=3, num_workers=2, in_order=False)
    assert sorted(x for b in loader for x in b.tolist()) == list(range(40))


def test_spawn_context_works():
    loader = eud.DataLoader(ArrayDataset(n=6), batch_size=3, num_workers=1,
                            multiprocessing_context="spawn")
    assert_same(_batches(tud.DataLoader(ArrayDataset(n=6), batch_size=3)), _batches(loader))


def test_large_batches_arrive_through_shared_memory():
    from ember.utils.data._utils.shared_memory import _shared_origin
    batch = next(iter(eud.DataLoader(ArrayDataset(n=8, shape=(64, 64)), batch_size=8, num_workers=1)))
    assert _shared_origin(batch[0]._data) is not None
    assert _shared_origin(batch[1]._data) is None  # small: pickled through the pipe


def test_workers_reuse_freed_sample_memory():
    try:
        os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        pytest.skip("the workers tune glibc's allocator only")
    loader = eud.DataLoader(PageFaultCounter(), batch_size=16, num_workers=1, collate_fn=lambda b: b)
    faults = [batch[0] for batch in loader]
    pages_per_batch = 16 * 256 * 1024 // os.sysconf("SC_PAGE_SIZE")
    # Returned to the kernel, each batch's samples would fault in every page again.
    assert max(faults[1:]) < pages_per_batch // 4, faults


@pytest.mark.parametrize("kwargs", [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
    dict(num_workers=1, prefetch_factor=-1), dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2), dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="fork"), dict(num_workers=1, multiprocessing_context="nope"),
    dict(num_workers=1, multiprocessing_context=3),
])
def test_argument_errors_match_torch(kwargs):
    with pytest.raises(Exception) as expected:
        tud.DataLoader(list(range(4)), **kwargs)
    with pytest.raises(Exception) as actual:
        eud.DataLoader(list(range(4)), **kwargs)
    assert type(actual.value) is type(expected.value)
    assert str(actual.value) == str(expected.value)


def test_iterable_dataset_option_errors_and_frozen_attributes_match_torch():
    class TorchStream(tud.IterableDataset):
        def __iter__(self):
            return iter(range(3))
    for kwargs in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        with pytest.raises(ValueError) as expected:
            tud.DataLoader(TorchStream(), **kwargs)
        with pytest.raises(ValueError) as actual:
            eud.DataLoader(ShardedRange(3), **kwargs)
        assert str(actual.value).split(", but got")[0] == str(expected.value).split(", but got")[0]
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        eud.DataLoader([1]).batch_size = 3


def test_pin_memory_is_accepted_with_torch_warning():
    # The suite's "testdev" is an accelerator that cannot pin: torch's MPS answer (warn, do not
    # pin). Without any accelerator: torch's CPU-build warning (tests/data/test_pin_memory.py).
    if ember.cuda.is_available():
        pytest.skip("CUDA is this machine's accelerator")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [b.tolist() for b in eud.DataLoader([1, 2], batch_size=2, pin_memory=True)] == [[1, 2]]
    assert any("'pin_memory' argument is set as true but not supported on testdev" in str(w.message)
               for w in caught)
