"""``python -m ember.distributed.run``: torchrun's command line, starting one node's ranks.

::

    python -m ember.distributed.run --nproc-per-node 4 train.py --lr 0.1
    python -m ember.distributed.run --nnodes 2 --node-rank 0 --master-addr node0 \\
        --master-port 29500 --nproc-per-node 4 train.py          # and --node-rank 1 on node1

Each rank gets torchrun's environment: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK`` (the node's rank), ``MASTER_ADDR``, ``MASTER_PORT``,
``TORCHELASTIC_RUN_ID`` (so ``is_torchelastic_launched()`` is True), ``TORCHELASTIC_ERROR_FILE``,
and ``OMP_NUM_THREADS=1`` unless it is set.

How ranks start (``--launcher``). ``mpiexec`` (the default where one is found beside Python or
on PATH): the node's ranks are one ``mpiexec -n N`` job, so the MPI backend uses its
COMM_WORLD; each MPI process is a small supervisor (``_rank_entry.py``) whose child runs the
script and inherits the MPI connection. With several nodes, each node's launcher runs its own
job and ``init_process_group`` joins the jobs through the TCP store at MASTER_ADDR:MASTER_PORT.
``local``: plain processes with env:// rendezvous, for NCCL or code that does not use MPI (the
MPI backend refuses two or more plain processes, which MPICH cannot connect).

Failure. The launcher polls its ranks every ``--monitor-interval`` seconds. When one exits
non-zero or is killed by a signal, it sends SIGTERM to the others, SIGKILL after
``--shutdown-timeout`` seconds, and raises ``ChildFailedError`` naming each failed rank with
its exit code or signal and traceback (exit status 1, as torchrun). SIGTERM, SIGINT, SIGHUP and
SIGQUIT sent to the launcher are passed to the ranks, which are then stopped the same way, and
``SignalException`` is raised. Restarts (``--max-restarts`` > 0) and elastic node counts
(``--nnodes MIN:MAX``) are not implemented and refused.
"""
import argparse
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from ._rank_entry import ERROR_FILE, EXIT_RECORD, PID_RECORD, set_parent_death_signal
from .elastic.multiprocessing.api import SignalException
from .elastic.multiprocessing.errors import ChildFailedError, ProcessFailure, record

__all__ = ["get_args_parser", "parse_args", "config_from_args", "determine_local_world_size",
           "run", "main"]

_ENTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_rank_entry.py")
_HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
#: seconds the ranks get to exit after SIGTERM before SIGKILL, as torchrun's default
_DEFAULT_SHUTDOWN_TIMEOUT = 30
#: seconds a rank may take from writing its error file to exiting before it counts as failed
_REPORT_TO_EXIT = 1.0


class _EnvDefault(argparse.Action):
    """An option whose default may come from ``PET_<NAME>`` (torchrun's convention)."""

    def __init__(self, dest, default=None, required=False, **kwargs):
        default = os.environ.get(f"PET_{dest.upper()}", default)
        super().__init__(dest=dest, default=default, required=required and default is None,
                         **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)


