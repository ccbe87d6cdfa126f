"""``python -m ember.distributed.run`` end to end (real launcher processes, real ranks), the
error report types, and ``ember.multiprocessing.spawn`` with a process-group rendezvous."""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from ranks import REPO_DIR, _RANK_ENV

from ember.distributed.elastic.multiprocessing.errors import (ChildFailedError, ProcessFailure,
                                                               record)
from ember.distributed.run import config_from_args, parse_args

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the launcher's tests use Linux process groups")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script(tmp_path, body, name="train.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def _launcher(args, tmp_path, unset=()):
    """Start the launcher (not waiting); its own session, so a hung test can kill it all."""
    full_env = dict(os.environ, **_RANK_ENV)
    full_env["PYTHONPATH"] = REPO_DIR + os.pathsep + full_env.get("PYTHONPATH", "")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", *unset):
        full_env.pop(name, None)
    return subprocess.Popen([sys.executable, "-m", "ember.distributed.run", *args],
                            cwd=str(tmp_path), env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _finish(proc, timeout=120):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"launcher still running after {timeout}s\n{out}\n{err}")
    return proc.returncode, out, err


def _launch(args, tmp_path, unset=(), timeout=120):
    return _finish(_launcher(args, tmp_path, unset), timeout)


# Each rank checks torchrun's environment, then all-reduces over the MPI backend.
_ENV_AND_ALL_REDUCE = """
import os, sys
import ember
import ember.distributed as dist
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
assert os.environ["WORLD_SIZE"] == "2" and os.environ["LOCAL_WORLD_SIZE"] == "2"
assert local == rank and os.environ["GROUP_RANK"] == "0"
assert os.environ["MASTER_ADDR"] == "127.0.0.1" and int(os.environ["MASTER_PORT"]) > 0
assert os.environ["OMP_NUM_THREADS"] == "1"
assert os.path.basename(os.environ["TORCHELASTIC_ERROR_FILE"]) == f"error-{local}.json"
assert dist.is_torchelastic_launched()
assert sys.argv[1:] == ["--lr", "0.5"], sys.argv
assert __name__ == "__main__"
dist.init_process_group("mpi")
assert dist.get_rank() == rank and dist.get_world_size() == 2
t = ember.tensor([float(rank + 1), 10.0])
dist.all_reduce(t)
assert t.tolist() == [3.0, 20.0], t
dist.barrier()
dist.destroy_process_group()
open(f"ok-{rank}", "w").close()
"""


def test_mpiexec_ranks_get_torchrun_env_and_all_reduce(tmp_path):
    script = _script(tmp_path, _ENV_AND_ALL_REDUCE)
    code, out, err = _launch(["--nproc-per-node", "2", script, "--lr", "0.5"], tmp_path,
                             unset=("OMP_NUM_THREADS",))
    assert code == 0, out + err
    assert (tmp_path / "ok-0").exists() and (tmp_path / "ok-1").exists()
    assert "Setting OMP_NUM_THREADS environment variable for each process to be 1" in err


def test_local_launcher_module_and_no_python(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "job.py").write_text(textwrap.dedent("""
        import os, sys
        assert __name__ == "__main__"
        print(f"module rank {os.environ['RANK']} {os.environ['LOCAL_RANK']} "
              f"{os.environ['WORLD_SIZE']} {sys.argv[1:]}", flush=True)
        """))
    code, out, err = _launch(["--launcher", "local", "--nproc-per-node", "2", "-m", "pkg.job",
                              "a"], tmp_path)
    assert code == 0, out + err
    assert "module rank 0 0 2 ['a']" in out and "module rank 1 1 2 ['a']" in out
    # --no-python runs a command; rank 1's non-zero exit is reported as rank 1's failure.
    code, out, err = _launch(["--launcher", "local", "--nproc-per-node", "2", "--no-python",
                              "sh", "-c", 'echo "sh rank $RANK"; exit $((RANK * 7))'],
                             tmp_path)
    assert code == 1, out + err
    assert "sh rank 0" in out and "sh rank 1" in out
    assert "sh FAILED" in err and "rank      : 1 (local_rank: 1)" in err
    assert "exitcode  : 7" in err


def test_deprecated_launch_passes_local_rank(tmp_path):
    script = _script(tmp_path, """
        import os, sys
        print(f"launch rank {os.environ['LOCAL_RANK']} {sys.argv[1:]}", flush=True)
        """)
    full_env = dict(os.environ, **_RANK_ENV, PYTHONPATH=REPO_DIR)
    result = subprocess.run([sys.executable, "-m", "ember.distributed.launch", "--standalone",
                             "--launcher", "local", "--nproc-per-node", "2", script, "x"],
                            cwd=str(tmp_path), env=full_env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "launch rank 0 ['--local-rank=0', 'x']" in result.stdout
    assert "launch rank 1 ['--local-rank=1', 'x']" in result.stdout
    assert "torch.distributed.launch is deprecated" in result.stderr


_FAILING = """
import os, signal, sys, time
import ember.distributed as dist
dist.init_process_group("mpi")
with open(os.path.join(sys.argv[1], f"pid-{dist.get_rank()}"), "w") as f:
    f.write(str(os.getpid()))
dist.barrier()
if dist.get_rank() == 1:
    if sys.argv[2] == "raise":
        raise ValueError("rank one fails on purpose")
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
dist.barrier()  # rank 0 waits here for a rank that is gone
time.sleep(120)
"""


def _assert_gone(pids, within=10.0):
    deadline = time.monotonic() + within
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if os.path.exists(f"/proc/{p}")
                 and open(f"/proc/{p}/stat").read().split()[2] != "Z"]
        time.sleep(0.1)
    assert not alive, f"ranks {alive} outlived the launcher"


