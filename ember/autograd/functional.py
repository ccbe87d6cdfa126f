"""Whole-function derivatives, as ``torch.autograd.functional``: ``vjp``, ``jvp``, ``jacobian``,
``hessian``, ``vhp`` and ``hvp``, all built on ``ember.autograd.grad``.

Each function takes ``func`` and ``inputs`` (a tensor or a tuple of tensors) and answers in the
same shape: a tensor for a tensor, a tuple for a tuple. Results are detached unless
``create_graph=True``, in which case they can be differentiated again.

``jvp`` uses the double-backward trick, as PyTorch's does: for a dummy cotangent ``u``, the
vector-Jacobian product ``J^T u`` is linear in ``u``, so differentiating it with respect to ``u``
along ``v`` gives ``J v`` with reverse mode only. ``jacobian(strategy="forward-mode",
vectorize=True)`` uses forward-mode AD (``ember.autograd.forward_ad``): one column per input
element, each pushed through ``func`` as a dual tensor. PyTorch batches those columns with
vmap; here they run one forward pass each (same values). With ``vectorize`` and reverse mode,
rows are computed one backward pass at a time, which gives the same values.
"""
from .._tensor import Tensor
from . import grad_mode
from . import grad as _autograd_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tensor_tuple(value, arg_name, fn_name):
    """``(was_a_tuple, tuple_of_tensors)``, rejecting anything that is not a tensor."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple "
                            f"of Tensors but {where} has type {type(v)}.")
    return is_tuple, values


def _fresh_inputs(inputs, create_graph, need_graph=True):
    """Inputs to differentiate against: new leaves, except that with ``create_graph`` an input
    already in a graph stays connected to it (through an alias) so that the result is too. An
    input carrying a forward AD tangent keeps it (an alias, not a detached copy): that is the
    forward-over-reverse ``hessian(outer_jacobian_strategy="forward-mode")``."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.view_as(t).requires_grad_(need_graph) if t._fw_grad is not None
                 else t.detach().requires_grad_(need_graph) for t in inputs)


def _finish(values, create_graph):
    if create_graph:
        return values
    return tuple(v.detach() if isinstance(v, Tensor) else _finish(v, create_graph) for v in values)


def _unpack(values, is_tuple):
    return values if is_tuple else values[0]


def _checked_v(v, like, like_is_tuple, create_graph, fn_name, like_description):
    """``v`` as a tuple of fresh tensors matching ``like`` in number and shapes; ``None`` is
    allowed only where ``like`` is a single one-element tensor (``like_description`` says what
    ``like`` is, for the error)."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if {like_description} a single "
                               "Tensor with a single element.")
        return None
    v = _fresh_inputs(_as_tensor_tuple(v, "v", fn_name)[1], create_graph, need_graph=False)
    if len(v) != len(like):
        if like_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (v_i, like_i) in enumerate(zip(v, like)):
        if v_i.shape != like_i.shape:
            prefix = f"Entry {i} in " if like_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {like_i.shape} but got "
                               f"{v_i.shape}.")
    return v


def _checked_inputs(inputs, create_graph, fn_name):
    """``(was_a_tuple, fresh inputs)`` to call the user's function on."""
    is_tuple, inputs = _as_tensor_tuple(inputs, "inputs", fn_name)
    return is_tuple, _fresh_inputs(inputs, create_graph)


def _checked_outputs(outputs, strict, fn_name):
    """``(was_a_tuple, tuple_of_outputs)`` of what the user's function returned; under
    ``strict`` every output must be in the graph."""
    is_tuple, outputs = _as_tensor_tuple(outputs, "outputs of the user-provided function", fn_name)
    if strict:
        for i, out in enumerate(outputs):
            if not out.requires_grad:
                raise RuntimeError(
                    f"Output {i} of the user-provided function does not require gradients. The "
                    "outputs must be computed in a differentiable manner from the input when "
                    "running in strict mode.")
    return is_tuple, outputs


