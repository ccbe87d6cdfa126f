"""Settings of ``ember.compile``, as ``torch._dynamo.config`` (only the ones Ember honours).

``recompile_limit`` (alias ``cache_size_limit``, torch's older name): how many graphs one
compiled function may record (a new input signature, or a new outcome at a graph break) before it
falls back to eager for good, with a warning. ``accumulated_recompile_limit`` (alias
``accumulated_cache_size_limit``): the same over all compiled functions together.
``suppress_errors``: a backend that raises makes the function run eagerly (with a warning)
instead of raising ``BackendCompilerFailed``. ``error_on_recompile``: raise ``RecompileError``
instead of recording again. ``verbose``: print each graph break's reason as it is found."""
import sys
import types

recompile_limit = 8
accumulated_recompile_limit = 256
suppress_errors = False
error_on_recompile = False
verbose = False

_ALIASES = {"cache_size_limit": "recompile_limit",
            "accumulated_cache_size_limit": "accumulated_recompile_limit"}


class _ConfigModule(types.ModuleType):
    """Lets torch's old names read and write the new ones."""

    def __getattr__(self, name):
        if name in _ALIASES:
            return getattr(self, _ALIASES[name])
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name, value):
        super().__setattr__(_ALIASES.get(name, name), value)


sys.modules[__name__].__class__ = _ConfigModule
