"""The key-value stores (HashStore, TCPStore, FileStore, PrefixStore) against torch's own, in
one process (TCPStore's master and a client in threads), and the rendezvous URLs' errors."""
import datetime
import os
import threading
import time

import pytest
import torch.distributed as tdist

import ember.distributed as dist

_SHORT = datetime.timedelta(seconds=0.3)


def _script(store):
    """The same calls on any store; what they return."""
    out = []
    store.set("a", "1")
    store.set("b", b"\x00\xff")
    out += [store.get("a"), store.get("b"), store.add("n", 2), store.add("n", -5),
            store.get("n"), store.compare_set("k", "", "v"), store.compare_set("k", "x", "w"),
            store.compare_set("k", "v", "w"), store.compare_set("missing", "e", "d"),
            store.check(["a", "b"]), store.check(["a", "zz"]), store.check(["missing"]),
            store.delete_key("a"), store.delete_key("a"), store.check(["a"])]
    store.wait(["b", "n"])
    store.append("ap", "x")
    store.append("ap", "yz")
    out.append(store.get("ap"))
    out.append(store.multi_get(["b", "k"]))
    store.multi_set(["m1", "m2"], ["1", b"2"])
    out.append(store.get("m2"))
    return out


def _pairs(tmp_path):
    master = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=_SHORT)
    tmaster = tdist.TCPStore("127.0.0.1", 0, 1, True, timeout=_SHORT)
    yield "hash", dist.HashStore(), tdist.HashStore()
    yield "tcp", master, tmaster
    yield "file", dist.FileStore(str(tmp_path / "e"), 1), tdist.FileStore(str(tmp_path / "t"), 1)
    yield "prefix", dist.PrefixStore("p", dist.HashStore()), \
        tdist.PrefixStore("p", tdist.HashStore())


def test_stores_behave_as_torchs(tmp_path):
    for name, ours, theirs in _pairs(tmp_path):
        ours.set_timeout(_SHORT)
        theirs.set_timeout(_SHORT)
        assert _script(ours) == _script(theirs), name
        assert ours.num_keys() == theirs.num_keys(), name
        assert ours.timeout == theirs.timeout == _SHORT


@pytest.mark.parametrize("kind", ["hash", "tcp", "file", "prefix"])
def test_missing_keys_time_out_with_torchs_error(tmp_path, kind):
    store = {"hash": dist.HashStore, "file": lambda: dist.FileStore(str(tmp_path / "f"), 1),
             "tcp": lambda: dist.TCPStore("127.0.0.1", 0, 1, True, timeout=_SHORT),
             "prefix": lambda: dist.PrefixStore("x", dist.HashStore())}[kind]()
    store.set_timeout(_SHORT)
    for call in (lambda: store.get("nope"), lambda: store.wait(["nope"]),
                 lambda: store.wait(["nope"], datetime.timedelta(seconds=0.1))):
        start = time.monotonic()
        with pytest.raises(dist.DistStoreError, match="[Ww]ait timeout"):
            call()
        assert time.monotonic() - start < 2
    assert issubclass(dist.DistStoreError, dist.DistError)
    assert issubclass(dist.DistError, RuntimeError)


def test_tcpstore_master_and_clients_in_threads():
    master = dist.TCPStore("127.0.0.1", 0, 3, True, timeout=datetime.timedelta(seconds=10),
                           wait_for_workers=False)
    assert master.host == "127.0.0.1" and master.port > 0
    results = {}

    def worker(i):
        client = dist.TCPStore("127.0.0.1", master.port, 3, False,
                               timeout=datetime.timedelta(seconds=10))
        client.set(f"from{i}", str(i))
        results[i] = (client.get("go"), client.add("count", 1))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    master.wait(["from0", "from1"])  # blocks until both workers wrote
    master.set("go", "yes")
    for t in threads:
        t.join(10)
    assert sorted(results) == [0, 1]
    assert {r[0] for r in results.values()} == {b"yes"}
    assert sorted(r[1] for r in results.values()) == [1, 2]
    # a large value crosses the socket intact
    blob = os.urandom(3 << 20)
    master.set("blob", blob)
    assert master.get("blob") == blob


