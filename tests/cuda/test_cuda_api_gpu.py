"""ember.cuda on a real GPU: the semantics torch.cuda documents, checked on CuPy's runtime.
Skipped without a CUDA device (conftest's ``cuda`` marker)."""
import numpy as np
import pytest

import ember

pytestmark = pytest.mark.cuda


def test_memory_allocated_grows_by_a_tensors_bytes_and_returns_on_free():
    ember.cuda.synchronize()
    before = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, dtype=ember.float32, device="cuda")  # 4 MiB: a multiple of 512
    assert ember.cuda.memory_allocated() - before == x.numel() * x.element_size()
    assert ember.cuda.max_memory_allocated() >= before + (4 << 20)
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    del x
    assert ember.cuda.memory_allocated() == before
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == before
    reserved = ember.cuda.memory_reserved()
    ember.cuda.empty_cache()  # the freed 4 MiB block goes back to the driver
    assert ember.cuda.memory_reserved() <= reserved - (4 << 20)
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == before
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total == ember.cuda.get_device_properties().total_memory


def test_an_impossible_allocation_raises_torchs_out_of_memory_error():
    import cupy
    total = ember.cuda.mem_get_info()[1]
    with pytest.raises(ember.cuda.OutOfMemoryError,
                       match=r"^CUDA out of memory\. Tried to allocate [\d.]+ GiB\. GPU 0 has a "
                             r"total capacity of [\d.]+ GiB of which .* is free\.") as info:
        ember.empty(2 * total, dtype=ember.uint8, device="cuda")
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value.__cause__, cupy.cuda.memory.OutOfMemoryError)
    assert ember.cuda.memory_stats()["num_ooms"] >= 1


def test_ops_queue_on_the_current_stream_and_events_time_them():
    import cupy
    s = ember.cuda.Stream()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    assert ember.cuda.default_stream().cuda_stream == 0
    x = ember.randn(1024, 1024, device="cuda")
    s.wait_stream(ember.cuda.current_stream())
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        assert cupy.cuda.get_current_stream().ptr == s.cuda_stream
        start.record()
        for _ in range(10):
            y = x @ x
        end.record()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) > 0
    ember.cuda.current_stream().wait_stream(s)
    np.testing.assert_allclose(y.cpu().numpy(), (x.cpu() @ x.cpu()).numpy(), rtol=1e-3, atol=1e-2)


def test_tf32_setting_changes_float32_matmul_precision():
    major, _ = ember.cuda.get_device_capability()
    if major < 8:
        pytest.skip("TF32 needs compute capability 8.0")
    a = ember.randn(512, 512, device="cuda")
    exact = a.cpu().double() @ a.cpu().double()
    switches = ember._type_info_and_switches
    previous = switches._matmul_precision, switches._matmul_precision_chosen
    try:
        ember.set_float32_matmul_precision("highest")
        full = (a @ a).cpu().double()
        ember.backends.cuda.matmul.allow_tf32 = True
        tf32 = (a @ a).cpu().double()
    finally:
        switches._matmul_precision, switches._matmul_precision_chosen = previous
    full_err = (full - exact).abs().max().item()
    tf32_err = (tf32 - exact).abs().max().item()
    assert tf32_err > 10 * full_err  # TF32 keeps 10 mantissa bits, float32 23


def test_graph_replay_reproduces_a_captured_step():
    static_x = ember.zeros(256, device="cuda")
    w = ember.randn(256, 256, device="cuda")
    s = ember.cuda.Stream()
    s.wait_stream(ember.cuda.current_stream())
    with ember.cuda.stream(s):  # warm up outside capture, as torch's docs advise
        static_y = (static_x @ w).relu()
    ember.cuda.current_stream().wait_stream(s)
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g):
        assert ember.cuda.is_current_stream_capturing()
        static_y = (static_x @ w).relu()
    assert not ember.cuda.is_current_stream_capturing()
    for _ in range(3):
        x = ember.randn(256, device="cuda")
        static_x.copy_(x)
        g.replay()
        ember.cuda.synchronize()
        expected = (x.cpu() @ w.cpu()).relu()
        np.testing.assert_allclose(static_y.cpu().numpy(), expected.numpy(), rtol=1e-3, atol=1e-3)
    assert g.pool() is not None
    g.reset()


def test_capture_on_the_default_stream_is_refused():
    g = ember.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()


def test_nvtx_ranges_nest():
    assert ember.cuda.nvtx.range_push("outer") == 0
    assert ember.cuda.nvtx.range_push("inner") == 1
    assert ember.cuda.nvtx.range_pop() == 1
    assert ember.cuda.nvtx.range_pop() == 0
    with ember.cuda.nvtx.range("epoch {}", 1):
        ember.cuda.nvtx.mark("step")


def test_accelerator_answers_for_cuda():
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.device_count() == ember.cuda.device_count()
    assert ember.accelerator.current_stream() == ember.cuda.current_stream()
    assert ember.accelerator.memory_allocated() == ember.cuda.memory_allocated()
    assert ember.accelerator.get_memory_info()[1] == ember.cuda.mem_get_info()[1]


def test_memory_freed_inside_a_capture_is_not_handed_to_other_tensors():
    static_x = ember.ones(1 << 16, device="cuda")
    s = ember.cuda.Stream()
    g = ember.cuda.CUDAGraph()
    with ember.cuda.graph(g, stream=s):
        scratch = static_x * 3  # freed inside the capture, rewritten by every replay
        static_y = scratch + 1
        del scratch
    others = [ember.zeros(1 << 16, device="cuda") for _ in range(8)]
    g.replay()
    ember.cuda.synchronize()
    assert (static_y.cpu().numpy() == 4).all()
    for other in others:
        assert (other.cpu().numpy() == 0).all()
    g.reset()
