"""``ember.cpu``: the CPU under the names of ``torch.cuda``, for device-agnostic code.

As in torch, most of this is trivial by design on the CPU: there is one CPU device, ops run
synchronously (so ``synchronize`` has nothing to wait for and an ``Event`` is always complete),
and streams are only tracked, so that ``with ember.cpu.stream(s):`` and
``ember.cpu.current_stream()`` behave as torch's. ``get_capabilities`` reports what the
processor supports, read from the operating system (``/proc/cpuinfo`` on Linux). The deprecated
``torch.cpu.amp`` names (``autocast``, ``GradScaler``) are the subpackage ``amp``, imported on first
use.
"""
import functools
import os
import platform
from contextlib import AbstractContextManager
from types import MappingProxyType

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event",
           "get_capabilities"]

# torch's capability name -> the flag Linux lists for it in /proc/cpuinfo.
_X86_FLAGS = {
    "sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4_1": "sse4_1",
    "sse4_2": "sse4_2", "sse4a": "sse4a", "avx": "avx", "avx2": "avx2", "avx_vnni": "avx_vnni",
    "avx512_f": "avx512f", "avx512_cd": "avx512cd", "avx512_dq": "avx512dq",
    "avx512_bw": "avx512bw", "avx512_vl": "avx512vl", "avx512_ifma": "avx512ifma",
    "avx512_vbmi": "avx512vbmi", "avx512_vbmi2": "avx512_vbmi2",
    "avx512_bitalg": "avx512_bitalg", "avx512_vpopcntdq": "avx512_vpopcntdq",
    "avx512_vnni": "avx512_vnni", "avx512_bf16": "avx512_bf16", "avx512_fp16": "avx512_fp16",
    "avx512_vp2intersect": "avx512_vp2intersect", "avx512_4vnniw": "avx512_4vnniw",
    "avx512_4fmaps": "avx512_4fmaps", "avx_vnni_int8": "avx_vnni_int8",
    "avx_vnni_int16": "avx_vnni_int16", "avx_ne_convert": "avx_ne_convert",
    "amx_bf16": "amx_bf16", "amx_tile": "amx_tile", "amx_int8": "amx_int8",
    "amx_fp16": "amx_fp16", "fma3": "fma", "fma4": "fma4", "f16c": "f16c", "bmi": "bmi1",
    "bmi2": "bmi2", "popcnt": "popcnt", "lzcnt": "abm", "aes": "aes", "sha": "sha_ni",
    "clflush": "clflush", "clflushopt": "clflushopt", "clwb": "clwb",
}
_ARM_FEATURES = {
    "neon": "asimd", "fp16_arith": "asimdhp", "bf16": "bf16", "i8mm": "i8mm", "dot": "asimddp",
    "sve": "sve", "sve2": "sve2", "sve_bf16": "svebf16", "sme": "sme", "sme2": "sme2",
    "atomics": "atomics", "fhm": "asimdfhm", "rdm": "asimdrdm", "crc32": "crc32", "aes": "aes",
    "sha1": "sha1", "sha2": "sha2", "pmull": "pmull",
}


def _cpuinfo_flags():
    """The feature flags of the first processor in /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return set()


@functools.lru_cache(None)
def get_capabilities():
    """An immutable mapping of what this CPU supports, as ``torch.cpu.get_capabilities``:
    ``architecture``, ``num_logical_cores``, and one boolean per instruction-set extension
    (torch's names: ``avx2``, ``avx512_f``, ``amx_tile``... on x86; ``neon``, ``sve``... on
    ARM). The extensions are read from ``/proc/cpuinfo``; on a system without it only the
    architecture and the core count are reported."""
    machine = platform.machine().lower()
    architecture = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    capabilities = {"architecture": architecture, "num_logical_cores": os.cpu_count()}
    flags = _cpuinfo_flags()
    if flags:
        table = _X86_FLAGS if architecture in ("x86_64", "i386", "i686") else _ARM_FEATURES
        capabilities.update({name: flag in flags for name, flag in table.items()})
    return MappingProxyType(capabilities)


def is_available():
    """True: the CPU is always there. (Exists, as in torch, for device-agnostic code.)"""
    return True


def is_initialized():
    """True: the CPU needs no initialisation. (As in torch, for device-agnostic code.)"""
    return True


def synchronize(device=None):
    """Wait for the CPU's queued work: Ember's CPU ops finish before they return, so there is
    none and this returns at once, as torch's does. ``device`` is ignored (one CPU device)."""


def device_count():
    """1: the CPU is one device, whatever its number of cores (as in torch)."""
    return 1


def current_device():
    """``"cpu"``, as in torch."""
    return "cpu"


def set_device(device):
    """Select the current CPU device: there is only one, so nothing changes (as in torch)."""


class Stream:
    """A CPU stream. CPU ops run in order as they are called, so waiting on a stream or an
    event has nothing to wait for; the class exists, as torch's, for device-agnostic code."""

    def __init__(self, priority=-1):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self):
        pass

    def wait_event(self, event):
        pass


class Event:
    """A CPU event: always complete, since CPU work finishes before the call that queued it
    returns (as torch's)."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


_default_cpu_stream = Stream()
_current_stream = _default_cpu_stream


def current_stream(device=None):
    """The stream selected by the innermost ``ember.cpu.stream(...)`` block (the default
    stream outside any). ``device`` is ignored."""
    return _current_stream


class StreamContext(AbstractContextManager):
    """Select ``stream`` as the current CPU stream inside a ``with`` block; ``None`` selects
    nothing."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _default_cpu_stream

    def __enter__(self):
        global _current_stream
        if self.stream is None:
            return
        self.prev_stream = _current_stream
        _current_stream = self.stream

    def __exit__(self, type, value, traceback):
        global _current_stream
        if self.stream is None:
            return
        _current_stream = self.prev_stream


def stream(stream):
    """``StreamContext(stream)``."""
    return StreamContext(stream)


def __getattr__(name):
    # ``amp`` pulls in the mixed-precision machinery: imported on first use so that ``import
    # ember`` does not pay for it (``import ember.cpu.amp`` works as well).
    if name == "amp":
        import importlib
        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