def get_args_parser():
    """The argument parser: torchrun's options that a static, non-elastic launch uses, plus
    ``--launcher``."""
    parser = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Ember's distributed launcher (torchrun's interface)")
    env = _EnvDefault
    parser.add_argument("--nnodes", action=env, type=str, default="1",
                        help="Number of nodes (a fixed number; MIN:MAX needs MIN == MAX).")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", action=env, type=str,
                        default="1", help="Ranks on this node: an int, or auto, cpu, gpu.")
    parser.add_argument("--rdzv-backend", "--rdzv_backend", action=env, type=str,
                        default="static",
                        help="static (nodes given by --node-rank) or c10d (one node only).")
    parser.add_argument("--rdzv-endpoint", "--rdzv_endpoint", action=env, type=str,
                        default="", help="HOST:PORT of the store; overrides --master-addr/port.")
    parser.add_argument("--rdzv-id", "--rdzv_id", action=env, type=str, default="none",
                        help="The job's id, given to the ranks as TORCHELASTIC_RUN_ID.")
    parser.add_argument("--standalone", action="store_true",
                        help="One node, with the store on a free port of localhost.")
    parser.add_argument("--max-restarts", "--max_restarts", action=env, type=int, default=0,
                        help="Must be 0: restarting failed ranks is not implemented.")
    parser.add_argument("--monitor-interval", "--monitor_interval", action=env, type=float,
                        default=0.1, help="Seconds between checks of the ranks' state.")
    parser.add_argument("--shutdown-timeout", "--shutdown_timeout", action=env, type=float,
                        default=None,
                        help="Seconds between SIGTERM and SIGKILL when stopping ranks "
                        "(default: TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30).")
    parser.add_argument("-m", "--module", action="store_true",
                        help="Run the training script as a module, as python -m.")
    parser.add_argument("--no-python", "--no_python", action="store_true",
                        help="Run the training script as a command, not with python.")
    parser.add_argument("--run-path", "--run_path", action="store_true",
                        help="Run the script with runpy.run_path (Ember always runs scripts "
                        "this way, in a fresh interpreter per rank).")
    parser.add_argument("--node-rank", "--node_rank", action=env, type=int, default=0,
                        help="This node's rank, 0..nnodes-1.")
    parser.add_argument("--master-addr", "--master_addr", action=env, type=str,
                        default="127.0.0.1", help="Address of the node of rank 0.")
    parser.add_argument("--master-port", "--master_port", action=env, type=int, default=None,
                        help="Port of the store on the master node (default 29500; a free "
                        "port when there is one node).")
    parser.add_argument("--launcher", action=env, choices=("auto", "mpiexec", "local"),
                        default="auto",
                        help="How this node's ranks start: one mpiexec job (the MPI backend "
                        "uses it), or local plain processes; auto: mpiexec when found.")
    parser.add_argument("training_script", type=str,
                        help="The training script (or module with -m, command with "
                        "--no-python), followed by its arguments.")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def parse_args(args):
    return get_args_parser().parse_args(args)


def determine_local_world_size(nproc_per_node):
    """The number of ranks ``--nproc-per-node`` asks for: an int, ``cpu`` (usable cores),
    ``gpu`` (CUDA devices) or ``auto`` (CUDA devices if any, else cores)."""
    try:
        count = int(nproc_per_node)
    except ValueError:
        if nproc_per_node not in ("auto", "cpu", "gpu"):
            raise ValueError(f"Unsupported nproc_per_node value: {nproc_per_node}") from None
        count = None
    if count is not None:
        if count < 1:
            raise ValueError(f"nproc_per_node must be at least 1, got {count}")
        return count
    if nproc_per_node in ("auto", "gpu"):
        from .. import cuda
        if cuda.is_available():
            return cuda.device_count()
        if nproc_per_node == "gpu":
            raise ValueError("Cuda is not available.")
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _free_port(host):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("localhost",) else "127.0.0.1", 0))
        return s.getsockname()[1]


def _find_mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.access(beside, os.X_OK) else shutil.which("mpiexec")


