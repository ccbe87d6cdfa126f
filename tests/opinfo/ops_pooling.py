"""Rows for ``ember/ops/pooling.py``: max pooling (with its indices), average pooling, the
adaptive forms, and the functions built on them (``F.lp_pool*``, ``F.max_unpool*``), called
as ``nn.functional`` and torch's top-level ``torch.max_pool2d``/``torch.avg_pool1d``...

Max pooling inputs come from ``distinct_values`` (no two elements equal, in every dtype), so
the winning index, and so the gradient, is the same in torch and Ember.
"""
from dataclasses import replace

from .core import OpInfo, Sample
from .ops_reduce import distinct_values

DTYPES = ("float32", "float64", "bfloat16")


def F(lib):
    return lib.nn.functional


def _pool(name):
    def fn(lib, x, *args, **kwargs):
        return getattr(F(lib), name)(x, *args, **kwargs)
    return fn


def _split_unbatched(op):
    """The row, and its unbatched samples (no batch dim) as a row of their own: Ember pools
    those through unsqueeze/squeeze, where torch's kernel takes them as they are, so their
    graph is listed apart in tests/test_graph_names.py."""
    rank = int(op.name[-2]) + 1 if op.name[-1] == "d" else None
    unbatched = [s for s in op.samples if rank and len(s.shapes[0]) == rank]
    if not unbatched:
        return [op]
    batched = [s for s in op.samples if s not in unbatched]
    return [replace(op, samples=batched),
            replace(op, name=op.name + "_unbatched", samples=unbatched)]


def _max_row(name, samples):
    return OpInfo(f"F.{name}", _pool(name), samples, dtypes=DTYPES, make_input=distinct_values)


def _pool_then_unpool(n):
    def fn(lib, x, kernel, **kwargs):
        pooled, indices = getattr(F(lib), f"max_pool{n}d")(x, kernel, return_indices=True,
                                                           **kwargs)
        return getattr(F(lib), f"max_unpool{n}d")(pooled, indices, kernel, **kwargs)
    return fn


def _errors(name, fn, samples):
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False)


MAX_POOL1D = [
    Sample([(2, 3, 8)], args=(2,)),
    Sample([(2, 3, 9)], {"stride": 2, "padding": 1, "return_indices": True}, args=(3,)),
    Sample([(2, 3, 10)], {"dilation": 2, "ceil_mode": True, "return_indices": True}, args=(3,)),
    Sample([(3, 8)], {"return_indices": True}, args=(2,)),  # unbatched
    Sample([(0, 3, 8)], args=(2,)),
    Sample([(2, 3, 8)], {"return_indices": True}, args=(3, 2), noncontig=True),
]
MAX_POOL2D = [
    Sample([(2, 3, 6, 6)], args=(2,)),
    Sample([(1, 2, 7, 6)], {"stride": (2, 1), "padding": 1, "return_indices": True},
           args=((3, 2),)),
    Sample([(1, 2, 7, 7)], {"stride": 2, "ceil_mode": True, "return_indices": True},
           args=(2,)),
    Sample([(1, 2, 7, 7)], {"dilation": (2, 1), "return_indices": True}, args=(2,)),
    Sample([(2, 5, 5)], {"return_indices": True}, args=(2,)),
    Sample([(0, 2, 4, 4)], args=(2,)),
    Sample([(1, 2, 6, 8)], {"return_indices": True}, args=(2,), noncontig=True),
]
MAX_POOL3D = [
    Sample([(1, 2, 4, 4, 4)], args=(2,)),
    Sample([(1, 2, 5, 4, 5)], {"stride": 2, "padding": 1, "ceil_mode": True,
                               "return_indices": True}, args=(3,)),
    Sample([(2, 4, 4, 4)], {"return_indices": True}, args=(2,)),
    Sample([(1, 2, 4, 4, 6)], args=(2,), noncontig=True),
]
AVG_POOL1D = [
    Sample([(2, 3, 8)], args=(2,)),
    Sample([(2, 3, 9)], {"stride": 2, "padding": 1}, args=(3,)),
    Sample([(2, 3, 9)], {"stride": 2, "padding": 1, "count_include_pad": False}, args=(3,)),
    Sample([(2, 3, 10)], {"stride": 3, "ceil_mode": True}, args=(3,)),
    Sample([(3, 8)], args=(2,)),
    Sample([(0, 3, 8)], args=(2,)),
    Sample([(2, 3, 8)], args=(3, 2), noncontig=True),
]
AVG_POOL2D = [
    Sample([(2, 3, 6, 6)], args=(2,)),
    Sample([(1, 2, 7, 6)], {"stride": (2, 1), "padding": 1}, args=((3, 2),)),
    Sample([(1, 2, 7, 7)], {"stride": 2, "padding": 1, "ceil_mode": True,
                            "count_include_pad": False}, args=(3,)),
    Sample([(1, 2, 6, 6)], {"divisor_override": 3}, args=(2,)),
    Sample([(2, 5, 5)], args=(2,)),
    Sample([(0, 2, 4, 4)], args=(2,)),
    Sample([(1, 2, 6, 8)], args=(2,), noncontig=True),
]
AVG_POOL3D = [
    Sample([(1, 2, 4, 4, 4)], args=(2,)),
    Sample([(1, 2, 5, 4, 5)], {"stride": 2, "padding": 1, "ceil_mode": True,
                               "count_include_pad": False}, args=(3,)),
    Sample([(1, 2, 4, 4, 4)], {"divisor_override": 5}, args=(2,)),
    Sample([(1, 2, 4, 4, 6)], args=(2,), noncontig=True),
]

