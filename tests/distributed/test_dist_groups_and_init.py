"""init_process_group's rendezvous paths (mpiexec alone, env://, tcp://, file://, store=,
ranks that differ from MPI's), sub-groups from new_group (members and non-members as torch
treats them), re-initialisation after destroy, and ranks from separate MPI jobs joined through
the store."""
import os
import socket
import subprocess
import sys

import pytest

from ranks import REPO_DIR, TESTS_DIR, assert_section_passed, mpiexec, run_ranks


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_BODY = r'''
import datetime, os, sys, tempfile, warnings
import numpy as np
import ember
import ember.distributed as dist
from ember.distributed import distributed_c10d as c10d

SECTIONS = []
def section(fn):
    SECTIONS.append(fn)
    return fn

mpi_rank = int(os.environ["PMI_RANK"])
port = int(sys.argv[1])
tmpdir = sys.argv[2]


def check_world(expected_rank):
    assert dist.is_initialized()
    assert dist.get_rank() == expected_rank and dist.get_world_size() == 2
    assert dist.get_backend() == "mpi" and dist.group.WORLD is dist.GroupMember.WORLD
    assert isinstance(dist.group.WORLD, dist.ProcessGroup)
    assert dist.group.WORLD.rank() == expected_rank and dist.group.WORLD.size() == 2
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0, 1]
    t = ember.tensor([float(dist.get_rank())])
    dist.broadcast(t, 0)
    assert t.item() == 0.0
    store = c10d._get_default_store()
    store.set(f"hello{dist.get_rank()}", f"from {dist.get_rank()}")
    assert store.get(f"hello{1 - dist.get_rank()}") == f"from {1 - dist.get_rank()}".encode()
    dist.barrier()  # rank 0's store server ends with its group: nobody may still be using it


@section
def mpiexec_only_and_bad_world_size():
    from ember.distributed.process_group_mpi import ProcessGroupMPI
    try:
        ProcessGroupMPI(None, 0, 2)  # both ranks claim rank 0
    except ValueError as e:
        assert "every process needs its own rank" in str(e), e
    else:
        raise AssertionError("two ranks 0 accepted")
    try:
        dist.init_process_group("mpi", world_size=3)
    except ValueError as e:
        assert "mpiexec started 2" in str(e), e
    else:
        raise AssertionError("world_size=3 under mpiexec -n 2 accepted")
    assert not dist.is_initialized()
    dist.init_process_group()  # backend None: mpi for cpu (no GPU here)
    check_world(int(os.environ["RANK"]))
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.group.WORLD is None


@section
def env_rendezvous_with_ranks_reversed():
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      RANK=str(1 - mpi_rank), WORLD_SIZE="2")
    dist.init_process_group("mpi", init_method="env://")
    check_world(1 - mpi_rank)  # rank 0 is MPI's rank 1: MPI's order was split into RANK's
    t = ember.tensor([float(dist.get_rank())])
    out = ember.zeros(2)
    dist.all_gather_into_tensor(out, t)
    assert out.tolist() == [0.0, 1.0]
    dist.destroy_process_group()
    # the master's store server went with the group: the same port serves the next one
    from mpi4py import MPI
    MPI.COMM_WORLD.Barrier()
    dist.init_process_group("mpi", init_method="env://")
    check_world(1 - mpi_rank)
    dist.destroy_process_group()
    for k in ("MASTER_ADDR", "MASTER_PORT"):
        del os.environ[k]
    os.environ["RANK"] = str(mpi_rank)


@section
def tcp_file_and_store_rendezvous():
    dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{port + 1}", rank=mpi_rank,
                            world_size=2)
    check_world(mpi_rank)
    dist.destroy_process_group()
    path = os.path.join(tmpdir, "filestore")
    dist.init_process_group("mpi", init_method=f"file://{path}", rank=mpi_rank, world_size=2)
    check_world(mpi_rank)
    dist.destroy_process_group()
    store = dist.TCPStore("127.0.0.1", port + 2, 2, mpi_rank == 0,
                          timeout=datetime.timedelta(seconds=30))
    dist.init_process_group("mpi", store=store, rank=mpi_rank, world_size=2)
    check_world(mpi_rank)


@section
def sub_groups():
    rank = dist.get_rank()
    solo = dist.new_group([1])
    both = dist.new_group()
    reversed_ = dist.new_group([1, 0], sort_ranks=False)
    if rank == 0:
        assert solo == dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(solo) == -1 and dist.get_world_size(solo) == -1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(ember.ones(1), group=solo) is None
            assert dist.barrier(group=solo) is None
        assert any("does not belong to the given group" in str(w.message) for w in caught)
        dist.destroy_process_group(solo)  # nothing to destroy, as torch
    else:
        assert isinstance(solo, dist.ProcessGroup)
        assert dist.get_rank(solo) == 0 and dist.get_world_size(solo) == 1
        assert dist.get_process_group_ranks(solo) == [1]
        assert dist.get_global_rank(solo, 0) == 1 and dist.get_group_rank(solo, 1) == 0
        t = ember.full((2,), 5.0)
        dist.all_reduce(t, group=solo)
        dist.broadcast(t, src=1, group=solo)
        assert t.tolist() == [5.0, 5.0]
        try:
            dist.broadcast(t, src=0, group=solo)
        except ValueError as e:
            assert "not part of group" in str(e)
        else:
            raise AssertionError("a source outside the group accepted")
    assert dist.get_world_size(both) == 2 and dist.get_rank(both) == rank
    t = ember.tensor([rank + 1.0])
    dist.all_reduce(t, group=both)
    assert t.item() == 3.0
    assert dist.get_process_group_ranks(reversed_) == [1, 0]
    assert dist.get_rank(reversed_) == 1 - rank
    t = ember.tensor([float(rank)])
    dist.broadcast(t, group=reversed_, group_src=0)  # group rank 0 is global rank 1
    assert t.item() == 1.0
    t = ember.tensor([float(rank)])
    dist.broadcast(t, src=0, group=reversed_)  # global rank 0
    assert t.item() == 0.0
    objs = [None, None]
    dist.all_gather_object(objs, rank, group=reversed_)
    assert objs == [1, 0]
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=20))
    dist.monitored_barrier(group=both, wait_all_ranks=True)
    dist.destroy_process_group(both)
    try:
        dist.all_reduce(ember.ones(1), group=both)
    except Exception:
        pass  # a destroyed group cannot be used
    else:
        raise AssertionError("a destroyed group still worked")
    dist.destroy_process_group()
    assert not dist.is_initialized()


@section
def backend_names():
    for bad, kind, text in (("gloo", RuntimeError, "no gloo"), ("nosuch", ValueError, "Invalid"),
                            ("nccl", RuntimeError, "no GPUs"),
                            ("cpu:nccl", ValueError, "does not support")):
        try:
            dist.init_process_group(bad)
        except kind as e:
            assert text in str(e), e
        else:
            raise AssertionError(f"backend {bad} accepted")
        assert not dist.is_initialized()
    dist.init_process_group("cpu:mpi", timeout=datetime.timedelta(seconds=30))
    assert dist.get_backend() == "mpi"
    dist.destroy_process_group()


for fn in SECTIONS:
    fn()
    print(f"PASS {fn.__name__} rank{mpi_rank}", flush=True)
'''