class _Config:
    """What ``config_from_args`` derives from the command line."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def config_from_args(args):
    """Check ``args`` and derive the launch: sizes, the store's address, the rank command.
    Raises ValueError for what Ember's launcher cannot do."""
    nodes = args.nnodes.split(":")
    try:
        min_nodes, max_nodes = int(nodes[0]), int(nodes[-1])
    except ValueError:
        raise ValueError(f'nnodes={args.nnodes} is not an int or in "MIN:MAX" format') from None
    if len(nodes) > 2 or not 0 < min_nodes <= max_nodes:
        raise ValueError(f"nnodes={args.nnodes}: need 0 < MIN <= MAX")
    if min_nodes != max_nodes:
        raise ValueError(f"nnodes={args.nnodes}: elastic node counts are not implemented in "
                         "Ember's launcher; give a fixed number of nodes")
    nnodes = max_nodes
    if args.max_restarts < 0:
        raise ValueError("max_restarts must be >= 0")
    if args.max_restarts > 0:
        raise ValueError(f"--max-restarts={args.max_restarts}: restarting failed ranks is not "
                         "implemented in Ember's launcher; a failure ends the job (use 0)")
    if args.rdzv_backend not in ("static", "c10d"):
        raise ValueError(f"--rdzv-backend={args.rdzv_backend}: Ember's launcher has the static "
                         "rendezvous (and c10d on one node)")
    if not 0 <= args.node_rank < nnodes:
        raise ValueError(f"--node-rank={args.node_rank} is not in 0..{nnodes - 1}")
    if nnodes > 1 and args.rdzv_backend != "static":
        raise ValueError(f"--rdzv-backend={args.rdzv_backend} with {nnodes} nodes: node ranks "
                         "are not assigned dynamically by Ember's launcher; use the static "
                         "rendezvous and give each node its --node-rank")
    if args.standalone and nnodes > 1:
        raise ValueError("--standalone is a single-node launch; --nnodes must be 1")
    if args.module and args.no_python:
        raise ValueError("Don't use both the '--no-python' flag and the '--module' flag at the "
                         "same time.")
    nproc = determine_local_world_size(args.nproc_per_node)

    master_addr, master_port = args.master_addr, args.master_port
    if args.standalone:
        master_addr, master_port = "127.0.0.1", None
    elif args.rdzv_endpoint:
        host, _, port = args.rdzv_endpoint.rpartition(":")
        if not host:
            host, port = port, ""
        master_addr = host.strip("[]")
        master_port = int(port) if port else 29400
    if master_port is None:
        # As torchrun: one node needs no agreed port, so a free one avoids clashing jobs.
        master_port = _free_port(master_addr) if nnodes == 1 else 29500

    if args.no_python:
        command = [args.training_script]
    else:
        kind = "module" if args.module else "script"
        target = args.training_script if args.module else os.path.abspath(args.training_script)
        command = [os.getenv("PYTHON_EXEC", sys.executable), "-u", _ENTRY, kind, target]
    command += args.training_script_args

    launcher = args.launcher
    mpiexec = _find_mpiexec()
    if launcher == "auto":
        launcher = "mpiexec" if mpiexec else "local"
    elif launcher == "mpiexec" and mpiexec is None:
        raise ValueError("--launcher mpiexec: no mpiexec beside Python or on PATH (pip install "
                         "mpich, or use --launcher local)")
    shutdown_timeout = args.shutdown_timeout
    if shutdown_timeout is None:
        shutdown_timeout = float(os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT",
                                                _DEFAULT_SHUTDOWN_TIMEOUT))
    return _Config(nnodes=nnodes, nproc=nproc, node_rank=args.node_rank,
                   master_addr=master_addr, master_port=master_port, run_id=args.rdzv_id,
                   command=command, launcher=launcher, mpiexec=mpiexec,
                   name=args.training_script, monitor_interval=args.monitor_interval,
                   shutdown_timeout=shutdown_timeout)


def _rank_environment(config, run_dir):
    """The environment every rank of this node shares (the per-rank names are added by the
    supervisor under mpiexec, or by ``_LocalRanks``)."""
    env = dict(os.environ)
    if "OMP_NUM_THREADS" not in env and config.nproc > 1:
        sys.stderr.write("*****************************************\n"
                         "Setting OMP_NUM_THREADS environment variable for each process to be "
                         "1 in default, to avoid your system being overloaded, please further "
                         "tune the variable for optimal performance in your application as "
                         "needed. \n*****************************************\n")
        env["OMP_NUM_THREADS"] = "1"
    world_size = config.nnodes * config.nproc
    env.update(WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(config.nproc),
               GROUP_RANK=str(config.node_rank), GROUP_WORLD_SIZE=str(config.nnodes),
               ROLE_NAME="default", ROLE_WORLD_SIZE=str(world_size),
               MASTER_ADDR=config.master_addr, MASTER_PORT=str(config.master_port),
               TORCHELASTIC_RUN_ID=config.run_id, TORCHELASTIC_RESTART_COUNT="0",
               TORCHELASTIC_MAX_RESTARTS="0", TORCHELASTIC_USE_AGENT_STORE="False",
               EMBER_RUN_DIR=run_dir)
    return env


