"""Rows for ``torch.fft``: each transform over its three normalisations, with ``n``/``s``
trimming and padding, several ``dim`` choices, batched and non-contiguous inputs, real and
complex input dtypes.

Rows over complex dtypes run forward and the gradient of a complex cotangent against PyTorch;
the finite-difference (``gradcheck``) rows take real float64 inputs, reach complex inputs
through ``view_as_complex`` where the transform needs one, and return ``view_as_real`` of a
complex result, so the checked function is real to real.
"""
from .core import OpInfo, Sample

REAL = ("float32", "float64")
NORMS = (None, "backward", "ortho", "forward")


def r(lib, z):
    return lib.view_as_real(z.resolve_conj()) if z.is_complex() else z


def vc(lib, x):
    return lib.view_as_complex(x)


ONE_D = [
    Sample(((3, 8),), {}),
    Sample(((3, 8),), {"n": 5}),
    Sample(((3, 8),), {"n": 11, "dim": 0}),
    Sample(((2, 3, 6),), {"dim": 1}),
    Sample(((7,),), {}),
    Sample(((3, 8),), {}, noncontig=True),
]
N_D = [
    Sample(((3, 4, 6),), {}),
    Sample(((3, 4, 6),), {"s": (5, 4)}),
    Sample(((3, 4, 6),), {"dim": (0, 2)}),
    Sample(((3, 4, 6),), {"s": (2, -1), "dim": (2, 0)}),
    Sample(((3, 4, 6),), {"s": (7,)}),
    Sample(((3, 4, 6),), {}, noncontig=True),
]
TWO_D = [
    Sample(((3, 4, 6),), {}),
    Sample(((3, 4, 6),), {"s": (5, 3)}),
    Sample(((3, 4, 6),), {"dim": (0, 1)}),
    Sample(((4, 6),), {}, noncontig=True),
]
# Complex data for the gradcheck rows: real float64 arrays whose last dim (2) is (re, im).
ONE_D_PAIRS = [Sample(((3, 6, 2),), {}), Sample(((3, 6, 2),), {"n": 4, "dim": 0}),
               Sample(((5, 2),), {"n": 8})]
N_D_PAIRS = [Sample(((3, 4, 2),), {}), Sample(((3, 4, 2),), {"s": (2, 5)})]


def _with_norms(samples, norms=NORMS):
    """Each sample with one normalisation, cycling through ``norms`` (every norm meets several
    shapes without the full product, which would cost the suite four times the time)."""
    return [Sample(s.shapes, {**s.kwargs, "norm": norms[i % len(norms)]}, noncontig=s.noncontig)
            for i, s in enumerate(samples)]


def spectral(name, fn, samples, dtypes, **kwargs):
    return OpInfo(name, fn, _with_norms(samples), dtypes=dtypes, **kwargs)


def gc(name, fn, samples):
    """A float64 finite-difference row (forward and backward against torch run too)."""
    return OpInfo(name, fn, _with_norms(samples, ("forward", "ortho", None)), dtypes=("float64",))


def _refused(name, fn, *shapes, dtypes=("float32",)):
    """A row whose inputs PyTorch refuses: Ember must raise the same exception type."""
    return OpInfo(name, fn, [Sample(shapes)], dtypes=dtypes, grad=False, gradcheck=False)


# One real and one complex dtype of each precision across the rows; test_fft.py checks every
# input dtype's result dtype.
ALL_IN = ("float32", "complex128", "int64")
C2 = ("complex64",)

