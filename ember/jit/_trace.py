"""``jit.trace``: a module or function recorded on example inputs, as ``torch.jit._trace``.

The capture is ``ember.fx.experimental.proxy_tensor.make_fx``: the Ember ops that actually run
on the example inputs, with Python control flow resolved and sizes baked in, exactly what a
trace is. The result runs that graph (``.code`` is its generated Python). ``check_trace``
re-traces on the check inputs and compares both the graphs and the outputs, as torch does."""
import threading
import warnings

from ._script import ScriptModule, ScriptFunction

__all__ = ["trace", "trace_module", "TracedModule", "TopLevelTracedModule", "TracerWarning",
           "TracingCheckError", "is_tracing"]

_state = threading.local()


class TracerWarning(Warning):
    """A trace that may not generalise (outputs differ from the Python function's)."""

    @staticmethod
    def ignore_lib_warnings():
        warnings.filterwarnings("ignore", category=TracerWarning, module="ember.(?!jit)")


class TracingCheckError(Exception):
    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n" + graph_diff_error
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across "
                             "invocations. This often indicates that the tracer has encountered "
                             "untraceable code.\n" + tensor_compare_error)
        super().__init__(self.message)


class TracedModule(ScriptModule):
    """A module traced by ``jit.trace``: same parameter and buffer names as the original."""


class TopLevelTracedModule(TracedModule):
    pass


def is_tracing():
    """True while ``jit.trace`` (or ``export``) runs the traced code."""
    return getattr(_state, "depth", 0) > 0


def _capture(f, args):
    """``make_fx(f)(*args)`` without leaving the tracer's constants on ``f``: the GraphModule
    and the names of the constant tensors the trace made."""
    from ..nn import Module
    from ..fx.experimental.proxy_tensor import make_fx
    before = None
    if isinstance(f, Module):
        before = (set(f.__dict__), set(f._buffers), set(f._modules))
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        gm = make_fx(f)(*args)
    finally:
        _state.depth -= 1
        if before is not None:
            for key in set(f.__dict__) - before[0]:
                del f.__dict__[key]
            for key in set(f._buffers) - before[1]:
                del f._buffers[key]
                f._non_persistent_buffers_set.discard(key)
            for key in set(f._modules) - before[2]:
                del f._modules[key]
    constants = {n.target for n in gm.graph.nodes if n.op == "get_attr"
                 and n.target.startswith("_tensor_constant") and "." not in n.target
                 and not (before and n.target in before[1])}
    for name in constants:
        # Constants are part of the program, not of the model's state (torch keeps them in the
        # graph): they stay out of state_dict.
        gm._non_persistent_buffers_set.add(name)
    return gm, constants


def _copy_unread_state(original, traced):
    """The parameters and buffers the graph never reads (``num_batches_tracked``…), so that
    the traced module's state_dict has the original's keys."""
    from ..fx.graph_module import _copy_attr
    have = {n for n, _ in traced.named_parameters()} | {n for n, _ in traced.named_buffers()}
    for name, _ in [*original.named_parameters(), *original.named_buffers()]:
        if name in have:
            continue
        _copy_attr(original, traced, name)
        *prefix, field = name.split(".")
        owner = original.get_submodule(".".join(prefix))
        if field in owner._non_persistent_buffers_set:
            traced.get_submodule(".".join(prefix))._non_persistent_buffers_set.add(field)


def _flat_tensors(out):
    from .._tensor import Tensor
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat_tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flat_tensors(o)]
    return []


def _check_strict_output(out, strict):
    if not strict:
        return
    if isinstance(out, (list, dict)):
        kind = "a list" if isinstance(out, list) else "a dict"
        raise RuntimeError(f"Encountering {kind} at the output of the tracer might cause the "
                           "trace to be incorrect, this is only valid if the container "
                           "structure does not change based on the module's inputs. Consider "
                           "using a constant container instead (e.g. for `list`, use a `tuple` "
                           "instead. for `dict`, use a `NamedTuple` instead). If you absolutely "
                           "need this and know the side effects, pass strict=False to trace() "
                           "to allow this behavior.")
    if isinstance(out, tuple):
        for o in out:
            _check_strict_output(o, strict)


