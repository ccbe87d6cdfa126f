"""The backend registry, as ``torch._dynamo.backends.registry``.

A backend is ``backend(gm: ember.fx.GraphModule, example_inputs: list[Tensor]) -> callable``:
the callable takes the same flat positional tensors as ``gm``'s placeholders and returns what
``gm`` returns. Backends are registered by name (``register_backend``) or passed as callables.
Ember's own: ``"inductor"`` (the default: ``ember._inductor.compile_fx.compile_fx``), and the
debugging backends ``"eager"`` (runs ``gm`` as it is) and ``"aot_eager"``
(``ember._inductor.aot_eager``: the forward/backward split without the other passes)."""
import functools

from ..exc import InvalidBackend

__all__ = ["register_backend", "lookup_backend", "list_backends"]

_BACKENDS = {}   # name -> compiler function
_TAGS = {}       # name -> tags ("debug" backends are left out of list_backends() by default)


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register ``compiler_fn`` under ``name`` (its ``__name__`` by default); usable as a
    decorator, with or without arguments."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    if not callable(compiler_fn):
        raise AssertionError(f"backend {compiler_fn!r} is not callable")
    name = name or compiler_fn.__name__
    if name in _BACKENDS and _BACKENDS[name] is not compiler_fn:
        raise AssertionError(f"duplicate name: {name}")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def lookup_backend(compiler_fn):
    """The compiler function for a backend name or callable."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            raise InvalidBackend(name=compiler_fn)
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise InvalidBackend(name=repr(compiler_fn))
    return compiler_fn


def list_backends(exclude_tags=("debug", "experimental")):
    """The registered names, without those tagged with one of ``exclude_tags``."""
    exclude = set(exclude_tags or ())
    return sorted(n for n in _BACKENDS if not exclude.intersection(_TAGS[n]))


@register_backend(name="inductor")
def inductor(gm, example_inputs, **options):
    from ..._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs, **options)


@register_backend(name="eager", tags=("debug",))
def eager(gm, example_inputs, **options):
    """``gm`` as it is: every node runs its Ember op (autograd recorded by the ops)."""
    if options:
        raise TypeError(f"the 'eager' backend takes no options, got {sorted(options)}")
    return gm.forward


@register_backend(name="aot_eager", tags=("debug",))
def aot_eager(gm, example_inputs, **options):
    from ..._inductor import compile_fx
    return compile_fx.aot_eager(gm, example_inputs, **options)
