"""``ember.backends.cuda``: torch.backends.cuda's matmul flags and attention-kernel switches.

``matmul.allow_tf32`` is the legacy spelling of ``ember.set_float32_matmul_precision`` (True
means "high"), as in torch. On CUDA it decides how cuBLAS multiplies float32 (and complex64)
matrices: ``CupyBackend.matmul`` sets CuPy's compute type (``cupy._core.set_compute_type``) to
TF32 under "high"/"medium" and to float32 under "highest", as torch's CUDA matmuls do. On the
CPU products run in full float32 whatever it says, which every setting permits. The
scaled-dot-product-attention switches record which kernels a script allows: Ember has one
attention kernel (the math one) on every device, so they are stored and reported as torch does.
"""
import contextlib
import importlib.util
import warnings

__all__ = ["is_built", "matmul", "cuBLASModule", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp",
           "fp16_bf16_reduction_math_sdp_allowed", "allow_fp16_bf16_reduction_math_sdp",
           "sdp_kernel"]


def is_built():
    """Whether Ember's CUDA backend can be used here: its array library, CuPy, is installed
    (``pip install 'ember[cuda]'``). It says nothing about a GPU being present; for that ask
    ``ember.cuda.is_available()``."""
    return importlib.util.find_spec("cupy") is not None


def _switches():
    from .. import _type_info_and_switches
    return _type_info_and_switches


def _reduction_setting(value, attr_name):
    def ensure_bool(obj, which):
        if isinstance(obj, bool):
            return obj
        raise TypeError(f"{attr_name} expects a bool for {which}, but got {type(obj)!r}")
    if isinstance(value, bool):
        return value, True
    if isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"{attr_name} expects at least one boolean argument")
        if len(value) > 2:
            raise TypeError(f"{attr_name} expects at most two boolean arguments")
        allow = ensure_bool(value[0], "allow_reduced_precision")
        split_k = ensure_bool(value[1], "allow_splitk") if len(value) == 2 else True
        return allow, split_k
    raise TypeError(f"{attr_name} expects a bool or a tuple/list of bools, but got {type(value)!r}")


class cuBLASModule:
    """``ember.backends.cuda.matmul``: cuBLAS's precision flags, with torch's defaults."""

    def __init__(self):
        object.__setattr__(self, "_state", {"fp16": (True, True), "bf16": (True, True),
                                            "fp16_accumulation": False})

    def __getattr__(self, name):
        state = object.__getattribute__(self, "_state")
        switches = _switches()
        if name == "allow_tf32":
            return switches.get_float32_matmul_precision() != "highest"
        if name == "fp32_precision":
            if not switches._matmul_precision_chosen:
                return "none"
            return "ieee" if switches.get_float32_matmul_precision() == "highest" else "tf32"
        if name in ("allow_fp16_reduced_precision_reduction",
                    "allow_bf16_reduced_precision_reduction"):
            return state[name[6:10]][0]
        if name in ("allow_fp16_reduced_precision_reduction_split_k",
                    "allow_bf16_reduced_precision_reduction_split_k"):
            return state[name[6:10]][1]
        if name == "allow_fp16_accumulation":
            return state["fp16_accumulation"]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        state = object.__getattribute__(self, "_state")
        switches = _switches()
        if name == "allow_tf32":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                                   f"{type(value).__name__}")
            switches.set_float32_matmul_precision("high" if value else "highest")
        elif name == "fp32_precision":
            if value not in ("none", "ieee", "tf32"):
                raise RuntimeError(f"Unknown precision: {value}")
            switches.set_float32_matmul_precision("high" if value == "tf32" else "highest")
            switches._matmul_precision_chosen = value != "none"
        elif name in ("allow_fp16_reduced_precision_reduction",
                      "allow_bf16_reduced_precision_reduction"):
            allow, split_k = _reduction_setting(value, name)
            if allow and not split_k:
                raise RuntimeError("allow_splitk=False is not supported when reduced precision "
                                   "reductions are enabled")
            state[name[6:10]] = (allow, split_k)
        elif name == "allow_fp16_accumulation":
            if not isinstance(value, bool):
                raise RuntimeError(f"set_allow_fp16_accumulation_cublas expects a bool, but got "
                                   f"{type(value).__name__}")
            state["fp16_accumulation"] = value
        else:
            raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()

# Which fused attention kernels scaled_dot_product_attention may pick (torch's defaults).
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
        "fp16_bf16_reduction_math": False}


def _sdp_setter(key, doc):
    def enable(enabled):
        if not isinstance(enabled, bool):
            raise RuntimeError(f"set_sdp_use_{key} expects a bool, but got "
                               f"{type(enabled).__name__}")
        _sdp[key] = enabled
    enable.__name__ = f"enable_{key}_sdp"
    enable.__doc__ = doc

    def enabled():
        return _sdp[key]
    enabled.__name__ = f"{key}_sdp_enabled"
    return enable, enabled


enable_flash_sdp, flash_sdp_enabled = _sdp_setter("flash", "Allow the flash attention kernel.")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_setter(
    "mem_efficient", "Allow the memory-efficient attention kernel.")
enable_math_sdp, math_sdp_enabled = _sdp_setter("math", "Allow the math attention kernel.")
enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_setter("cudnn", "Allow the cuDNN attention kernel.")


def allow_fp16_bf16_reduction_math_sdp(enabled):
    """Allow the math attention kernel to reduce float16/bfloat16 in their own precision."""
    if not isinstance(enabled, bool):
        raise RuntimeError(f"set_sdp_allow_fp16_bf16_reduction_math expects a bool, but got "
                           f"{type(enabled).__name__}")
    _sdp["fp16_bf16_reduction_math"] = enabled


def fp16_bf16_reduction_math_sdp_allowed():
    return _sdp["fp16_bf16_reduction_math"]


def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Deprecated (as in torch): choose the allowed attention kernels for a ``with`` block."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=2)
    return _allowed_sdp_kernels(enable_flash, enable_math, enable_mem_efficient, enable_cudnn)


@contextlib.contextmanager
def _allowed_sdp_kernels(enable_flash, enable_math, enable_mem_efficient, enable_cudnn):
    previous = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(previous)
