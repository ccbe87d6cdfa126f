"""ember.cpu against torch.cpu: the same answers, stream selection and capabilities."""
import pytest
import torch

import ember


def test_trivial_answers_match_torch():
    for name in ("is_available", "is_initialized", "device_count", "current_device"):
        assert getattr(ember.cpu, name)() == getattr(torch.cpu, name)()
    assert ember.cpu.synchronize() is None and torch.cpu.synchronize() is None
    assert ember.cpu.synchronize("cpu") is None
    assert ember.cpu.set_device("cpu") is None and torch.cpu.set_device("cpu") is None
    assert sorted(ember.cpu.__all__) == sorted(torch.cpu.__all__)


def test_stream_selection_matches_torch():
    for lib in (torch, ember):
        default = lib.cpu.current_stream()
        s1, s2 = lib.cpu.Stream(), lib.cpu.Stream(priority=0)
        with lib.cpu.stream(s1):
            assert lib.cpu.current_stream() is s1
            with lib.cpu.StreamContext(s2):
                assert lib.cpu.current_stream() is s2
            assert lib.cpu.current_stream() is s1
            with lib.cpu.stream(None):
                assert lib.cpu.current_stream() is s1
        assert lib.cpu.current_stream() is default
        assert s1.wait_stream(s2) is None and s1.record_event() is None
        event = lib.cpu.Event()
        assert event.query() is True and event.record() is None and event.wait() is None
        assert event.synchronize() is None and s1.wait_event(event) is None


def test_capabilities_match_torch():
    ember_caps, torch_caps = ember.cpu.get_capabilities(), torch.cpu.get_capabilities()
    assert ember_caps["architecture"] == torch_caps["architecture"]
    assert ember_caps is ember.cpu.get_capabilities()  # cached, as torch's
    with pytest.raises(TypeError):
        ember_caps["avx2"] = False  # immutable
    shared = [k for k in ember_caps if k in torch_caps and k != "num_logical_cores"]
    assert len(shared) > 1
    assert {k: ember_caps[k] for k in shared} == {k: torch_caps[k] for k in shared}
    assert ember_caps["num_logical_cores"] >= 1


def test_namespace_is_lazy_and_distinct_from_tensor_cpu():
    assert "cpu" in ember._LAZY_SUBMODULES
    assert ember.cpu.__name__ == "ember.cpu"
    assert ember.ones(2).cpu().device == ember.device("cpu")  # the Tensor method is unaffected
