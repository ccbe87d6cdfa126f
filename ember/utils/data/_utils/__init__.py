"""The DataLoader's machinery: collation, fetching, the worker loop and shared memory."""
from . import collate, fetch, shared_memory, worker  # noqa: F401
