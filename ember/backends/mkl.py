"""``ember.backends.mkl``: whether matrix products run on Intel MKL, as torch.backends.mkl.

Ember's matrix products are NumPy's, so MKL is available exactly when NumPy was built against
it (``numpy.show_config``); MKL's verbose mode is not reachable through NumPy and raises."""
import functools

__all__ = ["is_available", "VERBOSE_OFF", "VERBOSE_ON", "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


@functools.lru_cache(maxsize=None)
def _blas_name():
    import numpy as np
    try:
        config = np.show_config(mode="dicts")
        return str(config["Build Dependencies"]["blas"]["name"])
    except Exception:  # NumPy builds before 1.26 describe their BLAS differently
        return "unknown"


def is_available():
    """Whether NumPy's BLAS (which computes Ember's matrix products) is Intel MKL."""
    return "mkl" in _blas_name().lower()


class verbose:
    """``with verbose(VERBOSE_ON):`` turns on MKL's verbose log for the block, as torch's;
    ``VERBOSE_OFF`` changes nothing. Turning it on raises: NumPy gives no access to MKL's
    verbose switch."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return self
        raise RuntimeError(f"MKL verbose mode is not available in Ember: matrix products run "
                           f"through NumPy's BLAS ({_blas_name()}), which exposes no verbose "
                           "switch.")

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
