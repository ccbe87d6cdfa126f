"""``torch.fft``: discrete Fourier transforms and their helpers (``ember/ops/spectral.py``)."""
from .ops.spectral import (fft, ifft, rfft, irfft, hfft, ihfft, fft2, ifft2, rfft2,  # noqa: F401
                           irfft2, hfft2, ihfft2, fftn, ifftn, rfftn, irfftn, hfftn, ihfftn,
                           fftfreq, rfftfreq, fftshift, ifftshift, FFT_FUNCTIONS as __all__)
