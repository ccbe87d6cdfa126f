"""``ember.Tensor``: a backend array plus dtype, device and autograd metadata.

The class holds state and the Python protocol; the maths lives in ``ember.ops`` and is attached
as methods by ``ember.ops.__init__``. Hot attributes are slots; rarely set ones (hooks, view
bookkeeping, ``grad``) are class-level defaults overridden per instance, so making a result
tensor costs six stores.
"""
import numpy as np

from . import _dtype as dt
from . import _memory_format as _mf
from . import _layout as _layouts
from ._device import device as _device_cls
from .backends import get_backend
from .autograd.graph import VersionCounter
from .autograd import engine as _engine

__all__ = ["Tensor"]

_new = object.__new__
_generic = np.generic


class Tensor:
    __slots__ = ("_data", "_dtype", "_device", "_backend", "_requires_grad", "grad_fn",
                 "__dict__", "__weakref__")
    # torch.autograd.Variable._execution_engine: code written for torch (DDP's reducer) queues
    # end-of-backward callbacks through it
    _execution_engine = _engine

    # Rarely set state, stored in the instance dict only when it differs from these defaults.
    _output_nr = 0
    _vc = None               # VersionCounter, shared with views; None until first needed
    _base = None             # the tensor this is a view of (always the root, never a view)
    _view_fn = None          # replays this view on another tensor shaped like _base
    _grad_acc = None         # weakref to this leaf's AccumulateGrad node
    _backward_hooks = None
    _post_acc_hooks = None
    _fw_grad = None          # the forward AD tangent, inside a dual level (autograd/forward_ad.py)
    _is_param = False
    __array_priority__ = 1000  # numpy scalars defer to our reflected operators

    def __new__(cls, *args, device=None, **kwargs):
        # Legacy constructor: Tensor(data_list) or Tensor(*sizes) gives default-dtype floats,
        # Tensor(other) an alias of other (see ops.creation.legacy_new).
        from .ops import creation
        t = creation.legacy_new(dt.get_default_dtype(), creation.resolve_device(device), args,
                                kwargs, alias_any_dtype=True)
        if cls is not Tensor:
            t = _as_subclass(t, cls)
        return t

    # ---- metadata -------------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim_no_scalar(dim, self._data.ndim)]

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._device.type == "cpu"

    @property
    def is_xpu(self):
        return self._device.type == "xpu"

    @property
    def is_quantized(self):
        return False  # quantized tensors (ember/_quantized_tensor.py) override this

    @property
    def is_mps(self):
        return self._device.type == "mps"

    @property
    def is_meta(self):
        return False  # Ember has no meta device

    @property
    def is_maia(self):
        return False

    def get_device(self):
        """-1 for a CPU tensor, else the device index."""
        if self._device.type == "cpu":
            return -1
        return self._device.index or 0

    def is_inference(self):
        """Ember keeps no inference-tensor flag: ``inference_mode`` runs like ``no_grad``, so no
        tensor is an inference tensor."""
        return False

    def is_same_size(self, other):
        return self._data.shape == other._data.shape

    def is_signed(self):
        return self._dtype.is_signed

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def name(self):
        # The JIT's debug name for a traced value; None outside tracing, which Ember lacks.
        return None

    @property
    def volatile(self):
        import warnings
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    def reinforce(self, reward):
        raise RuntimeError(
            "reinforce() was removed.\nUse ember.distributions instead.\nSee "
            "https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\nprobs = "
            "policy_network(state)\naction = probs.multinomial()\nnext_state, reward = "
            "env.step(action)\naction.reinforce(reward)\naction.backward()\n\nUse:\n\nprobs = "
            "policy_network(state)\n# NOTE: categorical is equivalent to what used to be called "
            "multinomial\nm = ember.distributions.Categorical(probs)\naction = m.sample()\n"
            "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\n"
            "loss.backward()\n")

    @property
    def is_sparse(self):
        # Sparse tensors (ember.sparse) carry their layout in ``_layout`` and may override this.
        return getattr(getattr(self, "_layout", None), "_name", None) == "sparse_coo"

    # ---- layout: an ordinary tensor is strided; ember/sparse/tensor.py overrides these -----
    _layout = _layouts.strided

    @property
    def layout(self):
        return self._layout

    @property
    def is_sparse_csr(self):
        return False

    def to_dense(self, dtype=None, *, masked_grad=None):
        return self if dtype is None else self.to(dtype)

    def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
        from .sparse.construction import to_sparse
        return to_sparse(self, *args, layout=layout, blocksize=blocksize, dense_dim=dense_dim)

    def to_sparse_coo(self):
        return self.to_sparse()

    def to_sparse_csr(self, dense_dim=None):
        from .sparse.construction import to_sparse_csr
        return to_sparse_csr(self, dense_dim)

    def sparse_dim(self):
        return 0

    def dense_dim(self):
        return self._data.ndim

    def _sparse_only(self, name, kind="sparse coordinate"):
        raise RuntimeError(f"{name} expected {kind} tensor layout but got Strided")

    def indices(self):
        self._sparse_only("indices")

    def _indices(self):
        raise NotImplementedError("Could not run 'aten::_indices' with arguments from the 'CPU' "
                                  "backend: _indices() is defined for sparse COO tensors only")

    def values(self):
        self._sparse_only("values", "sparse")

    def _values(self):
        raise NotImplementedError("Could not run 'aten::_values' with arguments from the 'CPU' "
                                  "backend: _values() is defined for sparse COO tensors only")

    def crow_indices(self):
        self._sparse_only("crow_indices", "sparse row compressed")

    def col_indices(self):
        self._sparse_only("col_indices", "sparse row compressed")

    def coalesce(self):
        self._sparse_only("coalesce")

    def is_coalesced(self):
        self._sparse_only("is_coalesced")

    def _nnz(self):
        raise NotImplementedError("Could not run 'aten::_nnz' with arguments from the 'CPU' "
                                  "backend: _nnz() is defined for sparse tensors only")

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self._data.size * self._dtype.itemsize

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return self._dtype.is_complex

    def stride(self, dim=None):
        itemsize = self._dtype.itemsize
        strides = tuple(s // itemsize for s in self._data.strides)
        if self._data.size <= 1 or 0 in self._data.shape:
            strides = _contiguous_strides(self._data.shape) if self._base is None else strides
        return strides if dim is None else strides[wrap_dim_no_scalar(dim, self._data.ndim)]

    def storage_offset(self):
        base = self._base
        if base is None:
            return 0
        backend = self._backend
        return (backend.data_ptr(self._data) - backend.data_ptr(base._data)) // self._dtype.itemsize

    def data_ptr(self):
        return self._backend.data_ptr(self._data)

    def const_data_ptr(self):
        return self.data_ptr()

    def is_contiguous(self, memory_format=None):
        if memory_format is not None and memory_format is not _mf.contiguous_format and (
                memory_format is not _mf.preserve_format):
            _mf.check(memory_format)
            return _mf.is_contiguous_in(self._data.shape, self.stride(), memory_format)
        data = self._data
        if data.size <= 1:
            return True
        expected = 1
        for size, stride in zip(reversed(data.shape), reversed(data.strides)):
            if size != 1 and stride != expected * self._dtype.itemsize:
                return False
            expected *= size
        return True

    @property
    def is_nested(self):
        """False: Ember has no nested (jagged) tensors."""
        return False

    @property
    def is_mkldnn(self):
        """False: Ember has no MKL-DNN layout."""
        return False

    def is_nonzero(self):
        """Whether this one-element tensor's value is nonzero."""
        if self.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def is_set_to(self, tensor):
        """Whether ``tensor`` is this tensor's exact alias: the same memory, storage offset,
        sizes and strides (a view with another geometry is not)."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                            f"{type(tensor).__name__}")
        mine = self._base if self._base is not None else self
        theirs = tensor._base if tensor._base is not None else tensor
        return (mine is theirs and self._dtype is tensor._dtype
                and self.storage_offset() == tensor.storage_offset()
                and self._data.shape == tensor._data.shape and self.stride() == tensor.stride())

    def dim_order(self, *, ambiguity_check=False):
        """The dims from outermost to innermost in memory (largest stride first): ``(0, 1, 2,
        3)`` for a contiguous NCHW tensor, ``(0, 2, 3, 1)`` for channels_last. With
        ``ambiguity_check`` (True, or a list of memory formats) a tensor whose order is not
        unique (equal strides, size-1 dims), and that is not contiguous in exactly one of the
        given formats, raises RuntimeError."""
        if self.is_sparse:
            raise AttributeError(f"Can't get dim order on sparse type: {self.type()} Use "
                                 "Tensor.to_dense() to convert to a dense tensor first.")
        if not isinstance(ambiguity_check, bool):
            if not isinstance(ambiguity_check, list) or not all(
                    isinstance(f, _mf.memory_format) for f in ambiguity_check):
                raise TypeError("The ambiguity_check argument must be a bool or a list of "
                                "memory formats.")
        sizes, strides = self._data.shape, self.stride()
        formats = ambiguity_check if isinstance(ambiguity_check, list) else []
        check = ambiguity_check if isinstance(ambiguity_check, bool) else True
        ambiguous = (any(a == b for a, b in zip(strides, strides[1:]))
                     or any(n == 1 for n in sizes))
        not_one_format = sum(self.is_contiguous(memory_format=f) for f in formats) != 1
        if check and ambiguous and not_one_format:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                               "exact one of the given memory formats.")

        ndim = len(sizes)
        if ndim <= 1:
            return tuple(range(ndim))
        contiguous = self.is_contiguous()
        channels_last = ndim == 4 and self.is_contiguous(memory_format=_mf.channels_last)
        if contiguous and not channels_last:
            return tuple(range(ndim))
        if channels_last and not contiguous:
            return (0, *range(2, ndim), 1)

        def at_least(a, b):
            return b == 0 or (a != 0 and (a >= b or a % b == 0))

        def should_swap(a, b):
            # torch's order: by stride, equal strides by size; zero strides (broadcast) do not
            # order two dims
            if strides[a] == 0 or strides[b] == 0:
                return 0
            if strides[a] == strides[b]:
                return 0 if at_least(sizes[b], sizes[a]) else 1
            if at_least(strides[b], strides[a]):
                return -1
            return 1 if at_least(strides[a], strides[b]) else 0

        perm = list(reversed(range(ndim)))  # innermost first; an insertion sort over the dims
        for i in range(1, ndim):
            j = i
            for k in reversed(range(i)):
                order = should_swap(perm[k], perm[j])
                if order > 0:
                    perm[k], perm[j] = perm[j], perm[k]
                    j = k
                elif order < 0:
                    break
        if ambiguity_check and any(should_swap(perm[i], perm[i + 1]) != -1
                                   for i in range(ndim - 1)):
            raise RuntimeError("The tensor does not have unique dim order.")
        return tuple(reversed(perm))

    def nonzero_static(self, *, size, fill_value=-1):
        """See ``ember.nonzero_static``."""
        import operator
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"nonzero_static(): argument 'size' must be int, not "
                            f"{type(size).__name__}")
        if isinstance(fill_value, bool) or not isinstance(fill_value, int):
            raise TypeError(f"nonzero_static(): argument 'fill_value' must be int, not "
                            f"{type(fill_value).__name__}")
        if size < 0:
            raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
        xp = self._backend.xp
        coords = xp.argwhere(self._data)
        out = xp.full((operator.index(size), self._data.ndim), fill_value, dtype=xp.int64)
        n = min(size, coords.shape[0])
        out[:n] = coords[:n]
        return _wrap(out, dt.int64, self)

    def module_load(self, other, assign=False):
        """What ``Module.load_state_dict`` puts in place of this parameter or buffer: ``other``
        detached (``assign=True``), else this tensor with ``other``'s values copied in."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()

    def apply_(self, callable):
        """Replace each element ``x`` by ``callable(x)`` (a Python function called once per
        element, with a Python number, as torch does): CPU only, and slow by nature."""
        return self._map_python("apply_", callable, ())

    def map_(self, tensor, callable):
        """``self[i] = callable(self[i], tensor[i])``, ``tensor`` broadcast to this shape."""
        return self._map_python("map_", callable, (tensor,))

    def map2_(self, x, y, callable):
        """``self[i] = callable(self[i], x[i], y[i])``, ``x`` and ``y`` broadcast to this
        shape."""
        return self._map_python("map2_", callable, (x, y))

    def _map_python(self, name, fn, others):
        names = ("other",) if name == "map_" else ("x", "y")
        for position, (arg, other) in enumerate(zip(names, others), start=1):
            if not isinstance(other, Tensor):
                raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be "
                                f"Tensor, not {type(other).__name__}")
        if self._device.type != "cpu" or any(o._device.type != "cpu" for o in others):
            raise TypeError(f"{name} is only implemented on CPU tensors")
        if self._requires_grad or any(o._requires_grad for o in others):
            raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                               f"var.detach().{name}() instead.")
        for arg, other in zip(names, others):
            if other._dtype is not self._dtype:
                raise TypeError(f"{name}: expected {self.type()} for '{arg}' (got "
                                f"{other.type()})")
        from .ops.inplace import check_inplace
        check_inplace(self)
        convert = _python_converter(self._dtype)
        columns = [self._data.ravel().tolist()]
        columns += [o.expand_as(self)._data.ravel().tolist() for o in others]
        values = [convert(fn(*items)) for items in zip(*columns)]
        self._data[...] = np.asarray(values, dtype=self._dtype.np).reshape(self._data.shape)
        self._bump_version()
        return self

    def _is_view(self):
        return self._base is not None

    def share_memory_(self):
        """Move this tensor's memory (shared with its views) into shared memory, so that
        processes it is sent to or forked into see the same values; a no-op if it is there."""
        from .multiprocessing.reductions import share_memory_
        return share_memory_(self)

    def is_shared(self):
        from .multiprocessing.reductions import is_shared
        return is_shared(self)

    def pin_memory(self, device=None):
        """A copy of this CPU tensor in page-locked host memory (itself if it is there already),
        from which copies to the accelerator can run asynchronously (``non_blocking=True``). The
        accelerator's backend provides the memory (CuPy's pinned pool for CUDA); without an
        accelerator torch raises, and so does Ember."""
        if device is not None:
            import warnings
            warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please do "
                          "not pass this argument.", DeprecationWarning, stacklevel=2)
        if self._device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors "
                               "can be pinned")
        backend = _pinning_backend(device)
        if backend.is_pinned(self._data):
            return self
        out = _wrap(backend.pin_memory(self._data), self._dtype, self)
        from .autograd.grad_mode import _state as _grad_state
        if _grad_state.enabled and self._requires_grad:
            from .ops.creation import PinMemoryBackward0
            from .ops._dispatch import record
            record(PinMemoryBackward0, (self,), out)
        return out

    def is_pinned(self, device=None):
        """Whether this tensor's memory is page-locked, as the accelerator's backend (for CUDA,
        the driver) knows it; False without an accelerator, as in torch's CPU build."""
        if self._device.type != "cpu":
            return False
        from . import accelerator
        if not accelerator.is_available():
            return False
        try:
            backend = _pinning_backend(device)
        except RuntimeError:  # an accelerator without pinned memory has pinned nothing
            return False
        return backend.is_pinned(self._data)

    # ---- autograd metadata ------------------------------------------------------------------
    @property
    def grad(self):
        # Kept in the instance dict only once set, like the other rarely set state.
        return self.__dict__.get("grad")

    @grad.setter
    def grad(self, value):
        if value is not None:
            _check_assigned_grad(self, value)
        self.__dict__["grad"] = value

    @grad.deleter
    def grad(self):
        self.__dict__.pop("grad", None)

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a "
                    "computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return self
        if requires_grad and not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def _version(self):
        return 0 if self._vc is None else self._vc.value

    @property
    def data(self):
        out = _wrap_with(self._data, self._dtype, self._device, self._backend)
        out._vc = self._ensure_vc()
        return out

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._dtype = value._dtype
        self._device = value._device
        self._backend = value._backend

    def _ensure_vc(self):
        vc = self._vc
        if vc is None:
            vc = self._vc = VersionCounter()
        return vc

    def _bump_version(self):
        vc = self._vc
        if vc is None:
            vc = self._vc = VersionCounter()
        vc.value += 1

    def detach(self):
        out = _wrap_with(self._data, self._dtype, self._device, self._backend)
        out._vc = self._ensure_vc()
        return out

    def detach_(self):
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._requires_grad = False
        self.__dict__.pop("_output_nr", None)
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; it may return a new one."""
        from .utils.hooks import RemovableHandle
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._backward_hooks is None:
                self._backward_hooks = {}
            hooks = self._backward_hooks
        else:
            node = self.grad_fn
            if node._tensor_pre_hooks is None:
                node._tensor_pre_hooks = {}
            hooks = node._tensor_pre_hooks.setdefault(self._output_nr, {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after a leaf's ``.grad`` was accumulated (used by DDP)."""
        from .utils.hooks import RemovableHandle
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = {}
        handle = RemovableHandle(self._post_acc_hooks)
        self._post_acc_hooks[handle.id] = hook
        return handle

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        import weakref
        node = self.grad_fn
        if node._retained is None:
            node._retained = {}
        node._retained[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self):
        node = self.grad_fn
        return bool(node is not None and node._retained and self._output_nr in node._retained)

    # ---- conversion -------------------------------------------------------------------------
    def numpy(self, *, force=False):
        if force:
            return self._backend.to_numpy(self.detach()._data)
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self._device.type != "cpu":
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        arr = self._backend.to_numpy(self._data)
        if dtype is not None:
            arr = arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .utils.dlpack import export
        return export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        from .utils.dlpack import export_device
        return export_device(self)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # A NumPy ufunc applied to a tensor gives a tensor back; bool results come back as uint8,
        # as in PyTorch.
        from .ops.creation import from_numpy
        array = np.asarray(array)
        return from_numpy(array.astype(np.uint8) if array.dtype == np.bool_ else array)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return _py_scalar(self)

    def tolist(self):
        arr = self._backend.to_numpy(self._data)
        if self._dtype is dt.bfloat16:
            arr = arr.astype(np.float32)
        return arr.tolist()

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                               if self._data.size > 1 else
                               "Boolean value of Tensor with no values is ambiguous")
        return bool(_py_scalar(self))

    def __float__(self):
        return float(self._python_number())

    def __int__(self):
        return int(self._python_number())

    def __complex__(self):
        return complex(self._python_number())

    def _python_number(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return _py_scalar(self)

    def __index__(self):
        if self._dtype.is_floating_point or self._dtype.is_complex or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild_tensor, (self._backend.to_numpy(self.detach()._data).copy(),
                                  self._dtype.name, str(self._device), self._requires_grad))

    def __copy__(self):
        # As in PyTorch, a shallow copy is a new leaf on the same memory.
        out = _as_subclass(self.detach(), type(self))
        out._requires_grad = self._requires_grad
        return out

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        if id(self) in memo:
            return memo[id(self)]
        out = self.detach().clone()
        if type(self) is not Tensor:
            out = _as_subclass(out, type(self))
            out.__dict__.update({k: v for k, v in self.__dict__.items() if not k.startswith("_")})
        out._requires_grad = self._requires_grad
        if self.grad is not None:
            out.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out

    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import tensor_repr
        return tensor_repr(self, tensor_contents)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    @staticmethod
    def _make_subclass(cls, data, requires_grad=False):
        """As PyTorch's: a ``cls`` instance sharing ``data``'s memory, as a fresh leaf."""
        out = _as_subclass(data.detach(), cls)
        out._requires_grad = bool(requires_grad)
        return out


