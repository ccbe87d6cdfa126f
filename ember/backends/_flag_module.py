"""Settable backend flags on a module, as torch's ``torch.backends.<name>`` modules have them.

``ember.backends.cudnn.benchmark = True`` must validate its value and be read back by the
``flags()`` context managers, so each flag module swaps its class for a ``ModuleType``
subclass whose properties read and write the module's ``_state`` dict.
"""
import sys
import types


class FlagModule(types.ModuleType):
    """Base class of a flag module; subclasses declare flags with ``bool_flag``/``value_flag``."""


def bool_flag(key, setter_name, doc):
    """A property holding a bool; other values raise torch's RuntimeError naming ``setter_name``."""
    def get(module):
        return module._state[key]

    def put(module, value):
        if not isinstance(value, bool):
            raise RuntimeError(f"{setter_name} expects a bool, but got {type(value).__name__}")
        module._state[key] = value
    return property(get, put, doc=doc)


def value_flag(key, check, doc):
    """A property whose new value ``check`` validates (returning it, or raising)."""
    def get(module):
        return module._state[key]

    def put(module, value):
        module._state[key] = check(value)
    return property(get, put, doc=doc)


def install(module_name, cls):
    """Give the module ``module_name`` the flag properties of ``cls`` (a FlagModule subclass)."""
    sys.modules[module_name].__class__ = cls


def set_given(module, **values):
    """Set the flags given through their validating properties; None leaves a flag alone."""
    for key, value in values.items():
        if value is not None:
            setattr(module, key, value)
