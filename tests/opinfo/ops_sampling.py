"""Rows for ``ember/ops/sampling.py``: ``F.interpolate``'s nearest, nearest-exact, linear,
bilinear, bicubic and trilinear modes (by size and by scale factor, ``align_corners``,
``antialias``, ``recompute_scale_factor``), ``F.grid_sample`` (bilinear, nearest and bicubic;
zeros, border and reflection padding; 2-D and 3-D), ``F.affine_grid`` and the pixel and channel
shuffles. (Area mode is adaptive average pooling: ``ops_pooling.py``.)
"""
import itertools

from .core import OpInfo, Sample

DTYPES = ("float32", "float64", "bfloat16")


def F(lib):
    return lib.nn.functional


def _errors(name, fn, samples):
    """Calls torch refuses: Ember raises the same exception type."""
    return OpInfo(name, fn, samples, dtypes=("float32",), grad=False, gradcheck=False)


def _interpolate(lib, x, **kw):
    return F(lib).interpolate(x, **kw)


def _interp(mode, shapes, sizes, scales, align=True):
    """Samples of ``mode`` for each input shape: by size, by scale factor (up and down), with
    recomputed scales, align_corners where the mode has it, a non-contiguous one."""
    out = []
    for shape, size, scale in zip(shapes, sizes, scales):
        out += [Sample([shape], {"size": size, "mode": mode}),
                Sample([shape], {"scale_factor": scale, "mode": mode}),
                Sample([shape], {"scale_factor": 0.6, "mode": mode}),
                Sample([shape], {"scale_factor": scale, "mode": mode,
                                 "recompute_scale_factor": True})]
        if align:
            out.append(Sample([shape], {"size": size, "mode": mode, "align_corners": True}))
    out.append(Sample([(0,) + shapes[0][1:]], {"size": sizes[0], "mode": mode}))  # empty batch
    out.append(Sample([shapes[0]], {"size": sizes[0], "mode": mode}, noncontig=True))
    return out


S1, S2, S3 = (2, 2, 5), (2, 2, 4, 5), (1, 2, 3, 4, 4)


def _grid_samples(dims):
    shape, grid = ((2, 2, 4, 5), (2, 3, 4, 2)) if dims == 2 else ((1, 2, 3, 4, 4), (1, 2, 3, 2, 3))
    modes = ("bilinear", "nearest", "bicubic") if dims == 2 else ("bilinear", "nearest")
    out = [Sample([shape, grid], {"mode": m, "padding_mode": p, "align_corners": a})
           for m, p, a in itertools.product(modes, ("zeros", "border", "reflection"),
                                            (False, True))]
    out.append(Sample([(0,) + shape[1:], (0,) + grid[1:]], {"align_corners": False}))
    out.append(Sample([shape, grid], {"align_corners": False}, noncontig=True))
    return out


def grid_points(rng, shape, dtype, index):
    """Grid coordinates reach beyond [-1, 1] so that every padding mode matters."""
    return rng.uniform(-1.3, 1.3, size=shape)


