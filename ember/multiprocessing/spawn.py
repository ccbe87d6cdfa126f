"""``spawn`` and ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and wait for
them, as ``torch.multiprocessing.spawn``.

A child that raises writes its formatted traceback to its own error file and exits with code 1;
the parent waits on all the children's sentinels at once, and as soon as one fails it
terminates the others (SIGTERM, then SIGKILL after a grace period) and raises
``ProcessRaisedException`` with the child's traceback, or ``ProcessExitedException`` when the
child died by a signal or exited with a non-zero code without raising.
"""
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import warnings

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "SpawnContext", "start_processes"]

log = logging.getLogger(__name__)

#: how long ``join`` waits for the other children to exit after SIGTERM before SIGKILL (seconds)
_TERMINATE_GRACE = 30.0


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A child process was killed by a signal or exited with a non-zero code."""
    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                             self.signal_name))


def _die_with_parent():
    """Ask Linux to send this process SIGINT when its parent dies, so no child outlives a
    killed parent."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGINT))
    except (OSError, AttributeError):
        pass


def _wrap(fn, i, args, error_file):
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted us while stopping the others
    except Exception:
        import traceback
        with open(error_file, "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started; ``join`` waits for them."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self):
        return [int(process.pid) for process in self.processes]

    def _join_all(self, timeout):
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))

    def join(self, timeout=None, grace_period=None):
        """Wait up to ``timeout`` seconds for the processes. Returns ``True`` once all exited
        cleanly, ``False`` if some still run; if one failed, stops the others (waiting
        ``grace_period`` seconds first, when given) and raises the reason."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels

        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", process.pid)
                process.terminate()
        self._join_all(_TERMINATE_GRACE if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting via "
                            "SIGKILL", process.pid)
                process.kill()
            process.join()
        self._remove_error_files(skip=error_index)

        failed = self.processes[error_index]
        error_file = self.error_files[error_index]
        if not os.access(error_file, os.R_OK):
            exitcode = failed.exitcode
            if exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"<Unknown signal {-exitcode}>"
                raise ProcessExitedException(
                    f"process {error_index:d} terminated with signal {name}",
                    error_index=error_index, error_pid=failed.pid, exit_code=exitcode,
                    signal_name=name)
            raise ProcessExitedException(
                f"process {error_index:d} terminated with exit code {exitcode:d}",
                error_index=error_index, error_pid=failed.pid, exit_code=exitcode)
        with open(error_file, "rb") as f:
            original_trace = pickle.load(f)
        os.unlink(error_file)
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n"
        msg += original_trace
        raise ProcessRaisedException(msg, error_index, failed.pid)

    def _remove_error_files(self, skip):
        for index, path in enumerate(self.error_files):
            if index != skip:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes of ``start_method`` running ``fn(i, *args)``. With
    ``join`` waits for them all (raising a child's failure) and returns ``None``; otherwise
    returns their ``ProcessContext``."""
    from . import get_context  # this package's, so tensors in ``args`` go as shared memory
    context = get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        # A name no one holds: the child creates the file only if it fails.
        handle = tempfile.NamedTemporaryFile(prefix="ember-errorfile-", suffix=".pickle",
                                             delete=False)
        handle.close()
        os.unlink(handle.name)
        process = context.Process(target=_wrap, args=(fn, i, args, handle.name), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(handle.name)
    process_context = ProcessContext(processes, error_files)
    if not join:
        return process_context
    while not process_context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a process started with the
    ``spawn`` method (``fn`` must be importable by the children). Other start methods warn, as
    in PyTorch, and go through ``start_processes``'s spawn as well."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " ember.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
