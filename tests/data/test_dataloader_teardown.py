"""DataLoader teardown is silent and leak-free wherever an iterator is finalised: in the process
that started its workers (garbage collection of a half-consumed iterator, persistent workers,
an exception in the training loop) and in processes that merely inherited it through fork (a
user's ``os.fork`` child, a ``multiprocessing`` child, a worker of another loader), which must
neither print anything nor disturb the parent's workers.

Each scenario runs as its own script so that its stderr, where finalisers report errors, can be
checked to be empty; every script is bounded by a timeout, so a hang fails instead."""
import os
import subprocess
import sys
import textwrap

import torch.utils.data as tud

import ember.utils.data as eud

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GONE_SOURCE = """
def gone(pids, within=10.0):
    # every process in pids has exited (a zombie counts as exited), polled for ``within`` s
    import os, time
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}")
                 and open(f"/proc/{p}/stat").read().split()[2] != "Z"]
        if not alive:
            return True
        time.sleep(0.05)
    return False
"""
exec(GONE_SOURCE)  # the same poll for the tests' own checks

PREAMBLE = """
import atexit, gc, os, sys
import numpy as np
import ember
from ember.utils.data import DataLoader
from ember.utils.data import dataloader as dataloader_module

class Squares:
    # Samples big enough (64 KiB batches) that workers send them through /dev/shm files.
    def __len__(self):
        return 32
    def __getitem__(self, i):
        return np.full((4096,), i, dtype=np.float32)

def summary(batch):
    # one value per sample: the whole batch must be the samples' indices
    assert (batch == batch[:, :1]).all().item()
    return batch[:, 0].tolist()

def leftover_shm():
    prefix = f"ember_dl_{os.getpid()}_"
    return [name for name in os.listdir("/dev/shm") if name.startswith(prefix)]

""" + GONE_SOURCE


def _run(body):
    script = PREAMBLE + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=90, env=env, cwd=REPO)
    return done


def _run_silently(body):
    """Run ``body`` (which prints "ok" at its end): nothing on stderr, only "ok" on stdout."""
    done = _run(body)
    assert done.stderr == ""
    assert done.stdout.split() == ["ok"]


def test_scripts_expect_torchs_batches():
    # The scripts assert that batch b holds samples 4b..4b+3, which is what torch gives.
    import numpy as np

    class Squares:
        def __len__(self):
            return 32

        def __getitem__(self, i):
            return np.full((4096,), i, dtype=np.float32)

    torch_rows = [b[:, 0].tolist() for b in tud.DataLoader(Squares(), batch_size=4)]
    ember_rows = [b[:, 0].tolist() for b in eud.DataLoader(Squares(), batch_size=4,
                                                           num_workers=2)]
    assert ember_rows == torch_rows == [[float(4 * b + k) for k in range(4)] for b in range(8)]


def test_user_fork_child_finalising_a_live_iterator_is_silent_and_harmless():
    _run_silently("""
        loader = DataLoader(Squares(), batch_size=4, num_workers=2)
        it = iter(loader)
        rows = [summary(next(it))]
        pid = os.fork()
        if pid == 0:
            # The child drops its copy of the iterator and runs every exit handler, as a child
            # that returns normally would.
            del it
            gc.collect()
            atexit._run_exitfuncs()
            sys.stderr.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        rows += [summary(b) for b in it]
        assert rows == [[float(4 * b + k) for k in range(4)] for b in range(8)], rows
        assert [w.exitcode for w in it._workers] == [0, 0]
        assert leftover_shm() == []
        print("ok")
    """)


def test_multiprocessing_child_inheriting_a_live_iterator_is_silent():
    _run_silently("""
        import multiprocessing
        def child():
            global it
            del it
            gc.collect()

        loader = DataLoader(Squares(), batch_size=4, num_workers=2)
        it = iter(loader)
        first = summary(next(it))
        process = multiprocessing.get_context("fork").Process(target=child)
        process.start()
        process.join(30)
        assert process.exitcode == 0, process.exitcode
        rest = [summary(b) for b in it]
        assert [first] + rest == [[float(4 * b + k) for k in range(4)] for b in range(8)]
        print("ok")
    """)


