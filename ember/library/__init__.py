"""``torch.library``'s names: the operator registry, registry-backed devices and custom ops.

* ``Library(ns, kind)``, ``impl(qualname, types, func)``: kernels registered per device type
  under PyTorch's operator names (``"aten::mm"``, ``"aten::add.Tensor"``), read by
  registry-backed devices (``_registry.py``).
* ``RegistryBackend``: a device built from those kernels, with every operation it has no
  kernel for falling back to the CPU — one warning per operator, an error in strict mode
  (``set_strict_fallback(True)`` or ``EMBER_STRICT_FALLBACK=1``) — and ``fallback_report()``
  counting what ran where (``_fallback.py``). ``PRIMITIVES`` is the set of operator names such
  a device implements to train end to end, with each kernel's calling convention.
"""
from ._registry import (Library, impl, PRIMITIVES, set_strict_fallback, is_strict_fallback,
                        fallback_report, reset_fallback_report, FallbackReport,
                        registered_kernels, has_kernel)
from ._registry import _SCHEMAS
from ._fallback import RegistryBackend, DeviceArray

__all__ = ["Library", "impl", "define", "PRIMITIVES", "set_strict_fallback",
           "is_strict_fallback", "fallback_report", "reset_fallback_report", "FallbackReport",
           "registered_kernels", "has_kernel", "RegistryBackend", "DeviceArray"]


def define(qualname, schema, *, lib=None, tags=()):
    """Record the schema of operator ``qualname`` ("ns::name"), as ``torch.library.define``;
    ``schema`` is the part after the name: ``"(Tensor x) -> Tensor"``."""
    ns, sep, name = qualname.partition("::")
    if not sep or not ns or not name:
        raise ValueError(f"define(): expected a qualified name 'ns::name', got {qualname!r}")
    if lib is None:
        lib = Library(ns, "FRAGMENT")
    lib.define(name + schema, tags=tags)
    return lib


# ---- custom operators (ember/library/_custom_ops.py) ----------------------------------------
from ._custom_ops import (custom_op, CustomOpDef, register_kernel, register_fake,  # noqa: E402
                          register_autograd, opcheck, infer_schema, get_ctx)

__all__ += ["custom_op", "CustomOpDef", "register_kernel", "register_fake", "register_autograd",
            "opcheck", "infer_schema", "get_ctx"]
