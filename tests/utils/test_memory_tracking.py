"""ember.utils.memory.track (live tensor bytes by op and module) and the CUDA allocation
history (ember.cuda.memory._record_memory_history / _snapshot / _dump_snapshot)."""
import pickle
import types

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.cuda import memory as cuda_memory
from ember.utils import memory
from ember.utils.checkpoint import checkpoint


def test_known_allocations_sum_and_views_cost_nothing():
    weight = ember.ones(50, 20)
    with memory.track() as t:
        weight.t()                                # a view of memory from before: not counted
        a = ember.ones(1000)                      # 4000 bytes
        b = a * 2                                 # 4000
        view, tail = b.t(), b[1:]                 # views: nothing new
        c = ember.empty(10, dtype=ember.float64)  # 80
        b.add_(1)                                 # in place: nothing new
        del b, view, tail                         # b's memory is held by nothing now
    assert t.allocated_bytes == 8080
    assert t.peak == 8080
    assert t.current == 4080 and t.freed_bytes == 4000
    rows = {r.name: r for r in t.by_op()}
    assert rows["mul"].allocated_bytes == 4000 and rows["mul"].live_bytes == 0
    assert rows["ones"].live_bytes == 4000 and rows["empty"].allocations == 1
    assert [entry[1] for entry in t.timeline] == [4000, 8000, 8080, 4080]
    del a, c
    assert t.current == 4080  # frees after the block are not recorded


class _Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


class _MLP(nn.Module):
    def __init__(self, d, n, use_checkpoint):
        super().__init__()
        self.blocks = nn.ModuleList([_Block(d) for _ in range(n)])
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
        return x


def _train_step_peak(use_checkpoint):
    ember.manual_seed(0)
    model = _MLP(16, 6, use_checkpoint)
    x = ember.randn(128, 16)
    with memory.track(model) as t:
        model(x).sum().backward()
    return t, model


def test_activation_checkpointing_cuts_peak_memory():
    plain, model = _train_step_peak(False)
    checkpointed, _ = _train_step_peak(True)
    # Six blocks each keep a (128, 64) hidden activation twice (linear's and gelu's outputs,
    # 32 KiB each) for the backward; checkpointed, only one block's are alive at a time.
    assert checkpointed.peak < 0.6 * plain.peak
    # What the step leaves behind is exactly the parameters' gradients, either way.
    grads = sum(p.numel() * 4 for p in model.parameters())
    assert plain.live_bytes_at_exit == checkpointed.live_bytes_at_exit == grads
    modules = {r.name for r in plain.by_module()}
    assert {"blocks.0.fc1", "blocks.5.act"} <= modules
    inclusive = {r.name: r for r in plain.by_module(inclusive=True)}
    direct = {r.name: r for r in plain.by_module()}
    assert inclusive["blocks.0"].allocated_bytes >= direct["blocks.0.fc1"].allocated_bytes + \
        direct["blocks.0.act"].allocated_bytes
    ops = {r.name for r in plain.by_op()}
    assert {"linear", "gelu", "GeluBackward0"} <= ops
    table = plain.summary(row_limit=5)
    assert table.startswith("Peak live tensor memory:") and "blocks.5.act" in table


def test_nothing_is_swapped_outside_a_block():
    from ember import _tensor
    from ember.autograd import engine
    from ember.ops import elementwise
    before = (elementwise._wrap, engine._call_node, ember.mul, ember.Tensor.__mul__)
    with memory.track():
        assert elementwise._wrap is not before[0]
        with pytest.raises(RuntimeError, match="already recording"):
            memory.track().__enter__()
    assert (elementwise._wrap, engine._call_node, ember.mul, ember.Tensor.__mul__) == before
    assert elementwise._wrap is _tensor._wrap


# ---- CUDA allocation history, on a stand-in for CuPy's pool ----------------------------------

class _PoolPointer:
    """The pool's pointer: its block goes back to the pool when it dies, as CuPy's does."""

    def __init__(self, pool, ptr, size):
        self.pool, self.ptr, self.size = pool, ptr, size

    def __del__(self):
        self.pool.used -= self.size


