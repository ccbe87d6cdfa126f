"""The exceptions of ``ember.compile``, as ``torch._dynamo.exc``."""

__all__ = ["TorchDynamoException", "Unsupported", "InvalidBackend", "BackendCompilerFailed",
           "RecompileError"]


class TorchDynamoException(RuntimeError):
    pass


class Unsupported(TorchDynamoException):
    """What the capture cannot put in a graph: raised by ``fullgraph=True`` at a graph break,
    naming the construct and the source line, and recorded as the reason of an eager fallback
    otherwise. ``user_stack`` holds the user's frames (``traceback.FrameSummary``) of the break."""

    def __init__(self, msg, user_stack=()):
        super().__init__(msg)
        self.msg = msg
        self.user_stack = list(user_stack)


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         "available backends.")


class BackendCompilerFailed(TorchDynamoException):
    def __init__(self, backend_name, inner_exception):
        self.backend_name = backend_name
        self.inner_exception = inner_exception
        super().__init__(f"backend={backend_name!r} raised:\n"
                         f"{type(inner_exception).__name__}: {inner_exception}")


class RecompileError(TorchDynamoException):
    pass
