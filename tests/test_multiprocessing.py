"""``ember.multiprocessing``: the standard library's multiprocessing with tensors shared rather
than copied, ``spawn``'s error reporting, and no shared memory left behind, as
``torch.multiprocessing``. Every wait on a child process is bounded, so a bug fails the test
instead of hanging the suite."""
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch
import torch.multiprocessing as tmp

import ember
import ember.multiprocessing as mp
import multiprocessing_children as children
from torch_compare import assert_same, compare_error

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAIT = 60  # seconds any single wait on a child may take before the test fails
METHODS = ["fork", "spawn"]


def _join(process):
    process.join(WAIT)
    if process.is_alive():
        process.kill()
        pytest.fail(f"child {process.pid} did not finish within {WAIT} s")
    return process.exitcode


def _join_context(context):
    """``ProcessContext.join`` until done, within WAIT seconds."""
    deadline = time.monotonic() + WAIT
    try:
        while not context.join(timeout=max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                pytest.fail("spawned processes did not finish in time")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()


# ---- the namespace ---------------------------------------------------------------------------

def test_reexports_the_standard_library_like_torch():
    assert sorted(mp.__all__) == sorted(tmp.__all__)
    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                 "ProcessExitedException", "SpawnContext"):
        assert hasattr(tmp, name) and hasattr(mp, name), name
    assert mp.cpu_count() == tmp.cpu_count()


def test_sharing_strategies_as_torch():
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy()
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    compare_error(lambda lib: getattr(lib, "multiprocessing").set_sharing_strategy("bogus"))
    previous = mp.get_sharing_strategy()
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
    finally:
        mp.set_sharing_strategy(previous)


def test_namespace_is_lazy_and_hasattr_safe():
    code = ("import sys, ember; assert 'ember.multiprocessing' not in sys.modules; "
            "assert 'ember.distributed' not in sys.modules; "
            "assert ember.multiprocessing.Queue is not None; "
            "assert not hasattr(ember.multiprocessing, 'no_such_name'); print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=WAIT, cwd=REPO)
    assert done.stdout.strip() == "ok", done.stderr


# ---- share_memory_ ---------------------------------------------------------------------------

def test_share_memory_moves_storage_and_keeps_views_and_autograd():
    def run(lib):
        base = lib.arange(24.0).reshape(4, 6).requires_grad_()
        with lib.no_grad():
            pass
        view = base[1:, ::2]
        before = (base.is_shared(), view.is_shared())
        assert base.share_memory_() is base
        after = (base.is_shared(), view.is_shared())
        with lib.no_grad():
            view.mul_(-1)  # a write through the view reaches the base's (new) memory
        (base * base).sum().backward()
        return before, after, view.stride(), view.storage_offset(), base.detach(), base.grad
    assert_same(run(torch), run(ember))


def test_share_memory_on_each_device(device):
    t = ember.arange(6.0, device=device).reshape(2, 3)
    u = torch.arange(6.0).reshape(2, 3)
    assert t.is_shared() is u.is_shared() is False
    if not isinstance(t._data, np.ndarray):
        # A CuPy device's memory goes to other processes by value (no CUDA IPC yet):
        # share_memory_ says so rather than claiming it (test_device_transfers.py).
        with pytest.raises(RuntimeError, match="cannot be moved to shared memory"):
            t.share_memory_()
        return
    t.share_memory_(), u.share_memory_()
    assert t.is_shared() is u.is_shared() is True
    assert t.device.type == device
    assert_same(u, t)


def test_share_memory_of_an_already_shared_tensor_is_a_no_op():
    t = ember.ones(3).share_memory_()
    pointer = t.data_ptr()
    assert t.share_memory_().data_ptr() == pointer
    # torch: the same
    u = torch.ones(3).share_memory_()
    assert u.share_memory_().data_ptr() == u.data_ptr()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "bfloat16",
                                   "complex64"])
def test_share_memory_keeps_values_of_every_dtype(dtype):
    def run(lib):
        t = lib.arange(10).to(getattr(lib, dtype)).reshape(2, 5)
        shared = t.share_memory_()
        # torch's tensors cannot go to NumPy as bfloat16: compare them as float64
        return (shared.to(lib.float64 if dtype != "complex64" else lib.complex128),
                t.is_shared(), str(shared.dtype).split(".")[-1])
    assert_same(run(torch), run(ember))


def test_module_share_memory_shares_parameters_gradients_and_buffers():
    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
        model(lib.ones(4, 3)).sum().backward()
        assert model.share_memory() is model
        return ([p.is_shared() for p in model.parameters()],
                [p.grad.is_shared() for p in model.parameters()],
                [b.is_shared() for b in model.buffers()])
    assert_same(run(torch), run(ember))


