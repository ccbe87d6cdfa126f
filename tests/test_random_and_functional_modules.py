"""``ember.random`` as ``torch.random``: the same names, and ``fork_rng`` undoing the block's
draws on the default stream (also when the block raises), as torch's does."""
import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_fork_rng_restores_the_stream(lib):
    lib.manual_seed(3)
    expected = lib.rand(4)
    lib.manual_seed(3)
    with lib.random.fork_rng():
        inside = lib.rand(4)
        assert lib.equal(inside, expected)  # the fork starts from the current state
    assert lib.equal(lib.rand(4), expected)  # and leaves it where it was


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_fork_rng_restores_after_an_exception_and_can_be_disabled(lib):
    lib.manual_seed(5)
    expected = lib.rand(3)
    lib.manual_seed(5)
    with pytest.raises(ValueError):
        with lib.random.fork_rng():
            lib.rand(10)
            raise ValueError("inside")
    assert lib.equal(lib.rand(3), expected)
    lib.manual_seed(5)
    with lib.random.fork_rng(enabled=False):
        lib.rand(3)
    assert not lib.equal(lib.rand(3), expected)


def test_same_public_names_as_torch_random():
    missing = [n for n in torch.random.__all__ if n != "thread_safe_generator"
               and not hasattr(ember.random, n)]
    assert missing == []
    assert ember.random.manual_seed is ember.manual_seed


def test_unknown_device_type_raises_as_torch():
    with pytest.raises(RuntimeError) as theirs:
        with torch.random.fork_rng(device_type="nosuchdevice"):
            pass
    with pytest.raises(RuntimeError) as ours:
        with ember.random.fork_rng(device_type="nosuchdevice"):
            pass
    assert "at start of device string: nosuchdevice" in str(theirs.value)
    assert "at start of device string: nosuchdevice" in str(ours.value)


def test_torch_functional_module_names_the_top_level_functions():
    import torch.functional
    assert set(ember.functional.__all__) <= set(torch.functional.__all__)
    for name in ember.functional.__all__:
        assert getattr(ember.functional, name) is getattr(ember, name)
    x = ember.randn(2, 3)
    assert ember.functional.einsum("ij->ji", x).shape == (3, 2)
