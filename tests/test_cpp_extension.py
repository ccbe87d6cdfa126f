"""ember.utils.cpp_extension: tutorial-style C++ against <torch/extension.h> compiled with the
system compiler and called through ctypes — values against torch, zero-copy tensors, errors,
the build cache, the fused example op (forward, gradcheck, custom op), setuptools builds.

Compiles are the cost here (about 1 s each), so the module builds one extension for most
tests, in a session-scoped directory."""
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember.utils import cpp_extension
from ember.utils._cpp_extension import build as _build

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None,
                                reason="no C++ compiler on PATH")

REPO = Path(__file__).resolve().parents[1]

# Written as for PyTorch's C++ extension tutorial: nothing Ember-specific.
TUTORIAL_SOURCE = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor axpy(torch::Tensor x, torch::Tensor y, double alpha) {
  TORCH_CHECK(x.sizes() == y.sizes(), "x and y must have the same shape, got ", x.sizes(),
              " and ", y.sizes());
  auto out = torch::empty_like(x);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "axpy", ([&] {
    auto xa = x.accessor<scalar_t, 2>();
    auto ya = y.accessor<scalar_t, 2>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < x.size(0); ++i)
      for (int64_t j = 0; j < x.size(1); ++j)
        o[i * x.size(1) + j] = alpha * xa[i][j] + ya[i][j];
  }));
  return out;
}

std::vector<int64_t> describe(const torch::Tensor& t) {
  std::vector<int64_t> d = {t.dim(), t.numel(), (int64_t)t.is_contiguous(),
                            (int64_t)t.scalar_type(), (int64_t)t.element_size()};
  for (auto s : t.sizes()) d.push_back(s);
  for (auto s : t.strides()) d.push_back(s);
  return d;
}

void fill_rows(torch::Tensor t) {   // writes through the pointer: zero-copy in both directions
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.size(0); ++i)
    for (int64_t j = 0; j < t.size(1); ++j) p[i * t.stride(0) + j * t.stride(1)] = i;
}

std::tuple<torch::Tensor, torch::Tensor, int64_t> factories(torch::Tensor like, int64_t n) {
  auto z = torch::zeros({n, 2}, torch::TensorOptions().dtype(torch::kInt64));
  auto o = torch::ones_like(like);
  return std::make_tuple(z, o, n * 2);
}

torch::Tensor make_contiguous(torch::Tensor t) { return t.contiguous(); }

int64_t checked_size(torch::Tensor t, int64_t dim) { return t.size(dim); }

int64_t prod(at::IntArrayRef sizes, c10::optional<torch::Tensor> scale) {
  int64_t p = 1;
  for (auto s : sizes) p *= s;
  if (scale.has_value()) TORCH_CHECK(scale->numel() == 1, "scale: one element expected");
  else return -p;
  return p * scale->numel();
}

