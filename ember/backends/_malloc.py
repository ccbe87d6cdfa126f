"""Keep freed memory for reuse instead of handing it back to the kernel (glibc only).

An eager framework allocates and frees the same large temporaries every step (activations,
gradients, im2col columns, a batch's samples in a DataLoader worker). By default glibc serves
allocations above a threshold with fresh ``mmap``s and returns freed memory at the top of the
heap to the kernel, so every step page-faults all of that memory in again: a LeNet training step
spends ~40% of its time there, a DataLoader worker twice PyTorch's page faults. Raising both
thresholds keeps the memory in the process for the next step — the same trade PyTorch's caching
allocators make. Set ``EMBER_MALLOC_TUNING=0`` to leave the C allocator's defaults alone.
"""
import ctypes
import os

__all__ = ["keep_freed_memory_for_reuse"]

# mallopt parameters, from glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: allocations up to this size come from the heap, where freed memory is reused (glibc's maximum)
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
#: freed heap memory kept for later allocations instead of being returned to the kernel
TRIM_THRESHOLD_BYTES = 256 * 1024 * 1024

_applied = False


def keep_freed_memory_for_reuse():
    """Raise glibc's mmap and trim thresholds for this process (once; a no-op elsewhere)."""
    global _applied
    if _applied or os.environ.get("EMBER_MALLOC_TUNING", "1") == "0":
        return
    _applied = True
    try:
        os.confstr("CS_GNU_LIBC_VERSION")
        mallopt = ctypes.CDLL(None).mallopt
    except (ValueError, OSError, AttributeError):
        return  # not glibc: its allocator has its own policy
    # Setting either threshold turns off glibc's own adjustment of both, so set both.
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
