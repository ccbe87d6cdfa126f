"""``ember.special``, as ``torch.special``: the special functions under their SciPy-style names.

The maths lives in ``ember/ops/special.py`` (see its docstring for the formulations); this
namespace adds the aliases (``gammaln`` for ``lgamma``, ``expit`` for ``sigmoid``, ``psi`` for
``digamma`` ...) and re-exports the functions that already exist at the top level.
"""
from .ops import special as _special
from .ops import elementwise as _elementwise
from .ops import reduce as _reduce

__all__ = ["erf", "erfc", "erfinv", "expit", "logit", "xlogy", "xlog1py", "gammaln", "digamma",
           "psi", "polygamma", "multigammaln", "i0", "i0e", "i1", "i1e", "log_ndtr", "ndtr",
           "ndtri", "erfcx", "sinc", "entr", "logsumexp", "softmax", "log_softmax", "exp2", "expm1",
           "log1p", "round", "gammainc", "gammaincc", "modified_bessel_i0", "modified_bessel_i1"]

erf = _elementwise.erf
erfc = _elementwise.erfc
erfinv = _elementwise.erfinv
expit = _elementwise.sigmoid
logit = _elementwise.logit
xlogy = _elementwise.xlogy
exp2 = _elementwise.exp2
expm1 = _elementwise.expm1
log1p = _elementwise.log1p
round = _elementwise.round

xlog1py = _special.xlog1py
gammaln = _special.lgamma
digamma = psi = _special.digamma
polygamma = _special.polygamma
multigammaln = _special.multigammaln
i0 = _special.i0
i0e = _special.i0e
i1 = _special.i1
i1e = _special.i1e
log_ndtr = _special.log_ndtr
ndtr = _special.ndtr
ndtri = _special.ndtri
erfcx = _special.erfcx
sinc = _special.sinc
entr = _special.entr
# The regularized incomplete gamma functions are torch.igamma/igammac under SciPy's names, and
# torch's modified Bessel functions of the first kind are i0/i1.
modified_bessel_i0 = _special.i0
modified_bessel_i1 = _special.i1


def gammainc(input, other):
    return _special.igamma(input, other)


def gammaincc(input, other):
    return _special.igammac(input, other)


def logsumexp(input, dim, keepdim=False):
    return _reduce.logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    return _reduce.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    return _reduce.log_softmax(input, dim, dtype)