def _signal_group(pgid, signum):
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


class _LocalRanks:
    """The node's ranks as plain child processes, each leading its own process group."""

    def __init__(self, config, env, run_dir):
        self.processes, self.exit_times = [], {}
        for local_rank in range(config.nproc):
            rank = config.node_rank * config.nproc + local_rank
            rank_env = dict(env, LOCAL_RANK=str(local_rank), RANK=str(rank),
                            ROLE_RANK=str(rank),
                            TORCHELASTIC_ERROR_FILE=os.path.join(run_dir,
                                                                 ERROR_FILE % local_rank))
            command = [a.replace("${local_rank}", str(local_rank)) for a in config.command]
            self.processes.append(subprocess.Popen(
                command, env=rank_env, start_new_session=True,
                preexec_fn=functools.partial(set_parent_death_signal, signal.SIGKILL)))

    def exited(self):
        """``{local_rank: (pid, exitcode, time)}`` of the ranks that have exited."""
        now = time.time()
        for i, p in enumerate(self.processes):
            if i not in self.exit_times and p.poll() is not None:
                self.exit_times[i] = now
        return {i: (self.processes[i].pid, self.processes[i].returncode, t)
                for i, t in self.exit_times.items()}

    def finished(self):
        return all(p.poll() is not None for p in self.processes)

    def signal(self, signum):
        for p in self.processes:
            if p.poll() is None:
                _signal_group(p.pid, signum)


class _MpiexecRanks:
    """The node's ranks as one ``mpiexec -n N`` job of supervisors. MPICH's mpiexec gives
    every rank its own session and one exit code for all, so each supervisor records its
    rank's pid and exit status in the run folder."""

    def __init__(self, config, env, run_dir):
        self.run_dir, self.nproc, self.lost_times = run_dir, config.nproc, {}
        command = [config.mpiexec, "-n", str(config.nproc), sys.executable, _ENTRY,
                   "supervise", *config.command]
        # SIGTERM: mpiexec then stops its processes itself.
        self.mpiexec = subprocess.Popen(
            command, env=env, start_new_session=True,
            preexec_fn=functools.partial(set_parent_death_signal, signal.SIGTERM))

    def _record(self, local_rank):
        try:
            with open(os.path.join(self.run_dir, EXIT_RECORD % local_rank)) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _pid(self, local_rank):
        try:
            with open(os.path.join(self.run_dir, PID_RECORD % local_rank)) as f:
                return int(f.read())
        except (FileNotFoundError, ValueError):
            return -1

    def exited(self):
        done = {}
        for i in range(self.nproc):
            record_ = self._record(i)
            if record_ is not None:
                done[i] = (record_["pid"], record_["exitcode"], record_["timestamp"])
        if self.mpiexec.poll() is not None:
            # mpiexec is gone: a rank without a record lost its supervisor too (killed by
            # mpiexec, or from outside); mpiexec's code is all that is known of it.
            code = self.mpiexec.returncode
            lost = -(code - 128) if code > 128 else (code or -signal.SIGKILL)
            for i in range(self.nproc):
                if i not in done:
                    when = self.lost_times.setdefault(i, time.time())
                    done[i] = (self._pid(i), lost, when)
        return done

    def finished(self):
        return self.mpiexec.poll() is not None

    def signal(self, signum):
        for i in range(self.nproc):
            pid = self._pid(i)
            if pid > 0 and self._record(i) is None:
                # The rank's supervisor leads the rank's session (mpiexec made it).
                try:
                    _signal_group(os.getpgid(pid), signum)
                except ProcessLookupError:
                    pass
        if self.mpiexec.poll() is None:
            self.mpiexec.send_signal(signum)


