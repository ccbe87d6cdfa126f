"""Batching rules of the element-wise family (arithmetic, comparisons, unary maths, the
activations, casts): the batched operands' examples are padded to a common rank after the
batch dim, so broadcasting lines the examples up and the batch stays in front; one op call."""
import types

from ..ops import activation as _activation
from ..ops import elementwise as _elementwise
from .vmap import RULES, align, inplace_error, unwrap, wrap_outputs

# Element-wise functions whose result is not an element-wise tensor (a Python bool), or that
# hold a per-channel weight: they go to their own rules or the fallback.
_NOT_ELEMENTWISE = {"allclose", "equal", "broadcast_error", "glu", "prelu", "prelu_kernel",
                    "rrelu_with_noise", "fill"}

_EXTRA = ("clone contiguous detach float double half bfloat16 long int short char byte bool "
          "cfloat cdouble to type_as cpu cuda conj conj_physical resolve_conj resolve_neg "
          "positive digamma lgamma i0 sinc erfinv polygamma mvlgamma igamma igammac "
          "masked_fill nan_to_num angle logit xlogy special_xlog1py hardsigmoid hardswish "
          "type zeros_like ones_like empty_like full_like relu sigmoid tanh silu gelu mish "
          "softplus elu selu celu leaky_relu hardtanh relu6 logsigmoid softsign tanhshrink "
          "hardshrink softshrink threshold sign sgn").split()

_DUNDERS = ("add sub mul truediv floordiv mod pow and or xor lshift rshift eq ne lt le gt ge "
            "radd rsub rmul rtruediv rfloordiv rmod rpow rand ror rxor rlshift rrshift "
            "neg pos abs invert").split()
_INPLACE_DUNDERS = "iadd isub imul itruediv ifloordiv imod ipow iand ior ixor".split()


def elementwise(op, level, args, kwargs, name):
    args, kwargs = align(level, args, kwargs)
    return wrap_outputs(op(*args, **kwargs), level)


def inplace(op, level, args, kwargs, name):
    """``self`` is written in place: only possible when ``self`` is batched itself."""
    self = args[0]
    _, batched = unwrap(self, level)
    if not batched:
        raise inplace_error()
    args, kwargs = align(level, args, kwargs)
    op(*args, **kwargs)
    return self


def _names(module):
    return [k for k, v in vars(module).items()
            if not k.startswith("_") and isinstance(v, types.FunctionType)
            and v.__module__ == module.__name__ and k not in _NOT_ELEMENTWISE]


_OUT_OF_PLACE = set(_names(_elementwise)) | set(_names(_activation)) | set(_EXTRA)
for _n in _OUT_OF_PLACE:
    if _n.endswith("_"):
        RULES[_n] = inplace
    else:
        RULES[_n] = elementwise
        RULES[_n + "_"] = inplace
for _n in ("zero_", "fill_", "copy_", "clamp_", "masked_fill_"):
    RULES[_n] = inplace
for _n in _DUNDERS:
    RULES[f"__{_n}__"] = elementwise
for _n in _INPLACE_DUNDERS:
    RULES[f"__{_n}__"] = inplace
