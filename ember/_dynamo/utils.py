"""``torch._dynamo.utils.counters``: what ``ember.compile`` did, for tests and diagnosis.

``counters["stats"]["unique_graphs"]``: graphs handed to a backend (one per recording and
graph, so a recompile shows as a new one); ``counters["recompiles"][reason]``: the recompiles
and the guard whose failure caused each (also logged at INFO level on the ``ember._dynamo``
logger). ``ember._dynamo.reset()`` clears them, as torch's does."""
import collections

__all__ = ["counters"]

counters = collections.defaultdict(collections.Counter)