def _as_subclass(t, cls):
    out = _new(cls)
    out._data = t._data
    out._dtype = t._dtype
    out._device = t._device
    out._backend = t._backend
    out._requires_grad = t._requires_grad
    out.grad_fn = t.grad_fn
    if t._vc is not None:
        out._vc = t._vc
    return out


def _py_scalar(t):
    value = t._backend.to_numpy(t._data).reshape(())
    if t._dtype is dt.bfloat16:
        return float(value)
    return value.item()


def _rebuild_tensor(array, dtype_name, device_str, requires_grad):
    dtype = dt._BY_NAME[dtype_name]
    dev = _device_cls(device_str)
    backend = get_backend(dev)
    t = _wrap_with(backend.asarray(array, dtype.np), dtype, dev, backend)
    t._requires_grad = requires_grad
    return t


def _contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def wrap_dim(dim, ndim):
    """``dim`` in ``[0, ndim)``, from a possibly negative index; a 0-d tensor takes -1 and 0."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dim_no_scalar(dim, ndim):
    """``wrap_dim`` for what needs a real dimension (PyTorch's ``wrap_scalar=False``): a 0-d
    tensor has none to name."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(dim, ndim)


def _check_assigned_grad(tensor, grad):
    """PyTorch's checks on ``tensor.grad = grad``, in its order and with its messages."""
    if not isinstance(grad, Tensor):
        raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(grad).__name__}")
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad._dtype is not tensor._dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype "
                           f"'{dt.TYPE_META_NAMES[grad._dtype.name]}' to a tensor with grad_dtype "
                           f"'{dt.SCALAR_TYPE_NAMES[tensor._dtype.name]}'. The gradient must match "
                           "the tensor's grad_dtype (defaults to the tensor's dtype).")
    gdev, tdev = grad._device, tensor._device
    if gdev.type != tdev.type:
        raise RuntimeError(f"attempting to assign a gradient with device type '{gdev.type}' to a "
                           f"tensor with device type '{tdev.type}'. Please ensure that the "
                           "gradient and the tensor are on the same device")
    if gdev is not tdev:
        raise RuntimeError(f"attempting to assign a gradient located on device with index "
                           f"'{gdev.index}' to a tensor located on device with index "
                           f"'{tdev.index}'. Please ensure that the gradient and the tensor are "
                           "on the same device")
    # Through ``shape``, which sparse tensors (ember.sparse) define over their own storage.
    if tuple(grad.shape) != tuple(tensor.shape):
        raise RuntimeError(f"attempting to assign a gradient of size '{list(grad.shape)}' to a "
                           f"tensor of size '{list(tensor.shape)}'. Please ensure that the "
                           "gradient and the tensor are the same size")