OPS = [
    OpInfo("F.interpolate_nearest", _interpolate,
           _interp("nearest", (S1, S2, S3), (8, (7, 3), (4, 6, 2)), (2.0, 1.5, 2.0), align=False),
           dtypes=DTYPES),
    OpInfo("F.interpolate_nearest_exact", _interpolate,
           _interp("nearest-exact", (S1, S2, S3), (8, (7, 3), (4, 6, 2)), (2.0, 1.5, 2.0),
                   align=False),
           dtypes=DTYPES),
    OpInfo("F.interpolate_linear", _interpolate, _interp("linear", (S1,), (8,), (1.7,)),
           dtypes=DTYPES),
    OpInfo("F.interpolate_bilinear", _interpolate, _interp("bilinear", (S2,), ((7, 3),), (1.5,)),
           dtypes=DTYPES),
    OpInfo("F.interpolate_bicubic", _interpolate, _interp("bicubic", (S2,), ((7, 3),), (1.5,)),
           dtypes=DTYPES),
    OpInfo("F.interpolate_trilinear", _interpolate,
           _interp("trilinear", (S3,), ((4, 6, 2),), (1.5,)), dtypes=DTYPES),
    OpInfo("F.interpolate_antialias", _interpolate,
           [Sample([S2], {"size": (2, 3), "mode": m, "antialias": True, "align_corners": a})
            for m in ("bilinear", "bicubic") for a in (False, True)]
           + [Sample([S2], {"size": (7, 8), "mode": "bilinear", "antialias": True}),
              Sample([S2], {"scale_factor": 0.5, "mode": "bicubic", "antialias": True},
                     noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.upsample_bilinear", lambda lib, x, **kw: F(lib).upsample_bilinear(x, **kw),
           [Sample([S2], {"size": (7, 3)}), Sample([S2], {"scale_factor": 2})], dtypes=DTYPES),
    OpInfo("F.grid_sample", lambda lib, x, g, **kw: F(lib).grid_sample(x, g, **kw),
           _grid_samples(2), dtypes=("float32", "float64"), make_input=grid_points),
    OpInfo("F.grid_sample_3d", lambda lib, x, g, **kw: F(lib).grid_sample(x, g, **kw),
           _grid_samples(3), dtypes=("float32", "float64"), make_input=grid_points),
    OpInfo("F.affine_grid", lambda lib, theta, size, **kw: F(lib).affine_grid(theta, size, **kw),
           [Sample([(2, 2, 3)], {"align_corners": False}, args=([2, 3, 4, 5],)),
            Sample([(2, 2, 3)], {"align_corners": True}, args=([2, 1, 1, 5],)),
            Sample([(1, 3, 4)], {"align_corners": False}, args=([1, 2, 3, 2, 4],)),
            Sample([(1, 3, 4)], {"align_corners": True}, args=([1, 2, 3, 2, 4],)),
            Sample([(0, 2, 3)], {"align_corners": False}, args=([0, 3, 4, 5],)),
            Sample([(2, 2, 3)], {"align_corners": False}, args=([2, 3, 4, 5],), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.pixel_shuffle", lambda lib, x, r: F(lib).pixel_shuffle(x, r),
           [Sample([(2, 8, 2, 3)], args=(2,)), Sample([(8, 2, 3)], args=(2,)),
            Sample([(2, 1, 9, 2, 2)], args=(3,)), Sample([(2, 3, 2, 3)], args=(1,)),
            Sample([(0, 4, 2, 3)], args=(2,)), Sample([(2, 8, 2, 3)], args=(2,), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.pixel_unshuffle", lambda lib, x, r: F(lib).pixel_unshuffle(x, r),
           [Sample([(2, 2, 4, 6)], args=(2,)), Sample([(2, 4, 6)], args=(2,)),
            Sample([(2, 1, 1, 6, 3)], args=(3,)), Sample([(2, 3, 2, 2)], args=(1,)),
            Sample([(0, 2, 4, 6)], args=(2,)), Sample([(2, 2, 4, 6)], args=(2,), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("F.channel_shuffle", lambda lib, x, g: F(lib).channel_shuffle(x, g),
           [Sample([(2, 6, 3)], args=(2,)), Sample([(2, 6, 2, 2)], args=(3,)),
            Sample([(2, 4, 3)], args=(1,)), Sample([(0, 6, 3)], args=(2,)),
            Sample([(2, 6, 4)], args=(3,), noncontig=True)],
           dtypes=DTYPES),
    OpInfo("torch.pixel_shuffle", lambda lib, x: lib.pixel_shuffle(x, 2),
           [Sample([(2, 8, 2, 3)])], dtypes=("float32", "float64")),
    OpInfo("torch.channel_shuffle", lambda lib, x: lib.channel_shuffle(x, 2),
           [Sample([(2, 6, 3)])], dtypes=("float32", "float64")),
    _errors("F.interpolate_errors", _interpolate, [
        Sample([S2], {"size": 3, "scale_factor": 2.0}),
        Sample([S2]),
        Sample([S2], {"size": (3, 3, 3)}),
        Sample([S1], {"size": 4, "mode": "bilinear"}),
        Sample([S2], {"size": (3, 3), "align_corners": True}),
        Sample([S1], {"size": 4, "mode": "linear", "antialias": True}),
        Sample([(2, 5)], {"size": 4}),
    ]),
    _errors("F.grid_sample_errors", lambda lib, x, g, **kw: F(lib).grid_sample(x, g, **kw), [
        Sample([(2, 2, 4, 5), (1, 3, 4, 2)]),
        Sample([(2, 2, 4, 5), (2, 3, 4, 3)]),
        Sample([(1, 2, 3, 4, 4), (1, 2, 3, 2, 3)], {"mode": "bicubic"}),
        Sample([(2, 2, 4, 5), (2, 3, 4, 2)], {"mode": "area"}),
    ]),
    _errors("F.pixel_shuffle_errors", lambda lib, x, r: F(lib).pixel_shuffle(x, r), [
        Sample([(2, 6, 2, 3)], args=(2,)), Sample([(8, 3)], args=(2,))]),
]
