"""Ember: PyTorch's API in readable Python on NumPy. ``import ember as torch``."""
from ._dtype import (dtype, float16, half, bfloat16, float32, float, float64, double,  # noqa: F401
                     complex64, cfloat, complex128, cdouble, int8, uint8, int16, short, int32,
                     int, int64, long, bool, get_default_dtype, set_default_dtype, promote_types,
                     result_type as _result_type_dtypes, can_cast, qint8, quint8, qint32)
from ._qscheme import (qscheme, per_tensor_affine, per_tensor_symmetric,  # noqa: F401
                       per_channel_affine, per_channel_symmetric, per_channel_affine_float_qparams)
from ._device import device  # noqa: F401
from ._tensor import Tensor, Size  # noqa: F401
from ._random import (Generator, default_generator, manual_seed, seed, initial_seed,  # noqa: F401
                      get_rng_state, set_rng_state)
from . import ops as _ops
from .ops import *  # noqa: F401,F403
from .ops.creation import range_ as range  # noqa: F401
from . import autograd  # noqa: F401
from .autograd import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                       is_grad_enabled, is_inference_mode_enabled, is_anomaly_enabled,
                       is_anomaly_check_nan_enabled, set_anomaly_enabled)
from ._tensor_str import set_printoptions, get_printoptions, printoptions  # noqa: F401
from ._memory_format import (memory_format, contiguous_format, channels_last,  # noqa: F401
                             channels_last_3d, preserve_format)
from ._type_info_and_switches import (finfo, iinfo, set_float32_matmul_precision,  # noqa: F401
                                      get_float32_matmul_precision,
                                      use_deterministic_algorithms,
                                      are_deterministic_algorithms_enabled,
                                      is_deterministic_algorithms_warn_only_enabled,
                                      set_deterministic_debug_mode, get_deterministic_debug_mode,
                                      set_warn_always, is_warn_always_enabled,
                                      get_num_threads, set_num_threads)
from ._layout import (layout, strided, sparse_coo, sparse_csr, sparse_csc,  # noqa: F401
                      sparse_bsr, sparse_bsc)
from . import backends  # noqa: F401
from . import utils  # noqa: F401
from .utils.dlpack import from_dlpack, to_dlpack  # noqa: F401,E402
from .utils.backend_registration import _register_device_module  # noqa: F401,E402
# autocast's state functions are torch's top-level names; the module is light (the ops import it).
from .amp.autocast_mode import (autocast, is_autocast_enabled, set_autocast_enabled,  # noqa: F401,E402
                                get_autocast_dtype, set_autocast_dtype,
                                is_autocast_cache_enabled, set_autocast_cache_enabled,
                                clear_autocast_cache, autocast_increment_nesting,
                                autocast_decrement_nesting, is_autocast_cpu_enabled,
                                set_autocast_cpu_enabled, get_autocast_cpu_dtype,
                                set_autocast_cpu_dtype, get_autocast_gpu_dtype,
                                set_autocast_gpu_dtype)

# A str that also compares as a version (ember.__version__ >= "0.1"), as torch.__version__.
from .torch_version import __version__  # noqa: E402
from . import version  # noqa: E402,F401

import builtins as _builtins


from . import cuda  # noqa: E402,F401
from .cuda import OutOfMemoryError  # noqa: E402,F401  (torch.OutOfMemoryError is torch.cuda's)


def result_type(tensor1, tensor2):
    """The dtype of ``tensor1 op tensor2`` under PyTorch's promotion rules."""
    return _result_type_dtypes(tensor1, tensor2)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_storage(obj):
    return False  # Ember has no storage objects


def detach(input):
    return input.detach()  # the tensor's own (a sparse tensor's detaches its parts)


# torch's function spellings of Tensor's metadata methods: the same functions.
get_device = Tensor.get_device
is_inference = Tensor.is_inference
is_same_size = Tensor.is_same_size
is_signed = Tensor.is_signed


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()


def is_nonzero(input):
    return input.is_nonzero()