# ---- device transfers ------------------------------------------------------------------------

def _pinning_backend(device=None):
    """The backend that provides page-locked host memory: the accelerator's (the current
    device's, or ``device``'s), raising torch's error when there is no accelerator."""
    from . import accelerator
    if device is None:
        acc = accelerator.current_accelerator(check_available=True)
        if acc is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        device = _device_cls(acc.type, accelerator.current_device_index())
    backend = get_backend(_device_cls(device) if not isinstance(device, int) else
                          _device_cls("cuda", device))
    if not backend.pins_host_memory:
        raise RuntimeError(f"pin_memory(): the {backend.device_type} backend does not provide "
                           "page-locked host memory")
    return backend


def _transfer_array(tensor, device, np_dtype, non_blocking=False):
    """``tensor``'s array copied to another device (``device``, a different one) in
    ``np_dtype``. A copy to the CPU is cast on the source device first, so that an
    asynchronous copy is never read on the host before it lands; ``non_blocking`` queues the
    copy where the backends can (from or into page-locked memory), as torch does."""
    src = tensor._backend
    dst = get_backend(device)
    array = tensor._data
    if dst.device_type == "cpu":
        if array.dtype != np_dtype:
            array = array.astype(np_dtype)
        return src.to_host(array, non_blocking)
    dst.check_dtype(np_dtype, "to()")
    host = src.to_numpy(array)
    return dst.from_host(host, np_dtype, non_blocking and src.device_type == "cpu")