def _grads(outputs, inputs, grad_outputs=None, create_graph=False):
    """``autograd.grad`` over the outputs that are in a graph; ``None`` for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _autograd_grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                          create_graph=create_graph, allow_unused=True)


def _product(outputs, inputs, v, create_graph, refs, strict, independent_message):
    """The last backward pass, ``v`` through ``outputs`` back to ``inputs``, recorded only where
    ``create_graph`` or the caller's grad mode asks; where a product is missing (independent),
    zeros shaped like ``refs``, or under ``strict`` the error ``independent_message``."""
    from ..ops import zeros_like
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        filled = []
        for i, (g, ref) in enumerate(zip(_grads(outputs, inputs, v, create_graph), refs)):
            if g is None:
                if strict:
                    raise RuntimeError(independent_message.format(i=i))
                g = zeros_like(ref)
            filled.append(g)
    return tuple(filled)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``."""
    with grad_mode.enable_grad():
        inputs_is_tuple, inputs = _checked_inputs(inputs, create_graph, "vjp")
        outputs_is_tuple, outputs = _checked_outputs(func(*inputs), strict, "vjp")
        v = _checked_v(v, outputs, outputs_is_tuple, create_graph, "vjp",
                       "the user-provided function returns")
    product = _product(
        outputs, inputs, v, create_graph, inputs, strict,
        "The output of the user-provided function is independent of input {i}. This is not "
        "allowed in strict mode.")
    return (_unpack(_finish(outputs, create_graph), outputs_is_tuple),
            _unpack(_finish(product, create_graph), inputs_is_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product, by the double-backward trick."""
    from ..ops import zeros_like
    with grad_mode.enable_grad():
        inputs_is_tuple, inputs = _checked_inputs(inputs, create_graph, "jvp")
        v = _checked_v(v, inputs, inputs_is_tuple, create_graph, "jvp",
                       "the input to the user-provided function is")
        outputs_is_tuple, outputs = _checked_outputs(func(*inputs), strict, "jvp")
        dummy_cotangents = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        vjps = _grads(outputs, inputs, dummy_cotangents, create_graph=True)
        if strict:
            for i, g in enumerate(vjps):
                if g is None or not g.requires_grad:
                    raise RuntimeError(f"The gradient with respect to input {i} is independent of "
                                       "the inputs of the user-provided function. This is not "
                                       "allowed in strict mode.")
    product = _product(
        vjps, dummy_cotangents, v, create_graph, outputs, strict,
        "The gradient with respect to the input is independent of entry {i} in the "
        "grad_outputs when using the double backward trick to compute forward mode "
        "gradients. This is not allowed in strict mode.")
    return (_unpack(_finish(outputs, create_graph), outputs_is_tuple),
            _unpack(_finish(product, create_graph), outputs_is_tuple))


def _check_strategy(strategy, create_graph, strict, vectorize):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, "forward-mode" '
                             'tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'ember.autograd.functional.jacobian: `create_graph=True` and '
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                'ember.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                'are not supported together (yet). Please either set `strict=False` or '
                '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                      "Hessian is only implemented for `vectorize=True`.")
    elif vectorize and strict:
        raise RuntimeError("ember.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j``, a tensor of shape
    ``outputs[i].shape + inputs[j].shape`` (nested tuples when either side is a tuple)."""
    from ..ops import zeros_like
    _check_strategy(strategy, create_graph, strict, vectorize)
    if strategy == "forward-mode":
        return _forward_jacobian(func, inputs)
    with grad_mode.enable_grad():
        inputs_is_tuple, inputs = _checked_inputs(inputs, create_graph, "jacobian")
        outputs_is_tuple, outputs = _checked_outputs(func(*inputs), strict, "jacobian")
        per_output = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]  # rows[j][k]: d out.flat[k] / d inputs[j]
            flat_out = out.reshape(-1)
            for k in range(out.numel()):
                row = _grads((flat_out[k],), inputs, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(row, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {j}. This is not allowed "
                                               "in strict mode.")
                        g = zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is "
                                           f"independent of input {i}. This is not allowed in "
                                           "strict mode when create_graph=True.")
                    rows[j].append(g)
            per_output.append(tuple(
                _stack_rows(rows[j], out.shape + inp.shape, inp) for j, inp in enumerate(inputs)))
    per_output = _finish(tuple(per_output), create_graph)
    per_output = per_output if inputs_is_tuple else tuple(jac[0] for jac in per_output)
    return _unpack(per_output, outputs_is_tuple)


def _forward_jacobian(func, inputs):
    """``jacobian`` by forward-mode AD: column ``k`` of input ``j`` is the tangent of the
    outputs when input ``j`` carries the ``k``-th basis tangent (the others none)."""
    from . import forward_ad as fwAD
    from ..ops import stack
    inputs_is_tuple, inputs = _as_tensor_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(t.detach() if t._fw_grad is None else t for t in inputs)
    columns = [[] for _ in inputs]  # columns[j][k]: tangents of every output
    outputs_is_tuple = outputs = None
    with fwAD.dual_level():
        for j, inp in enumerate(inputs):
            for k in range(inp.numel()):
                basis = inp.new_zeros(inp.shape)
                basis.view(-1)[k] = 1
                args = tuple(fwAD.make_dual(t, basis) if i == j else t
                             for i, t in enumerate(inputs))
                outputs_is_tuple, outs = _as_tensor_tuple(
                    func(*args), "outputs of the user-provided function", "jacobian")
                outputs = tuple(fwAD.unpack_dual(o).primal.detach() for o in outs)
                columns[j].append(tuple(
                    t if t is not None else o.new_zeros(o.shape)
                    for o, t in ((o, fwAD.unpack_dual(o).tangent) for o in outs)))
        if outputs is None:  # every input is empty: one call for the outputs' shapes
            outputs_is_tuple, outputs = _as_tensor_tuple(
                func(*inputs), "outputs of the user-provided function", "jacobian")
    per_output = []
    for i, out in enumerate(outputs):
        per_output.append(tuple(
            stack([c[i].detach() for c in columns[j]], dim=-1).reshape(out.shape + inp.shape)
            if columns[j] else out.new_zeros(out.shape + inp.shape)
            for j, inp in enumerate(inputs)))
    per_output = tuple(per_output)
    per_output = per_output if inputs_is_tuple else tuple(jac[0] for jac in per_output)
    return _unpack(per_output, outputs_is_tuple)


def _stack_rows(rows, shape, like):
    from ..ops import stack
    if not rows:  # an empty output: no rows to stack
        return like.new_zeros(shape)
    return stack(rows, dim=0).reshape(shape)


def _check_twice_differentiable(i, gradient):
    """Strict mode's refusal of a gradient (with respect to input ``i``) that is out of the
    graph: the function is then not twice differentiable there (a linear one, say)."""
    if not gradient.requires_grad:
        raise RuntimeError(
            "While computing the hessian, found that the jacobian of the user-provided function "
            f"with respect to input {i} is independent of the input. This is not allowed in strict "
            "mode. You should ensure that your function is twice differentiable and that the "
            "jacobian depends on the inputs (this would be violated by a linear function for "
            "example).")


def _check_single_scalar(out, strict, fn_name):
    is_tuple, _ = _checked_outputs(out, strict, fn_name)
    if is_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if out.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return out


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func``: the Jacobian of its gradient. For inputs ``i`` and ``j``
    a tensor of shape ``inputs[i].shape + inputs[j].shape`` (nested tuples for tuple inputs)."""
    inputs_is_tuple, inputs = _as_tensor_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    def scalar_func(*inner_inputs):
        return _check_single_scalar(func(*inner_inputs), strict, "hessian").squeeze()

    def gradient(*inner_inputs):
        grads = jacobian(scalar_func, inner_inputs, create_graph=True)
        if strict:
            for i, g in enumerate(grads):
                _check_twice_differentiable(i, g)
        return grads

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                      vectorize=vectorize, strategy=outer_jacobian_strategy)
    return result if inputs_is_tuple else result[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar ``func``."""
    return _hessian_vector(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func``. The Hessian of a twice continuously
    differentiable function is symmetric, so this is computed as ``v^T H`` (one double backward,
    where PyTorch's double-backward trick needs a third)."""
    return _hessian_vector(func, inputs, v, create_graph, strict, "hvp")


def _hessian_vector(func, inputs, v, create_graph, strict, fn_name):
    with grad_mode.enable_grad():
        inputs_is_tuple, inputs = _checked_inputs(inputs, create_graph, fn_name)
        v = _checked_v(v, inputs, inputs_is_tuple, create_graph, fn_name,
                       "the input to the user-provided function is")
        output = _check_single_scalar(func(*inputs), strict, fn_name)
        gradient = _grads((output,), inputs, create_graph=True)
        if strict:
            for i, g in enumerate(gradient):
                if g is None:
                    raise RuntimeError(f"The output of the user-provided function is independent "
                                       f"of input {i}. This is not allowed in strict mode.")
                _check_twice_differentiable(i, g)
    product = _product(
        gradient, inputs, v, create_graph, inputs, strict,
        "The jacobian of the user-provided function is independent of input {i}. This is not "
        "allowed in strict mode.")
    return (_finish((output,), create_graph)[0],
            _unpack(_finish(product, create_graph), inputs_is_tuple))
