"""Finite-difference checks of backward formulas: ``gradcheck`` and ``gradgradcheck``.

The numerical Jacobian comes from central differences on each input element (run in float64);
the analytical one from one backward pass per output element. Both are compared entry by entry.
"""
from .. import _dtype as dt

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError", "get_numerical_jacobian",
           "get_analytical_jacobian"]


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    from .._tensor import Tensor
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _diff_inputs(inputs):
    from .._tensor import Tensor
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _flat_outputs(fn, inputs):
    from .._tensor import Tensor
    out = fn(*inputs)
    outs = _as_tuple(out)
    return [o for o in outs if isinstance(o, Tensor)]


def get_numerical_jacobian(fn, inputs, eps=1e-6):
    """J[k][j] — for differentiable input k: a (input numel, output numel) array per output j."""
    import numpy as np
    inputs = _as_tuple(inputs)
    result = []
    # Evaluated with grad mode on: gradgradcheck's function itself calls autograd.grad.
    outs0 = _flat_outputs(fn, inputs)
    for k in _diff_inputs(inputs):
        x = inputs[k]
        flat = x._data.reshape(-1) if x.is_contiguous() else None
        if flat is None:
            raise GradcheckError("gradcheck inputs must be contiguous")
        per_out = [np.zeros((x.numel(), o.numel())) for o in outs0]
        for i in range(x.numel()):
            orig = flat[i].item()
            flat[i] = orig + eps
            plus = [o._backend.to_numpy(o._data).astype(np.float64).reshape(-1).copy()
                    for o in _flat_outputs(fn, inputs)]
            flat[i] = orig - eps
            minus = [o._backend.to_numpy(o._data).astype(np.float64).reshape(-1).copy()
                     for o in _flat_outputs(fn, inputs)]
            flat[i] = orig
            for j in range(len(outs0)):
                per_out[j][i] = (plus[j] - minus[j]) / (2 * eps)
        result.append(per_out)
    return result


def get_analytical_jacobian(fn, inputs, create_graph=False):
    import numpy as np
    from . import grad as autograd_grad
    from ..ops import zeros_like
    from .._memory_format import contiguous_format
    inputs = _as_tuple(inputs)
    diff = _diff_inputs(inputs)
    outs = _flat_outputs(fn, inputs)
    result = [[np.zeros((inputs[k].numel(), o.numel())) for o in outs] for k in diff]
    for j, out in enumerate(outs):
        if not out.requires_grad:
            continue
        for m in range(out.numel()):
            # Contiguous, so that reshape(-1) is a view the write goes through.
            cot = zeros_like(out, memory_format=contiguous_format)
            cot._data.reshape(-1)[m] = 1
            grads = autograd_grad(out, [inputs[k] for k in diff], cot, retain_graph=True,
                                  allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    result[n][j][:, m] = g._backend.to_numpy(g._data).astype(np.float64).reshape(-1)
    return result


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """True when the backward formulas of ``func`` match central finite differences."""
    import numpy as np
    inputs = _as_tuple(inputs)
    for i in _diff_inputs(inputs):
        if inputs[i].dtype is not dt.float64:
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of double "
                          "precision floating point. ")
    numerical = get_numerical_jacobian(func, inputs, eps)
    analytical = get_analytical_jacobian(func, inputs)
    for k, (num_k, ana_k) in enumerate(zip(numerical, analytical)):
        for j, (num, ana) in enumerate(zip(num_k, ana_k)):
            if not np.allclose(ana, num, rtol=rtol, atol=atol, equal_nan=False):
                if raise_exception:
                    raise GradcheckError(
                        f"Jacobian mismatch for output {j} with respect to input {k},\n"
                        f"numerical:{num}\nanalytical:{ana}\n")
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the backward pass itself (second derivatives)."""
    from . import grad as autograd_grad
    from ..ops import randn_like
    inputs = _as_tuple(inputs)
    diff = _diff_inputs(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(randn_like(o, dtype=o.dtype).requires_grad_(True) for o in outs
                             if o.dtype.is_floating_point)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivative(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _flat_outputs(func, ins) if o.requires_grad]
        grads = autograd_grad(outs, [ins[k] for k in diff], gos, create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
