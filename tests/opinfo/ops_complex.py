"""Rows for complex numbers: the complex-only ops (``real``, ``angle``, ``view_as_real``…) and
the ordinary arithmetic on complex dtypes, whose backward formulas carry the conjugates of
PyTorch's convention.

Complex rows run forward and the gradient of a random complex cotangent against PyTorch.
``gradcheck`` works on real tensors, so the finite-difference rows take real float64 inputs,
build the complex intermediate inside the row (``complex(x, y)``), and return a real view
(``view_as_real``) of the complex result: the whole complex chain rule is then checked.
"""
import numpy as np

from .core import OpInfo, Sample, COMPLEX_DTYPES

CF = COMPLEX_DTYPES
REAL = ("float32", "float64")

UNARY = [Sample(((3, 4),)), Sample(((2, 3, 4),), noncontig=True), Sample(((),)),
         Sample(((0, 3),))]
BINARY = [Sample(((3, 4), (3, 4))), Sample(((2, 3, 4), (3, 1)), noncontig=True),
          Sample(((3, 4), ())), Sample(((0, 3), (3,)))]
MATMUL = [Sample(((3, 4), (4, 2))), Sample(((2, 3, 4), (4,))), Sample(((4,), (4,))),
          Sample(((2, 2, 3), (2, 3, 5)))]


def away_from_zero(rng, shape, dtype, index):
    """Complex values with modulus in [0.5, 2]: ``div``, ``log``, ``angle``… stay smooth."""
    modulus = rng.uniform(0.5, 2.0, size=shape)
    phase = rng.uniform(-np.pi, np.pi, size=shape)
    z = modulus * np.exp(1j * phase)
    return z if dtype in CF else z.real


def with_zeros(rng, shape, dtype, index):
    z = away_from_zero(rng, shape, dtype, index)
    if z.size:
        z.reshape(-1)[0] = 0
    return z


def positive(rng, shape, dtype, index):
    return rng.uniform(0.5, 2.0, size=shape)


def c(lib, x, y):
    return lib.complex(x, y)


def r(lib, z):
    return lib.view_as_real(z.resolve_conj()) if z.is_complex() else z


def crow(name, fn, samples=UNARY, dtypes=("complex64",), **kwargs):
    """A row over complex dtypes (forward + backward against torch); complex64 alone unless
    the row asks for more (the arithmetic is the same code for both widths)."""
    kwargs.setdefault("gradcheck", False)
    return OpInfo(name, fn, samples, dtypes=dtypes, **kwargs)


def real_row(name, fn, samples, **kwargs):
    """A row over real float64 inputs that builds complex intermediates: forward, backward and
    gradcheck of a real-valued result."""
    return OpInfo(name, fn, samples, dtypes=("float64",), **kwargs)


PAIRS = [Sample(((3, 4), (3, 4))), Sample(((2, 3), (2, 3)), noncontig=True),
         Sample(((), ())), Sample(((0, 2), (0, 2)))]
QUADS = [Sample(((3, 4), (3, 4), (3, 4), (3, 4))), Sample(((2, 3), (2, 3), (2, 3), (2, 3)))]

