"""Rows for element-wise ops."""
from .core import OpInfo, Sample, standard_samples, FLOAT_DTYPES, ALL_DTYPES

UNARY_SHAPES = [((3, 4),), ((),), ((0, 3),)]
BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3)), ((0, 3), (3,))]

OPS = [
    OpInfo("exp", lambda lib, x: lib.exp(x), standard_samples(*UNARY_SHAPES), gradgrad=True),
    OpInfo("tanh", lambda lib, x: x.tanh(), standard_samples(*UNARY_SHAPES), gradgrad=True),
    OpInfo("add", lambda lib, x, y: x + y, standard_samples(*BINARY_SHAPES), dtypes=ALL_DTYPES[:-1],
           gradgrad=True),
    OpInfo("mul", lambda lib, x, y: lib.mul(x, y), standard_samples(*BINARY_SHAPES),
           dtypes=ALL_DTYPES, gradgrad=True),
    OpInfo("div", lambda lib, x, y: x / y, standard_samples(*BINARY_SHAPES), gradgrad=True,
           domain=(0.5, 2.0)),
]