def typename(obj):
    """A string naming ``obj``'s type: a tensor's legacy type (``"ember.FloatTensor"``), else
    ``module.qualname`` of the object (or of its class), without ``builtins.``."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def get_num_interop_threads():
    """The size of Ember's pools of threads that work beside the calling thread: the one that
    checks checkpoints' CRC-32s while their bytes are read or written, and the one that runs
    ``jit.fork``'s tasks. An op itself runs in the thread that calls it (its inner parallelism
    is BLAS's: get_num_threads)."""
    from . import serialization
    return serialization._interop_threads()


def set_num_interop_threads(int):
    """Set the size of the inter-op pools (see get_num_interop_threads). As in torch, only
    before one of them has started work: afterwards it raises RuntimeError."""
    from . import serialization
    serialization._set_interop_threads(int)


def init_num_threads():
    """Make the calling thread use the configured thread counts. Ember's thread settings (the
    BLAS pools' limit, the inter-op pool) are process-wide, so a new thread already has them:
    there is nothing per-thread to initialise, and this returns None as torch's does."""


def set_flush_denormal(mode):
    """Whether flushing denormal floats to zero could be set: always False in Ember. The switch
    is a CPU control register (x86 MXCSR's FTZ/DAZ bits) that NumPy offers no way to set, so
    denormals keep IEEE semantics; torch also returns False where it cannot set it."""
    return False


def is_distributed(input):
    """False: no Ember tensor is a distributed tensor (torch also answers False for every
    tensor it makes)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


_warned_default_tensor_type = False


def set_default_tensor_type(t):
    """Deprecated, as in torch: sets the default dtype from a floating-point legacy tensor
    type (``ember.DoubleTensor`` or its name, ``"torch.DoubleTensor"``); a CUDA type
    (``"torch.cuda.FloatTensor"``) also makes CUDA the default device."""
    global _warned_default_tensor_type
    if not _warned_default_tensor_type:  # once per process, as torch's TORCH_WARN_ONCE
        import warnings
        warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please "
                      "use torch.set_default_dtype() and torch.set_default_device() as "
                      "alternatives.", UserWarning, stacklevel=2)
        _warned_default_tensor_type = True
    from .ops.creation import _DTYPE_BY_TENSOR_TYPE, LegacyTensorType
    on_cuda = False
    if isinstance(t, str):
        module, _, name = t.rpartition(".")
        if module not in ("torch", "ember", "torch.cuda", "ember.cuda"):
            raise TypeError(f"invalid type: '{t}'")
        if name not in _DTYPE_BY_TENSOR_TYPE:
            raise AttributeError(f"module '{module}' has no attribute '{name}'")
        new_dtype, on_cuda = _DTYPE_BY_TENSOR_TYPE[name], module.endswith("cuda")
    elif isinstance(t, LegacyTensorType):
        new_dtype = t.dtype
    else:
        raise TypeError(f"invalid type: '{t!r}'")
    if not new_dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(new_dtype)
    if on_cuda:
        set_default_device("cuda")


def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the first ``size`` nonzero elements of ``input``, as ``nonzero``'s
    ``(size, input.dim())`` int64 rows, padded with ``fill_value`` rows where there are fewer:
    a result whose shape does not depend on the values."""
    return input.nonzero_static(size=size, fill_value=fill_value)


def get_device_module(device=None):
    """The module of a device type: ``ember.cpu`` for "cpu", ``ember.cuda`` for "cuda" (a
    device, a device string, or None for the current accelerator, else the CPU)."""
    import importlib
    if isinstance(device, str):
        name = device.partition(":")[0]
    elif device is None:
        from . import accelerator
        current = accelerator.current_accelerator()
        name = current.type if current is not None else "cpu"
    elif isinstance(device, _device_cls_for_module):
        name = device.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect ember.device, str, or "
                           "None")
    module = None
    if name.isidentifier():
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            pass
    if module is None or not hasattr(module, "is_available"):  # ember.nn is no device module
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered "
                           f"as 'ember.{name}'.")
    return module


_device_cls_for_module = device


