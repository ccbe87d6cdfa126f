"""Anomaly detection: remember where each node was created, and fail on NaN gradients.

While enabled, every recorded node keeps the stack of the forward call that made it; when its
backward raises (or returns NaN, which then raises), that stack is shown in a warning."""
import os
import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]

_enabled = False
_check_nan = True
_EMBER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_anomaly_enabled():
    return _enabled


def is_anomaly_check_nan_enabled():
    return _check_nan


def forward_trace():
    """The user's part of the current stack: Ember's own frames (the op and the recording
    machinery) are dropped from the innermost end, as PyTorch shows only Python frames."""
    frames = traceback.extract_stack()
    while frames and frames[-1].filename.startswith(_EMBER_ROOT):
        frames.pop()
    return traceback.format_list(frames)


def warn_forward_trace(node):
    if node._trace:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      f"the error:\n{''.join(node._trace)}", stacklevel=2)
    else:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. "
                      "Enable detect anomaly during forward pass for more information.",
                      stacklevel=2)


def set_anomaly_enabled(mode, check_nan=True):
    global _enabled, _check_nan
    _enabled, _check_nan = bool(mode), bool(check_nan)


class detect_anomaly:
    """Context manager: while active, a backward that produces NaN raises an error
    naming the backward node, and the stack trace of its forward op is shown in a warning."""

    def __init__(self, check_nan=True):
        self.prev = _enabled
        self.check_nan = check_nan
        self.prev_check_nan = _check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False


class set_detect_anomaly:
    """Turns anomaly detection on or off; usable as a plain call or a context manager."""

    def __init__(self, mode, check_nan=True):
        self.prev = _enabled
        self.prev_check_nan = _check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False
