"""Rows for the activations of ``ember/ops/activation.py``, called as ``nn.functional`` (and
torch's top-level spellings where it has them: ``torch.relu_``, ``torch.selu_``...).

Random uniform inputs hit a kink (0 for relu, +-lambd for the shrinks, the clamp bounds of
hardtanh) with probability zero, so finite differences are valid everywhere they are taken.
"""
from .core import OpInfo, Sample

# Half precision is checked once per row family (bfloat16): float16 runs the same kernels.
DTYPES = ("float32", "float64", "bfloat16")


def samples(**kwargs):
    """A matrix, a batch with a zero-size dim, a 0-d tensor and a non-contiguous view."""
    return [Sample([(3, 4)], dict(kwargs)), Sample([(0, 3)], dict(kwargs)),
            Sample([()], dict(kwargs)), Sample([(2, 3, 4)], dict(kwargs), noncontig=True)]


def F(lib):
    return lib.nn.functional


def _functional(name, **kwargs):
    return OpInfo(f"F.{name}" + "".join(f"_{k}" for k in kwargs),
                  lambda lib, x, name=name: getattr(F(lib), name)(x, **kwargs),
                  samples(), dtypes=DTYPES, domain=(-3.0, 3.0))


def _inplace_on_clone(name, top_level, *args):
    """``torch.name_`` on a non-leaf copy: the in-place node sits over ``CloneBackward0``."""
    lib_fn = (lambda lib: getattr(lib, name)) if top_level else (lambda lib: getattr(F(lib), name))
    return OpInfo(f"{'' if top_level else 'F.'}{name}_inplace",
                  lambda lib, x: lib_fn(lib)(x.clone(), *args), samples(), dtypes=DTYPES,
                  domain=(-3.0, 3.0))


