"""Autocast: regions where listed ops run in an op-specific dtype (torch/amp/autocast_mode.py).

The state is PyTorch's and, like PyTorch's, per thread: for each device type whether autocast
is on and its lower-precision dtype, whether the weight cache is on, the nesting depth and the
cache itself. A new thread starts with autocast off.

The policy is PyTorch's, per device type (``POLICIES``), read from
aten/src/ATen/autocast_mode.cpp/.h and the "Autocast Op Reference":

- ``"lower"``: the floating inputs run in the region's dtype (bfloat16 on the CPU by default);
- ``"fp32"``: lower-precision floating inputs are widened to float32;
- ``"promote"``: all floating inputs are cast to the widest of them;
- ``"banned"``: the op refuses to run (``binary_cross_entropy`` under CUDA autocast);
- ``"float16"``: the floating inputs run in float16 whatever the region's dtype (CUDA's cuDNN
  RNN, whose autocast wrapper, aten/src/ATen/cudnn/AutocastRNN.cpp, casts to kHalf);
- ``"native"``: nothing is cast and the op's inner ops are excluded, for an op that PyTorch
  runs as one kernel outside the lists but Ember composes from listed ops (``bilinear`` is
  ATen's ``_trilinear``, ``interpolate`` the upsample kernels: float32 in, float32 out on the
  CPU, where Ember's own matrix products would otherwise turn them to bfloat16).

Casts touch only floating tensors on the region's device type, never float64 ones; other
tensors pass through and the op's own dtype rules then decide the result dtype. An op a device
does not list runs as it is.

How an op takes part, without costing eager code outside autocast more than one attribute
test and no frame: a listed op starts with

    if _autocast.active and _autocast.enabled_for(input, "mm"):
        return _autocast.run(mm, "mm", input, mat2, out=out)

``active`` is true while any thread has autocast enabled for any device type; ``enabled_for``
then asks this thread's state and the policy of the tensor's device type for that op name.
``run`` casts the arguments and calls the op again with autocast excluded for this thread, as
PyTorch's autocast kernel excludes its dispatch key: an op that an autocast op is built from
(``linear`` over ``addmm``, ``cdist`` over ``matmul``) runs in the dtype the outer op chose,
not by a policy of its own.
"""
import functools
import threading
import warnings

from .. import _dtype as _dt
from .._device import device as _device

__all__ = ["autocast_decorator", "autocast", "is_autocast_available"]

# True while some thread has autocast enabled for some device type: the ops' first test. A
# thread that ends inside a region leaves it set, which only costs the listed ops the
# thread-local test (``enabled_for``) from then on, never a wrong cast.
active = False
_active_count = 0
_active_lock = threading.Lock()

# The device types Ember has an autocast policy for.
_AVAILABLE = ("cpu", "cuda")
_DEFAULT_DTYPE = {"cpu": _dt.bfloat16, "cuda": _dt.float16}
_SUPPORTED_DTYPES = (_dt.bfloat16, _dt.float16)


class _ThreadState(threading.local):
    def __init__(self):
        self.enabled = {}
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True
        self.nesting = 0
        # id(float32 leaf) -> (leaf, its lower-precision cast); the leaf is held so its id
        # cannot be reused by another tensor while the entry lives.
        self.cache = {}
        self.excluded = False


_state = _ThreadState()


def _device_type(device_type):
    """Validate a device type string as torch does (its error for unknown names)."""
    if not isinstance(device_type, str):
        raise TypeError(f"expected a device type string, got {type(device_type).__name__}")
    return _device(device_type).type


