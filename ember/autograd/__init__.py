"""``ember.autograd``: reverse-mode automatic differentiation on a dynamic graph."""
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: F401
                        is_grad_enabled, is_inference_mode_enabled)
from .anomaly_mode import (detect_anomaly, set_detect_anomaly, is_anomaly_enabled,  # noqa: F401
                           is_anomaly_check_nan_enabled, set_anomaly_enabled)
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .engine import run_backward
from . import graph  # noqa: F401
from . import forward_ad  # noqa: F401

__all__ = ["backward", "grad", "Function", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "detect_anomaly", "set_detect_anomaly", "gradcheck", "gradgradcheck",
           "functional", "graph", "Variable"]


def _as_tuple(x):
    if x is None:
        return None
    from .._tensor import Tensor
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
    from ..ops import ones_like
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._requires_grad:
                if out._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out._dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                       f"but got {out._dtype}")
                g = ones_like(out)
        else:
            if not is_grads_batched and tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {out.shape}.")
            if g._dtype.is_floating_point != out._dtype.is_floating_point:
                raise TypeError(f"For complex Tensors, both grad_output and output are required to "
                                f"have the same dtype. Mismatch in dtype: grad_output[{i}] has a "
                                f"dtype of {g._dtype} and output[{i}] has a dtype of {out._dtype}.")
        grads.append(g)
    return grads


def _check_requires_grad(tensors):
    for i, t in enumerate(tensors):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               "grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    tensors = _as_tuple(tensors)
    if grad_variables is not None:
        import warnings
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning,
                      stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
    grad_tensors = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} tensors and {len(tensors)} gradients")
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _check_requires_grad(tensors)
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` untouched).

    ``inputs`` may be a dict of named tensors; the result is then a dict with the same keys.

    >>> import ember
    >>> x = ember.tensor(3.0, requires_grad=True)
    >>> (dx,) = ember.autograd.grad(x ** 3, x, create_graph=True)
    >>> dx, ember.autograd.grad(dx, x)[0]
    (tensor(27., grad_fn=<MulBackward0>), tensor(18.))
    """
    if isinstance(inputs, dict):
        names = list(inputs)
        grads = grad(outputs, [inputs[n] for n in names], grad_outputs, retain_graph, create_graph,
                     only_inputs, allow_unused, is_grads_batched, materialize_grads)
        return dict(zip(names, grads))
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True")
    grad_outputs = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} "
                           f"grad_outputs and {len(outputs)} outputs")
    _check_requires_grad(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        from ..ops import stack
        per_item = [grad(outputs, inputs, tuple(g[i] for g in grad_outputs), True, create_graph,
                         allow_unused=allow_unused, materialize_grads=materialize_grads)
                    for i in range(grad_outputs[0].shape[0])]
        return tuple(stack([p[j] for p in per_item]) for j in range(len(inputs)))
    grads = _make_grads(outputs, grad_outputs)
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                          allow_unused=allow_unused, accumulate=False)
    if materialize_grads:
        from ..ops import zeros_like
        result = [r if r is not None else zeros_like(i) for r, i in zip(result, inputs)]
    return tuple(result)


def __getattr__(name):
    # Submodules that import heavier pieces load on first use.
    if name in ("functional", "profiler", "profiler_util"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("gradcheck", "gradgradcheck"):
        from . import gradcheck as _gc
        return getattr(_gc, name)
    if name == "Variable":
        from .._tensor import Tensor
        return Tensor
    raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")


from .gradcheck import gradcheck, gradgradcheck  # noqa: E402,F401  (the functions, not the module)
