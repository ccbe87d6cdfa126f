"""``torch.profiler.profile``: the profiler with activities, a schedule over training steps and
``on_trace_ready``, over ``ember.autograd.profiler``'s recorder.

A schedule maps each step number to a ``ProfilerAction``; ``prof.step()`` moves to the next
step and acts on the change: WARMUP swaps the timing wrappers in (so the first recorded step
does not pay for it), RECORD starts recording, and leaving RECORD_AND_SAVE stops the trace and
calls ``on_trace_ready(prof)``. Each step is a ``ProfilerStep#<n>`` range, as in torch.
"""
import enum
import json
import os
import socket
import time
import warnings

from ..autograd import profiler as prof
from ..autograd.profiler import record_function  # noqa: F401

__all__ = ["profile", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "_KinetoProfile"]


class ProfilerActivity(enum.Enum):
    """The devices a profile may record."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"


def supported_activities():
    """The activities Ember can record on this machine: CPU, and CUDA where a GPU is."""
    from .. import cuda
    acts = {ProfilerActivity.CPU}
    if cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


class ProfilerAction(enum.Enum):
    """What the profiler does at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step → ``ProfilerAction`` function: skip ``skip_first`` steps, then cycle through
    ``wait`` idle steps, ``warmup`` steps and ``active`` recorded steps (the last of which is
    RECORD_AND_SAVE), ``repeat`` times (0: forever). ``skip_first_wait=1`` drops the first
    cycle's wait."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results")
    cycle = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"profiler schedule: step must be >= 0, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` as
    ``<worker_name>.<milliseconds>.pt.trace.json`` (``.gz`` with ``use_gzip``), the files
    TensorBoard's profiler plugin lists; ``worker_name`` defaults to ``<host>_<pid>``."""

    def handler_fn(p):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns() // 1_000_000}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        p.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class _KinetoProfile:
    """The profile without a schedule: ``start()``, ``stop()`` and the results."""

    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False,
                 with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.activities = set(activities) if activities else supported_activities()
        for a in self.activities:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity members, got "
                                f"{a!r}")
        unsupported = self.activities - {ProfilerActivity.CPU, ProfilerActivity.CUDA}
        if unsupported:
            raise NotImplementedError(f"profile: Ember records CPU and CUDA activity only, not "
                                      f"{sorted(a.name for a in unsupported)}")
        if experimental_config is not None:
            raise NotImplementedError("profile: experimental_config configures torch's Kineto "
                                      "library, which Ember does not use")
        if execution_trace_observer is not None:
            raise NotImplementedError("profile: execution_trace_observer needs torch's "
                                      "execution graph observer, which Ember does not have")
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.profiler = None
        self._metadata = {}
        self._user_globals = None
        self._accumulated = []

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.profiler is None:
            self.profiler = prof.profile(
                use_device="cuda" if ProfilerActivity.CUDA in self.activities else None,
                record_shapes=self.record_shapes, with_flops=self.with_flops,
                profile_memory=self.profile_memory, with_stack=self.with_stack,
                with_modules=self.with_modules, use_kineto=True, acc_events=self.acc_events)
        if self._user_globals is None:
            frame = prof._user_frame()
            self._user_globals = [frame.f_globals] if frame is not None else []
        self.profiler._prepare_trace(self._user_globals)

    def start_trace(self):
        if self.profiler is None or self.profiler._recorder is None:
            self.prepare_trace()
        self.profiler._metadata = self._metadata
        self.profiler._start_trace()

    def stop_trace(self):
        if self.profiler is not None and self.profiler._recorder is not None:
            if self.custom_trace_id_callback is not None:
                self._metadata["trace_id"] = str(self.custom_trace_id_callback())
            self.profiler.__exit__(None, None, None)
            if self.acc_events:
                # acc_events=True keeps the events of every cycle, not just the last one's.
                self._accumulated.extend(self.profiler.function_events)
                events = self.profiler.function_events
                self.profiler.function_events = events._derived(self._accumulated)

    def export_chrome_trace(self, path):
        """Write the last trace as Trace Event JSON (``.gz`` paths are compressed)."""
        return self._finished().export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write collapsed stacks of the last trace (needs ``with_stack=True``)."""
        return self._finished().export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """The last trace's events averaged by name (and input shapes / stack frames)."""
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n,
                                             group_by_overload_name)

    def events(self):
        """The last trace's ``FunctionEvent`` list."""
        return self._finished().function_events

    def export_memory_timeline(self, path, device=None):
        """torch's memory timeline classifies every tensor (parameter, gradient, activation,
        optimizer state) from its C++ allocation records, which Ember does not have."""
        raise NotImplementedError("export_memory_timeline: Ember has no categorised "
                                  "allocation records; profile_memory=True gives each op's "
                                  "allocated bytes and the trace's [memory] events")

    def add_metadata(self, key, value):
        """Add a string entry to the top level of the exported trace."""
        self._metadata[key] = str(value)

    def add_metadata_json(self, key, value):
        """Add an entry, given as JSON text, to the top level of the exported trace."""
        self._metadata[key] = json.loads(value)

    def _finished(self):
        if self.profiler is None:
            raise RuntimeError("Profiler didn't finish running")
        self.profiler._check_finish()
        return self.profiler


class profile(_KinetoProfile):
    """``torch.profiler.profile``: use as a context manager (or ``start``/``stop``), call
    ``prof.step()`` at the end of each training step when a ``schedule`` is given."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 with_modules=False, experimental_config=None, execution_trace_observer=None,
                 acc_events=False, use_cuda=None, custom_trace_id_callback=None):
        activities = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
            else:
                activities.discard(ProfilerActivity.CUDA)
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer,
                         acc_events=acc_events,
                         custom_trace_id_callback=custom_trace_id_callback)
        if schedule:
            self.schedule = schedule
            # A step range is recorded only when the user calls step(), i.e. with a schedule.
            self.record_steps = True
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None

    def __enter__(self):
        frame = prof._user_frame()
        self._user_globals = [frame.f_globals] if frame is not None else []
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        self._transit_action(self.current_action, None)

    def step(self):
        """Signal the end of a step: the schedule's action for the next step takes effect."""
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action, current_action):
        A = ProfilerAction
        warmup_then_none = [self.prepare_trace, self._warn_incorrect("WARMUP"),
                            self.start_trace, self.stop_trace]
        actions = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): warmup_then_none[1:],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [self._warn_incorrect("RECORD"), self.stop_trace],
            (A.RECORD, A.WARMUP): [self._warn_incorrect("RECORD", "WARMUP"),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready,
                                                     self.prepare_trace, self.start_trace],
            # stop() during a cycle: what was recorded is still saved.
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }
        for action in actions.get((prev_action, current_action), []):
            action()

    def _warn_incorrect(self, prev, nxt="NONE"):
        def warn():
            warnings.warn(f"Incorrect schedule: {prev} followed by {nxt}")
        return warn

    def prepare_trace(self):
        # A new cycle starts a fresh trace: the finished one stays readable until then.
        if self.profiler is not None and self.profiler.function_events is not None:
            self.profiler = None
        super().prepare_trace()