double sum_list(std::vector<double> xs, bool twice) {
  double s = 0; for (double x : xs) s += x; return twice ? 2 * s : s;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "tutorial-style extension";
  m.def("axpy", &axpy, "alpha * x + y");
  m.def("describe", &describe);
  m.def("fill_rows", &fill_rows);
  m.def("factories", &factories);
  m.def("make_contiguous", &make_contiguous);
  m.def("checked_size", &checked_size);
  m.def("sum_list", &sum_list, py::arg("xs"), py::arg("twice") = false);
  m.def("prod", &prod);
}
"""


@pytest.fixture(scope="session")
def build_root(tmp_path_factory):
    return tmp_path_factory.mktemp("ember_extensions")


@pytest.fixture(scope="session")
def tutorial(build_root):
    return cpp_extension.load_inline("tutorial_ext", TUTORIAL_SOURCE, no_implicit_headers=True,
                                     build_directory=str(build_root / "tutorial"))


def test_tutorial_source_compiles_unmodified_and_matches_torch(tutorial):
    assert tutorial.__doc__ == "tutorial-style extension"
    assert tutorial.axpy.__doc__ == "alpha * x + y"
    rng = np.random.default_rng(0)
    xn, yn = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for dtype in (np.float32, np.float64):
        out = tutorial.axpy(ember.tensor(xn.astype(dtype)), ember.tensor(yn.astype(dtype)), 2.5)
        expected = torch.add(torch.tensor(yn.astype(dtype)), torch.tensor(xn.astype(dtype)),
                             alpha=2.5)
        assert out.dtype == getattr(ember, expected.dtype.__str__().split(".")[1])
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    # A strided (transposed) input is read through its strides, not copied.
    xt = ember.tensor(xn.T.copy()).t()
    np.testing.assert_allclose(tutorial.axpy(xt, ember.tensor(yn), 1.0).numpy(), xn + yn)


def test_tensor_metadata_as_torch_reports_it(tutorial):
    t = ember.zeros(4, 6)[:, ::2]
    tt = torch.zeros(4, 6)[:, ::2]
    d = tutorial.describe(t)
    assert d[:5] == [tt.dim(), tt.numel(), int(tt.is_contiguous()), 6, tt.element_size()]
    assert d[5:] == [*tt.shape, *tt.stride()]
    assert tutorial.describe(ember.zeros(3, 1).t())[2] == 1  # size-1 dims ignore strides
    assert tutorial.describe(ember.zeros((), dtype=ember.int64))[:5] == [0, 1, 1, 4, 8]


def test_zero_copy_writes_and_returned_tensors(tutorial):
    base = ember.full((3, 4), -1.0)
    view = base[:, 1:3]
    tutorial.fill_rows(view)
    assert base.tolist() == [[-1.0, 0.0, 0.0, -1.0], [-1.0, 1.0, 1.0, -1.0],
                             [-1.0, 2.0, 2.0, -1.0]]
    z, o, n = tutorial.factories(ember.zeros(2, dtype=ember.float64), 3)
    assert (z.dtype, z.shape, z.tolist()) == (ember.int64, (3, 2), [[0, 0]] * 3)
    assert (o.dtype, o.tolist(), n) == (ember.float64, [1.0, 1.0], 6)
    c = ember.arange(6.0).reshape(2, 3)
    assert tutorial.make_contiguous(c) is c  # already contiguous: the same tensor
    made = tutorial.make_contiguous(c.t())
    assert made.is_contiguous() and made.tolist() == c.t().tolist()
    assert tutorial.sum_list([1.0, 2, 3.5]) == 6.5
    assert tutorial.sum_list(xs=[1.0], twice=True) == 2.0
    assert tutorial.prod([2, 3, 4], ember.ones(1)) == 24
    assert tutorial.prod((2, 3), None) == -6
    with pytest.raises(RuntimeError, match="scale: one element expected"):
        tutorial.prod([1], ember.ones(2))


def test_errors_reach_python_as_torch_raises_them(tutorial):
    with pytest.raises(RuntimeError,
                       match=r"x and y must have the same shape, got \[3\] and \[2\]"):
        tutorial.axpy(ember.zeros(3), ember.zeros(2), 1.0)
    with pytest.raises(RuntimeError, match="\"axpy\" not implemented for 'Long'"):
        ints = ember.zeros(2, 2, dtype=ember.int64)
        tutorial.axpy(ints, ints, 1.0)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        tutorial.fill_rows(ember.zeros(2, 2, dtype=ember.float64))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        tutorial.checked_size(ember.zeros(2, 2), 2)
    with pytest.raises(TypeError, match="expected a Tensor, got float"):
        tutorial.checked_size(1.0, 0)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        tutorial.axpy(ember.zeros(1))
    # An allocation Ember refuses raises Ember's own error, from inside the C++ call.
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        tutorial.factories(ember.zeros(2), -1)


def test_second_load_compiles_nothing(tutorial, build_root, monkeypatch):
    def no_compiler(cmd):
        raise AssertionError(f"the compiler ran on a cached build: {cmd}")
    monkeypatch.setattr(_build, "run_compiler", no_compiler)
    monkeypatch.setattr(cpp_extension, "_loaded", {})  # as a fresh process would find it
    again = cpp_extension.load_inline("tutorial_ext", TUTORIAL_SOURCE, no_implicit_headers=True,
                                      build_directory=str(build_root / "tutorial"))
    assert again.axpy(ember.ones(1, 1), ember.ones(1, 1), 1.0).tolist() == [[2.0]]
    # A changed flag is a different build: the compiler would run.
    with pytest.raises(AssertionError, match="the compiler ran"):
        cpp_extension.load_inline("tutorial_ext", TUTORIAL_SOURCE, no_implicit_headers=True,
                                  extra_cflags=["-DCHANGED"],
                                  build_directory=str(build_root / "tutorial"))


def test_build_error_reports_the_compiler_output(build_root):
    source = "torch::Tensor broken(torch::Tensor x) { return x.no_such_method(); }"
    with pytest.raises(RuntimeError, match="Error building extension 'broken_ext'") as info:
        cpp_extension.load_inline("broken_ext", source, functions=["broken"],
                                  build_directory=str(build_root / "broken"))
    assert "no_such_method" in str(info.value)
    assert not [p for p in os.listdir(build_root / "broken") if p.endswith((".so", ".tmp"))]


def test_load_from_files_and_functions_list(build_root, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(build_root / "env_root"))
    src = build_root / "twice.cpp"
    src.write_text("#include <torch/extension.h>\n"
                   "torch::Tensor twice(torch::Tensor x) {\n"
                   "  auto y = torch::empty_like(x);\n"
                   "  for (int64_t i = 0; i < x.numel(); ++i)\n"
                   "    y.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i];\n"
                   "  return y; }\n"
                   "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"twice\", &twice); }\n")
    mod = cpp_extension.load("twice_ext", [str(src)])
    assert mod.twice(ember.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert mod.__file__.startswith(str(build_root / "env_root"))


PARALLEL_SOURCE = r"""
#include <torch/extension.h>
#include <atomic>
#include <mutex>
// Each chunk records its range and the thread number it ran on; the ranges must tile [b, e).
std::vector<int64_t> chunks(int64_t b, int64_t e, int64_t grain) {
  std::mutex lock;
  std::vector<int64_t> out;
  at::parallel_for(b, e, grain, [&](int64_t cb, int64_t ce) {
    std::lock_guard<std::mutex> guard(lock);
    out.insert(out.end(), {cb, ce, (int64_t)at::get_thread_num(), (int64_t)at::in_parallel_region()});
  });
  return out;
}
std::vector<int64_t> nested_chunks(int64_t n) {
  std::atomic<int64_t> calls{0}, elements{0};
  at::parallel_for(0, n, 1, [&](int64_t, int64_t) {
    at::parallel_for(0, n, 1, [&](int64_t b, int64_t e) { calls += 1; elements += e - b; });
  });
  return {calls, elements};
}
void throws_in_a_chunk(int64_t n) {
  at::parallel_for(0, n, 1, [&](int64_t b, int64_t) {
    TORCH_CHECK(b == 0, "chunk starting at ", b, " failed");
  });
}
double parallel_sum(torch::Tensor x) {
  const double* p = x.data_ptr<double>();
  return at::parallel_reduce(0, x.numel(), 1000, 0.0,
      [&](int64_t b, int64_t e, double acc) { for (int64_t i = b; i < e; ++i) acc += p[i]; return acc; },
      [](double a, double b) { return a + b; });
}
int64_t threads() { return at::get_num_threads(); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("chunks", &chunks); m.def("nested_chunks", &nested_chunks);
  m.def("throws_in_a_chunk", &throws_in_a_chunk); m.def("parallel_sum", &parallel_sum);
  m.def("threads", &threads);
}
"""


def test_parallel_for_splits_work_as_aten_does(build_root):
    mod = cpp_extension.load_inline("parallel_ext", PARALLEL_SOURCE, no_implicit_headers=True,
                                    build_directory=str(build_root / "parallel"))
    before = ember.get_num_threads()
    assert mod.threads() == before
    try:
        ember.set_num_threads(3)  # reaches a library loaded before the call
        assert mod.threads() == 3
        flat = mod.chunks(5, 105, 10)
        rows = sorted(tuple(flat[i:i + 4]) for i in range(0, len(flat), 4))
        assert [(b, e) for b, e, _, _ in rows] == [(5, 39), (39, 73), (73, 105)]
        assert sorted(t for _, _, t, _ in rows) == [0, 1, 2] and all(p for *_, p in rows)
        # fewer chunks than threads when the grain asks; one chunk runs inline, not "parallel"
        assert len(mod.chunks(0, 30, 10)) == 12 and mod.chunks(0, 5, 10) == [0, 5, 0, 0]
        assert mod.chunks(4, 4, 1) == []
        assert mod.nested_chunks(3) == [3, 9]  # an inner loop runs serially: one call each
        with pytest.raises(RuntimeError, match="chunk starting at 1 failed"):
            mod.throws_in_a_chunk(3)
        x = np.random.default_rng(0).standard_normal(10_001)
        assert mod.parallel_sum(ember.tensor(x)) == pytest.approx(x.sum(), rel=1e-12)
        # a forked child has none of the pool's threads: it must start its own, not wait
        if hasattr(os, "fork"):
            pid = os.fork()
            if pid == 0:  # the child: exit status 0 only if the loop ran on 3 threads
                try:
                    flat = mod.chunks(0, 30, 1)
                    os._exit(0 if sorted(flat[2::4]) == [0, 1, 2] else 1)
                finally:
                    os._exit(2)
            deadline = time.monotonic() + 60
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if not done:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            assert done and os.waitstatus_to_exitcode(status) == 0
        ember.set_num_threads(1)
        assert mod.chunks(0, 100, 1) == [0, 100, 0, 0]
    finally:
        ember.set_num_threads(before)
    assert mod.threads() == before


def test_fused_example_forward_gradcheck_and_custom_op(build_root, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(build_root / "example"))
    spec = importlib.util.spec_from_file_location("fused_bias_gelu_example",
                                                  REPO / "examples" / "fused_bias_gelu.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)  # redefines the example's ops if they exist already
    rng = np.random.default_rng(0)
    xn, bn = rng.standard_normal((5, 7)), rng.standard_normal(7)
    x = ember.tensor(xn, requires_grad=True)
    b = ember.tensor(bn, requires_grad=True)
    tx = torch.tensor(xn, requires_grad=True)
    tb = torch.tensor(bn, requires_grad=True)
    out = example.fused_bias_gelu(x, b)
    tout = torch.nn.functional.gelu(tx + tb)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    g = rng.standard_normal((5, 7))
    out.backward(ember.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10)
    assert ember.autograd.gradcheck(example.fused_bias_gelu,
                                    (x.detach().requires_grad_(), b.detach().requires_grad_()))
    assert set(ember.library.opcheck(example.fused_bias_gelu, (x, b)).values()) == {"SUCCESS"}
    op = ember.ops.ember_examples.fused_bias_gelu
    assert op.default is example.fused_bias_gelu._opoverload
    result = example.main(["--rows", "4", "--cols", "8"])
    assert result["gradcheck"] and result["max_error"] < 1e-4
    # float32 takes the vectorised erf/exp polynomials, split over threads: float32 tolerance
    xn = (rng.standard_normal((67, 300)) * 4).astype(np.float32)
    bn = rng.standard_normal(300).astype(np.float32)
    gn = rng.standard_normal((67, 300)).astype(np.float32)
    x, b = ember.tensor(xn, requires_grad=True), ember.tensor(bn, requires_grad=True)
    tx, tb = torch.tensor(xn, requires_grad=True), torch.tensor(bn, requires_grad=True)
    out, tout = example.fused_bias_gelu(x, b), torch.nn.functional.gelu(tx + tb)
    out.backward(ember.tensor(gn))
    tout.backward(torch.tensor(gn))
    assert out.dtype == ember.float32
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-4)


def test_cuda_sources_are_device_code_only():
    from ember.utils._cpp_extension import cuda
    source = """#include <torch/extension.h>
    extern "C" __global__ void axpy(const float* x, float* y, float a, long long n) {}
    template <typename T> __global__ void __launch_bounds__(256) scale(T* x) {}
    __global__ void plain(float* x) {}"""
    assert cuda.kernel_names(source) == ["axpy", "scale", "plain"]
    host = source + "\nvoid launch(float* x) { plain<<<1, 1>>>(x); }"
    with pytest.raises(RuntimeError, match="Error building extension 'k_ext'.*device code only"):
        cpp_extension.load_inline("k_ext", "", cuda_sources=host, functions=["plain"])


def test_cuda_sources_need_cupy_and_a_device():
    if ember.cuda.is_available():
        pytest.skip("a GPU is here: benchmarks/gpu_check.py runs the CUDA extension check")
    with pytest.raises(RuntimeError, match="NVRTC through CuPy"):
        cpp_extension.load_inline("cuda_ext", "", cuda_sources="__global__ void k(float* x) {}",
                                  functions=["k"])


def test_unsupported_options_say_why():
    with pytest.raises(NotImplementedError, match="SYCL"):
        cpp_extension.load_inline("x_ext", "", sycl_sources="x")
    with pytest.raises(NotImplementedError, match="NVRTC"):
        cpp_extension.CUDAExtension("x", ["x.cu"])
    with pytest.raises(ValueError, match="valid identifier"):
        cpp_extension.load_inline("not-an-identifier", "")


@pytest.mark.slow
def test_setuptools_build_extension(tmp_path):
    """A setup.py with CppExtension/BuildExtension builds a module that imports by name."""
    (tmp_path / "plus_one.cpp").write_text(
        "#include <torch/extension.h>\n"
        "torch::Tensor plus_one(torch::Tensor x) { auto y = torch::empty_like(x);\n"
        "  for (int64_t i = 0; i < x.numel(); ++i)\n"
        "    y.data_ptr<double>()[i] = x.data_ptr<double>()[i] + 1;\n"
        "  return y; }\n"
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"plus_one\", &plus_one, \"x + 1\"); }\n")
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\n"
        "from ember.utils.cpp_extension import BuildExtension, CppExtension\n"
        "setup(name='plus_one', ext_modules=[CppExtension('plus_one', ['plus_one.cpp'])],\n"
        "      cmdclass={'build_ext': BuildExtension})\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path,
                   env=env, check=True, capture_output=True, timeout=120)
    out = subprocess.run([sys.executable, "-c", "import ember, plus_one; "
                          "x = ember.tensor([1.0, 2.0], dtype=ember.float64); "
                          "print(plus_one.plus_one(x).tolist(), "
                          "plus_one.plus_one.__doc__)"],
                         cwd=tmp_path, env=env, check=True, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "[2.0, 3.0] x + 1"
