"""``torch.compiler``: the user-facing names of ``ember.compile``'s machinery
(``ember/_dynamo``)."""
from .._dynamo import compile, reset, list_backends  # noqa: F401
from .._dynamo.eval_frame import disable, allow_in_graph, is_compiling  # noqa: F401

__all__ = ["compile", "reset", "list_backends", "disable", "allow_in_graph", "is_compiling",
           "is_dynamo_compiling"]


def is_dynamo_compiling():
    """True while a compiled function is being recorded, as ``is_compiling``."""
    return is_compiling()
