"""How a failed rank is reported, as ``torch.distributed.elastic.multiprocessing.errors``.

A rank started by ``python -m ember.distributed.run`` has ``TORCHELASTIC_ERROR_FILE`` set. Its
uncaught exception is written there as JSON (by the launcher's rank entry, or by ``@record``
around the user's ``main``), and the launcher turns each failed rank into a ``ProcessFailure``
and raises ``ChildFailedError``, whose message is torch's report: the root cause (first
failure), then the other failures, each with rank, local rank, exit code or signal, pid, error
file and traceback.
"""
import json
import os
import signal
import socket
import time
import traceback
from datetime import datetime
from functools import wraps

from ..._rank_entry import error_file_data

__all__ = ["ProcessFailure", "ChildFailedError", "record", "ErrorHandler", "get_error_handler"]

_NOT_AVAILABLE = "<N/A>"


class ProcessFailure:
    """One failed process: ``local_rank``, ``pid``, ``exitcode`` (negative: killed by that
    signal) and ``error_file``. The ``message`` and ``timestamp`` come from the error file when
    the process wrote one; otherwise the message describes the signal or says how to get a
    traceback, and the timestamp is now."""

    def __init__(self, local_rank, pid, exitcode, error_file):
        self.local_rank = local_rank
        self.pid = pid
        self.exitcode = exitcode
        self.error_file = error_file
        self.error_file_data = {"message": "<NONE>"}
        self.message = ""
        self.timestamp = int(time.time())
        if os.path.isfile(error_file):
            with open(error_file) as f:
                self.error_file_data = json.load(f)
            message = self.error_file_data["message"]
            self.message = message
            if isinstance(message, str):
                self.timestamp = int(self.error_file_data.get("timestamp", 0))
            else:
                self.timestamp = int(message["extraInfo"]["timestamp"])
        else:
            self.error_file = _NOT_AVAILABLE
        if not self.message:
            if self.exitcode < 0:
                self.message = (f"Signal {-self.exitcode} ({self.signal_name()}) received by "
                                f"PID {self.pid}")
            else:
                self.message = ("To enable traceback see: "
                                "https://pytorch.org/docs/stable/elastic/errors.html")

    def signal_name(self):
        if self.exitcode < 0:
            try:
                return signal.Signals(-self.exitcode).name
            except ValueError:
                return _NOT_AVAILABLE
        return _NOT_AVAILABLE

    def timestamp_isoformat(self):
        """The failure's time as ``YYYY-MM-DD_HH:MM:SS``."""
        return datetime.fromtimestamp(self.timestamp).isoformat(sep="_")

    def __repr__(self):
        return (f"ProcessFailure(local_rank={self.local_rank}, pid={self.pid}, "
                f"exitcode={self.exitcode}, error_file={self.error_file!r})")


class ChildFailedError(Exception):
    """Raised by the launcher when ranks failed: ``failures`` maps each failed global rank to
    its ``ProcessFailure``; ``name`` is what was launched (the script)."""

    def __init__(self, name, failures):
        if not failures:
            raise AssertionError("a ChildFailedError needs at least one failure")
        self.name = name
        self.failures = failures
        super().__init__(self.format_msg())

    def get_first_failure(self):
        """``(rank, failure)`` of the earliest failure (the root cause). Failures in the same
        second are told apart by ``_when`` (the launcher's sub-second time), if set."""
        rank = min(self.failures, key=lambda r: (self.failures[r].timestamp,
                                                 getattr(self.failures[r], "_when", 0.0)))
        return rank, self.failures[rank]

    def format_msg(self, boarder_delim="=", section_delim="-"):
        title = f"{self.name} FAILED"
        root_rank, _ = self.get_first_failure()
        root, others, width = "", [], len(title)
        for index, (rank, failure) in enumerate(self.failures.items()):
            text = self._format_failure(index, rank, failure)
            width = max(width, *(len(line) for line in text.split("\n")))
            if rank == root_rank:
                root = text
            else:
                others.append(text)
        width = min(width, 60)
        return "\n".join(["", boarder_delim * width, title, section_delim * width, "Failures:",
                          "\n".join(others or ["  <NO_OTHER_FAILURES>"]), section_delim * width,
                          "Root Cause (first observed failure):", root, boarder_delim * width])

    def _format_failure(self, index, rank, failure):
        message = failure.message
        if isinstance(message, dict):
            message = message.get("extraInfo", {}).get(
                "py_callstack", message.get("message", _NOT_AVAILABLE)).replace("\n", "\n  ")
        signal_name = failure.signal_name()
        signal_text = f" ({signal_name})" if signal_name != _NOT_AVAILABLE else ""
        return (f"[{index}]:\n"
                f"  time      : {failure.timestamp_isoformat()}\n"
                f"  host      : {socket.getfqdn()}\n"
                f"  rank      : {rank} (local_rank: {failure.local_rank})\n"
                f"  exitcode  : {failure.exitcode} (pid: {failure.pid}){signal_text}\n"
                f"  error_file: {failure.error_file}\n"
                f"  traceback : {message}")


class ErrorHandler:
    """Writes an exception, with its traceback and time, as JSON to the file named by
    ``TORCHELASTIC_ERROR_FILE`` (nothing when it is unset)."""

    def _get_error_file_path(self):
        return os.environ.get("TORCHELASTIC_ERROR_FILE")

    def initialize(self):
        """Dump every thread's stack on a fatal signal (SIGSEGV…), as torch's handler does."""
        import faulthandler
        try:
            faulthandler.enable(all_threads=True)
        except (RuntimeError, ValueError, OSError):
            pass  # no usable stderr (e.g. closed): the error file still gets the exception

    def record_exception(self, e):
        path = self._get_error_file_path()
        if path:
            with open(path, "w") as f:
                json.dump(error_file_data(e, traceback.format_exc()), f)

    def dump_error_file(self, rootcause_error_file, error_code=0):
        """Copy a child's error file to this process's own, setting ``errorCode``."""
        with open(rootcause_error_file) as f:
            data = json.load(f)
        if error_code and isinstance(data.get("message"), dict):
            data["message"]["errorCode"] = error_code
        path = self._get_error_file_path()
        if path:
            with open(path, "w") as f:
                json.dump(data, f)


def get_error_handler():
    return ErrorHandler()


def record(fn, error_handler=None):
    """Decorate a process's top-level function so that an uncaught exception is written to
    ``TORCHELASTIC_ERROR_FILE`` before it propagates (a ``ChildFailedError`` passes on its
    root cause's error file); ``SystemExit(0)`` returns ``None``."""
    handler = error_handler or get_error_handler()

    @wraps(fn)
    def wrapper(*args, **kwargs):
        handler.initialize()
        try:
            return fn(*args, **kwargs)
        except SystemExit as exit_:
            if exit_.code == 0:
                return None
            raise
        except ChildFailedError as e:
            _, failure = e.get_first_failure()
            if failure.error_file != _NOT_AVAILABLE:
                handler.dump_error_file(failure.error_file, failure.exitcode)
            raise
        except Exception as e:
            handler.record_exception(e)
            raise

    return wrapper
