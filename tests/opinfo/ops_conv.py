"""Rows for ``ember/ops/conv.py``: convolutions and transposed convolutions (``F.conv1d`` ...
``F.conv_transpose3d``, ``torch.conv2d``, ``torch.conv_tbc``), ``F.unfold``/``F.fold`` (im2col
and col2im) and ``F.pad``'s constant, reflect and replicate modes.

Tensor arguments are (input, weight[, bias]); shapes stay small so that the float64 gradcheck
(two evaluations per input element) is cheap.
"""
from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")


def F(lib):
    return lib.nn.functional


def _conv(name):
    def fn(lib, x, w, b=None, **kwargs):
        return getattr(F(lib), name)(x, w, b, **kwargs)
    return fn


def _errors(name, fn, samples):
    """Calls torch refuses: Ember raises the same exception type (tests/nn/test_conv.py
    checks the messages)."""
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False)


CONV1D = [
    Sample([(2, 3, 7), (4, 3, 3), (4,)]),
    Sample([(2, 3, 7), (4, 3, 3)]),
    Sample([(2, 3, 8), (4, 3, 3), (4,)], {"stride": 2, "padding": 1}),
    Sample([(2, 3, 9), (2, 3, 2), (2,)], {"dilation": 3, "padding": 2}),
    Sample([(2, 4, 6), (6, 2, 3), (6,)], {"groups": 2}),
    Sample([(1, 3, 5), (3, 1, 3), (3,)], {"groups": 3, "padding": "same"}),
    Sample([(2, 3, 6), (4, 3, 3), (4,)], {"padding": "same", "dilation": 2}),
    Sample([(2, 3, 6), (4, 3, 3), (4,)], {"padding": "valid"}),
    Sample([(3, 7), (4, 3, 3), (4,)]),  # unbatched
    Sample([(0, 3, 7), (4, 3, 3), (4,)]),  # empty batch
    Sample([(2, 3, 7), (4, 3, 3), (4,)], {"stride": 2}, noncontig=True),
]
CONV2D = [
    Sample([(2, 2, 5, 5), (3, 2, 3, 3), (3,)]),
    Sample([(2, 2, 5, 5), (3, 2, 3, 3)]),
    Sample([(1, 2, 6, 5), (3, 2, 3, 2), (3,)], {"stride": (2, 1), "padding": (1, 0)}),
    Sample([(1, 2, 6, 6), (2, 2, 2, 2), (2,)], {"dilation": (2, 1)}),
    Sample([(1, 4, 4, 4), (4, 2, 3, 3), (4,)], {"groups": 2, "padding": 1}),
    Sample([(1, 2, 4, 5), (3, 2, 3, 3), (3,)], {"padding": "same"}),
    Sample([(2, 4, 4), (3, 2, 3, 3), (3,)]),  # unbatched
    Sample([(0, 2, 4, 4), (3, 2, 3, 3), (3,)]),  # empty batch
    Sample([(2, 2, 5, 6), (3, 2, 3, 3), (3,)], {"stride": 2}, noncontig=True),
]
CONV3D = [
    Sample([(1, 2, 4, 4, 4), (2, 2, 2, 2, 2), (2,)]),
    Sample([(1, 2, 5, 4, 4), (2, 1, 3, 2, 2), (2,)], {"stride": 2, "padding": 1, "groups": 2}),
    Sample([(0, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2,)]),
    Sample([(1, 2, 3, 4, 4), (2, 2, 2, 2, 2)], {"dilation": (1, 2, 1)}, noncontig=True),
]
# Weights are (in_channels, out_channels / groups, *kernel).
CONV_TRANSPOSE1D = [
    Sample([(2, 3, 5), (3, 4, 3), (4,)]),
    Sample([(2, 3, 5), (3, 4, 3)], {"stride": 2, "padding": 1, "output_padding": 1}),
    Sample([(2, 4, 4), (4, 1, 3), (2,)], {"groups": 2, "dilation": 2}),
    Sample([(3, 5), (3, 2, 2), (2,)]),  # unbatched
    Sample([(0, 3, 5), (3, 2, 2), (2,)]),
    Sample([(2, 3, 5), (3, 2, 3), (2,)], {"stride": 2}, noncontig=True),
]
CONV_TRANSPOSE2D = [
    Sample([(2, 3, 4, 4), (3, 2, 3, 3), (2,)]),
    Sample([(1, 3, 3, 4), (3, 2, 3, 2)], {"stride": (2, 1), "padding": 1,
                                          "output_padding": (1, 0)}),
    Sample([(1, 4, 3, 3), (4, 1, 2, 2), (2,)], {"groups": 2, "dilation": 2}),
    Sample([(0, 3, 3, 3), (3, 2, 2, 2), (2,)]),
    Sample([(1, 3, 3, 4), (3, 2, 2, 2), (2,)], {"stride": 2}, noncontig=True),
]
CONV_TRANSPOSE3D = [
    Sample([(1, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2,)]),
    Sample([(1, 2, 2, 3, 2), (2, 1, 2, 2, 2)], {"stride": 2, "output_padding": 1}),
]

# torch's CPU bfloat16 transposed convolutions round their partial sums by the CPU's kernel
# (oneDNN picks it), so an output that cancels (|sum| << the products) differs by one bfloat16
# step of the largest partial sum — 2**-6 at magnitude 2-4 — on some CPUs and not others.
_BF16_SUMS = {"bfloat16": (1.6e-2, 3.2e-2)}