def _as_tuple(example_inputs):
    from .._tensor import Tensor
    if isinstance(example_inputs, Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    if not isinstance(example_inputs, tuple):
        raise TypeError("trace(): example_inputs must be a Tensor or a tuple of them, got "
                        f"{type(example_inputs).__name__}")
    return example_inputs


def _check(traced, f, check_inputs, tolerance):
    import ember
    from ..testing import assert_close
    for inputs in check_inputs:
        inputs = _as_tuple(inputs)
        retraced, _ = _capture(f, inputs)
        if str(retraced.graph) != str(traced.graph):
            raise TracingCheckError(f"First graph:\n{traced.graph}\nSecond graph:\n"
                                    f"{retraced.graph}", None)
        with ember.no_grad():
            traced_outs = _flat_tensors(traced(*inputs))
            fn_outs = _flat_tensors(f(*inputs))
        for i, (a, b) in enumerate(zip(traced_outs, fn_outs)):
            try:
                assert_close(a.double() if a.is_floating_point() else a,
                             b.double() if b.is_floating_point() else b,
                             rtol=tolerance, atol=tolerance, equal_nan=True)
            except AssertionError as e:
                warnings.warn(f"Output nr {i + 1}. of the traced function does not match the "
                              "corresponding output of the Python function. Detailed error:\n"
                              f"{e}", TracerWarning, stacklevel=3)
                break


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """``torch.jit.trace``: a TracedModule (for a Module) or ScriptFunction (for a function)
    that runs the ops ``func`` ran on ``example_inputs``."""
    from ..nn import Module
    if optimize is not None:
        raise TypeError("trace(): `optimize` is deprecated in torch and has no effect; remove it")
    if example_kwarg_inputs is not None:
        raise NotImplementedError("trace(): example_kwarg_inputs is not supported in Ember; "
                                  "pass the inputs positionally in example_inputs")
    if example_inputs is None:
        raise RuntimeError("trace(): example_inputs must be given")
    if isinstance(func, ScriptModule):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. "
                      "Returning the object as is.")
        return func
    if not callable(func):
        raise TypeError(f"trace(): expected a Module or a function, got {type(func).__name__}")
    args = _as_tuple(example_inputs)
    gm, constants = _capture(func, args)
    if isinstance(func, Module):
        name = type(func).__name__
        traced = TopLevelTracedModule(gm, gm.graph, name)
    else:
        name = getattr(func, "__name__", "function")
        traced = ScriptFunction(gm, gm.graph, name)
    traced.train(func.training if isinstance(func, Module) else False)
    traced.__dict__["_ember_constant_names"] = set(constants)
    for c in constants:
        traced._non_persistent_buffers_set.add(c)
    if isinstance(func, Module):
        _copy_unread_state(func, traced)
    if strict:
        import ember
        with ember.no_grad():
            _check_strict_output(traced(*args), strict)
    if check_trace:
        _check(traced, func, check_inputs if check_inputs is not None else [args],
               check_tolerance)
    return traced


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """``torch.jit.trace_module(mod, {"forward": inputs})``: only ``forward`` can be traced,
    since Ember's traced module is one graph."""
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    extra = sorted(set(inputs) - {"forward"})
    if extra:
        raise NotImplementedError(f"trace_module: tracing methods other than forward ({extra}) "
                                  "is not supported: Ember's traced module holds one graph")
    if "forward" not in inputs:
        raise ValueError("trace_module: give example inputs for 'forward'")
    return trace(mod, inputs["forward"], optimize, check_trace,
                 [c["forward"] for c in check_inputs] if check_inputs else None,
                 check_tolerance, strict)