def _pids(folder):
    return [int((folder / f"pid-{r}").read_text()) for r in range(2)
            if (folder / f"pid-{r}").exists()]


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_failing_rank_ends_the_job_naming_the_rank(tmp_path, how):
    script = _script(tmp_path, _FAILING)
    start = time.monotonic()
    code, out, err = _launch(["--nproc-per-node", "2", "--shutdown-timeout", "5", script,
                              str(tmp_path), how], tmp_path)
    assert time.monotonic() - start < 60
    assert code == 1, out + err
    assert "ChildFailedError" in err and "train.py FAILED" in err
    root = err[err.index("Root Cause"):]
    assert "rank      : 1 (local_rank: 1)" in root, err
    if how == "raise":
        assert "[rank1]: ValueError: rank one fails on purpose" in err
        assert "exitcode  : 1" in root and 'raise ValueError("rank one fails' in root
        assert "error-1.json" in root
    else:
        assert "exitcode  : -9" in root and "(SIGKILL)" in root
        assert "Signal 9 (SIGKILL) received by PID" in root
    _assert_gone(_pids(tmp_path))


def test_rank_that_reported_an_error_but_hangs_is_stopped(tmp_path):
    # As a rank stuck in MPI_Abort: its error file is written (here by @record) but it never
    # exits. The launcher stops it and reports it with its traceback; rank 0, which the
    # launcher stopped, is not a failure.
    script = _script(tmp_path, """
        import os, time
        from ember.distributed.elastic.multiprocessing.errors import record

        @record
        def main():
            if os.environ["RANK"] == "1":
                raise RuntimeError("reported, then stuck")

        try:
            main()
        finally:
            time.sleep(120)
        """)
    start = time.monotonic()
    code, out, err = _launch(["--launcher", "local", "--nproc-per-node", "2",
                              "--shutdown-timeout", "5", script], tmp_path)
    assert time.monotonic() - start < 30
    assert code == 1, out + err
    assert "<NO_OTHER_FAILURES>" in err
    root = err[err.index("Root Cause"):]
    assert "rank      : 1 (local_rank: 1)" in root and "(SIGTERM)" in root
    assert "RuntimeError: reported, then stuck" in root


