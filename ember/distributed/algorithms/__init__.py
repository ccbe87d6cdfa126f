"""``ember.distributed.algorithms``: training algorithms built on the collectives, as
``torch.distributed.algorithms``: ``Join`` for uneven inputs, and the DDP communication hooks
(``ddp_comm_hooks``)."""
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