OPS = [
    OpInfo("F.conv1d", _conv("conv1d"), CONV1D, dtypes=DTYPES),
    OpInfo("F.conv2d", _conv("conv2d"), CONV2D, dtypes=DTYPES),
    OpInfo("F.conv3d", _conv("conv3d"), CONV3D, dtypes=DTYPES),
    OpInfo("F.conv_transpose1d", _conv("conv_transpose1d"), CONV_TRANSPOSE1D, dtypes=DTYPES,
           tol=_BF16_SUMS),
    OpInfo("F.conv_transpose2d", _conv("conv_transpose2d"), CONV_TRANSPOSE2D, dtypes=DTYPES,
           tol=_BF16_SUMS),
    OpInfo("F.conv_transpose3d", _conv("conv_transpose3d"), CONV_TRANSPOSE3D, dtypes=DTYPES,
           tol=_BF16_SUMS),
    OpInfo("torch.conv2d", lambda lib, x, w, b: lib.conv2d(x, w, b, 1, 1),
           [Sample([(1, 2, 4, 4), (3, 2, 3, 3), (3,)])], dtypes=("float32", "float64")),
    OpInfo("torch.conv_transpose1d", lambda lib, x, w: lib.conv_transpose1d(x, w, None, 2),
           [Sample([(1, 2, 4), (2, 3, 3)])], dtypes=("float32", "float64")),
    # (time, batch, in) input, (kernel, in, out) weight.
    OpInfo("torch.conv_tbc", lambda lib, x, w, b, pad=0: lib.conv_tbc(x, w, b, pad),
           [Sample([(5, 2, 3), (3, 3, 4), (4,)]), Sample([(5, 2, 3), (2, 3, 4), (4,)],
                                                         {"pad": 1})],
           dtypes=("float32", "float64")),
    OpInfo("F.unfold", lambda lib, x, kernel_size, **kw: F(lib).unfold(x, kernel_size, **kw),
           [Sample([(2, 2, 4, 4)], args=(2,)),
            Sample([(1, 2, 5, 4)], {"stride": 2, "padding": 1}, args=((3, 2),)),
            Sample([(1, 2, 5, 5)], {"dilation": 2}, args=(2,)),
            Sample([(0, 2, 4, 4)], args=(2,)),
            Sample([(1, 2, 4, 6)], args=(2,), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.fold", lambda lib, x, output_size, kernel_size, **kw:
           F(lib).fold(x, output_size, kernel_size, **kw),
           [Sample([(1, 8, 4)], args=((3, 3), 2)),
            Sample([(2, 12, 6)], {"stride": 2, "padding": 1}, args=((4, 5), (3, 2))),
            Sample([(1, 8, 9)], {"dilation": 1}, args=((4, 4), 2), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.unfold_unbatched", lambda lib, x: F(lib).unfold(x, 3), [Sample([(2, 4, 4)])],
           dtypes=("float32", "float64")),
    OpInfo("F.fold_unbatched", lambda lib, x: F(lib).fold(x, (3, 3), 2), [Sample([(8, 4)])],
           dtypes=("float32", "float64")),
    OpInfo("F.pad_constant", lambda lib, x, pad, **kw: F(lib).pad(x, pad, **kw),
           [Sample([(2, 3)], args=((1, 2),)),
            Sample([(2, 3, 4)], {"value": 1.5}, args=((1, 0, 2, 1),)),
            # negative widths crop
            Sample([(2, 3, 5)], args=((-1, 2, 0, -1),)),
            Sample([(2, 3, 4)], args=((1, 1, 1, 1, 1, 1),)),
            Sample([(0, 3)], args=((1, 1),)),
            Sample([(2, 3, 4)], {"value": -1.0}, args=((2, 1),), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.pad_reflect", lambda lib, x, pad: F(lib).pad(x, pad, mode="reflect"),
           [Sample([(2, 3, 4)], args=((2, 1),)), Sample([(1, 2, 3, 4)], args=((1, 2, 2, 0),)),
            Sample([(1, 1, 3, 3, 3)], args=((1, 1, 2, 1, 0, 2),)),
            Sample([(2, 3, 4)], args=((3, 3),), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.pad_replicate", lambda lib, x, pad: F(lib).pad(x, pad, mode="replicate"),
           [Sample([(2, 3, 4)], args=((2, 3),)), Sample([(1, 2, 3, 4)], args=((1, 2, 4, 0),)),
            Sample([(1, 1, 2, 3, 2)], args=((1, 1, 2, 1, 0, 2),)),
            Sample([(2, 3, 4)], args=((0, 5),), noncontig=True)],
           dtypes=DTYPES),
    _errors("F.conv2d_errors", _conv("conv2d"), [
        Sample([(1, 3, 5, 5), (3, 2, 3, 3)]),  # channels
        Sample([(1, 2, 2, 2), (3, 2, 3, 3)]),  # kernel larger than the input
        Sample([(1, 4, 4, 4), (3, 2, 3, 3)], {"groups": 2}),  # out channels not divisible
        Sample([(1, 2, 5, 5), (3, 2, 3, 3)], {"padding": "same", "stride": 2}),
        Sample([(2, 5, 5), (3, 2, 3)]),  # weight rank
    ]),
    _errors("F.pad_reflect_errors", lambda lib, x, pad: F(lib).pad(x, pad, mode="reflect"),
            [Sample([(2, 3, 4)], args=((4, 0),))]),
]
