"""Tensors moving between devices as torch's do (issue 16): ``to``/``cuda``/``cpu`` with
``non_blocking``, pinned host memory, ``Module.to``, the mixed-device error, and the backend
capabilities that replace hard-coded "cuda" checks (DLPack device, shared memory).

The accelerator here is the CuPy conformance device ("cupyconf", the ``cupyconf_accelerator``
fixture): the real CupyBackend over a NumPy-backed stand-in for CuPy 14.2. It is a
conformance device, not a GPU: it proves which CuPy calls the transfers make and what they
answer, not that a copy overlaps anything. Tests that need a GPU are marked ``cuda``.
"""
import importlib.util
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
from ember.utils.dlpack import DLDeviceType


def _values(t):
    return t.cpu().numpy() if t.device.type != "cpu" else t.numpy()


# ---- to / cpu / cuda ------------------------------------------------------------------------

def test_legacy_type_names_say_the_device(cupyconf_accelerator):
    # torch: a CUDA tensor's type() is 'torch.cuda.FloatTensor', a meta one's
    # 'torch.meta.FloatTensor'; 'torch.FloatTensor' as a target means a CPU tensor.
    assert torch.empty(2, device="meta").type() == "torch.meta.FloatTensor"
    x = ember.ones(2, device=cupyconf_accelerator)
    assert x.type() == "ember.cupyconf.FloatTensor"
    back = x.type("torch.DoubleTensor")
    assert (back.device.type, back.dtype) == ("cpu", ember.float64)
    assert x.type(ember.float64).device == x.device
    with pytest.raises(ValueError, match="invalid type: 'torch.meta.FloatTensor'"):
        ember.ones(2).type("torch.meta.FloatTensor")


@pytest.mark.parametrize("non_blocking", [False, True])
def test_round_trip_through_the_accelerator(cupyconf_accelerator, non_blocking):
    x = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    source = x.pin_memory() if non_blocking else x
    on_device = source.to(cupyconf_accelerator, non_blocking=non_blocking)
    assert on_device.device == ember.device("cupyconf", 0)
    assert on_device.dtype == ember.float32
    back = on_device.to("cpu", non_blocking=non_blocking)
    if non_blocking:
        ember.accelerator.synchronize()
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert back.device == ember.device("cpu")


def test_non_blocking_copy_to_the_host_lands_in_pinned_memory(cupyconf_accelerator):
    # torch: a device-to-host copy with non_blocking=True allocates the result pinned.
    y = ember.arange(6.0).reshape(2, 3).to(cupyconf_accelerator)
    assert y.to("cpu", non_blocking=True).is_pinned()
    assert not y.to("cpu").is_pinned()
    assert not y.cpu().is_pinned()


def test_to_casts_and_moves_in_one_call(cupyconf_accelerator):
    x = ember.tensor([[1.5, -2.25], [3.0, 4.0]])
    t = torch.tensor(x.numpy())
    for dtype, tdtype in ((ember.float64, torch.float64), (ember.int32, torch.int32),
                          (ember.float16, torch.float16)):
        moved = x.to(cupyconf_accelerator, dtype)
        assert moved.dtype == dtype
        np.testing.assert_array_equal(_values(moved), t.to(tdtype).numpy())
        # ... and back, from a non-contiguous view, cast on the device before the copy
        back = moved.t().to("cpu", ember.float32, non_blocking=True)
        np.testing.assert_array_equal(back.numpy(), t.to(tdtype).t().to(torch.float32).numpy())


def test_to_the_same_device_returns_the_tensor(cupyconf_accelerator):
    y = ember.ones(3, device=cupyconf_accelerator)
    assert y.to(cupyconf_accelerator) is y
    assert y.to(cupyconf_accelerator, non_blocking=True) is y
    assert y.to(cupyconf_accelerator, copy=True) is not y
    x = torch.ones(3)
    assert x.to("cpu") is x and x.to("cpu", non_blocking=True) is x  # the oracle agrees


def test_gradient_flows_back_across_devices(cupyconf_accelerator):
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.to(cupyconf_accelerator, non_blocking=True)
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    (y * y).sum().backward()
    assert x.grad.device == ember.device("cpu")
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_cuda_without_cuda_raises():
    # torch's CPU build raises AssertionError "Torch not compiled with CUDA enabled"; Ember
    # without CuPy raises the same type and message, then names the missing extra. (With CuPy
    # but no device it is a RuntimeError, as a CUDA build without a driver raises.)
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.zeros(2).cuda()
    if ember.cuda.is_available():
        pytest.skip("CUDA is available here")
    expected = (AssertionError if importlib.util.find_spec("cupy") is None else RuntimeError)
    with pytest.raises(expected, match="CUDA"):
        ember.zeros(2).cuda(non_blocking=True)


def test_mixed_devices_raise_torchs_error(cupyconf_accelerator):
    a = ember.ones(3, device=cupyconf_accelerator)
    b = ember.ones(3)
    with pytest.raises(RuntimeError, match=r"^Expected all tensors to be on the same device, but "
                                           r"found at least two devices, cupyconf:0 and cpu!$"):
        a + b
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.mm(ember.ones(2, 2), ember.ones(2, 2, device=cupyconf_accelerator))


