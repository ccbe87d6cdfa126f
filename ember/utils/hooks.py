"""``RemovableHandle``: returned by every ``register_*hook``; ``remove()`` unregisters."""
import itertools

_ids = itertools.count()


class RemovableHandle:
    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = next(_ids)
        # Dicts keyed by the same id holding per-hook flags (e.g. with_kwargs); removed together.
        if extra_dict is None:
            extra_dict = []
        elif not isinstance(extra_dict, list):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(_ref(d) for d in extra_dict)

    def remove(self):
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = _ref(state[0] if state[0] is not None else {})
        self.id = state[1]
        self.extra_dict_ref = tuple(_ref(d if d is not None else {}) for d in state[2])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _ref(obj):
    import weakref
    return weakref.ref(obj) if _weakrefable(obj) else (lambda: obj)


def _weakrefable(obj):
    import weakref
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


def add_hook(hooks, hook, prepend=False, flags=()):
    """Store ``hook`` in the OrderedDict ``hooks`` under a new handle's id. ``flags`` holds
    ``(flag_dict, on)`` pairs: the id is marked in each flag_dict that is on, and the handle
    removes it from every flag_dict along with ``hooks``."""
    handle = RemovableHandle(hooks, extra_dict=[flag_dict for flag_dict, _ in flags])
    hooks[handle.id] = hook
    for flag_dict, on in flags:
        if on:
            flag_dict[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle
