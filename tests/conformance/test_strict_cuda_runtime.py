"""The conformance device's cupy.cuda / cupy.random / pinned-memory emulation keeps CuPy 14.2's
API (checked against the spec CuPy wrote) and the semantics CuPy documents."""
import inspect
import time

import numpy as np
import pytest

from conformance import strict_cuda_runtime as rt
from conformance.strict_cupy import SPEC, cupyx, xp

cuda = xp.cuda

EMULATED_CLASSES = {
    "cupy.cuda.Device": rt.Device, "cupy.cuda.Stream": rt.Stream,
    "cupy.cuda.ExternalStream": rt.ExternalStream, "cupy.cuda.Event": rt.Event,
    "cupy.cuda.MemoryPool": rt.MemoryPool, "cupy.cuda.PinnedMemoryPool": rt.PinnedMemoryPool,
    "cupy.cuda.MemoryPointer": rt.MemoryPointer,
    "cupy.cuda.PinnedMemoryPointer": rt.PinnedMemoryPointer,
    "cupy.cuda.PinnedMemory": rt.PinnedMemory, "cupy.cuda.graph.Graph": rt.Graph,
    "cupy.random.RandomState": rt.RandomState, "cupy.random._generator_api.Generator":
        rt.Generator, "cupy.random.BitGenerator": rt.BitGenerator, "cupy.random.XORWOW": rt.XORWOW,
}
EMULATED_FUNCTIONS = {
    "cupy.cuda": ["get_current_stream", "get_elapsed_time", "set_allocator", "get_allocator",
                  "set_pinned_memory_allocator", "alloc_pinned_memory", "alloc"],
    "cupy.cuda.runtime": ["getDeviceCount", "getDevice", "setDevice", "memGetInfo",
                          "getDeviceProperties", "deviceSynchronize", "pointerGetAttributes",
                          "pointerGetMemoryType", "runtimeGetVersion", "driverGetVersion"],
    "cupy.cuda.nvtx": ["RangePush", "RangePop", "Mark", "RangePushC", "MarkC", "RangeStart",
                       "RangeEnd"],
    "cupyx": ["empty_pinned", "zeros_pinned", "empty_like_pinned", "zeros_like_pinned"],
    "cupy": ["get_default_memory_pool", "get_default_pinned_memory_pool"],
}
_MODULE_OF = {"cupy.cuda": rt.cuda, "cupy.cuda.runtime": rt.runtime, "cupy.cuda.nvtx": rt.nvtx,
              "cupyx": rt, "cupy": rt}


