"""``torch.profiler``: where time goes in Ember code, op by op.

    with ember.profiler.profile(record_shapes=True) as prof:
        model(x).sum().backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")      # chrome://tracing or https://ui.perfetto.dev

See ``ember/profiler/profiler.py`` (the schedule and ``profile``) and
``ember/autograd/profiler.py`` (how ops are timed) and docs/monitoring.md.
"""
from .profiler import (profile, ProfilerActivity, ProfilerAction, schedule,  # noqa: F401
                       tensorboard_trace_handler, supported_activities, _KinetoProfile)
from ..autograd.profiler import record_function  # noqa: F401
from ..autograd.profiler_util import DeviceType  # noqa: F401
from . import itt  # noqa: F401

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "kineto_available",
           "DeviceType", "itt"]


def kineto_available():
    """False: Ember times ops itself and does not use PyTorch's Kineto library (the
    ``torch.profiler`` API works without it)."""
    return False