def _failures(config, run_dir, exited, began):
    """The failed ranks among ``exited``, as ``{rank: ProcessFailure}``, once the launcher
    began stopping the job at ``began``. Left out, as ended by another rank's failure rather
    than failed: ranks that ended after ``began`` without writing an error file (stopped by
    the launcher), and ranks that ended without one after another rank's error file was
    written (the MPI backend aborts the job on an uncaught exception)."""
    failures, first_report = {}, began
    for local_rank, (pid, exitcode, exit_time) in sorted(exited.items()):
        if exitcode == 0:
            continue
        failure = ProcessFailure(local_rank, pid, exitcode,
                                 os.path.join(run_dir, ERROR_FILE % local_rank))
        if failure.error_file == "<N/A>":
            failure.timestamp = int(exit_time)  # when it ended, not when the launcher looked
            failure._when = exit_time
        else:
            failure._when = os.stat(failure.error_file).st_mtime
            first_report = min(first_report, failure._when)
        failures[config.node_rank * config.nproc + local_rank] = failure
    return {rank: f for rank, f in failures.items()
            if f.error_file != "<N/A>" or f._when <= first_report}


def _failure_seen(config, run_dir, exited):
    """Whether a rank failed: it exited non-zero, or wrote its error file (it is about to
    exit) over a second ago without exiting (it may hang in MPI_Abort)."""
    if any(exitcode != 0 for _, exitcode, _ in exited.values()):
        return True
    for local_rank in range(config.nproc):
        try:
            written = os.stat(os.path.join(run_dir, ERROR_FILE % local_rank)).st_mtime
        except FileNotFoundError:
            continue
        if time.time() - written > _REPORT_TO_EXIT:
            return True
    return False


def _stop(ranks, signum, timeout):
    """Send ``signum`` to the ranks still running, then SIGKILL what is left after
    ``timeout`` seconds; return once all are gone (bounded: SIGKILL cannot be ignored)."""
    ranks.signal(signum)
    deadline = time.monotonic() + timeout
    while not ranks.finished() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not ranks.finished():
        ranks.signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not ranks.finished() and time.monotonic() < deadline:
            time.sleep(0.05)


def _stop_after(ranks, timeout):
    """Wait up to ``timeout`` seconds for the ranks' launcher to end by itself, then stop it."""
    deadline = time.monotonic() + timeout
    while not ranks.finished() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not ranks.finished():
        _stop(ranks, signal.SIGTERM, timeout)


def run(args):
    """Launch this node's ranks as ``args`` say and wait for them; raise ChildFailedError when
    a rank fails, SignalException when the launcher is told to stop."""
    config = config_from_args(args)
    run_dir = tempfile.mkdtemp(prefix=f"ember-run-{uuid.uuid4().hex[:8]}-")
    env = _rank_environment(config, run_dir)
    received = []

    def on_signal(signum, frame):
        received.append(signum)
        raise SignalException(f"Process {os.getpid()} got signal: {signum}",
                              sigval=signal.Signals(signum))

    previous = {s: signal.signal(s, on_signal) for s in _HANDLED_SIGNALS}
    ranks, keep_run_dir = None, False
    try:
        ranks = (_MpiexecRanks if config.launcher == "mpiexec" else _LocalRanks)(
            config, env, run_dir)
        while True:
            exited = ranks.exited()
            if _failure_seen(config, run_dir, exited):
                began = time.time()
                _stop(ranks, signal.SIGTERM, config.shutdown_timeout)
                exited = ranks.exited()
                failures = (_failures(config, run_dir, exited, began)
                            or _failures(config, run_dir, exited, float("inf")))
                keep_run_dir = True  # the report names the ranks' error files in it
                raise ChildFailedError(name=config.name, failures=failures)
            if len(exited) == config.nproc:
                # Every rank succeeded; mpiexec itself ends right after.
                _stop_after(ranks, config.shutdown_timeout)
                return
            time.sleep(config.monitor_interval)
    except SignalException:
        if ranks is not None:
            _stop(ranks, received[0], config.shutdown_timeout)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if ranks is not None and not ranks.finished():
            _stop(ranks, signal.SIGTERM, config.shutdown_timeout)
        if not keep_run_dir:
            shutil.rmtree(run_dir, ignore_errors=True)


@record
def main(args=None):
    run(parse_args(args))


if __name__ == "__main__":
    main()
