"""Anomaly detection: remember where each node was created, and fail on NaN gradients."""
__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]

_enabled = False
_check_nan = True


def is_anomaly_enabled():
    return _enabled


class detect_anomaly:
    """Context manager / decorator: while active, a backward that produces NaN raises an error
    naming the backward node, and the stack trace of its forward op is included."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        global _enabled, _check_nan
        self._prev = (_enabled, _check_nan)
        _enabled, _check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        global _enabled, _check_nan
        _enabled, _check_nan = self._prev
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)
        return wrapper


class set_detect_anomaly(detect_anomaly):
    """Turns anomaly detection on or off; usable as a call or a context manager."""

    def __init__(self, mode, check_nan=True):
        global _enabled, _check_nan
        self._prev = (_enabled, _check_nan)
        _enabled, _check_nan = bool(mode), check_nan
        self.check_nan = check_nan

    def __enter__(self):
        return self