from .ops.embedding import embedding_bag  # noqa: E402


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    from .sparse.construction import sparse_coo_tensor
    return sparse_coo_tensor(indices, values, size, dtype=dtype, device=device,
                             requires_grad=requires_grad, check_invariants=check_invariants,
                             is_coalesced=is_coalesced)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None):
    from .sparse.construction import sparse_csr_tensor
    return sparse_csr_tensor(crow_indices, col_indices, values, size, dtype=dtype, device=device,
                             requires_grad=requires_grad, check_invariants=check_invariants)


def smm(input, mat):
    """Sparse matrix ``input`` times dense ``mat``, as a sparse COO tensor."""
    from . import sparse  # noqa: F401  (ember.sparse first: its ops module imports it)
    from .ops.sparse import smm
    return smm(input, mat)


def spmm(input, mat2):
    """Dense ``input @ mat2`` (torch's sparse-times-dense product, given dense operands)."""
    from . import sparse  # noqa: F401  (ember.sparse first: its ops module imports it)
    from .ops.sparse import spmm
    return spmm(input, mat2)


def set_default_device(dev):
    """The device factories use when given none; ``None`` restores the CPU, as torch's."""
    from . import _device
    _device._default_device = _ops.creation.resolve_device("cpu" if dev is None else dev)


def get_default_device():
    from . import _device
    return _device._default_device


# In-place ops torch also exposes as functions (``torch.exp_(t)``): the Tensor methods.
for _name in ("abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
              "arctan_", "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_",
              "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_",
              "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_",
              "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_",
              "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_",
              "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_",
              "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "resize_as_"):
    if _name not in globals() and hasattr(Tensor, _name):
        globals()[_name] = getattr(Tensor, _name)
del _name

# torch's namespaces beside the tensor library.
# (``import_module``, not ``from . import``: ``from .ops import *`` above bound ``linalg`` to the
# ops module of that name, which ``from . import linalg`` would return instead of the namespace.)
import importlib as _importlib  # noqa: E402

for _namespace in ("linalg", "special", "fft", "serialization"):
    _importlib.import_module(f"{__name__}.{_namespace}")
# Their ops take NumPy's keyword names (axis=, keepdims=) as torch.linalg/special/fft's do.
for _namespace in (linalg, special, fft):  # noqa: F821 (bound by the imports above)
    _ops._accept_numpy_keywords_in(_namespace)
del _namespace
from .serialization import save, load  # noqa: E402,F401

# Namespaces imported on first use, so that ``import ember`` stays fast: ``ember.hub`` and
# ``import ember.hub`` both work, but none of these (or what they import: urllib, http,
# multiprocessing's machinery, SciPy) is paid for by a script that never touches it.
# Add a namespace here by its module name under ``ember``.
_LAZY_SUBMODULES = frozenset({"distributions", "multiprocessing", "distributed", "hub",
                              "accelerator", "sparse", "random", "functional", "optim", "testing",
                              "cpu", "types", "nn", "amp", "fx", "futures", "jit",
                              "export", "onnx", "ao", "library", "vision", "compiler",
                              "_dynamo", "_inductor", "_functorch", "profiler", "func",
                              "text"})
# torch's top-level names for what lives in a lazy namespace: imported with it on first use.
_LAZY_ATTRIBUTES = {"compile": "_dynamo", "vmap": "func",
                    "fake_quantize_per_tensor_affine": "ao.quantization",
                    "fake_quantize_per_channel_affine": "ao.quantization"}


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_ATTRIBUTES:
        value = globals()[name] = getattr(
            _importlib.import_module(f"{__name__}.{_LAZY_ATTRIBUTES[name]}"), name)
        return value
    if not name.startswith("_"):
        # torch.conv2d & co are nn.functional's layers: they come with ember.nn, on first use.
        _functional_exports = _importlib.import_module(f"{__name__}._functional_exports")
        if name in _functional_exports.__all__:
            value = globals()[name] = getattr(_functional_exports, name)
            return value
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def __dir__():
    _functional_exports = _importlib.import_module(f"{__name__}._functional_exports")
    return sorted({*globals(), *_LAZY_SUBMODULES, *_LAZY_ATTRIBUTES,
                   *_functional_exports.__all__})