def _params(func):
    return [p.name for p in inspect.signature(func).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")]


@pytest.mark.parametrize("qualname", sorted(EMULATED_CLASSES))
def test_emulated_class_members_are_cupys(qualname):
    record, cls = SPEC["classes"][qualname], EMULATED_CLASSES[qualname]
    members = record["members"]
    for name, value in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        assert name in members or name == "__init__", f"{qualname}.{name} is not CuPy's"
        spec = members.get(name) if name != "__init__" else record["init"]
        if spec and spec.get("kind", "method") == "method" and callable(value) and \
                spec["params"] != "unknown" and not spec["kwargs"] and not spec["varargs"]:
            assert _params(value) == spec["params"], f"{qualname}.{name}"


@pytest.mark.parametrize("module", sorted(EMULATED_FUNCTIONS))
def test_emulated_functions_have_cupys_signatures(module):
    for name in EMULATED_FUNCTIONS[module]:
        spec = SPEC["modules"][module][name]
        assert spec["kind"] == "function"
        assert _params(getattr(_MODULE_OF[module], name)) == spec["params"], f"{module}.{name}"


def test_random_module_functions_are_cupys():
    for name, record in SPEC["modules"]["cupy.random"].items():
        if record["kind"] == "function" and name not in ("bytes", "multinomial",
                                                         "random_integers"):
            assert callable(getattr(xp.random, name)), name


def test_streams_become_current_inside_with_and_restore():
    assert cuda.get_current_stream() is cuda.Stream.null
    assert cuda.Stream.null.ptr == 0 and cuda.Stream.ptds.ptr == 2
    s1, s2 = cuda.Stream(), cuda.Stream(non_blocking=True)
    assert s1.ptr != s2.ptr and s2.is_non_blocking and s1.device_id == 0
    with s1:
        assert cuda.get_current_stream() is s1
        with s2:
            assert cuda.get_current_stream() is s2
        assert cuda.get_current_stream() is s1
    assert cuda.get_current_stream() is cuda.Stream.null
    assert s1.done and s1.record().done


def test_events_time_between_records():
    start, end = cuda.Event(), cuda.Event()
    start.record()
    time.sleep(0.01)
    end.record()
    end.synchronize()
    elapsed = cuda.get_elapsed_time(start, end)
    assert isinstance(elapsed, float) and 5.0 < elapsed < 5000.0
    untimed = cuda.Event(disable_timing=True)
    untimed.record()
    with pytest.raises(cuda.runtime.CUDARuntimeError, match="cudaErrorInvalidResourceHandle"):
        cuda.get_elapsed_time(start, untimed)
    with pytest.raises(cuda.runtime.CUDARuntimeError, match="cudaErrorInvalidResourceHandle"):
        cuda.get_elapsed_time(cuda.Event(), end)  # never recorded


def test_device_arrays_count_in_the_pool_while_alive():
    pool = xp.get_default_memory_pool()
    before = pool.used_bytes()
    a = xp.zeros(1000, dtype=np.float32)  # 4000 bytes, rounded up to 4096 as CuPy rounds
    assert pool.used_bytes() - before == 4096
    view = a[10:]
    assert pool.used_bytes() - before == 4096  # a view allocates nothing
    del a, view
    assert pool.used_bytes() == before and pool.total_bytes() >= before + 4096
    cached = pool.n_free_blocks()
    pool.free_all_blocks()
    assert pool.n_free_blocks() == 0 <= cached and pool.total_bytes() == pool.used_bytes()


def test_a_pool_limit_raises_cupys_out_of_memory_error():
    pool = rt.MemoryPool()
    cuda.set_allocator(pool.malloc)
    try:
        pool.set_limit(size=8192)
        assert pool.get_limit() == 8192
        kept = xp.ones(1024, dtype=np.float32)
        assert pool.used_bytes() == 4096
        with pytest.raises(cuda.memory.OutOfMemoryError,
                           match=r"Out of memory allocating 8,192 bytes \(allocated so far: "
                                 r"4,096 bytes, limit set to: 8,192 bytes\)\.") as info:
            xp.ones(2048, dtype=np.float32)
        assert isinstance(info.value, MemoryError)
        with pytest.raises(ValueError):
            pool.set_limit(size=1, fraction=0.5)
        del kept
    finally:
        cuda.set_allocator(xp.get_default_memory_pool().malloc)


def test_mem_get_info_answers_from_the_configured_capacity():
    previous = rt.configure(total_memory=1 << 20)
    try:
        free, total = cuda.runtime.memGetInfo()
        assert total == 1 << 20
        xp.get_default_memory_pool().free_all_blocks()
        free, _ = cuda.runtime.memGetInfo()
        a = xp.zeros(1 << 16, dtype=np.uint8)
        assert cuda.runtime.memGetInfo()[0] == free - (1 << 16)
        with pytest.raises(cuda.memory.OutOfMemoryError):
            xp.zeros(1 << 21, dtype=np.uint8)  # more than the device has
        del a
        assert cuda.Device(0).mem_info[1] == 1 << 20
    finally:
        rt.configure(*previous)
        xp.get_default_memory_pool().free_all_blocks()


def test_devices_and_runtime_queries():
    assert cuda.runtime.getDeviceCount() == 1 and cuda.runtime.getDevice() == 0
    props = cuda.runtime.getDeviceProperties(0)
    assert props["totalGlobalMem"] == rt._Config.total_memory and b"not a GPU" in props["name"]
    assert cuda.Device(0).compute_capability == "90"
    with pytest.raises(cuda.runtime.CUDARuntimeError,
                       match="cudaErrorInvalidDevice: invalid device ordinal"):
        cuda.runtime.setDevice(1)
    previous = rt.configure(device_count=2)
    try:
        with cuda.Device(1):
            assert cuda.runtime.getDevice() == 1
            assert cuda.get_current_stream() is cuda.Stream.null
        assert cuda.runtime.getDevice() == 0
    finally:
        rt.configure(*previous)


def test_pinned_memory_is_recognised_and_pooled():
    pool = xp.get_default_pinned_memory_pool()
    host = cupyx.empty_pinned((4, 3), dtype=np.float32)
    assert isinstance(host, np.ndarray) and host.shape == (4, 3) and host.dtype == np.float32
    memory_type = cuda.runtime.pointerGetAttributes(host.ctypes.data).type
    assert memory_type == cuda.runtime.memoryTypeHost
    assert cuda.runtime.pointerGetMemoryType(np.empty(3).ctypes.data) == \
        cuda.runtime.memoryTypeUnregistered
    assert cupyx.zeros_pinned(5).tolist() == [0.0] * 5
    free_before = pool.n_free_blocks()
    del host
    assert pool.n_free_blocks() == free_before + 1
    pointer = cuda.alloc_pinned_memory(100)
    assert pointer.size() >= 100 and pointer.ptr == pointer.mem.ptr


def test_nvtx_ranges_are_logged():
    rt.nvtx.log.clear()
    cuda.nvtx.RangePush("step")
    cuda.nvtx.Mark("inside")
    cuda.nvtx.RangePop()
    assert rt.nvtx.log == [("push", "step"), ("mark", "inside"), ("pop", "step")]


def test_stream_capture_replays_over_current_memory():
    x = xp.asarray(np.array([1.0, 2.0], dtype=np.float32))
    out = xp.zeros(2, dtype=np.float32)
    stream = cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        assert stream.is_capturing()
        y = x * 2 + 1
        out[...] = xp.exp(y) - y
        with pytest.raises(cuda.runtime.CUDARuntimeError,
                           match="cudaErrorStreamCaptureUnsupported"):
            y.get()
        graph = stream.end_capture()
    assert not stream.is_capturing()
    x[...] = xp.asarray(np.array([0.0, 0.5], dtype=np.float32))
    graph.launch(stream=stream)
    host_y = np.array([0.0, 0.5], dtype=np.float32) * 2 + 1
    np.testing.assert_allclose(out.get(), np.exp(host_y) - host_y, rtol=1e-6)
    np.testing.assert_allclose(y.get(), host_y)
    with pytest.raises(cuda.runtime.CUDARuntimeError, match="cudaErrorStreamCaptureUnsupported"):
        cuda.Stream.null.begin_capture()


def test_random_state_draws_with_cupys_dtypes():
    xp.random.seed(1)
    a = xp.random.rand(3, 2, dtype=np.float32)
    assert isinstance(a, xp.ndarray) and a.shape == (3, 2) and a.dtype == np.float32
    xp.random.seed(1)
    assert xp.random.rand(3, 2, dtype=np.float32).get().tolist() == a.get().tolist()
    assert xp.random.randn(4).dtype == np.float64
    assert xp.random.randint(0, 5, size=10, dtype=np.int32).dtype == np.int32
    with pytest.raises(TypeError, match="float32 and float64"):
        xp.random.normal(size=3, dtype=np.float16)
    generator = xp.random.default_rng(0)
    assert generator.random(4, dtype=np.float32).dtype == np.float32
    assert generator.integers(0, 3, size=5).get().max() < 3
    raw = xp.random.XORWOW(0).random_raw(4)
    assert raw.shape == (4,) and int(raw.get().max()) < 2 ** 32