_SECTIONS = ["mpiexec_only_and_bad_world_size", "env_rendezvous_with_ranks_reversed",
             "tcp_file_and_store_rendezvous", "sub_groups", "backend_names"]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    port = _free_port()
    return run_ranks(_BODY, nprocs=2, timeout=240, check=False,
                     args=(str(port), str(tmp_path_factory.mktemp("groups"))))


@pytest.mark.parametrize("name", _SECTIONS)
def test_section(job, name):
    assert_section_passed(job, name)


def test_job_exits_cleanly(job):
    assert job.returncode == 0, job.stderr


_JOIN = r'''
import os, sys
sys.path.insert(0, {repo!r})
import ember, ember.distributed as dist
from mpi4py import MPI
rank, size = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("mpi", init_method="env://", rank=rank, world_size=size)
assert MPI.COMM_WORLD.Get_size() == 1  # each rank is its own MPI job (or a plain process)
t = ember.tensor([rank + 1.0])
dist.all_reduce(t)
out = ember.zeros(size)
dist.all_gather_into_tensor(out, ember.tensor([float(rank)]))
assert t.item() == size * (size + 1) / 2 and out.tolist() == list(map(float, range(size)))
print("JOINED", rank, flush=True)
dist.destroy_process_group()
'''


def _launch(script, args, mpi, env):
    cmd = ([mpiexec(), "-n", "1"] if mpi else []) + [sys.executable, script, *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)