def test_non_leaf_requiring_grad_refuses_to_be_sent_as_torch():
    compare_error(lambda lib: ForkingPickler.dumps(lib.ones(2, requires_grad=True) * 2))


# ---- tensors through queues and to children --------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_tensor_on_a_queue_arrives_as_a_view_of_the_same_memory(method):
    context = mp.get_context(method)
    inbox, outbox = context.Queue(), context.Queue()
    child = context.Process(target=children.describe_and_increment, args=(inbox, outbox))
    child.start()
    try:
        base = ember.arange(12.0).reshape(3, 4)
        view = base[:, 1:3]  # not contiguous, not at offset 0
        parameter = ember.nn.Parameter(ember.zeros(2))
        inbox.put(view)
        arrived = outbox.get(timeout=WAIT)
        assert outbox.get(timeout=WAIT) == "written"
        inbox.put(parameter)
        arrived_parameter = outbox.get(timeout=WAIT)
        assert outbox.get(timeout=WAIT) == "written"
        inbox.put(None)
    finally:
        assert _join(child) == 0
    assert arrived == ("Tensor", True, (3, 2), (4, 1), False,
                       [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]])
    assert arrived_parameter == ("Parameter", True, (2,), (1,), True, [0.0, 0.0])
    # The child's in-place writes are the parent's values: the same memory.
    expected = torch.arange(12.0).reshape(3, 4)
    expected[:, 1:3] += 1
    assert_same(expected, base)
    assert_same(torch.ones(2), parameter.detach())
    assert base.is_shared() and view.is_shared() and parameter.is_shared()


@pytest.mark.parametrize("method", METHODS)
def test_tensor_passed_to_a_child_process_shares_memory(method):
    context = mp.get_context(method)
    done = context.Queue()
    tensor = ember.zeros(3).share_memory_()
    child = context.Process(target=children.increment_args, args=(tensor, done))
    child.start()
    assert done.get(timeout=WAIT) is True
    assert _join(child) == 0
    assert tensor.tolist() == [10.0, 10.0, 10.0]


@pytest.mark.parametrize("method", METHODS)
def test_hogwild_training_updates_the_parents_model(method):
    ember.manual_seed(0)
    model = ember.nn.Linear(4, 2)
    initial = {k: torch.from_numpy(v.detach().numpy().copy())
               for k, v in model.state_dict().items()}
    model.share_memory()
    x = ember.arange(12.0).reshape(3, 4) / 10
    context = mp.get_context(method)
    lock = context.Lock()
    steps = 5
    workers = [context.Process(target=children.hogwild_train, args=(model, lock, steps, x))
               for _ in range(2)]
    for w in workers:
        w.start()
    assert [_join(w) for w in workers] == [0, 0]

    # torch: the same 2 * steps SGD steps, one after another, from the same weights
    reference = torch.nn.Linear(4, 2)
    reference.load_state_dict(initial)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.01)
    tx = torch.arange(12.0).reshape(3, 4) / 10
    for _ in range(2 * steps):
        optimizer.zero_grad()
        reference(tx).sum().backward()
        optimizer.step()
    assert_same(reference.weight, model.weight)
    assert_same(reference.bias, model.bias)
    assert not torch.equal(reference.weight, initial["weight"])


# ---- spawn -----------------------------------------------------------------------------------