def test_worker_of_another_loader_collecting_an_inherited_iterator_is_silent():
    # An iterator in a reference cycle is garbage the parent has not collected yet when the
    # next loader forks its workers; the workers' garbage collector then finalises their copy.
    _run_silently("""
        gc.disable()
        first = DataLoader(Squares(), batch_size=4, num_workers=2)
        it = iter(first)
        summary(next(it))
        first_pids = [w.pid for w in it._workers]
        it.cycle = it
        del it
        second = DataLoader(Squares(), batch_size=4, num_workers=2,
                            worker_init_fn=lambda worker_id: gc.collect())
        rows = [summary(b) for b in second]
        assert rows == [[float(4 * b + k) for k in range(4)] for b in range(8)], rows
        gc.enable()
        gc.collect()
        assert gone(first_pids)
        assert leftover_shm() == []
        print("ok")
    """)


def test_garbage_collected_half_consumed_iterator_stops_its_workers():
    _run_silently("""
        loader = DataLoader(Squares(), batch_size=4, num_workers=2)
        it = iter(loader)
        summary(next(it)); summary(next(it))
        pids = [w.pid for w in it._workers]
        del it
        gc.collect()
        assert gone(pids)
        assert leftover_shm() == []
        print("ok")
    """)


def test_persistent_workers_are_shut_down_with_their_loader_even_after_a_fork():
    _run_silently("""
        loader = DataLoader(Squares(), batch_size=4, num_workers=2, persistent_workers=True)
        for epoch in range(2):
            for step, batch in enumerate(loader):
                if epoch == 1 and step == 2:
                    break
        pids = [w.pid for w in loader._iterator._workers]
        pid = os.fork()
        if pid == 0:
            del loader
            gc.collect()
            atexit._run_exitfuncs()
            sys.stderr.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert status == 0
        # the parent's workers survived the child and still serve a full epoch
        rows = [summary(b) for b in loader]
        assert rows == [[float(4 * b + k) for k in range(4)] for b in range(8)], rows
        del loader
        gc.collect()
        assert gone(pids)
        assert leftover_shm() == []
        print("ok")
    """)


def test_exception_in_the_training_loop_leaves_only_its_own_traceback():
    done = _run("""
        import multiprocessing
        loader = DataLoader(Squares(), batch_size=4, num_workers=2)
        try:
            for step, batch in enumerate(loader):
                if step == 1:
                    raise ValueError("training failed")
        except ValueError as error:
            caught = error  # the traceback keeps the iterator alive, in a reference cycle
        process = multiprocessing.get_context("fork").Process(target=gc.collect)
        process.start()
        process.join(30)
        assert process.exitcode == 0
        del caught
        gc.collect()
        # Now one that is not caught: the script dies with it, the workers with the script.
        it = iter(loader)
        print(*[w.pid for w in it._workers], flush=True)
        for step, batch in enumerate(it):
            if step == 1:
                raise KeyError("uncaught")
    """)
    assert done.returncode == 1
    assert gone([int(pid) for pid in done.stdout.split()])
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == "KeyError: 'uncaught'"
    assert "Exception ignored" not in done.stderr and "AssertionError" not in done.stderr


def test_iterator_whose_construction_failed_is_finalised_silently():
    done = _run("""
        class BrokenSampler:
            def __iter__(self):
                raise ValueError("no indices")
            def __len__(self):
                return 1
        loader = DataLoader(Squares(), sampler=BrokenSampler(), batch_size=None, num_workers=2)
        try:
            iter(loader)
        except ValueError as error:
            print(error)
        gc.collect()
    """)
    assert done.stderr == ""
    assert done.stdout.strip() == "no indices"
