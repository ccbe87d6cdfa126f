"""Helpers of ``ember.utils.cpp_extension``: the C ABI (``abi``), building (``build``) and
CUDA kernels through NVRTC (``cuda``)."""
