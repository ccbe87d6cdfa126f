"""``RemovableHandle``: returned by every ``register_*hook``; ``remove()`` unregisters."""
import itertools

_ids = itertools.count()


class RemovableHandle:
    def __init__(self, hooks_dict):
        import weakref
        self.hooks_dict_ref = weakref.ref(hooks_dict) if _weakrefable(hooks_dict) else (lambda: hooks_dict)
        self.id = next(_ids)

    def remove(self):
        hooks = self.hooks_dict_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _weakrefable(obj):
    import weakref
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False
