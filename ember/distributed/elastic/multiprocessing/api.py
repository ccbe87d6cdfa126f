"""``SignalException``, which the launcher raises when it is asked to stop, as torchrun's
agent does (``torch.distributed.elastic.multiprocessing.api``)."""

__all__ = ["SignalException"]


class SignalException(Exception):
    """The launcher received ``sigval`` (SIGTERM, SIGINT, SIGHUP or SIGQUIT); it has passed the
    signal on to its ranks and stopped them before raising this."""

    def __init__(self, msg, sigval):
        super().__init__(msg)
        self.sigval = sigval
