"""Rows for ``ember.special`` and the top-level gamma-family functions.

Domains keep inputs away from poles (lgamma/digamma/polygamma at the non-positive integers) and
outside the arguments where torch's own float32 kernels lose digits; the float64 agreement to
1e-10 is checked separately in tests/test_special.py.
"""
import numpy as np

from .core import OpInfo, Sample, standard_samples, make_array, ALL_DTYPES

SHAPES = [((3, 4),), ((),), ((0, 3),), ((2, 3, 2),)]
UNARY = standard_samples(*SHAPES)
BINARY = standard_samples(((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3)), ((0, 3), (3,)))
FEW_DTYPES = ("float32", "float64", "bfloat16", "int64", "bool")
REAL = ("float32", "float64")
# The main row of each function runs every dtype; variants (methods, aliases, in-place) two.
# In-place rows skip the empty shape: ember's in-place writer refuses a (0, 3) target today
# (its zero strides look like an expanded tensor), a bug outside this family.
INPLACE_SAMPLES = standard_samples(((3, 4),), ((),), ((2, 3, 2),))


def _uniform(lo, hi):
    def make(rng, shape, dtype, index):
        return make_array(rng, shape, dtype, (lo, hi))
    return make


def _negative_non_integers(rng, shape, dtype, index):
    # Between -3.9 and -0.1, at least 0.1 from an integer.
    whole = rng.integers(-4, 0, size=shape)
    return whole + rng.uniform(0.1, 0.9, size=shape)


def _with_zeros(lo, hi):
    def make(rng, shape, dtype, index):
        arr = make_array(rng, shape, dtype, (lo, hi))
        if isinstance(arr, np.ndarray) and arr.size:
            arr.reshape(-1)[:: 3] = 0
        return arr
    return make


def unary(name, fn, dtypes=("float32", "float64"), samples=UNARY, **kwargs):
    return OpInfo(name, fn, samples, dtypes=dtypes, **kwargs)


def _positive(rng, shape, dtype, index):
    """igamma's a (index 0) in (0.1, 12] and x (index 1) in (0.05, 25]: both branches
    (series for x < a + 1, continued fraction beyond) are reached."""
    if index == 0:
        return rng.uniform(0.1, 12.0, size=shape)
    return rng.uniform(0.05, 25.0, size=shape)


def _igamma_edges(rng, shape, dtype, index):
    a = np.array([0.0, 1.0, -1.0, 2.0, np.inf, 0.0, 3.0, np.nan, 0.5, 50.0, 200.0, 1e-3])
    x = np.array([1.0, 0.0, 1.0, np.inf, 2.0, 0.0, 1e-8, 1.0, 60.0, 49.0, 210.0, 1e-3])
    return a if index == 0 else x


