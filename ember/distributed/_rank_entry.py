"""What runs inside each rank that ``python -m ember.distributed.run`` starts.

The launcher runs this file by its path (not ``-m``), so a rank never pays for importing Ember
before the user's own code does, and a ``--no-python`` command never imports it at all. Two
roles, chosen by the first argument:

``supervise CMD...``
    Under ``mpiexec``: one supervisor per MPI process. It turns MPICH's ``PMI_RANK`` into
    torchrun's environment (``LOCAL_RANK``, ``RANK = GROUP_RANK * LOCAL_WORLD_SIZE +
    LOCAL_RANK``…), runs ``CMD`` as its child, and writes the child's exit status to the run
    folder. The child inherits the PMI socket, so it is the MPI process ``mpiexec`` started and
    ``COMM_WORLD`` works in it; the supervisor never initialises MPI. A supervisor exists
    because ``mpiexec`` reports one exit code for the whole job: only a parent learns that
    rank 3 in particular died of SIGKILL.
``script PATH ARGS...`` / ``module NAME ARGS...``
    Runs the user's program as ``__main__`` (``runpy``, as ``python PATH`` or ``python -m``
    would). An uncaught exception is printed with the rank's number on each line, as torch's
    ``[rank1]: Traceback…``, and written to ``TORCHELASTIC_ERROR_FILE`` in torch's JSON format
    (what ``@record`` writes), so the launcher can show it in its ``ChildFailedError``.

Only the standard library is imported here: ``ember.distributed.elastic.multiprocessing.errors``
imports ``error_file_data`` from this module, so both write the same format.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__" and sys.path and sys.path[0] == _HERE:
    # Run by path, Python put this file's folder (ember/distributed) first on sys.path, where
    # neither the standard modules imported next nor the user's modules may be looked up.
    sys.path[0] = os.getcwd()

import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

#: the file, in the run folder, where a supervisor records its child's exit (``%d`` = local rank)
EXIT_RECORD = "exit-%d.json"
#: the file where a supervisor records its child's pid as soon as it started
PID_RECORD = "pid-%d"
#: the error file of a local rank (``TORCHELASTIC_ERROR_FILE``)
ERROR_FILE = "error-%d.json"


def error_file_data(exc, callstack):
    """The content torch's ``ErrorHandler.record_exception`` writes for ``exc``."""
    return {"message": {"message": f"{type(exc).__name__}: {exc}",
                        "extraInfo": {"py_callstack": callstack,
                                      "timestamp": str(int(time.time()))}}}


def write_json(path, data):
    """Write ``data`` to ``path`` whole or not at all (a reader polling the folder never sees
    half a file)."""
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w") as f:
        json.dump(data, f)
    os.replace(partial, path)


def set_parent_death_signal(signum):
    """Have Linux send this process ``signum`` when its parent dies (elsewhere: nothing), so
    a rank never lives on as an orphan holding the job's output pipes open."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signum))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _flush_and_exit(code):
    # os._exit, not sys.exit: MPI_Finalize (mpi4py runs it at exit) waits for the other
    # ranks, which may be blocked in a collective with this one, so a failing rank would
    # never exit and the launcher would never learn of the failure.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _report(exc):
    """Write ``exc`` to this rank's error file (unless ``@record`` already did), then show it:
    through the process group's ``sys.excepthook`` when one is installed (the MPI backend's
    prints it and aborts the job, so ranks in other MPI jobs stop too), else printed here
    with torch's ``[rankN]:`` prefix on every line."""
    import runpy
    tb = exc.__traceback__
    # The frames of this file and runpy say nothing about the user's error.
    hidden = (__file__, runpy.__file__, "<frozen runpy>")
    while tb is not None and tb.tb_frame.f_code.co_filename in hidden:
        tb = tb.tb_next
    callstack = "".join(traceback.format_exception(type(exc), exc, tb))
    rank = os.environ.get("RANK", "?")
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if path and not os.path.exists(path):
        try:
            write_json(path, error_file_data(exc, callstack))
        except OSError as error:
            sys.stderr.write(f"[rank{rank}]: could not write error file {path}: {error}\n")
    if sys.excepthook is not sys.__excepthook__:
        sys.excepthook(type(exc), exc, tb)
        return
    lines = callstack.rstrip("\n").split("\n")
    sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in lines))


def run_user_code(kind, target, args):
    """Run the script ``target`` (``kind == "script"``) or module ``target`` as ``__main__``
    with ``sys.argv[1:] = args``; exit as Python would, recording a failure first."""
    import runpy
    if kind == "script":
        # As `python PATH`: the script's folder, not this file's, leads sys.path.
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        sys.argv = [target, *args]
    else:
        sys.path[0] = os.getcwd()
        sys.argv = [target, *args]  # runpy sets argv[0] to the module's file
    try:
        if kind == "script":
            runpy.run_path(target, run_name="__main__")
        else:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code
        if code is None or code == 0:
            return
        if not isinstance(code, int):
            sys.stderr.write(f"{code}\n")
            code = 1
        _flush_and_exit(code)
    except KeyboardInterrupt as exc:
        _report(exc)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        # End as an interrupted Python does: killed by SIGINT, which the launcher reports.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        _flush_and_exit(130)
    except BaseException as exc:
        _report(exc)
        _flush_and_exit(1)


def supervise(command):
    """Run ``command`` as this MPI process's rank (see the module docstring); return the
    exit code to end with."""
    run_dir = os.environ["EMBER_RUN_DIR"]
    local_rank = int(os.environ["PMI_RANK"])
    local_world_size = int(os.environ["LOCAL_WORLD_SIZE"])
    if int(os.environ.get("PMI_SIZE", local_world_size)) != local_world_size:
        sys.stderr.write(f"ember.distributed.run: mpiexec started {os.environ['PMI_SIZE']} "
                         f"processes, the launcher asked for {local_world_size}\n")
        return 1
    rank = int(os.environ["GROUP_RANK"]) * local_world_size + local_rank
    env = dict(os.environ, LOCAL_RANK=str(local_rank), RANK=str(rank), ROLE_RANK=str(rank),
               TORCHELASTIC_ERROR_FILE=os.path.join(run_dir, ERROR_FILE % local_rank))
    command = [a.replace("${local_rank}", str(local_rank)) for a in command]
    # The PMI connection is how the child's MPI_Init finds mpiexec; it must survive exec.
    pass_fds = tuple(int(env[name]) for name in ("PMI_FD",) if name in env)
    # SIGKILL: when mpiexec kills the supervisor, nothing is left to report to.
    child = subprocess.Popen(command, env=env, pass_fds=pass_fds,
                             preexec_fn=lambda: set_parent_death_signal(signal.SIGKILL))

    def forward(signum, frame):
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    with open(os.path.join(run_dir, PID_RECORD % local_rank), "w") as f:
        f.write(str(child.pid))
    exitcode = child.wait()
    write_json(os.path.join(run_dir, EXIT_RECORD % local_rank),
               {"local_rank": local_rank, "rank": rank, "pid": child.pid, "exitcode": exitcode,
                "timestamp": time.time()})
    return exitcode if exitcode >= 0 else 128 - exitcode


def main(argv):
    if len(argv) < 2 or argv[0] not in ("supervise", "script", "module"):
        sys.stderr.write("usage: _rank_entry.py supervise CMD... | script PATH ARGS... | "
                         "module NAME ARGS...\n")
        return 2
    if argv[0] == "supervise":
        return supervise(argv[1:])
    run_user_code(argv[0], argv[1], argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