OPS = [
    _functional("relu"),
    _functional("relu6"),
    _functional("selu"),
    _functional("silu"),
    _functional("mish"),
    _functional("logsigmoid"),
    _functional("hardsigmoid"),
    _functional("hardswish"),
    _functional("gelu"),
    _functional("gelu", approximate="tanh"),
    _functional("elu"),
    _functional("elu", alpha=0.5),
    _functional("celu"),
    _functional("celu", alpha=2.0),
    _functional("hardtanh"),
    _functional("hardtanh", min_val=-0.5, max_val=2.0),
    # integer inputs truncate fractional limits (-0.5 is 0, so uint8 is accepted)
    _functional("hardtanh", min_val=-1.5, max_val=2.7),
    _functional("leaky_relu"),
    _functional("leaky_relu", negative_slope=0.2),
    _functional("hardshrink"),
    _functional("hardshrink", lambd=1.0),
    _functional("softshrink"),
    _functional("softshrink", lambd=0.25),
    _functional("softplus"),
    # beta * x > threshold switches to the identity: the inputs cross it.
    _functional("softplus", beta=2.0, threshold=1.5),
    OpInfo("F.threshold", lambda lib, x: F(lib).threshold(x, 0.5, -2.0), samples(),
           dtypes=DTYPES, domain=(-3.0, 3.0)),
    OpInfo("torch.threshold", lambda lib, x: lib.threshold(x, -0.5, 1.0), samples(),
           dtypes=DTYPES, domain=(-3.0, 3.0)),
    OpInfo("F.rrelu_eval", lambda lib, x: F(lib).rrelu(x, 0.1, 0.3, training=False),
           samples(), dtypes=DTYPES, domain=(-3.0, 3.0)),
    OpInfo("F.glu", lambda lib, x, dim=-1: F(lib).glu(x, dim),
           [Sample([(3, 4)]), Sample([(4, 3)], {"dim": 0}), Sample([(2, 6, 2)], {"dim": 1}),
            Sample([(0, 4)]), Sample([(2, 3, 4)], noncontig=True)],
           dtypes=DTYPES),
    # An odd size cannot be halved: torch's RuntimeError.
    OpInfo("F.glu_odd_size", lambda lib, x: F(lib).glu(x), [Sample([(3, 5)])],
           dtypes=("float32",), grad=False, gradcheck=False),
    # The weight is one slope per channel (dim 1) or one shared slope, broadcast over the rest.
    OpInfo("F.prelu", lambda lib, x, w: F(lib).prelu(x, w),
           [Sample([(2, 3, 4), (3,)]), Sample([(2, 3), (1,)]), Sample([(2, 3, 2, 2), (3,)]),
            Sample([(0, 3, 2), (3,)]), Sample([(2, 3, 4), (3,)], noncontig=True)],
           dtypes=DTYPES, domain=(-3.0, 3.0)),
    # One slope per channel, but the wrong number of them.
    OpInfo("F.prelu_wrong_channels", lambda lib, x, w: F(lib).prelu(x, w),
           [Sample([(2, 3, 4), (4,)])], dtypes=("float32",), grad=False, gradcheck=False),
    OpInfo("torch.prelu", lambda lib, x, w: lib.prelu(x, w), [Sample([(4, 2, 3), (2,)])],
           dtypes=("float32", "float64")),
    OpInfo("torch.relu", lambda lib, x: lib.relu(x), samples(), dtypes=DTYPES),
    OpInfo("torch.selu", lambda lib, x: lib.selu(x), samples(), dtypes=DTYPES),
    OpInfo("torch.celu", lambda lib, x: lib.celu(x, 1.5), samples(), dtypes=DTYPES),
    OpInfo("Tensor.relu", lambda lib, x: x.relu(), samples(), dtypes=DTYPES),
    _inplace_on_clone("relu_", True),
    _inplace_on_clone("selu_", True),
    _inplace_on_clone("celu_", True, 0.5),
    _inplace_on_clone("threshold_", True, 0.25, 3.0),
    OpInfo("F.relu_inplace", lambda lib, x: F(lib).relu(x * 2, inplace=True), samples(),
           dtypes=DTYPES),
    OpInfo("F.leaky_relu_inplace", lambda lib, x: F(lib).leaky_relu(x * 2, 0.3, inplace=True),
           samples(), dtypes=DTYPES),
    OpInfo("F.elu_inplace", lambda lib, x: F(lib).elu(x * 2, inplace=True), samples(),
           dtypes=DTYPES),
    OpInfo("F.selu_inplace", lambda lib, x: F(lib).selu(x * 2, inplace=True), samples(),
           dtypes=DTYPES),
    OpInfo("F.celu_inplace", lambda lib, x: F(lib).celu(x * 2, 0.5, inplace=True), samples(),
           dtypes=DTYPES),
    OpInfo("F.threshold_inplace", lambda lib, x: F(lib).threshold(x * 2, 0.5, -2.0,
                                                                   inplace=True),
           samples(), dtypes=DTYPES, domain=(-3.0, 3.0)),
    # integer inputs take both numbers truncated (1.5 is 1, 2.5 is 2)
    OpInfo("torch.threshold_fractional", lambda lib, x: lib.threshold(x, 1.5, 2.5), samples(),
           dtypes=DTYPES, domain=(-3.0, 3.0)),
    OpInfo("F.hardtanh_inplace", lambda lib, x: F(lib).hardtanh(x * 2, inplace=True),
           samples(), dtypes=DTYPES),
    # Integer inputs: relu keeps the dtype, the float-only kernels refuse as torch does.
    OpInfo("F.relu_int", lambda lib, x: F(lib).relu(x), [Sample([(3, 4)])],
           dtypes=("int64", "int32", "uint8"), grad=False, gradcheck=False),
    OpInfo("F.gelu_int", lambda lib, x: F(lib).gelu(x), [Sample([(3, 4)])],
           dtypes=("int64",), grad=False, gradcheck=False),
    OpInfo("F.gelu_float16", lambda lib, x: F(lib).gelu(x), [Sample([(3, 4)])],
           dtypes=("float16",), grad=False, gradcheck=False),
]