def test_spawn_runs_fn_with_its_index_and_args():
    out = ember.zeros(3).share_memory_()
    context = mp.spawn(children.write_rank, args=(out, 2.5), nprocs=3, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 3
    _join_context(context)
    assert out.tolist() == [0.0, 2.5, 5.0]


def test_spawn_with_join_returns_none_and_other_methods_warn_as_torch():
    out = ember.zeros(2).share_memory_()
    with pytest.warns(FutureWarning) as ember_warning:
        assert mp.spawn(children.write_rank, args=(out, 1.0), nprocs=2,
                        start_method="fork") is None
    assert out.tolist() == [0.0, 1.0]
    assert str(ember_warning[0].message) == (
        "This method only supports start_method=spawn (got: fork).\nTo use a different "
        "start_method use:\n\t\t ember.multiprocessing.start_processes(...)")


def _failure(lib, fn, method):
    context = lib.multiprocessing.start_processes(fn, args=(1,), nprocs=2, join=False,
                                                  start_method=method)
    start = time.monotonic()
    with pytest.raises((lib.multiprocessing.ProcessRaisedException,
                        lib.multiprocessing.ProcessExitedException)) as error:
        _join_context(context)
    assert time.monotonic() - start < WAIT
    assert not any(p.is_alive() for p in context.processes)  # the other child was stopped
    return error.value


@pytest.mark.parametrize("method", METHODS)
def test_child_exception_is_reraised_with_its_traceback(method):
    torch_error = _failure(torch, children.fail_on_rank, "fork")
    error = _failure(ember, children.fail_on_rank, method)
    assert type(error) is mp.ProcessRaisedException
    assert type(torch_error) is tmp.ProcessRaisedException
    header = ("\n\n-- Process 1 terminated with the following error:\n"
              "Traceback (most recent call last):\n")
    assert torch_error.msg.startswith(header) and error.msg.startswith(header)
    for msg in (torch_error.msg, error.msg):
        assert msg.endswith("ValueError: boom 1\n")
    assert 'in fail_on_rank\n    raise ValueError(f"boom {rank}")' in error.msg
    assert (error.error_index, torch_error.error_index) == (1, 1)
    assert error.error_pid > 0


@pytest.mark.parametrize("fn", [children.die_on_rank, children.exit_on_rank])
def test_child_killed_by_a_signal_or_exiting_is_reported_as_torch(fn):
    torch_error = _failure(torch, fn, "fork")
    error = _failure(ember, fn, "spawn")
    assert type(error) is mp.ProcessExitedException
    assert (error.msg, error.error_index, error.exit_code, error.signal_name) == \
        (torch_error.msg, torch_error.error_index, torch_error.exit_code, torch_error.signal_name)


def test_process_exceptions_pickle_as_torch():
    import pickle
    for lib in (torch, ember):
        exc = lib.multiprocessing.ProcessExitedException("m", 1, 2, -9, "SIGKILL")
        back = pickle.loads(pickle.dumps(exc))
        assert (back.msg, back.error_index, back.error_pid, back.exit_code, back.signal_name) == \
            ("m", 1, 2, -9, "SIGKILL")


# ---- nothing leaks ---------------------------------------------------------------------------

LEAK_SCRIPT = """
import gc, os, sys
import ember
import ember.multiprocessing as mp
import multiprocessing_children as children

def open_fds():
    return len(os.listdir("/proc/self/fd"))

pids = {os.getpid()}  # this script's and its children's: the names other runs make differ


def ours():
    return sorted(n for n in os.listdir("/dev/shm") if n.startswith("ember_shm_")
                  and int(n.split("_")[2]) in pids)

if __name__ == "__main__":
    mp.set_sharing_strategy(sys.argv[1])
    baseline = open_fds()
    for method in ("fork", "spawn"):
        context = mp.get_context(method)
        inbox, outbox = context.Queue(), context.Queue()
        child = context.Process(target=children.describe_and_increment, args=(inbox, outbox))
        child.start()
        pids.add(child.pid)
        tensors = [ember.full((1000,), float(i)) for i in range(5)]
        for t in tensors:
            inbox.put(t)
            outbox.get(timeout=60); outbox.get(timeout=60)
        inbox.put(None)
        child.join(60)
        assert child.exitcode == 0, child.exitcode
        assert [t[0].item() for t in tensors] == [1.0, 2.0, 3.0, 4.0, 5.0]
        if sys.argv[1] == "file_system":
            assert len(ours()) == 5, ours()
        del tensors, t, inbox, outbox, child, context
        gc.collect()
        # The last user of each segment is gone: no file, no descriptor left.
        assert ours() == [], ours()
    shared = ember.ones(10).share_memory_()
    del shared
    gc.collect()
    assert ours() == []
    print("fds", baseline, open_fds())
    for method in ("fork", "spawn"):
        child = mp.get_context(method).Process(target=children.share_and_exit, args=(sys.argv[1],))
        child.start()
        pids.add(child.pid)
        child.join(60)
        assert child.exitcode == 0, child.exitcode
        assert ours() == [], ours()
    kept = ember.ones(10).share_memory_()  # alive at exit: removed then
    print("pids", *sorted(pids))
"""


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_no_shared_memory_is_left_behind(strategy, tmp_path):
    before = set(os.listdir("/dev/shm"))
    script = tmp_path / "leak.py"
    script.write_text(textwrap.dedent(LEAK_SCRIPT))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.path.join(REPO, "tests")]))
    done = subprocess.run([sys.executable, str(script), strategy], capture_output=True,
                          text=True, timeout=3 * WAIT, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    _, baseline, final, _, *pids = done.stdout.split()
    # Queues and the resource sharer keep a few descriptors of their own: at most that many.
    assert int(final) - int(baseline) <= 4, done.stdout
    new = {n for n in set(os.listdir("/dev/shm")) - before
           if n.startswith("ember_shm_") and n.split("_")[2] in pids}
    assert not new, new
