"""Key-value stores for rendezvous, as ``torch.distributed``'s: ``HashStore`` (one process),
``TCPStore`` (a server thread in the master process, clients over TCP), ``FileStore`` (a file
on a shared filesystem) and ``PrefixStore`` (a namespace in another store).

Values are bytes (str values are UTF-8 encoded). ``get`` and ``wait`` block until the keys
exist, raising ``DistStoreError("Wait timeout ...")`` after the store's timeout. The TCP wire
format is length-prefixed byte fields (never pickle, so a peer cannot run code in the master).
"""
import datetime
import fcntl
import os
import socket
import socketserver
import struct
import sys
import threading
import time

from .process_group import DistNetworkError, DistStoreError, timeout_seconds

__all__ = ["Store", "HashStore", "TCPStore", "FileStore", "PrefixStore"]

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


def _as_bytes(value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return bytes(value)
    raise TypeError(f"store values must be str or bytes, got {type(value).__name__}")


def _keys(keys):
    if isinstance(keys, str):
        raise TypeError("wait()/check() take a list of keys, got a str")
    return [str(k) for k in keys]


class Store:
    """The store interface (torch.distributed.Store)."""

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        self._timeout = timeout

    @property
    def timeout(self):
        return self._timeout

    def set_timeout(self, timeout):
        timeout_seconds(timeout)
        self._timeout = timeout

    def _limit(self, timeout=None):
        return timeout_seconds(self._timeout if timeout is None else timeout)

    def set(self, key, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement set")

    def get(self, key):
        raise NotImplementedError(f"{type(self).__name__} does not implement get")

    def add(self, key, amount):
        raise NotImplementedError(f"{type(self).__name__} does not implement add")

    def compare_set(self, key, expected_value, desired_value):
        raise NotImplementedError(f"{type(self).__name__} does not implement compare_set")

    def wait(self, keys, timeout=None):
        raise NotImplementedError(f"{type(self).__name__} does not implement wait")

    def check(self, keys):
        raise NotImplementedError(f"{type(self).__name__} does not implement check")

    def delete_key(self, key):
        raise NotImplementedError(f"{type(self).__name__} does not implement delete_key")

    def num_keys(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement num_keys")

    def append(self, key, value):
        """Append ``value`` to ``key``'s value (creating it)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement append")

    def multi_get(self, keys):
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values):
        for k, v in zip(keys, values):
            self.set(k, v)

    def has_extended_api(self):
        return True


class _Table:
    """The dictionary behind HashStore and the TCPStore server, with blocking waits."""

    def __init__(self):
        self.data = {}
        self.cond = threading.Condition()

    def set(self, key, value):
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def get(self, key, limit):
        self.wait([key], limit)
        with self.cond:
            return self.data[key]

    def add(self, key, amount):
        with self.cond:
            value = int(self.data.get(key, b"0")) + int(amount)
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value

    def append(self, key, value):
        with self.cond:
            self.data[key] = self.data.get(key, b"") + value
            self.cond.notify_all()

    def compare_set(self, key, expected, desired):
        with self.cond:
            current = self.data.get(key)
            if current is None:
                if expected == b"":
                    self.data[key] = desired
                    self.cond.notify_all()
                    return desired
                return expected
            if current == expected:
                self.data[key] = desired
                self.cond.notify_all()
                return desired
            return current

    def wait(self, keys, limit):
        deadline = None if limit is None else time.monotonic() + limit
        with self.cond:
            while not all(k in self.data for k in keys):
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self.cond.wait(remaining)
        return True

    def check(self, keys):
        with self.cond:
            return all(k in self.data for k in keys)

    def delete(self, key):
        with self.cond:
            return self.data.pop(key, None) is not None

    def count(self):
        with self.cond:
            return len(self.data)


class HashStore(Store):
    """A store inside one process (threads share it)."""

    def __init__(self):
        super().__init__()
        self._table = _Table()

    def set(self, key, value):
        self._table.set(key, _as_bytes(value))

    def get(self, key):
        if not self._table.wait([key], self._limit()):
            raise DistStoreError("Wait timeout")
        return self._table.get(key, 0)

    def add(self, key, amount):
        return self._table.add(key, amount)

    def append(self, key, value):
        self._table.append(key, _as_bytes(value))

    def compare_set(self, key, expected_value, desired_value):
        return self._table.compare_set(key, _as_bytes(expected_value), _as_bytes(desired_value))

    def wait(self, keys, timeout=None):
        if not self._table.wait(_keys(keys), self._limit(timeout)):
            raise DistStoreError("Wait timeout")

    def check(self, keys):
        return self._table.check(_keys(keys))

    def delete_key(self, key):
        return self._table.delete(key)

    def num_keys(self):
        return self._table.count()


# -- TCPStore ---------------------------------------------------------------------------------
def _send_fields(sock, fields):
    payload = b"".join(struct.pack("!I", len(f)) + f for f in fields)
    sock.sendall(struct.pack("!I", len(fields)) + payload)


def _recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the store's peer closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv_fields(sock):
    (count,) = struct.unpack("!I", _recv_exact(sock, 4))
    fields = []
    for _ in range(count):
        (n,) = struct.unpack("!I", _recv_exact(sock, 4))
        fields.append(_recv_exact(sock, n))
    return fields


_INIT_KEY = "init/"
_REPLY_GRACE = 5.0  # seconds a reply may take beyond the server's own limit  # torch's master holds one internal key too (num_keys starts at 1)


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        table = self.server.table
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                fields = _recv_fields(sock)
            except (ConnectionError, OSError, struct.error):
                return
            op, args = fields[0], fields[1:]
            try:
                reply = self._do(table, op, args)
            except Exception as exc:  # a malformed request: tell the client, keep serving
                reply = [b"error", str(exc).encode()]
            try:
                _send_fields(sock, reply)
            except OSError:
                return

    @staticmethod
    def _do(table, op, args):
        if op == b"set":
            table.set(args[0].decode(), args[1])
            return [b"ok"]
        if op == b"get":
            limit = float(args[1])
            key = args[0].decode()
            if not table.wait([key], None if limit < 0 else limit):
                return [b"timeout"]
            return [b"ok", table.get(key, 0)]
        if op == b"add":
            return [b"ok", str(table.add(args[0].decode(), int(args[1]))).encode()]
        if op == b"append":
            table.append(args[0].decode(), args[1])
            return [b"ok"]
        if op == b"cas":
            return [b"ok", table.compare_set(args[0].decode(), args[1], args[2])]
        if op == b"wait":
            limit = float(args[0])
            keys = [a.decode() for a in args[1:]]
            return [b"ok" if table.wait(keys, None if limit < 0 else limit) else b"timeout"]
        if op == b"check":
            return [b"ok", b"1" if table.check([a.decode() for a in args]) else b"0"]
        if op == b"delete":
            return [b"ok", b"1" if table.delete(args[0].decode()) else b"0"]
        if op == b"count":
            return [b"ok", str(table.count()).encode()]
        raise ValueError(f"unknown store request {op!r}")


class _Server(socketserver.ThreadingTCPServer):
    """The master's key-value server. Its accept loop is its own (not ``serve_forever``), so
    stopping it never waits on a thread that may be gone: ``stop`` waits at most a second."""
    daemon_threads = True
    allow_reuse_address = True
    timeout = 0.05  # how often the accept loop looks at the stop flag

    def start(self):
        self.table = _Table()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="ember-tcpstore", daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stopping.is_set():
            try:
                self.handle_request()
            except (OSError, ValueError):  # ValueError: the socket was closed under select
                if self._stopping.is_set():
                    return
                time.sleep(self.timeout)  # a failed accept: keep serving the others

    def stop(self):
        self._stopping.set()
        # at interpreter exit the (daemon) thread is frozen and would never finish
        if self._thread.is_alive() and self._thread is not threading.current_thread() and \
                not sys.is_finalizing():
            self._thread.join(1.0)
        self.server_close()


class TCPStore(Store):
    """``TCPStore(host_name, port, world_size=None, is_master=False, timeout=300 s,
    wait_for_workers=True)``: the master serves the keys from a thread (``port=0`` picks a
    free port, read back as ``.port``); every instance, the master's included, is a client.
    With ``wait_for_workers`` the master's constructor returns once ``world_size`` clients
    joined."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        if master_listen_fd is not None:
            raise ValueError("master_listen_fd is not supported by Ember's TCPStore")
        self.host = host_name
        self._world_size = world_size
        self._server = None
        self._lock = threading.Lock()
        if is_master:
            self._server = _Server(("", int(port)), _Handler)
            self._server.start()
            self._server.table.set(_INIT_KEY, b"0")
            port = self._server.server_address[1]
        self.port = int(port)
        self._sock = self._connect()
        self._request(b"add", b"_ember/joined", b"1")
        if is_master and wait_for_workers and world_size:
            self._wait_workers(world_size)

    @property
    def libuvBackend(self):
        return False

    def _connect(self):
        limit = self._limit()
        deadline = time.monotonic() + limit
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port),
                                                timeout=max(0.1, deadline - time.monotonic()))
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as exc:
                if time.monotonic() + delay > deadline:
                    raise DistNetworkError(
                        f"The client socket has timed out after {int(limit * 1000)}ms while "
                        f"trying to connect to ({self.host}, {self.port}).") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _wait_workers(self, world_size):
        deadline = time.monotonic() + self._limit()
        while int(self._request(b"add", b"_ember/joined", b"0")[1]) < world_size:
            if time.monotonic() > deadline:
                raise DistStoreError(f"Timed out after {int(self._limit() * 1000)} ms waiting "
                                     f"for {world_size} clients to join the TCPStore at "
                                     f"{self.host}:{self.port}")
            time.sleep(0.01)

    def _request(self, *fields, waits=None):
        # The server answers a get or wait within its limit (``waits``), anything else at once:
        # a reply later than that (a master that is gone or stuck) is an error, never a hang.
        limit = self._limit() if waits is None else waits
        no_limit = limit is None or limit < 0
        with self._lock:
            try:
                self._sock.settimeout(None if no_limit else limit + _REPLY_GRACE)
                _send_fields(self._sock, list(fields))
                reply = _recv_fields(self._sock)
            except socket.timeout as exc:
                raise DistNetworkError(
                    f"TCPStore at {self.host}:{self.port}: no reply to {fields[0].decode()} "
                    f"within {int((limit + _REPLY_GRACE) * 1000)}ms") from exc
            except (OSError, ConnectionError, struct.error) as exc:
                raise DistNetworkError(f"TCPStore at {self.host}:{self.port}: {exc}") from exc
        if reply[0] == b"error":
            raise DistStoreError(reply[1].decode())
        return reply

    def set(self, key, value):
        self._request(b"set", key.encode(), _as_bytes(value))

    def get(self, key):
        limit = self._limit()
        reply = self._request(b"get", key.encode(), str(-1 if limit is None else limit).encode(),
                              waits=limit)
        if reply[0] == b"timeout":
            raise DistStoreError(f"wait timeout after {int(limit * 1000)}ms, keys: /{key}")
        return reply[1]

    def add(self, key, amount):
        return int(self._request(b"add", key.encode(), str(int(amount)).encode())[1])

    def append(self, key, value):
        self._request(b"append", key.encode(), _as_bytes(value))

    def compare_set(self, key, expected_value, desired_value):
        return self._request(b"cas", key.encode(), _as_bytes(expected_value),
                             _as_bytes(desired_value))[1]

    def wait(self, keys, timeout=None):
        keys = _keys(keys)
        limit = self._limit(timeout)
        reply = self._request(b"wait", str(-1 if limit is None else limit).encode(),
                              *[k.encode() for k in keys],
                              waits=limit)
        if reply[0] == b"timeout":
            raise DistStoreError(f"wait timeout after {int(limit * 1000)}ms, keys: "
                                 + ", ".join(f"/{k}" for k in keys))

    def check(self, keys):
        return self._request(b"check", *[k.encode() for k in _keys(keys)])[1] == b"1"

    def delete_key(self, key):
        return self._request(b"delete", key.encode())[1] == b"1"

    def num_keys(self):
        # the join counter is Ember's bookkeeping, not a user key
        return int(self._request(b"count")[1]) - 1

    def __del__(self):
        # the master's server goes with its store, freeing the port for a later store
        try:
            self._sock.close()
            if self._server is not None:
                self._server.stop()
        except Exception:
            pass  # interpreter shutdown: the socket module may be gone already


# -- FileStore --------------------------------------------------------------------------------
class FileStore(Store):
    """A store in a file that every process opens (a shared filesystem for several machines).
    Each operation locks the file (``fcntl``), reads the records and rewrites them. The file is
    removed when the last of ``world_size`` users closes it (or is collected)."""

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        self.path = file_name
        self._world_size = world_size
        self._closed = False
        with self._locked() as data:
            data["__ember_users"] = str(int(data.get("__ember_users", b"0")) + 1).encode()
            data["__ember_joined"] = str(int(data.get("__ember_joined", b"0")) + 1).encode()
            if 0 < world_size < int(data["__ember_joined"]):
                raise RuntimeError(f"Warning: more than world_size ({world_size}) processes "
                                   f"opened FileStore {file_name}: delete it from a previous "
                                   "run, or use a fresh file")

    class _Lock:
        def __init__(self, store, write=True):
            self.store, self.write = store, write

        def __enter__(self):
            self.fd = os.open(self.store.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            self.data = _decode(_read_all(self.fd))
            return self.data

        def __exit__(self, kind, value, tb):
            try:
                if kind is None and self.write:
                    blob = _encode(self.data)
                    os.lseek(self.fd, 0, os.SEEK_SET)
                    os.ftruncate(self.fd, 0)
                    os.write(self.fd, blob)
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
                os.close(self.fd)

    def _locked(self, write=True):
        return FileStore._Lock(self, write)

    def set(self, key, value):
        with self._locked() as data:
            data[key] = _as_bytes(value)

    def get(self, key):
        self.wait([key])
        with self._locked(False) as data:
            return data[key]

    def add(self, key, amount):
        with self._locked() as data:
            value = int(data.get(key, b"0")) + int(amount)
            data[key] = str(value).encode()
        return value

    def append(self, key, value):
        with self._locked() as data:
            data[key] = data.get(key, b"") + _as_bytes(value)

    def compare_set(self, key, expected_value, desired_value):
        expected, desired = _as_bytes(expected_value), _as_bytes(desired_value)
        with self._locked() as data:
            current = data.get(key)
            if (current is None and expected == b"") or current == expected:
                data[key] = desired
                return desired
            return expected if current is None else current

    def wait(self, keys, timeout=None):
        keys = _keys(keys)
        limit = self._limit(timeout)
        deadline = time.monotonic() + limit
        delay = 0.001
        while not self.check(keys):
            if time.monotonic() > deadline:
                raise DistStoreError("Wait timeout")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def check(self, keys):
        with self._locked(False) as data:
            return all(k in data for k in _keys(keys))

    def delete_key(self, key):
        with self._locked() as data:
            data.pop(key, None)
        return True  # as torch's FileStore, which logs a deletion whether or not the key was

    def num_keys(self):
        with self._locked(False) as data:
            # torch's FileStore counts one internal key; Ember's two bookkeeping keys are not
            return len(data) - 1

    def close(self):
        if self._closed:
            return
        self._closed = True
        remove = False
        with self._locked() as data:
            users = int(data.get("__ember_users", b"1")) - 1
            data["__ember_users"] = str(users).encode()
            joined = int(data.get("__ember_joined", b"0"))
            remove = users <= 0 and (self._world_size <= 0 or joined >= self._world_size)
        if remove:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # interpreter shutdown or the file already gone


def _read_all(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _encode(data):
    parts = [struct.pack("!I", len(data))]
    for k, v in data.items():
        kb = k.encode()
        parts += [struct.pack("!II", len(kb), len(v)), kb, v]
    return b"".join(parts)


def _decode(blob):
    if not blob:
        return {}
    (count,) = struct.unpack_from("!I", blob, 0)
    offset, data = 4, {}
    for _ in range(count):
        kn, vn = struct.unpack_from("!II", blob, offset)
        offset += 8
        key = blob[offset:offset + kn].decode()
        offset += kn
        data[key] = blob[offset:offset + vn]
        offset += vn
    return data


# -- PrefixStore ------------------------------------------------------------------------------
class PrefixStore(Store):
    """Every key of ``store`` under ``prefix + "/"``."""

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key):
        return f"{self.prefix}/{key}"

    @property
    def timeout(self):
        return self.underlying_store.timeout

    def set_timeout(self, timeout):
        self.underlying_store.set_timeout(timeout)

    def set(self, key, value):
        self.underlying_store.set(self._k(key), value)

    def get(self, key):
        return self.underlying_store.get(self._k(key))

    def add(self, key, amount):
        return self.underlying_store.add(self._k(key), amount)

    def append(self, key, value):
        self.underlying_store.append(self._k(key), value)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def wait(self, keys, timeout=None):
        self.underlying_store.wait([self._k(k) for k in _keys(keys)], timeout)

    def check(self, keys):
        return self.underlying_store.check([self._k(k) for k in _keys(keys)])

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self):
        return self.underlying_store.num_keys()
