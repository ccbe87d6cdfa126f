"""``ember.jit``: serialized execution on the ``ember.fx`` graph IR, as ``torch.jit``.

``trace`` records the Ember ops a model runs on example inputs; ``script`` captures a module
whose forward traces symbolically. Both return a ``ScriptModule`` that runs its graph as
generated Python (``.code``: Ember's Python, not TorchScript). ``save``/``load`` write and read
one zip of the graph as data plus the tensors — no pickled code — so a process without the
model's Python class loads and runs it. ``freeze``/``optimize_for_inference`` fold the weights
into constants and fold batch norms into the preceding convolution or linear layer. ``fork``/
``wait`` run calls asynchronously on the inter-op thread pool."""
from ._script import (ScriptModule, ScriptFunction, RecursiveScriptModule, script, save,  # noqa
                      load, ignore, unused, export, is_scripting)
from ._trace import (trace, trace_module, TracedModule, TopLevelTracedModule,  # noqa: F401
                     TracerWarning, TracingCheckError, is_tracing)
from ._freeze import freeze, optimize_for_inference, run_frozen_optimizations  # noqa: F401
from ._async import fork, wait  # noqa: F401
from ..futures import Future  # noqa: F401  (torch.jit.Future: what fork returns)

_fork, _wait = fork, wait  # torch.jit's private names for the same functions

__all__ = ["trace", "trace_module", "script", "save", "load", "freeze", "optimize_for_inference",
           "ScriptModule", "ScriptFunction", "RecursiveScriptModule", "TracedModule",
           "TopLevelTracedModule", "TracerWarning", "TracingCheckError", "is_scripting",
           "is_tracing", "ignore", "unused", "export", "run_frozen_optimizations", "fork", "wait",
           "Future"]