OPS = [
    # ---- forward and backward against torch, real and complex inputs ---------------------
    spectral("fft.fft", lambda lib, x, **k: lib.fft.fft(x, **k), ONE_D, ALL_IN, gradcheck=False),
    spectral("fft.ifft", lambda lib, x, **k: lib.fft.ifft(x, **k), ONE_D, ALL_IN, gradcheck=False),
    spectral("fft.rfft", lambda lib, x, **k: lib.fft.rfft(x, **k), ONE_D, ("float64", "int64"),
             gradcheck=False),
    spectral("fft.irfft", lambda lib, x, **k: lib.fft.irfft(x, **k), ONE_D, ALL_IN,
             gradcheck=False),
    spectral("fft.hfft", lambda lib, x, **k: lib.fft.hfft(x, **k), ONE_D, C2,
             gradcheck=False),
    spectral("fft.ihfft", lambda lib, x, **k: lib.fft.ihfft(x, **k), ONE_D, ("float32",),
             gradcheck=False),
    spectral("fft.fftn", lambda lib, x, **k: lib.fft.fftn(x, **k), N_D, ALL_IN, gradcheck=False),
    spectral("fft.ifftn", lambda lib, x, **k: lib.fft.ifftn(x, **k), N_D, ALL_IN,
             gradcheck=False),
    spectral("fft.rfftn", lambda lib, x, **k: lib.fft.rfftn(x, **k), N_D, ("float64",),
             gradcheck=False),
    spectral("fft.irfftn", lambda lib, x, **k: lib.fft.irfftn(x, **k), N_D, ("complex128",),
             gradcheck=False),
    spectral("fft.fft2", lambda lib, x, **k: lib.fft.fft2(x, **k), TWO_D,
             ("float64", "complex64"), gradcheck=False),
    spectral("fft.ifft2", lambda lib, x, **k: lib.fft.ifft2(x, **k), TWO_D, C2,
             gradcheck=False),
    spectral("fft.rfft2", lambda lib, x, **k: lib.fft.rfft2(x, **k), TWO_D, ("float32",),
             gradcheck=False),
    spectral("fft.irfft2", lambda lib, x, **k: lib.fft.irfft2(x, **k), TWO_D, C2,
             gradcheck=False),
    OpInfo("fft.fftshift", lambda lib, x, **k: lib.fft.fftshift(x, **k),
           [Sample(((3, 5),)), Sample(((4, 5, 2),), {"dim": (0, 1)}), Sample(((6,),), {"dim": 0}),
            Sample(((3, 5),), noncontig=True)], dtypes=("float32", "complex64", "int64")),
    OpInfo("fft.ifftshift", lambda lib, x, **k: lib.fft.ifftshift(x, **k),
           [Sample(((3, 5),)), Sample(((4, 5, 2),), {"dim": -1}),
            Sample(((3, 5),), noncontig=True)],
           dtypes=("float64", "complex128")),

    # ---- real to real through complex: float64 gradcheck ---------------------------------
    gc("gc.fft_real_input", lambda lib, x, **k: r(lib, lib.fft.fft(x, **k)), ONE_D[:4]),
    gc("gc.fft", lambda lib, x, **k: r(lib, lib.fft.fft(vc(lib, x), **k)), ONE_D_PAIRS),
    gc("gc.ifft", lambda lib, x, **k: r(lib, lib.fft.ifft(vc(lib, x), **k)), ONE_D_PAIRS),
    gc("gc.rfft", lambda lib, x, **k: r(lib, lib.fft.rfft(x, **k)), ONE_D[:4]),
    gc("gc.irfft", lambda lib, x, **k: lib.fft.irfft(vc(lib, x), **k), ONE_D_PAIRS),
    gc("gc.hfft", lambda lib, x, **k: lib.fft.hfft(vc(lib, x), **k), ONE_D_PAIRS),
    gc("gc.ihfft", lambda lib, x, **k: r(lib, lib.fft.ihfft(x, **k)), ONE_D[:4]),
    gc("gc.fftn", lambda lib, x, **k: r(lib, lib.fft.fftn(vc(lib, x), **k)), N_D_PAIRS),
    gc("gc.ifft2", lambda lib, x, **k: r(lib, lib.fft.ifft2(vc(lib, x), **k)), N_D_PAIRS),
    gc("gc.rfftn", lambda lib, x, **k: r(lib, lib.fft.rfftn(x, **k)), N_D[:4]),
    gc("gc.irfftn", lambda lib, x, **k: lib.fft.irfftn(vc(lib, x), **k), N_D_PAIRS),
    gc("gc.rfft2", lambda lib, x, **k: r(lib, lib.fft.rfft2(x, **k)), TWO_D[:3]),
    gc("gc.irfft2", lambda lib, x, **k: lib.fft.irfft2(vc(lib, x), **k), N_D_PAIRS),
    gc("gc.hfftn", lambda lib, x, **k: lib.fft.hfftn(vc(lib, x), **k), N_D_PAIRS),
    gc("gc.ihfft2", lambda lib, x, **k: r(lib, lib.fft.ihfft2(x, **k)), TWO_D[:3]),
    # ---- stft, istft ---------------------------------------------------------------------------
    OpInfo("stft", lambda lib, x: lib.stft(x, 8, return_complex=True),
           [Sample(((20,),)), Sample(((2, 20),)), Sample(((2, 20),), noncontig=True)],
           dtypes=REAL),
    OpInfo("stft_window", lambda lib, x, w: lib.stft(x, 8, hop_length=3, win_length=6, window=w,
                                                     normalized=True, return_complex=True),
           [Sample(((2, 21), (6,)))], dtypes=REAL),
    OpInfo("stft_twosided_constant", lambda lib, x: lib.stft(x, 7, onesided=False,
                                                             pad_mode="constant",
                                                             return_complex=True),
           [Sample(((15,),))], dtypes=REAL),
    OpInfo("stft_not_centered_real", lambda lib, x: lib.stft(x, 6, 2, center=False,
                                                             return_complex=False),
           [Sample(((2, 16),))], dtypes=REAL),
    # Complex-input rows are compared with PyTorch's gradients; the harness gradchecks real
    # float64 inputs only, so istft's gradcheck is the stft round trip below.
    OpInfo("istft", lambda lib, z: lib.istft(z, 8), [Sample(((5, 11),)), Sample(((2, 5, 11),))],
           dtypes=("complex64", "complex128"), gradcheck=False),
    OpInfo("stft_istft_round_trip",
           lambda lib, x, w: lib.istft(lib.stft(x, 8, 2, window=w, return_complex=True), 8, 2,
                                       window=w, length=21),
           [Sample(((2, 21), (8,)))], dtypes=REAL, domain=(0.5, 1.5)),
    OpInfo("istft_twosided", lambda lib, z: lib.istft(z, 6, 2, onesided=False, center=False,
                                                      return_complex=True),
           [Sample(((6, 5),))], dtypes=("complex128",), gradcheck=False),
    _refused("stft_no_return_complex", lambda lib, x: lib.stft(x, 4), (12,)),
    _refused("stft_3d", lambda lib, x: lib.stft(x, 4, return_complex=True), (2, 2, 12)),
    _refused("stft_bad_window", lambda lib, x, w: lib.stft(x, 4, window=w, return_complex=True),
             (12,), (3,)),
    _refused("istft_real", lambda lib, x: lib.istft(x, 4), (3, 13)),
]