def is_autocast_available(device_type):
    """Whether autocast is available on ``device_type`` (Ember has policies for cpu and cuda)."""
    return _device_type(device_type) in _AVAILABLE


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` in this thread; without one, CUDA's, as
    torch answers."""
    return _state.enabled.get("cuda" if device_type is None else _device_type(device_type), False)


def set_autocast_enabled(device_type, enabled=None):
    """``set_autocast_enabled(device_type, enabled)``; the older one-argument form
    ``set_autocast_enabled(enabled)`` sets CUDA's."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    device_type = _device_type(device_type)
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' must be bool, not "
                        f"{type(enabled).__name__}")
    was = _state.enabled.get(device_type, False)
    _state.enabled[device_type] = enabled
    if was != enabled:
        _count_active(1 if enabled else -1)


def _count_active(step):
    global active, _active_count
    with _active_lock:
        _active_count += step
        active = _active_count > 0


def _is_any_autocast_enabled():
    """Whether this thread has autocast on for any device type (``torch._C``'s function of the
    name, which the recurrent layers ask before their input-dtype check)."""
    return any(_state.enabled.values())


def get_autocast_dtype(device_type):
    """The lower-precision dtype of ``device_type``'s autocast in this thread."""
    device_type = _device_type(device_type)
    return _state.dtype.get(device_type, _dt.float16)


def set_autocast_dtype(device_type, dtype):
    device_type = _device_type(device_type)
    if not isinstance(dtype, _dt.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    _state.dtype[device_type] = dtype


def is_autocast_cache_enabled():
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled):
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_cache_enabled(): argument 'enabled' must be bool, not "
                        f"{type(enabled).__name__}")
    _state.cache_enabled = enabled


def clear_autocast_cache():
    _state.cache.clear()


def autocast_increment_nesting():
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting():
    # torch lets the count go negative on an unmatched decrement; so does this.
    _state.nesting -= 1
    return _state.nesting


def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast


class autocast:
    r"""Context manager or decorator for a region of mixed precision, as ``torch.autocast``.

    Args:
        device_type (str): ``"cpu"`` or ``"cuda"``.
        dtype (ember.dtype, optional): the lower precision; ``None`` takes
            :func:`ember.get_autocast_dtype` (bfloat16 on the CPU, float16 on CUDA).
        enabled (bool): whether autocast is on in the region. Default ``True``.
        cache_enabled (bool, optional): whether float32 leaves that require grad are cast once
            per outermost region; ``None`` keeps :func:`ember.is_autocast_cache_enabled`.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{self.device}'")
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else cache_enabled)
        if enabled:
            if self.device == "cuda":
                from .. import cuda
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
                # (an ember.cuda that cannot answer is taken as no bfloat16 support)
                elif (self.fast_dtype is _dt.bfloat16
                      and not getattr(cuda, "is_bf16_supported", lambda: False)()):
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please "
                                       "switch dtype to float16.")
            elif self.fast_dtype not in _SUPPORTED_DTYPES:
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              + ", ".join(map(str, _SUPPORTED_DTYPES)) + " currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        # Leaving the outermost region drops the weight cache.
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                f"Did you mean to use autocast as a context manager? For example:\n"
                f"    with torch.autocast(device_type=...):\n"
                f"        output = model(input)")
        return autocast_decorator(self, func)


# ---------------------------------------------------------------------------------------------
# The ops' side: which device an op's tensors are on, the casts, the exclusion while it runs
# ---------------------------------------------------------------------------------------------

def _first_device_type(x):
    if isinstance(x, (list, tuple)):
        for item in x:
            if isinstance(item, (list, tuple)):  # einsum(eq, [a, b]): the operands as a list
                return _first_device_type(item)
            if hasattr(item, "_device"):
                return item._device.type
        return None
    device = getattr(x, "_device", None)
    return None if device is None else device.type


def enabled_for(x, op):
    """Whether this thread's autocast applies to op ``op`` whose first tensor (or tensor list)
    is ``x``: autocast on for ``x``'s device type, that device's policy lists ``op``, and no
    enclosing autocast op excludes it."""
    state = _state
    if state.excluded:
        return False
    device_type = _first_device_type(x)
    return state.enabled.get(device_type, False) and (op is None
                                                       or op in POLICIES.get(device_type, ()))


def run_excluded(fn, *args, **kwargs):
    """Call ``fn`` with autocast excluded for this thread and nothing cast: for the ops that
    PyTorch's autocast leaves alone although they compute through a listed op (the in-place
    forms, which Ember computes out of place first)."""
    state = _state
    # (restored, not cleared: a call made inside an excluded op leaves it excluded)
    previous, state.excluded = state.excluded, True
    try:
        return fn(*args, **kwargs)
    finally:
        state.excluded = previous


def _eligible(t, device_type):
    # A floating tensor on the region's device type; float64 is never cast (PyTorch's rule).
    return (hasattr(t, "_dtype") and t._dtype._kind == 2 and t._dtype is not _dt.float64
            and t._device.type == device_type)


def _cast(t, to, device_type, state):
    if not _eligible(t, device_type) or t._dtype is to:
        return t
    # The weight cache: a float32 leaf that requires grad (a parameter) cast to the region's
    # lower precision is cast once per outermost region; PyTorch's conditions exactly.
    if (state.cache_enabled and to is state.dtype[device_type] and t._dtype is _dt.float32
            and t._requires_grad and t.grad_fn is None and t._base is None):
        hit = state.cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        cast = t.to(to)
        state.cache[id(t)] = (t, cast)
        return cast
    return t.to(to)


def cached_cast(t, to):
    """``t`` cast to ``to`` as a listed op casts its arguments (float32 parameters through the
    weight cache; float64 and non-floating tensors as they are): for an Ember op that fuses
    what PyTorch composes from listed ops (a recurrent layer's hidden projection is ATen's
    ``linear``)."""
    if t is None:
        return None
    return _cast(t, to, t._device.type, _state)


def _cast_arg(a, to, device_type, state):
    if isinstance(a, (list, tuple)) and a and hasattr(a[0], "_dtype"):
        return type(a)(_cast(t, to, device_type, state) for t in a)
    return _cast(a, to, device_type, state)


def _tensors(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from (t for t in a if hasattr(t, "_dtype"))
        elif hasattr(a, "_dtype"):
            yield a


def _promote_type(args, device_type, state):
    """PyTorch's ``promote_type``: float32 wins over the lower precision; float64 is left out
    (the op's own promotion handles it)."""
    lower = state.dtype[device_type]
    current = lower
    for t in _tensors(args):
        if not _eligible(t, device_type):
            continue
        if t._dtype is _dt.float32 or current is _dt.float32:
            current = _dt.float32
        elif t._dtype is not lower:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


_BCE_BANNED = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def run(fn, op, *args, **kwargs):
    """Call ``fn`` with its tensor arguments cast by its device's policy for ``op`` and autocast
    excluded for this thread while it runs (``enabled_for`` has said autocast applies)."""
    state = _state
    device_type = None
    for a in args:
        device_type = _first_device_type(a)
        if device_type is not None:
            break
    policy = POLICIES[device_type][op]
    if policy == "native" or kwargs.get("out") is not None:
        # (PyTorch's autocast registers no out= overload: such a call runs in its input dtypes)
        return run_excluded(fn, *args, **kwargs)
    if policy == "lower":
        to = state.dtype[device_type]
    elif policy == "fp32":
        to = _dt.float32
    elif policy == "promote":
        to = _promote_type((*args, *kwargs.values()), device_type, state)
    elif policy == "float16":
        to = _dt.float16
    else:
        raise RuntimeError(_BCE_BANNED)
    args = [_cast_arg(a, to, device_type, state) for a in args]
    kwargs = {k: _cast_arg(v, to, device_type, state) for k, v in kwargs.items()}
    state.excluded = True
    try:
        return fn(*args, **kwargs)
    finally:
        state.excluded = False


# ---------------------------------------------------------------------------------------------
# The policies, keyed by the op's ATen name (``linalg_inv``, ``fft_rfft``, ``grid_sampler``,
# ``cross_entropy_loss``); ``reflection_or_replication_pad`` is ``F.pad``'s reflect (1-D, 2-D)
# and replicate modes, ATen's reflection_pad1d/2d and replication_pad1d/2d/3d.
# ---------------------------------------------------------------------------------------------

def _policy(**lists):
    return {op: policy for policy, ops in lists.items() for op in ops.split()}


_CPU_FP32 = """
    avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile stft cdist
    trace view_as_complex cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr ormqr
    pinverse max_pool3d max_unpool2d max_unpool3d adaptive_avg_pool3d
    reflection_or_replication_pad mse_loss cosine_embedding_loss nll_loss hinge_embedding_loss
    poisson_nll_loss smooth_l1_loss cross_entropy_loss l1_loss huber_loss margin_ranking_loss
    soft_margin_loss triplet_margin_loss multi_margin_loss ctc_loss kl_div
    multilabel_margin_loss binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2 fft_ifft2
    fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft
    fft_ihfft linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals
    linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv
    linalg_tensorsolve geqrf qr svd triangular_solve adaptive_max_pool3d linalg_qr
    linalg_cholesky_ex linalg_svd linalg_eig linalg_eigh linalg_lstsq linalg_inv_ex"""

# CUDA's lists, less the ops Ember does not have: lower - ``_convolution``/``convolution`` and
# the cuDNN-less fused cells ``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell``; fp32 -
# frobenius_norm, nuclear_norm, native_layer_norm. ``cross_entropy_loss`` is not in CUDA's lists
# but its parts (log_softmax, nll_loss) are, so it is float32 there too; ``trace`` and
# ``xlogy`` are one unlisted kernel each in PyTorch, which Ember composes from listed ops (sum,
# log): "native" keeps them in their input dtype. The recurrent layers: oneDNN's LSTM layer on
# the CPU (``mkldnn_rnn_layer``) and cuDNN's RNN on CUDA (``_cudnn_rnn``, float16 whatever the
# region's dtype) take part as those kernels, CUDA's cells as ``lstm_cell``...
# (ember/nn/modules/rnn.py); the float32 unary ops by their names (ops/elementwise.py's
# ``AUTOCAST_UNARY``).
POLICIES = {
    "cpu": _policy(
        lower="""conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm addbmm linear matmul
                 conv_tbc mkldnn_rnn_layer conv_transpose1d conv_transpose2d conv_transpose3d
                 prelu scaled_dot_product_attention""",
        fp32=_CPU_FP32,
        promote="stack cat index_copy",
        native="bilinear upsample"),
    "cuda": _policy(
        lower="""conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
                 conv_transpose3d prelu addmm addmv addr matmul einsum mm mv linalg_vecdot
                 linear addbmm baddbmm bmm chain_matmul linalg_multi_dot lstm_cell gru_cell
                 rnn_tanh_cell rnn_relu_cell scaled_dot_product_attention""",
        fp32="""softplus layer_norm group_norm cosine_similarity poisson_nll_loss
                cosine_embedding_loss nll_loss hinge_embedding_loss kl_div l1_loss
                smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss
                soft_margin_loss triplet_margin_loss multi_margin_loss
                binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp prod softmax
                log_softmax cumprod cumsum cross_entropy_loss upsample acos asin cosh erfinv exp
                expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow sum norm
                linalg_vector_norm linalg_matrix_norm""",
        promote="""addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler tensordot
                   scatter_add index_put""",
        banned="binary_cross_entropy",
        float16="_cudnn_rnn",
        native="trace xlogy"),
}
