"""Failures end a job with an error naming the rank, within a bounded time, never a hang: a
rank that raises or exits, a peer that never arrives (timeout), ranks whose tensors disagree
(an error on every rank before any data moves), a rank missing from a monitored barrier."""
import time

import pytest

from ranks import run_ranks

_INIT = '''
import datetime, os, sys, time
import ember
import ember.distributed as dist
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds={timeout}))
rank = dist.get_rank()
'''


def _run(body, timeout_s=30, env=None, limit=60):
    start = time.monotonic()
    job = run_ranks(_INIT.format(timeout=timeout_s) + body, nprocs=2, timeout=limit,
                    check=False, env=env)
    return job, time.monotonic() - start


def test_a_rank_that_raises_ends_the_job_naming_it():
    job, took = _run('''
if rank == 1:
    raise ValueError("rank one breaks")
dist.all_reduce(ember.ones(2))  # rank 0 would wait for rank 1 forever without the abort
time.sleep(60)
''')
    assert job.returncode != 0
    assert "[rank1]: ValueError: rank one breaks" in job.stderr, job.stderr
    assert took < 20


def test_a_rank_that_exits_ends_the_job():
    job, took = _run('''
if rank == 1:
    os._exit(3)
dist.all_reduce(ember.ones(2))
time.sleep(60)
''')
    assert job.returncode != 0
    assert took < 20


@pytest.mark.parametrize("checks,seconds", [("1", 3), ("0", 1)],
                         ids=["with_checks", "without_checks"])
def test_a_peer_that_never_arrives_times_out(checks, seconds):
    job, took = _run('''
if rank == 1:
    time.sleep(40)
t = ember.ones(2)
start = time.monotonic()
try:
    dist.all_reduce(t)
except dist.DistBackendError as e:
    print(f"TIMED OUT after {time.monotonic() - start:.1f}s: {e}", flush=True)
    raise
''', timeout_s=seconds, env={"EMBER_DISTRIBUTED_CHECKS": checks})
    assert job.returncode != 0
    assert "TIMED OUT after" in job.stdout, job.stdout + job.stderr
    waited = float(job.stdout.split("TIMED OUT after ")[1].split("s")[0])
    assert seconds - 0.1 <= waited < seconds + 3, waited
    assert "timing out" in job.stdout and f"{seconds * 1000} ms" in job.stdout
    assert "[Rank 0]" in job.stdout
    assert "[rank0]:" in job.stderr  # the uncaught error was printed with its rank and aborted
    assert took < 25


def test_mismatched_tensors_raise_on_every_rank_and_the_group_survives():
    job, _ = _run('''
def expect_mismatch(fn, what):
    try:
        fn()
    except ValueError as e:
        assert "ranks disagree" in str(e), e
        print(f"MISMATCH {what} rank{rank}", flush=True)
    else:
        raise AssertionError(f"{what}: mismatch not detected")
expect_mismatch(lambda: dist.all_reduce(ember.ones(2 + rank)), "numel")
expect_mismatch(lambda: dist.all_reduce(ember.ones((2, 3) if rank else (3, 2))), "shape")
expect_mismatch(lambda: dist.all_reduce(ember.ones(2, dtype=ember.float64 if rank else
                                                   ember.float32)), "dtype")
expect_mismatch(lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.MAX if rank else
                                        dist.ReduceOp.SUM), "op")
expect_mismatch(lambda: dist.broadcast(ember.ones(2), src=rank), "root")
expect_mismatch(lambda: dist.all_reduce(ember.ones(2)) if rank else
                dist.broadcast(ember.ones(2), 0), "collective")
out = ember.zeros(4)
expect_mismatch(lambda: dist.all_gather_into_tensor(ember.zeros(2 * (2 + rank)),
                                                    ember.ones(2 + rank)), "allgather")
try:
    dist.all_to_all_single(ember.zeros(4), ember.zeros(4), [2, 2], [1, 3] if rank else [2, 2])
except ValueError as e:
    assert "split sizes disagree" in str(e), e
    print(f"MISMATCH splits rank{rank}", flush=True)
t = ember.ones(2)
dist.all_reduce(t)
assert t.tolist() == [2.0, 2.0]
print(f"SURVIVED rank{rank}", flush=True)
''')
    assert job.returncode == 0, job.stderr
    for what in ("numel", "shape", "dtype", "op", "root", "collective", "allgather", "splits"):
        for r in range(2):
            assert f"MISMATCH {what} rank{r}" in job.stdout, (what, r, job.stdout, job.stderr)
    assert "SURVIVED rank0" in job.stdout and "SURVIVED rank1" in job.stdout


def test_monitored_barrier_names_the_missing_rank():
    job, took = _run('''
if rank == 1:
    time.sleep(40)
dist.monitored_barrier(timeout=datetime.timedelta(seconds=1))
''')
    assert job.returncode != 0
    assert "Rank 1 failed to pass monitoredBarrier in 1000 ms" in job.stderr, job.stderr
    assert "[rank0]:" in job.stderr and took < 20


def test_work_gives_up_at_its_timeout_and_reports_errors():
    import datetime

    import ember.distributed as dist
    from ember.distributed.process_group import Work
    never = Work(lambda: False, None, [], timeout=0.2, description="MPI allreduce (SeqNum=7)",
                 rank=3)
    assert not never.is_completed()
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match=r"\[Rank 3\] MPI allreduce \(SeqNum=7\) "
                                                    r"ran for \d+ milliseconds before timing "
                                                    r"out \(timeout 200 ms\)"):
        never.wait()
    assert 0.2 <= time.monotonic() - start < 2
    assert never.is_completed() and not never.is_success()
    assert isinstance(never.exception(), dist.DistBackendError)
    with pytest.raises(dist.DistBackendError):
        never.wait(datetime.timedelta(seconds=5))  # a failed Work stays failed

    def boom():
        raise RuntimeError("the backend failed")
    failing = Work(boom, None, [])
    with pytest.raises(RuntimeError, match="the backend failed"):
        failing.wait()
    future = Work(boom, None, []).get_future()
    with pytest.raises(RuntimeError, match="the backend failed"):
        future.wait()
    polls = iter([False, False, True])
    finished = []
    later = Work(lambda: next(polls), lambda: finished.append(1), ["out"], timeout=5)
    chained = later.chain(lambda: finished.append(2), ["front"])
    assert chained.get_future().wait() == ["front"] and finished == [1, 2]
    assert Work.completed(["x"]).get_future().done()
