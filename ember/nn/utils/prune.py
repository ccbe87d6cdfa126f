"""Pruning, as ``torch.nn.utils.prune``: zero parts of a module's tensor through a mask.

Pruning ``module.weight`` moves the tensor to the parameter ``weight_orig``, stores the mask as
the buffer ``weight_mask``, and a forward pre-hook recomputes ``weight = weight_orig *
weight_mask`` before each call, so gradients reach ``weight_orig`` masked and the state_dict
keys are PyTorch's. Pruning the same tensor again wraps the methods in a ``PruningContainer``,
whose newest method only prunes entries still unpruned; ``remove`` makes the pruning permanent.

The deterministic methods choose exactly the entries PyTorch's CPU ``topk`` chooses, ties
included (see ``_torch_topk_indices``), so masks match PyTorch's on the same weights.
"""
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

import ember

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned",
           "EmberSemiStructured", "ember_semi_structured"]


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask`` decides what to prune, and the instance is itself the
    forward pre-hook that recomputes the pruned tensor."""

    _tensor_name: str

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (same shape as ``t``) for ``t``, entries already 0 in ``default_mask``
        staying 0."""

    def apply_mask(self, module):
        """``<name>_orig * <name>_mask`` of ``module``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, combining with an earlier
        pruning of the same tensor through a ``PruningContainer``."""
        method = _get_composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of "
                    f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            # First pruning of this tensor: the original moves to <name>_orig.
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ember.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(
                memory_format=ember.contiguous_format)
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            # Leave the module as it was: a failed first pruning gives the parameter back.
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` pruned by this method, without touching any module."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(
                    "importance_scores should have the same shape as tensor t, got "
                    f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ember.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the masked
        values (the ``_orig`` parameter object itself, so optimisers keep working)."""
        if self._tensor_name is None:
            raise AssertionError(
                f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _get_composite_method(cls, module, name, *args, **kwargs):
    """The hook to install: ``cls(*args, **kwargs)``, wrapped with any earlier pruning of
    ``name`` in one PruningContainer (whose pre-hook is taken off the module)."""
    old_method = None
    found = 0
    hooks_to_remove = []
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old_method = hook
            hooks_to_remove.append(k)
            found += 1
    if found > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} "
                             f"of module {module}. Use a PruningContainer.")
    for k in hooks_to_remove:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old_method is not None:
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        else:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container
    return method


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied one after the other to one tensor."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append ``method`` (which must act on this container's tensor)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        elif method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}."
                             f" Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """``default_mask`` further pruned by the newest method, which sees only what is still
        unpruned: the kept entries (unstructured), the kept channels (structured) or all of it
        (global)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to '
                                     "have the attribute `dim` defined.")
            n_dims = t.dim()
            dim = method.dim
            if dim < 0:
                dim = n_dims + dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = [slice(None)] * n_dims
            slc[dim] = keep_channel
            slc = tuple(slc)
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * len(t.shape)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (useful to give a module the pruned layout)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _unstructured_mask(t, default_mask, amount, scores, largest):
    """``default_mask`` with the ``amount`` entries of ``t`` that ``scores()`` ranks first
    (largest or smallest, ties as torch's topk) set to 0."""
    tensor_size = t.nelement()
    nparams_toprune = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(nparams_toprune, tensor_size)
    mask = default_mask.clone(memory_format=ember.contiguous_format)
    if nparams_toprune != 0:
        indices = _torch_topk_indices(scores(), nparams_toprune, largest)
        mask.view(-1)[_on(indices, mask)] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries chosen uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        # the draw happens only when something is pruned, as torch's (the RNG stays put else)
        return _unstructured_mask(t, default_mask, self.amount,
                                  lambda: _host(ember.rand_like(t)).reshape(-1), largest=True)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(t, default_mask, self.amount,
                                  lambda: np.abs(_host(t).reshape(-1)), largest=False)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim`` chosen uniformly at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        if nparams_toprune == 0:
            return default_mask
        prob = _host(ember.rand(tensor_size))
        threshold = np.partition(prob, nparams_toprune - 1)[nparams_toprune - 1]
        channel_mask = prob > threshold
        mask = _channel_mask(t, self.dim, _on(channel_mask, t))
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        nparams_tokeep = tensor_size - nparams_toprune
        _validate_pruning_amount(nparams_toprune, tensor_size)
        norm = _compute_norm(t, self.n, self.dim)
        # PyTorch keeps the top ``nparams_tokeep`` norms (not: drops the smallest), which
        # decides which tied channels survive.
        keep = _torch_topk_indices(_host(norm).reshape(-1), nparams_tokeep, True)
        if nparams_toprune == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, _on(keep, t))
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


class EmberSemiStructured(BasePruningMethod):
    """Ember's own (PyTorch has no such pruning method): the N:M semi-structured pattern, 2:4 by
    default, that sparse tensor cores accelerate. The tensor is read as rows of its first
    dimension (``weight.view(out, -1)``, the layout ``torch.sparse.to_sparse_semi_structured``
    expects); in every group of ``m`` consecutive entries of a row at most ``n`` survive, those
    of largest absolute value. Entries already pruned stay pruned and count towards the
    ``m - n`` zeros; ties go to the lower index."""

    # The groups need the whole tensor in place, so a container must not hand over a slice.
    PRUNING_TYPE = "global"

    def __init__(self, n=2, m=4):
        if not (isinstance(n, numbers.Integral) and isinstance(m, numbers.Integral)
                and 0 <= n <= m and m > 0):
            raise ValueError(f"n={n} and m={m} must be integers with 0 <= n <= m and m > 0")
        self.n = int(n)
        self.m = int(m)

    def compute_mask(self, t, default_mask):
        if t.dim() < 2:
            raise ValueError("Semi-structured pruning needs a tensor of 2 or more dims (rows of "
                             f"its first dim), got shape {tuple(t.shape)}")
        row = t.numel() // t.shape[0]
        if row % self.m:
            raise ValueError(f"Semi-structured {self.n}:{self.m} pruning needs rows (the "
                             f"product of dims after the first, here {row}) divisible by "
                             f"{self.m}")
        kept = _host(default_mask).reshape(-1, self.m) != 0
        # Pruned entries rank below every magnitude, so they are the first to fill the zeros.
        scores = np.where(kept, np.abs(_host(t).reshape(-1, self.m)).astype(np.float64), -1.0)
        order = np.argsort(-scores, axis=1, kind="stable")
        keep = np.zeros(scores.shape, dtype=bool)
        np.put_along_axis(keep, order[:, :self.n], True, axis=1)
        keep &= kept
        mask = _on(keep.reshape(tuple(t.shape)), default_mask)
        return default_mask * mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, n=2, m=4, importance_scores=None):
        return super().apply(module, name, n=n, m=m, importance_scores=importance_scores)


def ember_semi_structured(module, name, n=2, m=4, importance_scores=None):
    """Ember's own: prune ``module.<name>`` to the N:M (default 2:4) semi-structured pattern,
    keeping in each group of ``m`` consecutive entries of a row the ``n`` of largest magnitude
    (of ``importance_scores`` when given). See ``EmberSemiStructured``."""
    EmberSemiStructured.apply(module, name, n=n, m=m, importance_scores=importance_scores)
    return module


def identity(module, name):
    """Give ``module.<name>`` the pruned layout with an all-ones mask."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` random entries of ``module.<name>`` (an int: a count; a float in
    [0, 1]: a fraction)."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` of smallest absolute value (of
    ``importance_scores`` when given)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest L``n``
    norm (of ``importance_scores`` when given)."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` tensors of ``parameters`` together, as if they were one
    flattened tensor, with the unstructured ``pruning_method(**kwargs)``."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    # A generator would be used up by the first pass.
    parameters = list(parameters)
    from .convert_parameters import parameters_to_vector
    relevant_importance_scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name))
         for (module, name) in parameters])
    default_mask = parameters_to_vector(
        [getattr(module, name + "_mask", ember.ones_like(getattr(module, name)))
         for (module, name) in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        param_mask = final_mask[pointer:pointer + num_param].view_as(param)
        custom_from_mask(module, name, mask=param_mask)
        pointer += num_param


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: drop ``_orig``, ``_mask`` and the hook,
    leaving ``<name>`` a parameter with the pruned values."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module):
    """Whether ``module`` or any submodule carries a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if ((isinstance(amount, numbers.Integral) and amount < 0)
            or (not isinstance(amount, numbers.Integral)
                and (float(amount) > 1.0 or float(amount) < 0.0))):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t):
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    # Python's round (half to even), as PyTorch's.
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    dims = list(range(t.dim()))
    if dim < 0:
        dim = dims[dim]
    dims.remove(dim)
    return ember.norm(t, p=n, dim=dims)


def _channel_mask(t, dim, channels):
    """Zeros shaped like ``t`` with ones in the ``channels`` (indices or booleans) of ``dim``."""
    mask = ember.zeros_like(t)
    slc = [slice(None)] * len(t.shape)
    slc[dim] = channels
    mask[tuple(slc)] = 1
    return mask


def _host(t):
    return t.detach().cpu().numpy()


def _on(array, like):
    return ember.as_tensor(array, device=like.device)


# ---- PyTorch's CPU topk selection -------------------------------------------------------------
# PyTorch's CPU topk pairs each value with its index and runs libstdc++'s std::partial_sort
# (when k * 64 <= n) or std::nth_element on the pairs, comparing values only (NaN counts as
# largest). Among equal values the chosen ones therefore depend on those algorithms' exact
# steps; the functions below replay them, so pruning picks the same tied entries as PyTorch.

def _torch_topk_indices(values, k, largest):
    """The indices (in no particular order) that ``torch.topk(values, k, largest)`` returns
    on CPU, for a 1-D NumPy array."""
    n = values.shape[0]
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    if k > n:
        raise RuntimeError("selected index k out of range")
    if not np.isnan(values).any():
        # Without a tie across the k-th place the chosen set is unique: no replay needed.
        key = -values if largest else values
        kth = np.partition(key, k - 1)[k - 1]
        better = key < kth
        tied = key == kth
        if better.sum() + tied.sum() == k:
            return np.flatnonzero(better | tied).astype(np.int64)
    if largest:
        def comp(x, y):
            return (math.isnan(x) and not math.isnan(y)) or x > y
    else:
        def comp(x, y):
            return (not math.isnan(x) and math.isnan(y)) or x < y
    vals = values.astype(np.float64).tolist()
    idx = list(range(n))
    if k * 64 <= n:
        _heap_select(vals, idx, 0, k, n, comp)
    else:
        _nth_element(vals, idx, k - 1, n, comp)
    return np.asarray(idx[:k], dtype=np.int64)


def _swap(vals, idx, i, j):
    vals[i], vals[j] = vals[j], vals[i]
    idx[i], idx[j] = idx[j], idx[i]


def _nth_element(vals, idx, nth, last, comp):
    """libstdc++'s std::nth_element (introselect) on the pairs ``(vals[i], idx[i])``."""
    first = 0
    if nth == last:
        return
    depth_limit = 2 * ((last - first).bit_length() - 1)
    while last - first > 3:
        if depth_limit == 0:
            _heap_select(vals, idx, first, nth + 1, last, comp)
            _swap(vals, idx, first, nth)
            return
        depth_limit -= 1
        cut = _unguarded_partition_pivot(vals, idx, first, last, comp)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(vals, idx, first, last, comp)


def _unguarded_partition_pivot(vals, idx, first, last, comp):
    mid = first + (last - first) // 2
    _move_median_to_first(vals, idx, first, first + 1, mid, last - 1, comp)
    lo, hi = first + 1, last
    pivot = vals[first]
    while True:
        while comp(vals[lo], pivot):
            lo += 1
        hi -= 1
        while comp(pivot, vals[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(vals, idx, lo, hi)
        lo += 1


def _move_median_to_first(vals, idx, result, a, b, c, comp):
    va, vb, vc = vals[a], vals[b], vals[c]
    if comp(va, vb):
        if comp(vb, vc):
            _swap(vals, idx, result, b)
        elif comp(va, vc):
            _swap(vals, idx, result, c)
        else:
            _swap(vals, idx, result, a)
    elif comp(va, vc):
        _swap(vals, idx, result, a)
    elif comp(vb, vc):
        _swap(vals, idx, result, c)
    else:
        _swap(vals, idx, result, b)


def _insertion_sort(vals, idx, first, last, comp):
    if first == last:
        return
    for i in range(first + 1, last):
        v, j = vals[i], idx[i]
        if comp(v, vals[first]):
            vals[first + 1:i + 1] = vals[first:i]
            idx[first + 1:i + 1] = idx[first:i]
            vals[first], idx[first] = v, j
        else:
            hole = i
            while comp(v, vals[hole - 1]):
                vals[hole], idx[hole] = vals[hole - 1], idx[hole - 1]
                hole -= 1
            vals[hole], idx[hole] = v, j


def _heap_select(vals, idx, first, middle, last, comp):
    """libstdc++'s std::__heap_select: afterwards [first, middle) holds the chosen pairs."""
    length = middle - first
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(vals, idx, first, parent, length, vals[first + parent],
                         idx[first + parent], comp)
            if parent == 0:
                break
            parent -= 1
    for i in range(middle, last):
        if comp(vals[i], vals[first]):
            v, j = vals[i], idx[i]
            vals[i], idx[i] = vals[first], idx[first]
            _adjust_heap(vals, idx, first, 0, length, v, j, comp)


def _adjust_heap(vals, idx, first, hole, length, value, index, comp):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if comp(vals[first + child], vals[first + child - 1]):
            child -= 1
        vals[first + hole], idx[first + hole] = vals[first + child], idx[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        vals[first + hole], idx[first + hole] = vals[first + child - 1], idx[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and comp(vals[first + parent], value):
        vals[first + hole], idx[first + hole] = vals[first + parent], idx[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    vals[first + hole], idx[first + hole] = value, index