def _wrap_with(data, dtype, device, backend):
    """A new leaf tensor around a backend array (NumPy's 0-d results come back as scalars)."""
    if isinstance(data, _generic):
        data = np.asarray(data)
    t = _new(Tensor)
    t._data = data
    t._dtype = dtype
    t._device = device
    t._backend = backend
    t._requires_grad = False
    t.grad_fn = None
    return t


def _wrap(data, dtype, like):
    """A new result tensor on ``like``'s device."""
    # ``_wrap_with``'s body, written out: every op's result passes here, and calling
    # ``_wrap_with`` would add a frame (~30 ns, 2% of a small op). ``_wrap_with`` serves the
    # callers that have a device and backend but no tensor on it (factories, loaders).
    if isinstance(data, _generic):
        data = np.asarray(data)
    t = _new(Tensor)
    t._data = data
    t._dtype = dtype
    t._device = like._device
    t._backend = like._backend
    t._requires_grad = False
    t.grad_fn = None
    return t


def _python_converter(dtype):
    """Checks and converts a Python callable's result to ``dtype``'s Python type, with the
    errors torch raises (a str where a number is needed, an int out of range)."""
    import math
    import operator
    if dtype is dt.bool:
        return bool
    if dtype.is_complex:
        return complex
    if dtype.is_floating_point:
        return lambda v: math.ldexp(v, 0)  # float(v), but TypeError for non-numbers as torch
    info = np.iinfo(dtype.np)

    def to_int(v):
        v = int(v) if isinstance(v, float) else operator.index(v)
        if not info.min <= v <= info.max:
            raise RuntimeError(f"value cannot be converted to type {dtype.name} without "
                               "overflow")
        return v
    return to_int


class Size(tuple):
    """``tensor.shape``: a tuple that prints as ``ember.Size([2, 3])``."""
    __slots__ = ()

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))