def _run_separate(tmp_path, source, launched):
    """Start one process per entry of ``launched`` (True: its own ``mpiexec -n 1`` job,
    False: a plain process) with env:// rendezvous; their outputs."""
    script = tmp_path / "join.py"
    script.write_text(source.format(repo=REPO_DIR))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI", "MPI_LOCAL"))}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), OMP_NUM_THREADS="1",
               MPIR_CVAR_CH4_PROGRESS_THROTTLE="1", MPIR_CVAR_POLLS_BEFORE_YIELD="1")
    env.pop("RANK", None), env.pop("WORLD_SIZE", None)
    procs = [_launch(str(script), (str(r), str(len(launched))), mpi, env)
             for r, mpi in enumerate(launched)]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            for q in procs:
                try:
                    os.killpg(q.pid, 9)
                except ProcessLookupError:
                    pass
            raise AssertionError("separate MPI jobs did not finish within 60 s")
        results.append((p.returncode, out, err))
    return results


@pytest.mark.parametrize("launched", [(True, True), (False, True, True)],
                         ids=["two_mpiexec_jobs", "plain_process_and_two_jobs"])
def test_ranks_from_separate_mpi_jobs_join(tmp_path, launched):
    results = _run_separate(tmp_path, _JOIN, launched)
    for rank, (rc, out, err) in enumerate(results):
        assert rc == 0 and f"JOINED {rank}" in out, f"rank {rank}: rc={rc}\n{out}\n{err}"


def test_plain_processes_are_refused_before_mpi(tmp_path):
    results = _run_separate(tmp_path, _JOIN, (False, False))
    for rank, (rc, out, err) in enumerate(results):
        assert rc != 0
        assert "started by an MPI launcher" in err and "mpiexec -n 2" in err, err
        assert "ember.distributed.run" in err


def test_register_backend_routes_tensors_to_it():
    import ember
    import ember.distributed as dist
    from ember.distributed import process_group

    class Doubling(process_group.BackendImpl):
        """A one-rank backend whose all_reduce doubles, to see the front end call it."""
        name = "doubling"
        supported_devices = ("cpu",)

        def allreduce(self, array, op):
            array *= 2
            return process_group.Work.completed([array])

    made = []

    def create(store, rank, size, timeout):
        made.append((rank, size, timeout.total_seconds()))
        return Doubling(rank, size, timeout)

    saved = dict(dist.Backend.default_device_backend_map), list(dist.Backend.backend_list)
    dist.Backend.register_backend("doubling", create, devices=["cpu"])
    try:
        with pytest.raises(ValueError, match="already exist"):
            dist.Backend.register_backend("doubling", create, devices=["cpu"])
        assert dist.Backend("doubling") == "doubling" and dist.Backend.DOUBLING == "doubling"
        dist.init_process_group("doubling", store=dist.HashStore(), rank=0, world_size=1)
        t = ember.ones(3)
        dist.all_reduce(t)
        assert t.tolist() == [2.0, 2.0, 2.0] and made == [(0, 1, 1800.0)]
        assert dist.get_backend() == "doubling"
        with pytest.raises(RuntimeError, match="does not implement broadcast"):
            dist.broadcast(t, 0)
        dist.destroy_process_group()
    finally:
        del dist.Backend.DOUBLING
        dist.Backend.default_device_backend_map.clear()
        dist.Backend.default_device_backend_map.update(saved[0])
        dist.Backend.backend_list[:] = saved[1]
        process_group._BACKEND_IMPLS.pop("doubling", None)
