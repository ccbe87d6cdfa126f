"""ember.library: the operator registry, registry-backed devices and their CPU fallback, and
torch.utils.backend_registration's PrivateUse1 names.

"regdev" is a tiny registry-backed device written in Python: its payload is a host buffer it
treats as opaque, and it registers kernels for a handful of primitives only; everything else
runs through the fallback."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.library as library
from ember import nn
from ember.backends import register_backend, unregister_backend
from ember.library import _registry

DEV = "regdev"


class _Buffer:
    """The device's memory: a flat host array nothing but the kernels below looks into."""
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


class RegDevBackend(library.RegistryBackend):
    device_type = DEV

    def upload(self, host):
        return _Buffer(host.copy())

    def download(self, payload, dtype, numel):
        return payload.data.view(dtype).copy()


def _array(x):
    # the payload holds the storage's bytes; a DeviceArray may read them as another dtype
    return x.payload.data.view(x.dtype).reshape(x.shape)


def _operand(x):
    return x if isinstance(x, (bool, int, float, complex)) else _array(x)


def _binary_kernel(f):
    def kernel(a, b):
        out = np.asarray(f(_operand(a), _operand(b)))
        if f is not np.greater:  # of the computation dtype, the array operand's, as a device
            # computes it: NumPy would make a bfloat16 array times a Python float float32
            out = out.astype((a if isinstance(a, library.DeviceArray) else b).dtype, copy=False)
        return _Buffer(out.reshape(-1))
    return kernel


def _register_kernels(lib):
    for name, fn in {"add.Tensor": np.add, "sub.Tensor": np.subtract,
                     "mul.Tensor": np.multiply, "div.Tensor": np.true_divide,
                     "maximum": np.maximum, "gt.Tensor": np.greater}.items():
        lib.impl(name, _binary_kernel(fn), DEV)
    lib.impl("sqrt", lambda x: _Buffer(np.sqrt(_array(x)).reshape(-1)), DEV)
    lib.impl("mm", lambda a, b: _Buffer((_array(a) @ _array(b)).reshape(-1)), DEV)
    lib.impl("sum.dim_IntList", lambda x: _Buffer(_array(x).sum(axis=1)), DEV)
    lib.impl("full", lambda shape, value, dtype: _Buffer(np.full(int(np.prod(shape)), value,
                                                                 dtype)), DEV)

    def clone(x):
        view = np.lib.stride_tricks.as_strided(x.payload.data.view(x.dtype)[x.offset:],
                                               x.shape, x.strides)
        return _Buffer(np.array(view, order="C").reshape(-1))  # a copy, even of a compact x
    lib.impl("clone", clone, DEV)

    def copy_(dst, src):
        view = np.lib.stride_tricks.as_strided(dst.payload.data.view(dst.dtype)[dst.offset:],
                                               dst.shape, dst.strides)
        view[...] = _array(src)
    lib.impl("copy_", copy_, DEV)


@pytest.fixture(scope="module")
def regdev():
    register_backend(DEV, RegDevBackend)
    lib = library.Library("aten", "IMPL")
    _register_kernels(lib)
    yield DEV
    lib._destroy()
    unregister_backend(DEV)


@pytest.fixture
def fresh_report():
    library.reset_fallback_report(warnings_too=True)
    yield
    library.reset_fallback_report(warnings_too=True)


# ---- the kernel table ----------------------------------------------------------------------

def test_impl_decorator_registers_and_refuses_a_second_kernel():
    @library.impl("aten::mm", "tabledev")
    def mm(a, b):
        return None
    try:
        assert _registry.lookup("aten::mm", "tabledev") is mm
        assert "aten::mm" in library.registered_kernels("tabledev")
        with pytest.raises(RuntimeError, match="already registered"):
            library.impl("aten::mm", "tabledev", lambda a, b: None)
    finally:
        _registry._unregister_device("tabledev")
    assert not library.has_kernel("aten::mm", "tabledev")


def test_library_kinds_and_destroy():
    with pytest.raises(ValueError, match="Unsupported kind"):
        library.Library("mylib_h4", "BOGUS")
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
        library.Library("aten", "DEF")
    lib = library.Library("mylib_h4", "DEF")
    try:
        assert lib.define("twice(Tensor x) -> Tensor") == "twice"
        with pytest.raises(RuntimeError, match="multiple times"):
            lib.define("twice(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
            library.Library("mylib_h4", "DEF")
        lib.impl("twice", lambda x: x, "tabledev")
        assert library.has_kernel("mylib_h4::twice", "tabledev")
    finally:
        lib._destroy()
    assert not library.has_kernel("mylib_h4::twice", "tabledev")
    library.Library("mylib_h4", "DEF")._destroy()  # the namespace is free again


def test_aten_kernels_for_cpu_are_refused_with_the_reason():
    with pytest.raises(NotImplementedError, match="registry-backed devices"):
        library.impl("aten::mm", "CPU", lambda a, b: None)


def test_primitive_set_is_documented_and_small():
    assert 25 <= len(library.PRIMITIVES) <= 50
    for name, convention in library.PRIMITIVES.items():
        assert name.startswith("aten::") and "->" in convention


# ---- a registry-backed device --------------------------------------------------------------

def _train(device, steps=3):
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((12, 6)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 3, 12))
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, [p.detach().cpu().numpy() for p in model.parameters()]