def test_tcpstore_master_waits_for_workers_and_client_connect_times_out():
    with socket_port() as port:
        start = time.monotonic()
        with pytest.raises(dist.DistStoreError, match="waiting for 2 clients"):
            dist.TCPStore("127.0.0.1", port, 2, True, timeout=_SHORT)
        assert time.monotonic() - start < 3
    with socket_port() as port:
        with pytest.raises(dist.DistNetworkError, match="timed out after 300ms while trying to "
                                                        "connect"):
            dist.TCPStore("127.0.0.1", port, 2, False, timeout=_SHORT)


class socket_port:
    def __enter__(self):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc):
        return False


def test_filestore_shared_and_removed_by_last_user(tmp_path):
    path = str(tmp_path / "shared")
    a, b = dist.FileStore(path, 2), dist.FileStore(path, 2)
    a.set("x", "1")
    assert b.get("x") == b"1" and b.add("c", 5) == 5 and a.add("c", 1) == 6
    a.close()
    assert os.path.exists(path)
    b.close()
    assert not os.path.exists(path)
    with pytest.raises(TypeError):
        dist.HashStore().set("k", 3)


def test_rendezvous_errors_as_torchs(monkeypatch):
    for var in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)

    def both(url, *args):
        errors = []
        for lib in (dist, tdist):
            with pytest.raises(Exception) as info:
                next(lib.rendezvous(url, *args))
            errors.append((type(info.value).__name__, str(info.value)))
        assert errors[0] == errors[1], errors
    both("env://")
    monkeypatch.setenv("RANK", "0")
    both("env://")
    monkeypatch.setenv("WORLD_SIZE", "1")
    both("env://")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    both("env://")
    both("tcp://127.0.0.1")
    both("tcp://127.0.0.1:1234")
    both("tcp://127.0.0.1:1234", 0)
    both("file://")
    both("nosuch://x")
    both("tcp://127.0.0.1:1234?rank=0", 0, 1)
    with pytest.raises(RuntimeError, match="must be a string"):
        dist.rendezvous(3)


def test_rendezvous_yields_store_rank_world_size(tmp_path, monkeypatch):
    with socket_port() as port:
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", str(port))
        monkeypatch.setenv("RANK", "0")
        monkeypatch.setenv("WORLD_SIZE", "1")
        gen = dist.rendezvous("env://", timeout=datetime.timedelta(seconds=5))
        store, rank, world_size = next(gen)
        assert (rank, world_size) == (0, 1) and isinstance(store, dist.TCPStore)
        store.set("k", "v")
        assert store.get("k") == b"v"
        with pytest.raises(RuntimeError, match="re-rendezvous"):
            next(gen)
    store, rank, world_size = next(dist.rendezvous(f"file://{tmp_path}/f", 0, 1))
    assert isinstance(store, dist.FileStore) and (rank, world_size) == (0, 1)


def test_init_process_group_single_rank_with_store():
    store = dist.HashStore()
    dist.init_process_group("mpi", store=store, rank=0, world_size=1)
    try:
        import ember
        t = ember.arange(3.)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert t.tolist() == [0., 1., 2.]
        assert dist.get_rank() == 0 and dist.get_world_size() == 1
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("mpi", store=store, rank=0, world_size=1)
    finally:
        dist.destroy_process_group()
    with pytest.raises(AssertionError, match="world_size must be positive"):
        dist.init_process_group("mpi", store=store, rank=0)
    with pytest.raises(AssertionError, match="Cannot specify both"):
        dist.init_process_group("mpi", store=store, init_method="env://", rank=0,
                                world_size=1)


def test_a_master_that_never_replies_is_an_error_not_a_hang():
    # A TCPStore whose server accepted the connection but never answers (a master stuck or
    # gone): the client gives up after the store's timeout plus a grace, naming the request.
    import datetime
    import socket
    import threading
    import time
    from ember.distributed import DistNetworkError, TCPStore
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    held = []
    threading.Thread(target=lambda: held.append(listener.accept()), daemon=True).start()
    start = time.monotonic()
    with pytest.raises(DistNetworkError, match="no reply to add within"):
        TCPStore("127.0.0.1", listener.getsockname()[1], 1, False,
                 timeout=datetime.timedelta(seconds=0.5))
    assert time.monotonic() - start < 30
    listener.close()