class _Pool:
    def __init__(self):
        self.used, self.next = 0, 4096

    def malloc(self, size):
        size = -(-size // 512) * 512
        self.used += size
        self.next += size
        return _PoolPointer(self, self.next - size, size)

    def used_bytes(self):
        return self.used

    def total_bytes(self):
        return self.used

    def get_limit(self):
        return 0


class _UnownedMemory:  # cupy.cuda.UnownedMemory(ptr, size, owner, device_id)
    def __init__(self, ptr, size, owner, device_id):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id


class _MemoryPointer:  # cupy.cuda.MemoryPointer(mem, offset)
    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset


def _fake_cupy(pool):
    cuda = types.SimpleNamespace(
        get_allocator=lambda: pool.malloc, UnownedMemory=_UnownedMemory,
        MemoryPointer=_MemoryPointer, get_current_stream=lambda: types.SimpleNamespace(ptr=7),
        runtime=types.SimpleNamespace(getDevice=lambda: 0, memGetInfo=lambda: (1 << 30,) * 2),
        memory=types.SimpleNamespace(OutOfMemoryError=MemoryError))
    return types.SimpleNamespace(get_default_memory_pool=lambda: pool, cuda=cuda)


@pytest.fixture
def allocator(monkeypatch):
    pool = _Pool()
    allocator = cuda_memory.TrackingAllocator(_fake_cupy(pool))
    monkeypatch.setattr(cuda_memory, "_allocator_or_none", lambda: allocator)
    return allocator


def _allocate_two(allocator):
    first = allocator(1000)
    second = allocator(3000)
    return first, second


def test_history_records_allocations_frees_and_live_blocks(allocator, tmp_path):
    cuda_memory._record_memory_history(max_entries=100)
    first, second = _allocate_two(allocator)
    first_addr = first.ptr
    assert allocator.pool.used == 512 * 2 + 512 * 6
    del first
    assert allocator.pool.used == 512 * 6  # the block went back to the pool at once
    snapshot = cuda_memory._snapshot()
    (segment,) = snapshot["segments"]
    assert segment["address"] == second.ptr and segment["total_size"] == 3072
    (block,) = segment["blocks"]
    assert block["requested_size"] == 3000 and block["state"] == "active_allocated"
    assert block["frames"][0]["name"] == "_allocate_two"
    trace = snapshot["device_traces"][0]
    assert [(e["action"], e["addr"], e["size"]) for e in trace] == [
        ("alloc", first_addr, 1024), ("alloc", second.ptr, 3072),
        ("free_requested", first_addr, 1024), ("free_completed", first_addr, 1024)]
    assert all(e["stream"] == 7 and e["time_us"] > 0 for e in trace)
    assert cuda_memory.memory_snapshot() == snapshot["segments"]
    path = tmp_path / "snapshot.pickle"
    cuda_memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        assert pickle.load(f)["segments"] == snapshot["segments"]
    # Stopped: new allocations are the pool's own pointers again, nothing more is traced.
    cuda_memory._record_memory_history(enabled=None)
    third = allocator(512)
    assert isinstance(third, _PoolPointer)
    del second
    assert len(cuda_memory._snapshot()["device_traces"][0]) == 4


def test_history_modes(allocator):
    cuda_memory._record_memory_history(enabled="state", context=None)
    kept = allocator(100)
    snapshot = cuda_memory._snapshot()
    assert snapshot["device_traces"][0] == []
    assert snapshot["segments"][0]["blocks"][0]["frames"] == []
    cuda_memory._record_memory_history(enabled="all", max_entries=2, clear_history=True)
    for _ in range(3):
        allocator(100)  # each freed at once: alloc, free_requested, free_completed
    actions = [e["action"] for e in cuda_memory._snapshot()["device_traces"][0]]
    assert actions == ["free_requested", "free_completed"]
    with pytest.raises(ValueError, match="context"):
        cuda_memory._record_memory_history(context="bogus")
    del kept


def test_history_without_cuda_raises_as_torch_cpu():
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    for call in (cuda_memory._record_memory_history, cuda_memory._snapshot,
                 ember.cuda.memory_snapshot):
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            call()


@pytest.mark.cuda
def test_history_on_the_gpu(tmp_path):
    cuda_memory._record_memory_history()
    try:
        x = ember.randn(256, 256, device="cuda")
        y = (x @ x).relu()
        del x
        snapshot = cuda_memory._snapshot()
        actions = [e["action"] for e in snapshot["device_traces"][0]]
        assert "alloc" in actions and "free_completed" in actions
        assert any(b["size"] >= y.numel() * 4 for s in snapshot["segments"] for b in s["blocks"])
        cuda_memory._dump_snapshot(str(tmp_path / "s.pickle"))
    finally:
        cuda_memory._record_memory_history(enabled=None)
    assert np.isfinite(y.cpu().numpy()).all()


# ---- the same, end to end: Ember's real CUDA backend over the CuPy conformance device -------

class _ConformanceUnownedMemory:
    """``cupy.cuda.UnownedMemory(ptr, size, owner, device_id)``, which the conformance
    runtime does not emulate; its bytes are the owner's (the pool's pointer)."""

    def __init__(self, ptr, size, owner, device_id=-1):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    @property
    def _storage(self):
        return self.owner.pointer.mem._storage


@pytest.fixture
def conformance_cuda(monkeypatch):
    import gc
    from ember import backends
    from ember.backends.cupy_backend import CupyBackend
    strict_cupy = pytest.importorskip("conformance.strict_cupy")
    if not hasattr(strict_cupy.xp.cuda, "set_allocator"):
        pytest.skip("the conformance device does not emulate cupy.cuda's runtime")
    monkeypatch.setattr(strict_cupy.xp.cuda, "UnownedMemory", _ConformanceUnownedMemory,
                        raising=False)
    saved = dict(backends._FACTORIES)
    for device_type in [t for t in saved if t not in ("cpu", "cuda")]:
        backends.unregister_backend(device_type)
    cuda_memory._ALLOCATORS.pop(id(strict_cupy.xp), None)
    strict_cupy.xp.cuda.set_allocator(strict_cupy.xp.get_default_memory_pool().malloc)
    backends.register_backend(
        "cuda", lambda index: CupyBackend(index, modules=(strict_cupy.xp, strict_cupy.cupyx)),
        replace=True)
    gc.collect()
    gc.disable()  # the emulated pool is shared: nothing freed by the collector mid-count
    try:
        yield
    finally:
        gc.enable()
        allocator = cuda_memory._ALLOCATORS.get(id(strict_cupy.xp))
        if allocator is not None:
            allocator.history = None
        backends.unregister_backend("cuda")
        for device_type, factory in saved.items():
            backends.register_backend(device_type, factory, replace=True)


def test_history_of_ember_cuda_tensors_on_the_conformance_device(conformance_cuda, tmp_path):
    ember.zeros(1, device="cuda")  # starts the backend and its tracking allocator
    cuda_memory._record_memory_history()
    x = ember.ones(1000, device="cuda")             # 4000 bytes -> 4096
    y = x * 2
    before = ember.cuda.memory_allocated()
    del x
    assert ember.cuda.memory_allocated() == before - 4096  # freed to the pool at once
    snapshot = cuda_memory._snapshot()
    sizes = [b["size"] for s in snapshot["segments"] for b in s["blocks"]]
    assert 4096 in sizes and len(snapshot["segments"]) == 1
    actions = [(e["action"], e["size"]) for e in snapshot["device_traces"][0]]
    assert actions.count(("alloc", 4096)) == 2
    assert ("free_completed", 4096) in actions
    names = {f["name"] for s in snapshot["segments"] for b in s["blocks"] for f in b["frames"]}
    assert "test_history_of_ember_cuda_tensors_on_the_conformance_device" in names
    cuda_memory._dump_snapshot(str(tmp_path / "s.pickle"))
    cuda_memory._record_memory_history(enabled=None)
    assert float(y.sum().item()) == 2000.0
