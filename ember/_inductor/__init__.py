"""``ember._inductor``: the back end of ``ember.compile`` (torch's ``torch._inductor``).

``compile_fx.compile_fx(gm, example_inputs, **options)`` compiles a captured
``ember.fx.GraphModule`` (``backend="inductor"``, the default); ``aot_eager(gm, example_inputs)``
is torch's ``"aot_eager"`` back end; ``compile(gm, example_inputs, options)`` is torch's
``torch._inductor.compile``. See ``compile_fx.py`` for the pipeline and its options."""
from . import compile_fx
from .compile_fx import aot_eager, CompiledGraph

__all__ = ["compile", "aot_eager", "CompiledGraph"]


def compile(gm, example_inputs, options=None):  # noqa: A001 - torch's name
    """``torch._inductor.compile``: ``compile_fx`` with ``options`` as a dict."""
    return compile_fx.compile_fx(gm, example_inputs, **(options or {}))