def test_training_on_a_registry_device_equals_cpu(regdev, fresh_report):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu_losses, cpu_params = _train("cpu")
        dev_losses, dev_params = _train(regdev)
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-6)
    for a, b in zip(dev_params, cpu_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    report = library.fallback_report()
    on_device = report.ops_on_device(regdev)
    assert {"aten::mm", "aten::add.Tensor", "aten::mul.Tensor", "aten::clone"} <= set(on_device)
    assert "aten::exp" in report.ops_fallen_back(regdev)  # no kernel: log_softmax on the CPU
    assert regdev in str(report) and "CPU fallback" in str(report)


def test_a_scalar_written_at_integer_indices_stays_on_the_device(regdev, fresh_report):
    # index_put_ with a Python scalar value: the kernel takes rows, so the scalar is filled
    # into them first (it was passed on as a scalar, and the device path failed)
    def index_put_(x, index, values):
        out = _array(x).copy()
        out[_array(index)] = _array(values)
        return _Buffer(out.reshape(-1))
    lib = library.Library("aten", "IMPL")
    lib.impl("index_put_", index_put_, regdev)
    try:
        a_np = np.arange(12, dtype=np.float32).reshape(4, 3)
        a = ember.tensor(a_np, device=regdev)
        a[ember.tensor([2, 0], device=regdev)] = 1.5
    finally:
        lib._destroy()
    want = torch.tensor(a_np)
    want[torch.tensor([2, 0])] = 1.5
    np.testing.assert_array_equal(a.cpu().numpy(), want.numpy())
    report = library.fallback_report()
    assert "aten::index_put_" in report.ops_on_device(regdev)
    assert "aten::index_put_" not in report.ops_fallen_back(regdev)


def test_bfloat16_and_clones_on_the_registry_device(regdev):
    # the fixture's kernels keep the computation dtype (bfloat16 times a Python float) and
    # clone copies: an in-place op's saved input is the value before the write
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = ember.tensor([0.5, 1.5, 2.5], dtype=ember.bfloat16, device=regdev)
        assert (x * 2.0).dtype == ember.bfloat16
        np.testing.assert_array_equal((x * 2.0).cpu().float().numpy(), [1.0, 3.0, 5.0])
        w = ember.tensor([0.5, 1.5, 2.5], dtype=ember.float64, requires_grad=True)
        y = w.to(regdev) * 1.0
        y.sinc_()
        y.sum().backward()
    tw = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64, requires_grad=True)
    (tw * 1.0).sinc_().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_results_match_torch_and_views_share_storage(regdev):
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((3, 4)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = ember.tensor(a_np, device=regdev)
        got = (a.t() @ a + 1).sum(0) / 2
        want = (torch.tensor(a_np).t() @ torch.tensor(a_np) + 1).sum(0) / 2
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5)
        b = a.clone()
        b[1:, ::2].add_(10)               # an in-place write through a strided view
        b[0] = 5.0
        tb = torch.tensor(a_np)
        tb[1:, ::2].add_(10)
        tb[0] = 5.0
        np.testing.assert_allclose(b.cpu().numpy(), tb.numpy())
        assert b.device == ember.device(f"{regdev}:0") and b.dtype == ember.float32
        assert b.exp().device.type == regdev   # a fallen-back op's result stays on the device


def test_fallback_warns_once_per_op(regdev, fresh_report):
    x = ember.ones(3, device=regdev)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.exp(x)
        ember.exp(x)
        ember.sin(x)
    messages = [str(w.message) for w in caught]
    assert sum("'aten::exp'" in m for m in messages) == 1
    assert sum("'aten::sin'" in m for m in messages) == 1
    assert all("fall back to run on the CPU" in m for m in messages)
    assert library.fallback_report().fallback[(regdev, "aten::exp")][0] == 2


