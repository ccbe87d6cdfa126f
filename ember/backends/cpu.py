"""``ember.backends.cpu``: the SIMD level the CPU kernels use, as torch.backends.cpu."""
import os

__all__ = ["get_cpu_capability"]

# torch's names for its kernel builds, from the lowest; ATEN_CPU_CAPABILITY can only lower it.
_X86_LEVELS = ("DEFAULT", "AVX2", "AVX512")


def get_cpu_capability():
    """"DEFAULT", "AVX2" or "AVX512" on x86 (torch's answer for this CPU, read from NumPy's
    run-time CPU feature detection, which NumPy's own SIMD kernels dispatch on); "DEFAULT"
    elsewhere. The environment variable ``ATEN_CPU_CAPABILITY`` lowers it as in torch."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    if all(features.get(f) for f in ("AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ", "FMA3")):
        level = "AVX512"
    elif features.get("AVX2") and features.get("FMA3"):
        level = "AVX2"
    else:
        level = "DEFAULT"
    requested = os.environ.get("ATEN_CPU_CAPABILITY", "").upper()
    if level in _X86_LEVELS and requested in _X86_LEVELS:
        level = _X86_LEVELS[min(_X86_LEVELS.index(level), _X86_LEVELS.index(requested))]
    return level