_ROWS = [
    _max_row("max_pool1d", MAX_POOL1D),
    _max_row("max_pool2d", MAX_POOL2D),
    _max_row("max_pool3d", MAX_POOL3D),
    OpInfo("torch.max_pool2d", lambda lib, x: lib.max_pool2d(x, 2, 1, 1, 1, True),
           [Sample([(1, 2, 5, 5)])], dtypes=("float32", "float64"), make_input=distinct_values),
    OpInfo("torch.max_pool1d_with_indices",
           lambda lib, x: lib.max_pool1d_with_indices(x, 3, 2, 1),
           [Sample([(2, 3, 9)])], dtypes=("float32", "float64"), make_input=distinct_values),
    OpInfo("F.avg_pool1d", _pool("avg_pool1d"), AVG_POOL1D, dtypes=DTYPES),
    OpInfo("F.avg_pool2d", _pool("avg_pool2d"), AVG_POOL2D, dtypes=DTYPES),
    OpInfo("F.avg_pool3d", _pool("avg_pool3d"), AVG_POOL3D, dtypes=DTYPES),
    OpInfo("torch.avg_pool1d", lambda lib, x: lib.avg_pool1d(x, 3, 2, 1, False, False),
           [Sample([(2, 3, 9)])], dtypes=("float32", "float64")),
    OpInfo("F.adaptive_avg_pool1d", _pool("adaptive_avg_pool1d"),
           [Sample([(2, 3, 7)], args=(3,)), Sample([(2, 3, 4)], args=(6,)),
            Sample([(3, 7)], args=(1,)), Sample([(0, 3, 5)], args=(2,)),
            Sample([(2, 3, 8)], args=(3,), noncontig=True)], dtypes=DTYPES),
    OpInfo("F.adaptive_avg_pool2d", _pool("adaptive_avg_pool2d"),
           [Sample([(2, 3, 6, 5)], args=((3, 2),)), Sample([(1, 2, 5, 5)], args=((1, None),)),
            Sample([(2, 4, 4)], args=(3,)), Sample([(0, 2, 4, 4)], args=(2,)),
            Sample([(1, 2, 5, 6)], args=(2,), noncontig=True)], dtypes=DTYPES),
    OpInfo("F.adaptive_avg_pool3d", _pool("adaptive_avg_pool3d"),
           [Sample([(1, 2, 4, 5, 3)], args=((2, 3, 1),)), Sample([(2, 3, 3, 4)], args=(2,)),
            Sample([(1, 2, 4, 4, 6)], args=(2,), noncontig=True)], dtypes=DTYPES),
    OpInfo("torch.adaptive_avg_pool1d", lambda lib, x: lib.adaptive_avg_pool1d(x, 4),
           [Sample([(2, 3, 7)])], dtypes=("float32", "float64")),
    _max_row("adaptive_max_pool1d", [
        Sample([(2, 3, 7)], args=(3,)), Sample([(2, 3, 7)], {"return_indices": True}, args=(4,)),
        Sample([(3, 7)], {"return_indices": True}, args=(2,)),
        Sample([(2, 3, 8)], {"return_indices": True}, args=(3,), noncontig=True)]),
    _max_row("adaptive_max_pool2d", [
        Sample([(2, 3, 6, 5)], args=((3, 2),)),
        Sample([(1, 2, 5, 7)], {"return_indices": True}, args=((2, None),)),
        Sample([(2, 4, 4)], {"return_indices": True}, args=(3,)),
        Sample([(1, 2, 5, 6)], {"return_indices": True}, args=(2,), noncontig=True)]),
    _max_row("adaptive_max_pool3d", [
        Sample([(1, 2, 4, 5, 3)], {"return_indices": True}, args=((2, 3, 1),)),
        Sample([(2, 3, 3, 4)], args=(2,)),
        Sample([(1, 2, 4, 4, 6)], {"return_indices": True}, args=(2,), noncontig=True)]),
    OpInfo("torch.adaptive_max_pool1d", lambda lib, x: lib.adaptive_max_pool1d(x, 3),
           [Sample([(2, 3, 7)])], dtypes=("float32", "float64"), make_input=distinct_values),
    # Overlapping windows can pick one input element twice, which unpooling writes once: the
# composition is then not differentiable there, so the unpool samples' windows are disjoint.
# |x| ** p summed over the window, then the p-th root: positive inputs keep it smooth.
    OpInfo("F.lp_pool1d", _pool("lp_pool1d"),
           [Sample([(2, 3, 8)], args=(2, 2)), Sample([(2, 3, 9)], {"stride": 2}, args=(3.0, 3)),
            Sample([(2, 3, 8)], args=(1, 2), noncontig=True)],
           dtypes=DTYPES, domain=(0.1, 2.0)),
    OpInfo("F.lp_pool2d", _pool("lp_pool2d"),
           [Sample([(1, 2, 6, 6)], args=(2, 2)),
            Sample([(1, 2, 7, 6)], {"stride": (2, 1), "ceil_mode": True}, args=(3, (3, 2))),
            Sample([(1, 2, 4, 6)], args=(2, 2), noncontig=True)],
           dtypes=DTYPES, domain=(0.1, 2.0)),
    OpInfo("F.lp_pool3d", _pool("lp_pool3d"), [Sample([(1, 2, 4, 4, 4)], args=(2, 2))],
           dtypes=DTYPES, domain=(0.1, 2.0)),
    OpInfo("F.max_unpool1d", _pool_then_unpool(1),
           [Sample([(2, 3, 8)], args=(2,)), Sample([(2, 3, 8)], {"stride": 2, "padding": 1},
                                                   args=(2,))],
           dtypes=DTYPES, make_input=distinct_values),
    OpInfo("F.max_unpool2d", _pool_then_unpool(2),
           [Sample([(1, 2, 4, 4)], args=(2,)), Sample([(2, 4, 4)], args=(2,)),
            Sample([(1, 2, 4, 6)], args=(2,), noncontig=True)],
           dtypes=DTYPES, make_input=distinct_values),
    OpInfo("F.max_unpool3d", _pool_then_unpool(3), [Sample([(1, 2, 4, 4, 4)], args=(2,))],
           dtypes=DTYPES, make_input=distinct_values),
    _errors("F.max_pool2d_errors", _pool("max_pool2d"), [
        Sample([(1, 2, 3, 3)], args=(4,)),  # kernel larger than the input
        Sample([(1, 2, 6, 6)], {"padding": 2}, args=(3,)),  # padding over half the kernel
        Sample([(2, 3)], args=(2,)),  # rank
    ]),
    _errors("F.avg_pool2d_errors", _pool("avg_pool2d"), [
        Sample([(1, 2, 3, 3)], args=(4,)), Sample([(1, 2, 6, 6)], {"padding": 2}, args=(3,)),
        Sample([(1, 2, 6, 6)], {"divisor_override": 0}, args=(2,))]),
]
OPS = [split for op in _ROWS for split in _split_unbatched(op)]