def test_cpu_scalar_tensors_join_device_element_wise_ops(cupyconf_accelerator):
    """torch's element-wise ops take a 0-d CPU tensor beside device tensors as a number
    (``x_cuda * torch.tensor(0.5)``), with its gradient back on the CPU; values and gradients
    here are torch's CPU ones (no torch device exists on this machine)."""
    dev = cupyconf_accelerator
    results = []
    for lib, device in ((torch, "cpu"), (ember, dev)):
        x = lib.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
        s = lib.tensor(0.5, requires_grad=True)
        outs = [x * s, s - x, lib.where(x > 0, s, x), x ** lib.tensor(2.0), lib.add(s, x, alpha=2),
                lib.maximum(x, lib.tensor(0.0)), x.clamp(min=lib.tensor(-1.0))]
        assert all(o.device.type == lib.device(device).type for o in outs)
        sum(o.sum() for o in outs).backward()
        assert s.grad.device.type == "cpu"
        results.append([o.detach().cpu().numpy() for o in outs] + [x.grad.cpu().numpy(),
                                                                  s.grad.numpy()])
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # Only 0-d CPU tensors: a CPU vector, or a device scalar beside a CPU vector, is the error.
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.ones(3, device=dev) + ember.ones(1)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.ones(3) + ember.tensor(1.0, device=dev)


# ---- Module.to / cuda -------------------------------------------------------------------------

def test_module_to_moves_parameters_and_buffers(cupyconf_accelerator):
    model = enn.Sequential(enn.Linear(3, 2), enn.BatchNorm1d(2))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert model.to(cupyconf_accelerator, non_blocking=True) is model
    for name, value in model.state_dict().items():
        assert value.device == ember.device("cupyconf", 0), name
        np.testing.assert_array_equal(_values(value), before[name].numpy())
    assert model[0].weight.requires_grad and isinstance(model[0].weight, enn.Parameter)
    out = model(ember.randn(4, 3).to(cupyconf_accelerator))
    assert out.device == ember.device("cupyconf", 0)
    model.cpu()
    assert all(v.device.type == "cpu" for v in model.state_dict().values())


def test_module_to_rejects_what_torch_rejects():
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
            lib.nn.Linear(2, 2).to(lib.int64)
        with pytest.raises(TypeError):
            lib.nn.Linear(2, 2).to("cpu", nonsense=True)


# ---- pinned memory ------------------------------------------------------------------------------

def test_pin_memory_copies_into_page_locked_memory(cupyconf_accelerator):
    x = ember.arange(6.0).reshape(2, 3)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p is not x and p.is_pinned() and not x.is_pinned()
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    assert p.pin_memory() is p  # already pinned: itself, as torch
    assert p[1].is_pinned() and p.t().is_pinned()  # views share the pinned memory
    assert not ember.ones(0).pin_memory().is_pinned()  # nothing to lock


def test_pin_memory_is_differentiable(cupyconf_accelerator):
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    p = x.pin_memory()
    assert type(p.grad_fn).__name__ == "PinMemoryBackward0"  # torch's node for _pin_memory
    (p * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_only_cpu_tensors_can_be_pinned(cupyconf_accelerator):
    y = ember.ones(2, device=cupyconf_accelerator)
    assert not y.is_pinned()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        y.pin_memory()


def test_pin_memory_device_argument_is_deprecated(cupyconf_accelerator):
    with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.pin_memory"):
        assert ember.ones(2).pin_memory(cupyconf_accelerator).is_pinned()


def test_an_accelerator_that_cannot_pin_says_so(monkeypatch):
    # The suite's "testdev" as the accelerator (pinned here, whatever else the suite
    # registered): a NumPy device without pinned memory.
    from ember import accelerator
    monkeypatch.setattr(accelerator, "_built_type", lambda: "testdev")
    with pytest.raises(RuntimeError, match="testdev backend does not provide page-locked"):
        ember.ones(2).pin_memory()
    assert ember.ones(2).is_pinned() is False  # it has pinned nothing: an answer, not an error


# ---- the backends answer, not "cuda" checks ----------------------------------------------------

def test_dlpack_device_comes_from_the_backend(cupyconf_accelerator):
    # cupyconf stands in for CuPy, whose arrays are kDLCUDA; testdev's are host memory.
    assert ember.ones(2, device=cupyconf_accelerator).__dlpack_device__() == (
        DLDeviceType.kDLCUDA, 0)
    assert ember.ones(2).__dlpack_device__() == torch.ones(2).__dlpack_device__() == (
        DLDeviceType.kDLCPU, 0)


def test_testdev_is_host_memory_for_dlpack():
    assert ember.ones(2, device="testdev").__dlpack_device__() == (DLDeviceType.kDLCPU, 0)


def test_device_memory_sent_by_value_is_not_shared(cupyconf_accelerator):
    # Ember pickles device tensors by value (no CUDA IPC yet): not shared, and share_memory_
    # says why instead of claiming it.
    y = ember.ones(2, device=cupyconf_accelerator)
    assert y.is_shared() is False
    with pytest.raises(RuntimeError, match="sends them to other processes by value"):
        y.share_memory_()
    x = ember.ones(2)
    assert x.share_memory_().is_shared()


# ---- a real GPU ---------------------------------------------------------------------------------

@pytest.mark.cuda
def test_non_blocking_copies_on_a_gpu():
    x = ember.arange(1 << 16, dtype=ember.float32)
    p = x.pin_memory()
    assert p.is_pinned()
    y = p.to("cuda", non_blocking=True)
    z = (y * 2).to("cpu", non_blocking=True)
    assert z.is_pinned()
    ember.cuda.synchronize()
    np.testing.assert_array_equal(z.numpy(), x.numpy() * 2)
    assert x.cuda().cpu().equal(x)
    assert enn.Linear(2, 2).cuda().weight.is_cuda
