"""Hugging Face's activation names (``hidden_act`` / ``activation_function`` in config.json)
mapped to Ember's functions; ``gelu`` is the exact (erf) GELU, ``gelu_new`` the tanh one."""
from functools import partial

from ...nn import functional as F

ACT2FN = {
    "gelu": F.gelu,
    "gelu_new": partial(F.gelu, approximate="tanh"),
    "gelu_pytorch_tanh": partial(F.gelu, approximate="tanh"),
    "gelu_fast": partial(F.gelu, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": F.tanh,
    "sigmoid": F.sigmoid,
    "quick_gelu": lambda x: x * F.sigmoid(1.702 * x),
}


def get_activation(name):
    try:
        return ACT2FN[name]
    except KeyError:
        raise KeyError(f"activation {name!r} is not one Ember's text models know; choose one of "
                       f"{sorted(ACT2FN)}") from None