def test_strict_mode_raises_instead(regdev, fresh_report):
    x = ember.ones(3, device=regdev)
    library.set_strict_fallback(True)
    try:
        assert library.is_strict_fallback()
        with pytest.raises(NotImplementedError, match="aten::exp.*regdev"):
            ember.exp(x)
        np.testing.assert_allclose((x + x).cpu().numpy(), [2, 2, 2])  # has a kernel
    finally:
        library.set_strict_fallback(False)


def test_strict_mode_from_the_environment():
    code = "import ember.library as l; print(l.is_strict_fallback())"
    for value, expected in (("1", "True"), ("0", "False")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, env=dict(os.environ, EMBER_STRICT_FALLBACK=value))
        assert out.stdout.strip() == expected, out.stderr


def test_entry_point_backend_is_loaded_on_first_use(monkeypatch):
    from ember import backends

    class FakeEntryPoint:
        name = "epdev"

        def load(self):
            return RegDevBackend

    monkeypatch.setattr(backends, "_ENTRY_POINTS", {"epdev": FakeEntryPoint()})
    try:
        assert ember.zeros(2, device="epdev").device.type == "epdev"
    finally:
        unregister_backend("epdev")
    assert not backends.is_known_device_type("epdev")  # each entry point is tried once


# ---- PrivateUse1 -----------------------------------------------------------------------------

def test_privateuse1_rename_methods_and_device_module():
    # renaming is once per process and the methods are added to Tensor/Module: a subprocess
    script = textwrap.dedent("""
        import sys, types
        sys.path.insert(0, {tests!r})
        import ember, numpy as np
        from ember.backends import register_backend
        from test_library_registry import RegDevBackend
        class Npu(RegDevBackend):
            device_type = "privateuseone"
        register_backend("privateuseone", Npu)
        ember.utils.rename_privateuse1_backend("npu")
        ember.utils.rename_privateuse1_backend("npu")          # the same name again is fine
        try:
            ember.utils.rename_privateuse1_backend("other")
        except RuntimeError as e:
            print("rename:", e)
        ember.utils.generate_methods_for_privateuse1_backend()
        try:
            ember.utils.generate_methods_for_privateuse1_backend()
        except RuntimeError as e:
            print("twice:", e)
        module = types.ModuleType("npu")
        module.is_available = lambda: True
        module.device_count = lambda: 1
        module.current_device = lambda: 0
        module.synchronize = lambda device=None: None
        module.manual_seed_all = lambda seed: None
        ember._register_device_module("npu", module)
        try:
            ember._register_device_module("npu", module)
        except RuntimeError as e:
            print("module:", e)
        import ember.npu
        t = ember.ones(2).npu()
        m = ember.nn.Linear(2, 1).npu()
        print(t.device, t.is_npu, ember.ones(1).is_npu, m.weight.device, m.weight.is_npu,
              ember.npu.device_count(), ember.npu.is_available())
        print((t.npu(0) * 2).cpu().tolist())
        from ember.utils import backend_registration
        print(backend_registration.__name__, sorted(backend_registration.__all__))
    """).format(tests=os.path.dirname(__file__))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == ("rename: torch.register_privateuse1_backend() has already been set! "
                        "Current backend: npu")
    assert lines[1].startswith("twice: The custom device module of") and "is_npu" in lines[1]
    assert lines[2].startswith("module: The runtime module of 'npu' has already been registered")
    assert lines[3] == "npu:0 True False npu:0 True 1 True"
    assert lines[4] == "[2.0, 2.0]"
    assert lines[5] == ("ember.utils.backend_registration ['generate_methods_for_privateuse1_"
                        "backend', 'rename_privateuse1_backend']")


def test_complex_tensors_on_a_registry_device_equal_the_cpu(regdev):
    # .imag is a float view starting half an element into the complex storage: its offset
    # must count the view's own elements
    z = ember.tensor([1 + 2j, 3 - 4j, -0.5 + 0.25j, 2j])
    zd = z.to(regdev)
    cases = {"real": lambda a: a.real, "imag": lambda a: a.imag, "abs": lambda a: a.abs(),
             "conj": lambda a: a.conj().resolve_conj(), "angle": lambda a: a.angle(),
             "mul": lambda a: a * a, "add_scalar": lambda a: a + 1,
             "view_as_real": lambda a: ember.view_as_real(a), "sum": lambda a: a.sum(),
             "exp": lambda a: a.exp(), "imag_of_slice": lambda a: a[1:].imag}
    for name, f in cases.items():
        got, want = f(zd), f(z)
        assert got.device.type == regdev, name
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, err_msg=name)
    a, ad = z.clone(), zd.clone()
    a.imag[0] = 9
    ad.imag[0] = 9
    np.testing.assert_array_equal(ad.cpu().numpy(), a.numpy())
