"""``ember.backends.openmp``: whether the framework runs its own kernels through OpenMP.

Ember's kernels are NumPy calls; the only threads are those of NumPy's BLAS library, which
threads matrix products by itself. Ember has no OpenMP runtime of its own, so
``is_available()`` is False (``ember.get_num_threads`` reports the BLAS threads)."""

__all__ = ["is_available"]


def is_available():
    return False
