"""``init_method`` URLs to a store, as ``torch.distributed.rendezvous``: ``env://``
(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), ``tcp://host:port`` and ``file:///path``, with
rank and world_size in the query or as arguments. ``rendezvous`` returns a generator whose
first item is ``(store, rank, world_size)``; asking for another raises, as torch's (a URL
cannot rendezvous twice). Rank 0 of tcp:// and env:// serves the TCPStore.
"""
import numbers
import os
from urllib.parse import urlparse, urlunparse

from .process_group import default_pg_timeout
from .store import FileStore, TCPStore

__all__ = ["register_rendezvous_handler", "rendezvous"]

_rendezvous_handlers = {}


def register_rendezvous_handler(scheme, handler):
    """Register ``handler(url, **kwargs)`` (a generator of (store, rank, world_size)) for
    ``scheme://``."""
    if scheme in _rendezvous_handlers:
        raise RuntimeError(f"Rendezvous handler for {scheme}:// already registered")
    _rendezvous_handlers[scheme] = handler


def _query_to_dict(query):
    return {pair[0]: pair[1] for pair in (p.split("=") for p in filter(None, query.split("&")))}


def rendezvous(url, rank=-1, world_size=-1, **kwargs):
    if not isinstance(url, (str, bytes)):
        raise RuntimeError(f"`url` must be a string. {type(url)}: {url}")
    if not isinstance(rank, numbers.Integral):
        raise RuntimeError(f"`rank` must be an integer. {rank}")
    if not isinstance(world_size, numbers.Integral):
        raise RuntimeError(f"`world_size` must be an integer. {world_size}")
    result = urlparse(url)
    if rank != -1 or world_size != -1:
        query = _query_to_dict(result.query)
        if "rank" in query or "world_size" in query:
            raise AssertionError(f"The url: {url} has node-specific arguments(rank, "
                                 "world_size) already.")
        if rank != -1:
            query["rank"] = str(rank)
        if world_size != -1:
            query["world_size"] = str(world_size)
        result = result._replace(query="&".join(f"{k}={v}" for k, v in query.items()))
        url = urlunparse(result)
    if result.scheme not in _rendezvous_handlers:
        raise RuntimeError(f"No rendezvous handler for {result.scheme}://")
    return _rendezvous_handlers[result.scheme](url, **kwargs)


def _rendezvous_error(msg):
    return ValueError("Error initializing torch.distributed using " + msg)


def _file_rendezvous_handler(url, **kwargs):
    def _error(msg):
        return _rendezvous_error("file:// rendezvous: " + msg)

    result = urlparse(url)
    if not result.path:
        raise _error("path missing")
    query = _query_to_dict(result.query)
    if "rank" not in query:
        raise _error("rank parameter missing")
    if "world_size" not in query:
        raise _error("world size parameter missing")
    rank, world_size = int(query["rank"]), int(query["world_size"])
    store = FileStore(result.path, world_size)
    if "timeout" in kwargs:
        store.set_timeout(kwargs["timeout"])
    yield store, rank, world_size
    raise RuntimeError("Unable to perform rerendezvous using file:// method")


def _create_store(host, port, rank, world_size, timeout):
    if not 0 <= port < 2 ** 16:
        raise ValueError(f"port must have value from 0 to 65535 but was {port}.")
    return TCPStore(host, port, world_size, rank == 0, timeout, wait_for_workers=True)


def _tcp_rendezvous_handler(url, timeout=default_pg_timeout, **kwargs):
    def _error(msg):
        return _rendezvous_error("tcp:// rendezvous: " + msg)

    result = urlparse(url)
    if result.port is None:
        raise _error("port number missing")
    query = _query_to_dict(result.query)
    if "rank" not in query:
        raise _error("rank parameter missing")
    if "world_size" not in query:
        raise _error("world size parameter missing")
    rank, world_size = int(query["rank"]), int(query["world_size"])
    if result.hostname is None:
        raise AssertionError("hostname cannot be None")
    yield _create_store(result.hostname, result.port, rank, world_size, timeout), rank, \
        world_size
    raise RuntimeError("Unable to perform re-rendezvous using tcp:// method")


def _env_rendezvous_handler(url, timeout=default_pg_timeout, **kwargs):
    def _error(msg):
        return _rendezvous_error("env:// rendezvous: " + msg)

    def _get(var):
        value = os.environ.get(var)
        if not value:
            raise _error(f"environment variable {var} expected, but not set")
        return value

    query = _query_to_dict(urlparse(url).query)
    rank = int(query["rank"]) if "rank" in query else int(_get("RANK"))
    world_size = int(query["world_size"]) if "world_size" in query else int(_get("WORLD_SIZE"))
    master_addr = _get("MASTER_ADDR")
    master_port = int(_get("MASTER_PORT"))
    yield _create_store(master_addr, master_port, rank, world_size, timeout), rank, world_size
    raise RuntimeError("Unable to perform re-rendezvous using env:// method")


register_rendezvous_handler("tcp", _tcp_rendezvous_handler)
register_rendezvous_handler("env", _env_rendezvous_handler)
register_rendezvous_handler("file", _file_rendezvous_handler)
