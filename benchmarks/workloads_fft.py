"""``fft`` and complex workloads: batched transforms (one backend call each), a spectral filter
trained through its gradient, and complex element-wise arithmetic with autograd, Ember vs
PyTorch (and NumPy's own ``np.fft`` for the plain transform)."""
import numpy as np

from workloads import workload


def _real(lib, shape, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    x = lib.from_numpy(rng.standard_normal(shape, dtype=np.float32))
    return x.requires_grad_(True) if requires_grad else x


def _complex(lib, shape, seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    arr = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    z = lib.from_numpy(arr)
    return z.requires_grad_(True) if requires_grad else z


@workload("fft_rfft2_batch", "`fft.rfft2` of a (32, 256, 256) float32 batch", number=5,
          quick_number=1, numpy_baseline=True, target=("torch", 2.0))
def fft_rfft2_batch(lib):
    x = _real(lib, (32, 256, 256))

    def step():
        return lib.fft.rfft2(x)
    return step


@workload("fft_c2c_batch", "`fft.fft` along the last dim of a (512, 2048) complex64 tensor",
          number=10, quick_number=2, numpy_baseline=True, target=("torch", 2.0))
def fft_c2c_batch(lib):
    z = _complex(lib, (512, 2048))

    def step():
        return lib.fft.fft(z)
    return step


@workload("fft_filter_grad", "forward + backward of `(irfft(rfft(x) * h, n) ** 2).sum()` for "
          "x (256, 4096) float32 and a complex filter h, both requiring grad", number=5,
          quick_number=1, target=("torch", 2.0))
def fft_filter_grad(lib):
    x = _real(lib, (256, 4096), requires_grad=True)
    h = _complex(lib, (2049,), seed=1, requires_grad=True)

    def step():
        x.grad = None
        h.grad = None
        y = lib.fft.irfft(lib.fft.rfft(x) * h, n=4096)
        (y ** 2).sum().backward()
    return step


@workload("complex_mul_abs_grad", "forward + backward of `(a * b.conj()).abs().sum()` on two "
          "1M-element complex64 tensors", number=5, quick_number=1, target=("torch", 2.0))
def complex_mul_abs_grad(lib):
    a = _complex(lib, (1000, 1000), requires_grad=True)
    b = _complex(lib, (1000, 1000), seed=1, requires_grad=True)

    def step():
        a.grad = None
        b.grad = None
        (a * b.conj()).abs().sum().backward()
    return step
