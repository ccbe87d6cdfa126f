"""``Dim``: a named dynamic dimension for ``export(..., dynamic_shapes=...)``, as
``torch.export.dynamic_shapes``."""
import inspect

__all__ = ["Dim", "dims"]

_INT_OO = float("inf")


class _Dim:
    """A dynamic size ``min <= s <= max``; dims given the same ``Dim`` must stay equal."""

    def __init__(self, name, min=None, max=None):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim name must be a valid identifier, got {name!r}")
        lo = 0 if min is None else min
        hi = _INT_OO if max is None else max
        if hi < lo:
            raise ValueError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__ = name
        self.min, self.max = lo, hi

    def __repr__(self):
        bounds = f"min={self.min}" + ("" if self.max == _INT_OO else f", max={self.max}")
        return f"Dim('{self.__name__}', {bounds})"


def Dim(name, *, min=None, max=None):
    """``Dim("batch", min=2, max=64)``: a dimension of an input that may take other sizes."""
    return _Dim(name, min, max)


def dims(*names, min=None, max=None):
    return tuple(Dim(n, min=min, max=max) for n in names)


def _normalize(f, args, dynamic_shapes):
    """[{dim index: _Dim}] for each positional input, from dynamic_shapes given as a dict (by
    forward's argument names), a tuple/list (by position) or None."""
    from .._tensor import Tensor
    specs = [None] * len(args)
    if dynamic_shapes is None:
        pass
    elif isinstance(dynamic_shapes, dict):
        fn = getattr(f, "forward", f)
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for key, spec in dynamic_shapes.items():
            if key not in names[:len(args)]:
                raise ValueError(f"dynamic_shapes: {key!r} is not a positional argument of "
                                 f"{getattr(fn, '__qualname__', fn)} given in args "
                                 f"({names[:len(args)]})")
            specs[names.index(key)] = spec
    elif isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(args):
            raise ValueError(f"dynamic_shapes has {len(dynamic_shapes)} entries but args has "
                             f"{len(args)}")
        specs = list(dynamic_shapes)
    else:
        raise TypeError("dynamic_shapes must be a dict, a tuple/list or None, got "
                        f"{type(dynamic_shapes).__name__}")
    result = []
    for i, (a, spec) in enumerate(zip(args, specs)):
        dims_of = {}
        if spec is not None:
            if not isinstance(a, Tensor):
                raise ValueError(f"dynamic_shapes: args[{i}] is not a tensor")
            items = spec.items() if isinstance(spec, dict) else enumerate(spec)
            for d, dim in items:
                if dim is None:
                    continue
                if not isinstance(dim, _Dim):
                    raise NotImplementedError(f"dynamic_shapes: args[{i}] dim {d}: only "
                                              "export.Dim(...) or None are supported, got "
                                              f"{dim!r}")
                if not -a.dim() <= d < a.dim():
                    raise ValueError(f"dynamic_shapes: args[{i}] has no dim {d}")
                size = a.shape[d]
                if not dim.min <= size <= dim.max:
                    raise ValueError(f"dynamic_shapes: args[{i}].shape[{d}] = {size} is "
                                     f"outside the range of {dim!r}")
                dims_of[d % a.dim()] = dim
        result.append(dims_of)
    return result