def test_sigterm_to_the_launcher_stops_the_ranks(tmp_path):
    script = _script(tmp_path, """
        import os, sys, time
        with open(os.path.join(sys.argv[1], "pid-" + os.environ["LOCAL_RANK"]), "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
        """)
    proc = _launcher(["--nproc-per-node", "2", "--shutdown-timeout", "5", script,
                      str(tmp_path)], tmp_path)
    deadline = time.monotonic() + 60
    while len(_pids(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = _pids(tmp_path)
    assert len(pids) == 2, "ranks did not start"
    proc.send_signal(signal.SIGTERM)
    code, out, err = _finish(proc, timeout=30)
    assert code == 1, out + err
    assert "SignalException: Process" in err and "got signal: 15" in err
    _assert_gone(pids)


_TWO_NODES = """
import os, sys
from datetime import timedelta
import ember
import ember.distributed as dist
dist.init_process_group("mpi", timeout=timedelta(seconds=20))
rank = dist.get_rank()
assert rank == int(os.environ["RANK"]) and dist.get_world_size() == 4
assert int(os.environ["GROUP_RANK"]) == rank // 2
t = ember.tensor([float(rank)])
dist.all_reduce(t)
assert t.item() == 6.0, t
if sys.argv[1:] == ["fail"] and rank == 3:
    raise ValueError("rank three fails on purpose")
dist.barrier()
dist.destroy_process_group()
open(f"ok-{rank}", "w").close()
"""


def _two_nodes(tmp_path, *script_args):
    script = _script(tmp_path, _TWO_NODES)
    port = str(_free_port())
    nodes = [_launcher(["--nnodes", "2", "--node-rank", str(n), "--master-addr", "127.0.0.1",
                        "--master-port", port, "--nproc-per-node", "2",
                        "--shutdown-timeout", "5", script, *script_args], tmp_path)
             for n in range(2)]
    try:
        return [_finish(node, timeout=90) for node in nodes]
    finally:
        for node in nodes:  # a node left running when the other one failed the test
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGKILL)
                node.communicate()


def test_two_launchers_as_two_nodes(tmp_path):
    results = _two_nodes(tmp_path)
    for code, out, err in results:
        assert code == 0, out + err
    assert all((tmp_path / f"ok-{rank}").exists() for rank in range(4))


def test_a_failure_on_one_node_ends_both(tmp_path):
    start = time.monotonic()
    (code0, out0, err0), (code1, out1, err1) = _two_nodes(tmp_path, "fail")
    assert time.monotonic() - start < 80
    assert code1 == 1, out1 + err1
    root = err1[err1.index("Root Cause"):]
    assert "rank      : 3 (local_rank: 1)" in root and "rank three fails" in root
    # Node 0's ranks end too (the MPI job is aborted, or their collective times out).
    assert code0 != 0, out0 + err0


def test_config_refuses_what_the_launcher_cannot_do():
    def config(*args):
        return config_from_args(parse_args([*args, "train.py"]))

    with pytest.raises(ValueError, match="restarting failed ranks is not implemented"):
        config("--max-restarts", "2")
    with pytest.raises(ValueError, match="elastic node counts are not implemented"):
        config("--nnodes", "1:2")
    with pytest.raises(ValueError, match="Don't use both the '--no-python' flag"):
        config("--no-python", "-m")
    with pytest.raises(ValueError, match="node ranks are not assigned dynamically"):
        config("--nnodes", "2", "--rdzv-backend", "c10d")
    with pytest.raises(ValueError, match="Unsupported nproc_per_node value: many"):
        config("--nproc-per-node", "many")
    with pytest.raises(ValueError, match=r"--node-rank=2 is not in 0..1"):
        config("--nnodes", "2", "--node-rank", "2")
    one_node = config("--nproc-per-node", "3")
    assert one_node.nproc == 3 and one_node.master_port > 0  # a free port on one node
    assert config("--nnodes", "2").master_port == 29500
    endpoint = config("--rdzv-endpoint", "10.0.0.7:1234")
    assert (endpoint.master_addr, endpoint.master_port) == ("10.0.0.7", 1234)
    assert config("--nproc-per-node", "cpu").nproc == len(os.sched_getaffinity(0))


def test_child_failed_error_formats_as_torch(tmp_path):
    error_file = tmp_path / "error.json"
    error_file.write_text(json.dumps({"message": {
        "message": "ValueError: bad", "extraInfo": {
            "py_callstack": "Traceback (most recent call last):\nValueError: bad\n",
            "timestamp": "1000"}}}))
    raised = ProcessFailure(local_rank=0, pid=11, exitcode=1, error_file=str(error_file))
    killed = ProcessFailure(local_rank=1, pid=12, exitcode=-9, error_file="/nonexistent")
    killed.timestamp = 2000
    error = ChildFailedError("train.py", {2: raised, 3: killed})
    assert error.get_first_failure() == (2, raised)
    text = str(error)
    assert text.startswith("\n" + "=" * 60 + "\ntrain.py FAILED\n")
    assert "  rank      : 3 (local_rank: 1)\n  exitcode  : -9 (pid: 12) (SIGKILL)\n" in text
    assert "  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 12" in text
    root = text[text.index("Root Cause"):]
    assert "rank      : 2 (local_rank: 0)" in root and "\n  ValueError: bad" in root
    with pytest.raises(AssertionError):
        ChildFailedError("train.py", {})


def test_record_writes_the_error_file(tmp_path, monkeypatch):
    path = tmp_path / "error.json"
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))

    @record
    def main():
        raise KeyError("missing")

    with pytest.raises(KeyError):
        main()
    message = json.loads(path.read_text())["message"]
    assert message["message"] == "KeyError: 'missing'"
    assert "raise KeyError" in message["extraInfo"]["py_callstack"]
    assert record(lambda: sys.exit(0))() is None


_SPAWN = """
import socket, sys
import ember.distributed as dist
import ember.multiprocessing as mp


def init_over_tcp(index, port):
    dist.init_process_group("mpi", init_method=f"tcp://127.0.0.1:{port}", rank=index,
                            world_size=2)


if __name__ == "__main__":
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        mp.spawn(init_over_tcp, args=(port,), nprocs=2)
    except mp.ProcessRaisedException as e:
        print("ProcessRaisedException from process", e.error_index, e)
        sys.exit(3)
"""


def test_spawn_reports_that_mpi_needs_a_launcher(tmp_path):
    # Plain processes can't form an MPI world (MPICH singletons do not connect): the MPI
    # backend says so on every rank, and spawn re-raises the first rank's error. (In a child
    # interpreter, so that a hang fails the test instead of stopping the suite.)
    script = _script(tmp_path, _SPAWN)
    env = dict(os.environ, **_RANK_ENV, PYTHONPATH=REPO_DIR)
    result = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                            timeout=90, cwd=str(tmp_path))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "ProcessRaisedException from process" in result.stdout
    assert "needs its 2 ranks started by an MPI launcher" in result.stdout
    assert "python -m ember.distributed.run --nproc-per-node 2" in result.stdout