OPS = [
    # ---- gamma family -------------------------------------------------------------------------
    unary("lgamma", lambda lib, x: lib.lgamma(x), dtypes=ALL_DTYPES, domain=(0.1, 6.0),
          gradgrad=True),
    unary("lgamma_method", lambda lib, x: x.lgamma(), dtypes=FEW_DTYPES, domain=(0.1, 6.0)),
    unary("lgamma_negative", lambda lib, x: lib.lgamma(x), make_input=_negative_non_integers,
          tol={"float32": (1e-4, 1e-5)}),
    unary("gammaln", lambda lib, x: lib.special.gammaln(x), domain=(0.1, 30.0)),
    unary("lgamma_inplace", lambda lib, x: x.clone().lgamma_(), domain=(0.1, 6.0),
          samples=INPLACE_SAMPLES),
    unary("digamma", lambda lib, x: lib.digamma(x), dtypes=ALL_DTYPES, domain=(0.2, 6.0),
          gradgrad=True),
    unary("digamma_method", lambda lib, x: x.digamma(), dtypes=FEW_DTYPES, domain=(0.2, 6.0)),
    unary("digamma_negative", lambda lib, x: lib.special.digamma(x),
          make_input=_negative_non_integers, tol={"float32": (1e-4, 1e-4)}),
    unary("psi", lambda lib, x: lib.special.psi(x), domain=(0.2, 30.0)),
    unary("digamma_inplace", lambda lib, x: x.clone().digamma_(), domain=(0.2, 6.0),
          samples=INPLACE_SAMPLES),
    unary("polygamma_1", lambda lib, x: lib.polygamma(1, x), dtypes=ALL_DTYPES,
          domain=(0.3, 6.0), gradgrad=True),
    unary("polygamma_2", lambda lib, x: lib.special.polygamma(2, x), domain=(0.3, 6.0)),
    unary("polygamma_3_method", lambda lib, x: x.polygamma(3), domain=(0.3, 6.0),
          tol={"float32": (1e-4, 1e-4)}),
    unary("polygamma_0", lambda lib, x: lib.polygamma(0, x), domain=(0.3, 6.0)),
    unary("polygamma_inplace", lambda lib, x: x.clone().polygamma_(2), domain=(0.3, 6.0),
          samples=INPLACE_SAMPLES),
    unary("mvlgamma", lambda lib, x: lib.mvlgamma(x, 3), domain=(1.2, 5.0), gradgrad=True),
    unary("mvlgamma_method", lambda lib, x: x.mvlgamma(p=1), dtypes=FEW_DTYPES,
          domain=(1.2, 5.0)),
    unary("multigammaln", lambda lib, x: lib.special.multigammaln(x, 4), domain=(1.6, 5.0)),
    unary("mvlgamma_inplace", lambda lib, x: x.clone().mvlgamma_(2), domain=(0.6, 5.0),
          samples=INPLACE_SAMPLES),
    # ---- Bessel -------------------------------------------------------------------------------
    unary("i0", lambda lib, x: lib.i0(x), dtypes=ALL_DTYPES, domain=(-25.0, 25.0),
          gradgrad=True),
    unary("i0_method", lambda lib, x: x.i0(), domain=(-3.0, 3.0)),
    unary("i0_inplace", lambda lib, x: x.clone().i0_(), domain=(-3.0, 3.0),
          samples=INPLACE_SAMPLES),
    unary("special_i0", lambda lib, x: lib.special.i0(x), domain=(-3.0, 3.0)),
    unary("i0e", lambda lib, x: lib.special.i0e(x), dtypes=("float32", "float64"),
          domain=(-30.0, 30.0)),
    unary("i1", lambda lib, x: lib.special.i1(x), dtypes=("float32", "float64"),
          domain=(-30.0, 30.0)),
    unary("i1_at_zero", lambda lib, x: lib.special.i1(x), dtypes=("float32", "float64"),
          make_input=_with_zeros(-3.0, 3.0), gradcheck=False),
    unary("i1e", lambda lib, x: lib.special.i1e(x), dtypes=("float32", "float64"),
          domain=(-30.0, 30.0)),
    # ---- the normal distribution --------------------------------------------------------------
    unary("ndtr", lambda lib, x: lib.special.ndtr(x), dtypes=ALL_DTYPES, domain=(-4.0, 4.0)),
    # Below -10 torch's float32 gradient, exp(-x^2/2 - log_ndtr(x)), cancels to a few digits;
    # the far tail is compared in float64 in tests/test_special.py.
    unary("log_ndtr", lambda lib, x: lib.special.log_ndtr(x), dtypes=("float32", "float64"),
          domain=(-10.0, 6.0)),
    unary("log_ndtr_tail", lambda lib, x: lib.special.log_ndtr(x), dtypes=("float64",),
          domain=(-40.0, -5.0)),
    unary("ndtri", lambda lib, x: lib.special.ndtri(x), dtypes=("float32", "float64"),
          domain=(0.02, 0.98)),
    unary("erfcx", lambda lib, x: lib.special.erfcx(x), domain=(-3.0, 30.0), gradgrad=True),
    unary("erf", lambda lib, x: lib.special.erf(x)),
    unary("erfc", lambda lib, x: lib.special.erfc(x)),
    unary("erfinv", lambda lib, x: lib.special.erfinv(x), domain=(-0.9, 0.9)),
    # ---- the rest -----------------------------------------------------------------------------
    unary("sinc", lambda lib, x: lib.sinc(x), dtypes=ALL_DTYPES, gradgrad=True),
    unary("sinc_at_zero", lambda lib, x: lib.special.sinc(x), make_input=_with_zeros(-2.0, 2.0),
          gradcheck=False),
    unary("sinc_method", lambda lib, x: x.sinc()),
    unary("sinc_inplace", lambda lib, x: x.clone().sinc_(),
          samples=INPLACE_SAMPLES),
    unary("entr", lambda lib, x: lib.special.entr(x), dtypes=ALL_DTYPES, domain=(0.05, 3.0)),
    unary("entr_zeros_and_negatives", lambda lib, x: lib.special.entr(x),
          make_input=_with_zeros(-1.0, 1.0), gradcheck=False, grad=False),
    unary("expit", lambda lib, x: lib.special.expit(x)),
    unary("logit", lambda lib, x: lib.special.logit(x), domain=(0.05, 0.95)),
    unary("logit_eps", lambda lib, x: lib.special.logit(x, eps=0.1), domain=(0.2, 0.8)),
    unary("exp2", lambda lib, x: lib.special.exp2(x)),
    unary("expm1", lambda lib, x: lib.special.expm1(x)),
    unary("log1p", lambda lib, x: lib.special.log1p(x), domain=(-0.5, 2.0)),
    OpInfo("xlog1py", lambda lib, x, y: lib.special.xlog1py(x, y), BINARY,
           dtypes=ALL_DTYPES, make_input=lambda rng, shape, dtype, i: make_array(
               rng, shape, dtype, (-2.0, 2.0) if i == 0 else (-0.8, 2.0))),
    OpInfo("xlog1py_zeros", lambda lib, x, y: lib.special.xlog1py(x, y), BINARY[:2],
           make_input=lambda rng, shape, dtype, i: (
               _with_zeros(-2.0, 2.0)(rng, shape, dtype, i) if i == 0
               else make_array(rng, shape, dtype, (-0.8, 2.0))), gradcheck=False),
    unary("xlog1py_scalar_other", lambda lib, x: lib.special.xlog1py(x, 2.5)),
    unary("xlog1py_scalar_self", lambda lib, x: lib.special.xlog1py(3.0, x), domain=(-0.5, 2.0)),
    OpInfo("xlogy", lambda lib, x, y: lib.special.xlogy(x, y), BINARY[:2],
           make_input=lambda rng, shape, dtype, i: make_array(
               rng, shape, dtype, (-2.0, 2.0) if i == 0 else (0.2, 2.0))),
    unary("logsumexp", lambda lib, x: lib.special.logsumexp(x, 1), samples=[
        *standard_samples(((3, 4),), ((2, 3, 4),))]),
    unary("softmax", lambda lib, x: lib.special.softmax(x, -1), samples=standard_samples(
        ((3, 4),), ((2, 3, 4),))),
    unary("log_softmax", lambda lib, x: lib.special.log_softmax(x, 0, dtype=lib.float64),
          samples=standard_samples(((3, 4),), ((2, 3, 4),))),
    # ---- igamma, igammac ------------------------------------------------------------------------
    OpInfo("igamma", lambda lib, a, x: lib.igamma(a, x),
           standard_samples(((3, 4), (3, 4)), ((3, 4), (4,)), ((), ()), ((0,), (0,))),
           dtypes=REAL, make_input=_positive, grad_inputs=(1,)),
    OpInfo("igammac", lambda lib, a, x: a.igammac(x),
           standard_samples(((3, 4), (3, 4)), ((40,), (40,))),
           dtypes=REAL, make_input=_positive, grad_inputs=(1,)),
    OpInfo("igamma_edges", lambda lib, a, x: (lib.igamma(a, x), lib.igammac(a, x)),
           [Sample(((12,), (12,)))], dtypes=REAL, make_input=_igamma_edges, grad=False,
           gradcheck=False),
    OpInfo("igamma_", lambda lib, a, x: (a * 1).igamma_(x), [Sample(((3, 4), (4,)))],
           dtypes=REAL, make_input=_positive, grad_inputs=(1,)),
    # PyTorch refuses integer inputs: Ember must raise the same exception type.
    OpInfo("igamma_ints", lambda lib, a, x: lib.igamma(a, x), [Sample(((3,), (3,)))],
           dtypes=("int64",), grad=False, gradcheck=False),
]
