"""``Timer``: ``timeit`` for Ember code, as ``torch.utils.benchmark.Timer``.

Differences from the standard library's ``timeit`` it builds on, all torch's: the BLAS thread
count is pinned to ``num_threads`` (default 1) while timing, so results compare across
machines; a device's queued work is waited for by the default ``timer`` before each reading;
and results come back as ``Measurement`` objects (median and IQR, not a minimum)."""
import enum
import time
import timeit

import numpy as np

from . import common

__all__ = ["Timer", "timer", "Language"]


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def timer():
    """``time.perf_counter`` after waiting for queued CUDA work, when CUDA is in use (torch's
    default timer synchronises too: an asynchronous op would otherwise time as free)."""
    import sys
    cuda = sys.modules.get("ember.cuda")
    if cuda is not None and cuda.is_initialized():
        cuda.synchronize()
    return time.perf_counter()


class Timer:
    """Time ``stmt`` (a string, or a callable) after ``setup``, with ``globals`` as its
    namespace; ``label``/``sub_label``/``description``/``env`` are what ``Compare`` arranges
    results by."""

    _timer_cls = timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str) and not callable(stmt):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.PYTHON, "py", "python"):
            language = Language.PYTHON
            if global_setup:
                raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most "
                                 "likely this code can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("ember.utils.benchmark.Timer times Python statements "
                                      "only: a C++ timer needs torch's compiled harness, and "
                                      "Ember code runs in Python")
        else:
            raise ValueError(f"Invalid language `{language}`.")
        self._globals = dict(globals or {})
        # Ember itself is importable as ``torch`` in the statement, as torch's Timer injects it.
        import ember
        self._globals.setdefault("torch", ember)
        self._language = language
        self._timer = timer
        stmt_text = stmt if isinstance(stmt, str) else getattr(stmt, "__name__", repr(stmt))
        self._task_spec = common.TaskSpec(
            stmt=stmt_text, setup=setup if isinstance(setup, str) else "pass",
            global_setup=global_setup, label=label, sub_label=sub_label,
            description=description, env=env, num_threads=num_threads)
        self._timeit_timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer,
                                             globals=self._globals)

    def _timeit(self, number):
        return self._timeit_timer.timeit(number=max(int(number), 1))

    def timeit(self, number=1000000):
        """One measurement of ``number`` runs, after a warm-up of ``number // 100``."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _estimate_block_size(self, min_run_time):
        # The smallest power of ten of runs whose block takes at least 1/1000 of the budget,
        # so the timer's own overhead is negligible against a block.
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.median([self._timeit_timer.timeit(0) for _ in range(5)]))
            number = 1
            while True:
                time_taken = self._timeit(number)
                relative_overhead = overhead / time_taken
                if relative_overhead <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time:
                    break
                if number * 10 > 10000000:
                    break
                number *= 10
        return number

    def _threaded_measurement_loop(self, number, time_hook, stop_hook, min_run_time,
                                   max_run_time=None, callback=None):
        total_time = 0.0
        can_stop = False
        times = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while (total_time < min_run_time) or (not can_stop):
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of a size chosen so timer overhead is negligible, run until ``min_run_time``
        seconds have been spent; ``callback(number, seconds)`` sees each block."""
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), lambda times: True, min_run_time,
            callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """Blocks until the IQR is under ``threshold`` of the median (and ``min_run_time`` has
        passed), or ``max_run_time`` seconds have been spent."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times):
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec).meets_confidence(threshold)
            return False
        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), stop_hook, min_run_time, max_run_time,
            callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("Timer.collect_callgrind needs torch's compiled valgrind "
                                  "bindings, which Ember does not have; profile with "
                                  "ember.profiler or py-spy instead")
