"""Whether operations record the autograd graph: ``no_grad``, ``enable_grad``,
``set_grad_enabled`` and ``inference_mode``, each a context manager and a decorator.

The flag is per thread, as in PyTorch (a DataLoader thread never turns off grad for the trainer),
so a new thread starts with grad enabled.
"""
import functools
import inspect
import sys
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
    """Base of the grad-mode switches: ``with`` sets the mode, decorating wraps each call (and,
    for a generator function, each resumption of the generator)."""

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"{type(self).__name__} must decorate a callable, got {func!r}")
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self._clone():
                return func(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def generator_wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self._clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self._clone():
                            gen.close()
                        raise
                    except BaseException:
                        with self._clone():
                            response = gen.throw(*sys.exc_info())
                    else:
                        with self._clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return generator_wrapper

    def _clone(self):
        return type(self)()

    def __exit__(self, *exc):
        _state.enabled = self._prev
        return False


class no_grad(_GradModeContext):
    _mode = False

    def __new__(cls, orig_func=None):
        # Allows both @no_grad() and the bare @no_grad form.
        self = super().__new__(cls)
        if orig_func is not None:
            return self(orig_func)
        return self

    def __init__(self, orig_func=None):
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
        _state.enabled = self._mode

    def __call__(self, func):
        _state.enabled = self._prev  # decorating must leave the mode as it was
        return super().__call__(func)

    def _clone(self):
        return _GradModeScope(self._mode)

    def __repr__(self):
        return f"{type(self).__name__}(mode={self._mode})"


class _GradModeScope(_GradModeContext):
    """What a ``set_grad_enabled`` decorator enters on each call (the mode is set on entry)."""

    def __init__(self, mode):
        self._mode = mode

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = self._mode


class inference_mode(_GradModeContext):
    """Like ``no_grad`` when ``mode`` is true; ``inference_mode(False)`` turns grad mode *on*
    (PyTorch's InferenceMode guard sets grad mode to ``not mode``)."""

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
        _state.enabled = not self.mode
        _state.inference = self.mode

    def __exit__(self, *exc):
        _state.enabled = self._prev
        _state.inference = self._prev_inference
        return False
