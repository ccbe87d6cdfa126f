"""``ember.distributed.elastic``: the part of ``torch.distributed.elastic`` that a launched
job sees, namely how a failed rank is reported (``multiprocessing.errors``). Ember's launcher
(``python -m ember.distributed.run``) starts a fixed set of ranks once; elastic membership
changes and restarts are not implemented, and the launcher says so when asked for them.
"""
