"""ember.cuda and ember.accelerator on a machine without CUDA answer as torch's CPU build does:
the same values, the same exception types and messages (torch 2.13 CPU is installed here)."""
import warnings

import pytest
import torch

import ember

pytestmark = pytest.mark.skipif(ember.cuda.is_available(),
                                reason="checks the no-CUDA behaviour; this machine has CUDA")


@pytest.fixture(autouse=True)
def _no_third_party_accelerator():
    """Without the suite's own "testdev"/"cupyconf" backends, which ember.accelerator would
    report as the machine's accelerator (torch's PrivateUse1 role)."""
    from ember import backends
    saved = {t: backends._FACTORIES[t] for t in backends.registered_device_types()
             if t not in ("cpu", "cuda")}
    for device_type in saved:
        backends.unregister_backend(device_type)
    yield
    for device_type, factory in saved.items():
        backends.register_backend(device_type, factory, replace=True)


def _outcome(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("returns", call())
        except Exception as exc:  # the exception is the answer being compared
            result = ("raises", type(exc), str(exc))
    return result, [(w.category, str(w.message)) for w in caught]


def _same(torch_call, ember_call):
    torch_result, torch_warnings = _outcome(torch_call)
    ember_result, ember_warnings = _outcome(ember_call)
    assert ember_result == torch_result
    assert ember_warnings == torch_warnings


@pytest.mark.parametrize("name", [
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached", "empty_cache", "mem_get_info", "current_stream",
    "default_stream", "synchronize", "is_current_stream_capturing", "graph_pool_handle",
    "CUDAGraph", "Stream", "Event", "get_per_process_memory_fraction", "device_count",
    "is_available", "current_device", "is_tf32_supported", "is_bf16_supported"])
def test_no_argument_calls_match_torch(name):
    _same(getattr(torch.cuda, name), getattr(ember.cuda, name))


def test_memory_stats_are_empty_as_torchs():
    assert ember.cuda.memory_stats() == torch.cuda.memory_stats() == {}
    assert type(ember.cuda.memory_stats()).__name__ == "OrderedDict"
    assert ember.cuda.memory_stats_as_nested_dict() == torch.cuda.memory_stats_as_nested_dict()


@pytest.mark.parametrize("call", [
    lambda m: m.set_per_process_memory_fraction(0.5),
    lambda m: m.set_stream(None),
    lambda m: m.nvtx.range_push("step"),
    lambda m: m.nvtx.range_pop(),
    lambda m: m.nvtx.mark("here"),
    lambda m: m.can_device_access_peer(0, 1),
    lambda m: m.get_stream_from_external(0),
], ids=["set_per_process_memory_fraction", "set_stream_none", "range_push", "range_pop", "mark",
        "can_device_access_peer", "get_stream_from_external"])
def test_calls_with_arguments_match_torch(call):
    _same(lambda: call(torch.cuda), lambda: call(ember.cuda))


def test_nvtx_range_start_raises_the_nvtx_error():
    # torch's CPU stub lacks rangeStartA (an AttributeError); Ember gives the stub's own message
    with pytest.raises(AttributeError):
        torch.cuda.nvtx.range_start("step")
    with pytest.raises(RuntimeError, match="NVTX functions not installed"):
        ember.cuda.nvtx.range_start("step")


def test_nvtx_range_context_raises_on_entry_as_torchs():
    def enter(module):
        with module.nvtx.range("epoch {}", 3):
            pass
    _same(lambda: enter(torch.cuda), lambda: enter(ember.cuda))


def test_stream_context_of_none_does_nothing():
    with ember.cuda.stream(None) as entered, torch.cuda.stream(None) as torch_entered:
        assert entered is torch_entered is None


def test_graph_context_needs_cuda():
    _same(lambda: torch.cuda.graph(None), lambda: ember.cuda.graph(None))


@pytest.mark.parametrize("name", ["reset_peak_memory_stats", "reset_accumulated_memory_stats",
                                  "reset_max_memory_allocated", "memory_summary"])
def test_resets_and_summary_raise_where_torch_does(name):
    # torch's CPU build fails here only by accident of its bindings (an AttributeError on
    # torch._C, a KeyError on the empty stats); Ember raises the CPU-build error torch uses
    # everywhere else, so a script's failure says why.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(Exception):
            getattr(torch.cuda, name)()
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            getattr(ember.cuda, name)()


def test_out_of_memory_error_is_a_runtime_error_as_torchs():
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(ember.cuda.OutOfMemoryError, RuntimeError)
    assert ember.cuda.memory.OutOfMemoryError is ember.cuda.OutOfMemoryError


def test_make_graphed_callables_says_why_it_is_absent():
    with pytest.raises(NotImplementedError, match="captured backward"):
        ember.cuda.make_graphed_callables(lambda x: x, (ember.ones(2),))


@pytest.mark.parametrize("name", [
    "current_stream", "empty_cache", "get_memory_info", "memory_allocated", "max_memory_allocated",
    "memory_reserved", "max_memory_reserved", "memory_stats", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "get_device_capability", "current_device_index",
    "synchronize", "empty_host_cache", "device_count", "is_available", "current_accelerator"])
def test_accelerator_matches_torch(name):
    _same(getattr(torch.accelerator, name), getattr(ember.accelerator, name))


def test_accelerator_graph_needs_an_accelerator():
    _same(lambda: torch.accelerator.Graph(), lambda: ember.accelerator.Graph())


def test_tf32_flag_is_the_matmul_precision():
    switches = ember._type_info_and_switches
    previous = switches._matmul_precision, switches._matmul_precision_chosen
    try:
        ember.backends.cuda.matmul.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
        ember.set_float32_matmul_precision("highest")
        assert ember.backends.cuda.matmul.allow_tf32 is False
    finally:
        switches._matmul_precision, switches._matmul_precision_chosen = previous