OPS = [
    # ---- the complex-only ops ------------------------------------------------------------
    crow("real", lambda lib, z: lib.real(z), dtypes=CF),
    crow("real_property", lambda lib, z: z.real * 2),
    crow("imag", lambda lib, z: lib.imag(z), dtypes=CF),
    crow("imag_property", lambda lib, z: z.imag * 2),
    crow("view_as_real", lambda lib, z: lib.view_as_real(z) * 2, dtypes=CF),
    crow("view_as_real_transposed", lambda lib, z: lib.view_as_real(z.mT), [Sample(((3, 4),))]),
    OpInfo("view_as_complex", lambda lib, x: lib.view_as_complex(x),
           [Sample(((3, 2),)), Sample(((2, 3, 2),)), Sample(((1, 2),))], dtypes=REAL,
           gradcheck=False),
    OpInfo("view_as_complex_roundtrip",
           lambda lib, x: lib.view_as_real(lib.view_as_complex(x) ** 2),
           [Sample(((3, 2),)), Sample(((2, 3, 2),))], dtypes=REAL),
    crow("conj", lambda lib, z: lib.conj(z)),
    crow("conj_method", lambda lib, z: z.conj() * z),
    crow("conj_physical", lambda lib, z: lib.conj_physical(z)),
    crow("resolve_conj", lambda lib, z: lib.resolve_conj(z.conj())),
    OpInfo("conj_real", lambda lib, x: lib.conj(x) * 2, UNARY[:3], dtypes=REAL),
    crow("abs", lambda lib, z: lib.abs(z), make_input=with_zeros, dtypes=CF),
    crow("abs_operator", lambda lib, z: abs(z), make_input=away_from_zero),
    crow("angle", lambda lib, z: lib.angle(z), make_input=with_zeros, dtypes=CF),
    OpInfo("angle_real", lambda lib, x: lib.angle(x), UNARY, dtypes=("float32", "int64")),
    crow("adjoint", lambda lib, z: lib.adjoint(z), [Sample(((3, 4),)), Sample(((2, 3, 4),))]),
    crow("mH", lambda lib, z: z.mH, [Sample(((3, 4),)), Sample(((2, 3, 4),))]),
    crow("H", lambda lib, z: z.H, [Sample(((3, 4),))]),
    OpInfo("complex", lambda lib, x, y: lib.complex(x, y), PAIRS + [Sample(((3, 1), (4,)))],
           dtypes=REAL, gradcheck=False),
    OpInfo("polar", lambda lib, x, y: lib.polar(x, y), PAIRS, dtypes=REAL, gradcheck=False,
           make_input=lambda rng, shape, dtype, i: rng.uniform(-2, 2, size=shape)),

    # ---- arithmetic on complex dtypes ----------------------------------------------------
    crow("add", lambda lib, a, b: a + b, BINARY),
    crow("add_alpha", lambda lib, a, b: lib.add(a, b, alpha=2), BINARY[:2]),
    crow("sub", lambda lib, a, b: a - b, BINARY),
    crow("mul", lambda lib, a, b: a * b, BINARY, dtypes=CF),
    crow("div", lambda lib, a, b: a / b, BINARY, make_input=away_from_zero, dtypes=CF),
    crow("mul_complex_scalar", lambda lib, a: a * (1.5 - 2j)),
    crow("div_complex_scalar", lambda lib, a: (2 - 1j) / a, make_input=away_from_zero),
    crow("mul_real_part", lambda lib, a, b: a * b.real, BINARY[:2]),
    crow("neg", lambda lib, a: -a),
    crow("exp", lambda lib, a: a.exp()),
    crow("log", lambda lib, a: a.log(), make_input=away_from_zero),
    crow("sqrt", lambda lib, a: a.sqrt(), make_input=away_from_zero),
    crow("sin", lambda lib, a: a.sin()),
    crow("tanh", lambda lib, a: a.tanh(), make_input=away_from_zero),
    crow("reciprocal", lambda lib, a: a.reciprocal(), make_input=away_from_zero),
    crow("pow_scalar", lambda lib, a: a ** 3),
    crow("pow_tensor", lambda lib, a, b: a ** b, BINARY[:1], make_input=away_from_zero),
    crow("square", lambda lib, a: a.square()),
    crow("sum", lambda lib, a: a.sum()),
    crow("sum_dim", lambda lib, a: a.sum(dim=-1, keepdim=True)),
    crow("mean", lambda lib, a: a.mean(), UNARY[:3]),
    crow("mean_dim", lambda lib, a: a.mean(dim=0)),
    crow("reshape", lambda lib, a: a.reshape(-1)),
    crow("transpose", lambda lib, a: a.transpose(0, -1), UNARY[:2]),
    crow("getitem", lambda lib, a: a[1:, ::2], UNARY[:2]),
    crow("matmul", lambda lib, a, b: a @ b, MATMUL, dtypes=CF),
    crow("vdot", lambda lib, a, b: lib.vdot(a, b), [Sample(((4,), (4,)))]),
    crow("where", lambda lib, a, b: lib.where(a.real > 0, a, b), BINARY[:1]),

    # ---- real inputs through complex intermediates: gradcheck in float64 -------------------
    real_row("gc_complex_exp", lambda lib, x, y: r(lib, c(lib, x, y).exp()), PAIRS[:3]),
    real_row("gc_abs", lambda lib, x, y: c(lib, x, y).abs(), PAIRS[:3],
             make_input=lambda rng, shape, dtype, i: rng.uniform(0.5, 2, size=shape)),
    real_row("gc_angle", lambda lib, x, y: c(lib, x, y).angle(), PAIRS[:3],
             make_input=lambda rng, shape, dtype, i: rng.uniform(0.5, 2, size=shape)),
    real_row("gc_polar", lambda lib, x, y: r(lib, lib.polar(x, y)), PAIRS[:3],
             make_input=lambda rng, shape, dtype, i: rng.uniform(0.5, 2, size=shape)),
    real_row("gc_mul_div", lambda lib, a, b, x, y: r(lib, c(lib, a, b) * c(lib, x, y).conj()
                                                     / (c(lib, a, y) + 3)), QUADS,
             make_input=positive),
    real_row("gc_matmul", lambda lib, a, b, x, y: r(lib, c(lib, a, b) @ c(lib, x, y).mT),
             QUADS),
    real_row("gc_log_pow", lambda lib, x, y: r(lib, c(lib, x, y).log() * c(lib, x, y) ** 2.5),
             PAIRS[:3], make_input=positive),
    real_row("gc_imag_real", lambda lib, x, y: c(lib, x, y).imag * c(lib, y, x).real
             + (c(lib, x, y) * 1j).real, PAIRS[:3]),
    real_row("gc_view_as_complex", lambda lib, x: r(lib, lib.view_as_complex(x).tanh()),
             [Sample(((3, 2),)), Sample(((2, 2, 2),))], make_input=positive),
    real_row("gc_complex_to_real_mul", lambda lib, x, y: r(lib, c(lib, x, y) * x), PAIRS[:3]),
    real_row("gc_sum_mean", lambda lib, x, y: r(lib, c(lib, x, y).sum(0) + c(lib, y, x).mean()),
             PAIRS[:2]),
]
