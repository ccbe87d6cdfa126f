"""Whether operations record the autograd graph: ``no_grad``, ``enable_grad``,
``set_grad_enabled`` and ``inference_mode``, each a context manager and a decorator.

The flag is per thread, as in PyTorch (a DataLoader thread never turns off grad for the trainer).
"""
import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _GradState(threading.local):
    enabled = True
    inference = False


_state = _GradState()


def is_grad_enabled():
    return _state.enabled


def is_inference_mode_enabled():
    return _state.inference


class _GradModeContext:
    """Base of the grad-mode switches: ``with`` sets the mode, decorating wraps each call."""

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"{type(self).__name__} must decorate a callable, got {func!r}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self._clone():
                return func(*args, **kwargs)
        return wrapper

    def _clone(self):
        return type(self)()

    def __exit__(self, *exc):
        _state.enabled = self._prev
        return False


class no_grad(_GradModeContext):
    _mode = False

    def __new__(cls, func=None):
        # Allows both @no_grad() and the bare @no_grad form.
        self = super().__new__(cls)
        if func is not None and callable(func):
            return self(func)
        return self

    def __init__(self, func=None):
        pass

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = self._mode


class enable_grad(no_grad):
    _mode = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode on construction (so it works as a plain call) and restores it on exit."""

    def __init__(self, mode):
        self._mode = bool(mode)
        self._prev = _state.enabled
        _state.enabled = self._mode

    def __enter__(self):
        pass

    def __call__(self, func):
        _state.enabled = self._prev  # decorating must leave the mode as it was
        return super().__call__(func)

    def _clone(self):
        return _GradModeScope(self._mode)


class _GradModeScope(_GradModeContext):
    def __init__(self, mode):
        self._mode = mode

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = self._mode


class inference_mode(_GradModeContext):
    """Like ``no_grad``; tensors made inside are inference tensors that can never join a graph."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.mode = True
            return self(mode)
        self.mode = bool(mode)
        return self

    def __init__(self, mode=True):
        pass

    def _clone(self):
        return inference_mode(self.mode)

    def __enter__(self):
        self._prev = _state.enabled
        self._prev_inference = _state.inference
        if self.mode:
            _state.enabled = False
            _state.inference = True

    def __exit__(self, *exc):
        _state.enabled = self._prev
        _state.inference = self._prev_inference
        return False
