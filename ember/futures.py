"""``ember.futures``: ``Future``, ``collect_all`` and ``wait_all``, as ``torch.futures``.

A Future holds a value (or an exception) that another party sets once. Callbacks added with
``then`` / ``add_done_callback`` run when it is set, inline if it already is. It is thread-safe:
``set_result`` from another thread wakes a waiting one.

Communication in Ember progresses when someone waits for it (an MPI request completes inside
``Request.Wait``), so a Future made from a pending operation carries a *driver*: ``wait()`` on
an unset Future calls it, and it must complete the Future. ``Work.get_future`` and ``then``
chains use this; a plain ``Future()`` has none and ``wait()`` blocks until ``set_result``.
"""
import threading
import types

__all__ = ["Future", "collect_all", "wait_all"]


def _callback_failure(exc):
    # torch wraps a callback's exception in a RuntimeError naming the original.
    return RuntimeError(f"Got the following error when running the callback: "
                        f"{type(exc).__name__}: {exc}")


class Future:
    """A value that becomes available later, as ``torch.futures.Future``; ``Future[T]``
    annotates one holding a T."""

    __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, *, devices=None):
        from ._device import device as _device
        self._devices = [_device(d) for d in (devices or [])]
        self._cond = threading.Condition()
        self._done = False
        self._value = None
        self._exception = None
        self._callbacks = []
        self._driver = None  # completes this Future when waited on (see the module docstring)

    @classmethod
    def _driven_by(cls, driver, devices=None):
        """An unset Future that ``driver()`` completes when someone waits on it."""
        fut = cls(devices=devices)
        fut._driver = driver
        return fut

    def done(self):
        """Whether a result or an exception has been set."""
        return self._done

    def wait(self):
        """Block until set; return the value or raise the exception that was set."""
        if not self._done:
            driver, self._driver = self._driver, None
            if driver is not None:
                try:
                    driver()
                except Exception as exc:  # the operation failed: so does this Future
                    if not self._done:
                        self.set_exception(exc)
            with self._cond:
                while not self._done:
                    self._cond.wait()
        return self.value()

    def value(self):
        """The value of a completed Future (raises the exception if one was set)."""
        if not self._done:
            raise RuntimeError("Future.value() called before the Future was completed: call "
                               "wait() first, or read the value inside a then() callback")
        if self._exception is not None:
            raise self._exception
        return self._value

    def then(self, callback):
        """A new Future holding ``callback(self)``'s return value, completed when it returns;
        an exception raised by ``callback`` completes it with a RuntimeError naming it."""
        child = Future(devices=self._devices)
        child._driver = self.wait

        def run(fut):
            try:
                result = callback(fut)
            except Exception as exc:
                child.set_exception(_callback_failure(exc))
            else:
                child.set_result(result)

        self.add_done_callback(run)
        return child

    def add_done_callback(self, callback):
        """Run ``callback(self)`` when this Future completes (now, if it already has)."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def set_result(self, result):
        """Complete with ``result`` and run the callbacks; a Future completes only once."""
        self._complete(result, None)

    def set_exception(self, result):
        """Complete with the exception ``result``: ``wait()`` and ``value()`` raise it."""
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value, exception):
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._exception = value, exception
            self._done = True
            self._driver = None
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def __repr__(self):
        state = "done" if self._done else "pending"
        return f"<ember.futures.Future object ({state}) at {hex(id(self))}>"


def collect_all(futures):
    """A Future completed with the list ``futures`` once every one of them is complete."""
    futures = list(futures)
    combined = Future()

    def drive():
        for f in futures:
            try:
                f.wait()
            except Exception:
                pass  # each sub-future keeps its own exception; the list is the result

    combined._driver = drive
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined.set_result(futures)

    if not futures:
        combined.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return combined


def wait_all(futures):
    """The values of ``futures``, waiting for each; the first error raised is re-raised."""
    return [f.wait() for f in collect_all(futures).wait()]
