"""Rows for matrix products: matmul in every rank combination, the fixed-rank variants, the
fused add-products, einsum and tensordot. Inputs torch refuses live in ``*_errors`` rows (forward
only), where Ember must raise the same exception type."""
from .core import OpInfo, Sample, standard_samples, FLOAT_DTYPES

INT_AND_FLOAT = ("float32", "float64", "float16", "bfloat16", "int64", "int32")
# For the rows of kron.
F32_64 = ("float32", "float64")
FEW_DTYPES = ("float32", "float64", "bfloat16", "int64", "int32", "uint8", "bool")


def _errors(name, fn, *shape_sets, dtypes=("float32",)):
    return OpInfo(name, fn, [Sample(s) for s in shape_sets], dtypes=dtypes, grad=False,
                  gradcheck=False)


def _int_second_operand(rng, shape, dtype, index):
    """Float first operand, int64 second: a dtype mismatch the products must refuse."""
    if index == 1:
        return rng.integers(-3, 4, size=shape)
    return rng.uniform(-2, 2, size=shape)


def _dtype_mismatch(name, fn, *shape_sets):
    return OpInfo(name, fn, [Sample(s) for s in shape_sets], dtypes=("float32", "float64"),
                  grad=False, gradcheck=False, make_input=_int_second_operand)


def _matmul(lib, a, b):
    return lib.matmul(a, b)


def _addmm(lib, c, a, b, **kw):
    return lib.addmm(c, a, b, **kw)


def _baddbmm(lib, c, a, b, **kw):
    return lib.baddbmm(c, a, b, **kw)


def _tensordot(lib, a, b, **kw):
    return lib.tensordot(a, b, **kw)


OPS = [
    OpInfo("matmul", _matmul, standard_samples(
        ((4,), (4,)),                 # dot
        ((3, 4), (4,)),               # matrix-vector
        ((4,), (4, 5)),               # vector-matrix
        ((3, 4), (4, 5)),             # matrix-matrix
        ((2, 3, 4), (4, 5)),          # batch x matrix
        ((4,), (2, 4, 5)),            # vector x batch
        ((2, 3, 4), (4,)),            # batch x vector
        ((2, 1, 3, 4), (5, 4, 2)),    # broadcast batch dims
        ((3, 0), (0, 5)),             # empty K: zeros
        ((0, 4), (4, 2))),            # empty M
        dtypes=INT_AND_FLOAT, gradgrad=True),
    _errors("matmul_errors", _matmul, ((3, 4), (5, 6)), ((4,), (5,)), ((), (4,)), ((3, 4), (5,)),
            ((2, 3, 4), (3, 4, 5)), ((4,), (5, 2)), ((2, 3, 4), (2, 5, 6)), ((3, 4), (2, 5, 6)),
            ((2, 3, 4), (5,)), ((2, 1, 3, 4), (3, 5, 6))),
    _errors("matmul_bool", _matmul, ((3, 4), (4, 2)), ((4,), (4,)), dtypes=("bool",)),
    _dtype_mismatch("matmul_dtype_mismatch", _matmul, ((3, 4), (4, 5)), ((4,), (4,)),
                    ((3, 4), (4,)), ((2, 3, 4), (4, 5))),
    _dtype_mismatch("mm_dtype_mismatch", lambda lib, a, b: lib.mm(a, b), ((3, 4), (4, 5))),
    _dtype_mismatch("bmm_dtype_mismatch", lambda lib, a, b: lib.bmm(a, b), ((2, 3, 4), (2, 4, 5))),
    _dtype_mismatch("dot_dtype_mismatch", lambda lib, a, b: lib.dot(a, b), ((4,), (4,))),
    _dtype_mismatch("addmm_dtype_mismatch", _addmm, ((3, 5), (3, 4), (4, 5))),
    _dtype_mismatch("einsum_dtype_mismatch", lambda lib, a, b: lib.einsum("ij,jk", a, b),
                    ((3, 4), (4, 5))),
    OpInfo("matmul_operator", lambda lib, a, b: a @ b,
           standard_samples(((2, 3, 4), (2, 4, 5)), ((4,), (4, 2))), gradgrad=True),
    OpInfo("mm", lambda lib, a, b: lib.mm(a, b),
           standard_samples(((3, 4), (4, 5)), ((3, 0), (0, 2))),
           dtypes=INT_AND_FLOAT, gradgrad=True),
    _errors("mm_errors", lambda lib, a, b: lib.mm(a, b), ((3, 4), (3, 4)), ((3,), (3, 4)),
            ((3, 4), (4,))),
    OpInfo("bmm", lambda lib, a, b: a.bmm(b), standard_samples(((2, 3, 4), (2, 4, 5))),
           gradgrad=True),
    _errors("bmm_errors", lambda lib, a, b: a.bmm(b), ((2, 3, 4), (3, 4, 5)),
            ((2, 3, 4), (2, 3, 4)), ((3, 4), (4, 5))),
    OpInfo("mv", lambda lib, a, b: lib.mv(a, b), standard_samples(((3, 4), (4,)), ((0, 4), (4,))),
           gradgrad=True),
    _errors("mv_errors", lambda lib, a, b: lib.mv(a, b), ((3, 4), (3,)), ((3, 4), (4, 1))),
    OpInfo("dot", lambda lib, a, b: lib.dot(a, b), standard_samples(((5,), (5,)), ((0,), (0,))),
           dtypes=INT_AND_FLOAT, gradgrad=True),
    _errors("dot_errors", lambda lib, a, b: lib.dot(a, b), ((5,), (4,)), ((2, 2), (2, 2))),
    _errors("dot_bool", lambda lib, a, b: lib.dot(a, b), ((5,), (5,)), dtypes=("bool",)),
    OpInfo("outer", lambda lib, a, b: lib.outer(a, b), standard_samples(((3,), (4,)), ((0,), (2,))),
           dtypes=INT_AND_FLOAT, gradgrad=True),
    _errors("outer_errors", lambda lib, a, b: lib.outer(a, b), ((3, 2), (4,)), ((3,), (4, 1))),
    OpInfo("addmm", _addmm,
           [Sample(((3, 5), (3, 4), (4, 5))),
            Sample(((5,), (3, 4), (4, 5)), {"beta": 0.5, "alpha": 2.0}),
            Sample(((3, 5), (3, 4), (4, 5)), {"beta": 0}),
            Sample(((1, 5), (3, 4), (4, 5)), {"beta": 0, "alpha": -1.5}, noncontig=True),
            Sample(((3, 1), (3, 0), (0, 5)), {"beta": 2})],
           gradgrad=True),
    OpInfo("addmm_method", lambda lib, c, a, b: c.addmm(a, b, beta=2, alpha=3),
           [Sample(((3, 5), (3, 4), (4, 5)))], dtypes=INT_AND_FLOAT),
    _errors("addmm_errors", _addmm, ((3, 5), (3, 4), (5, 5)), ((4, 5), (3, 4), (4, 5)),
            ((3, 5), (4,), (4, 5))),
    OpInfo("baddbmm", _baddbmm,
           [Sample(((2, 3, 5), (2, 3, 4), (2, 4, 5))),
            Sample(((3, 5), (2, 3, 4), (2, 4, 5)), {"beta": 0.25, "alpha": 3.0}),
            Sample(((2, 3, 5), (2, 3, 4), (2, 4, 5)), {"beta": 0}, noncontig=True)],
           gradgrad=True),
    _errors("baddbmm_errors", _baddbmm, ((2, 3, 5), (2, 3, 4), (2, 5, 5)),
            ((2, 3, 5), (3, 4), (4, 5))),
    OpInfo("einsum_mm", lambda lib, a, b: lib.einsum("ij,jk->ik", a, b),
           standard_samples(((3, 4), (4, 5))), dtypes=INT_AND_FLOAT, gradgrad=True),
    OpInfo("einsum_batch", lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b),
           standard_samples(((2, 3, 4), (2, 4, 5))), gradgrad=True),
    OpInfo("einsum_trace", lambda lib, a: lib.einsum("ii", a), standard_samples(((4, 4),)),
           gradgrad=True),
    OpInfo("einsum_diagonal", lambda lib, a: lib.einsum("ii->i", a), standard_samples(((4, 4),))),
    OpInfo("einsum_outer", lambda lib, a, b: lib.einsum("i,j->ij", a, b),
           standard_samples(((3,), (4,)))),
    OpInfo("einsum_ellipsis", lambda lib, a, b: lib.einsum("...ij,...jk->...ik", a, b),
           standard_samples(((2, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)), ((3, 4), (4, 5)),
                            ((2, 1, 3, 4), (5, 4, 2)))),
    OpInfo("einsum_ellipsis_summed", lambda lib, a: lib.einsum("...ij->ij", a),
           standard_samples(((2, 3, 4),))),
    OpInfo("einsum_implicit", lambda lib, a, b: lib.einsum("ba,ac", a, b),
           standard_samples(((3, 4), (4, 5)))),
    OpInfo("einsum_implicit_case", lambda lib, a, b: lib.einsum("bA,Ac", a, b),
           standard_samples(((3, 4), (4, 5)))),
    OpInfo("einsum_transpose", lambda lib, a: lib.einsum("ij->ji", a), standard_samples(((3, 4),))),
    OpInfo("einsum_sum", lambda lib, a: lib.einsum("ij->", a), standard_samples(((3, 4),))),
    OpInfo("einsum_broadcast", lambda lib, a, b: lib.einsum("ij,jk->ik", a, b),
           standard_samples(((3, 1), (4, 6)), ((3, 4), (1, 6)))),
    OpInfo("einsum_three", lambda lib, a, b, c: lib.einsum("ij,jk,kl->il", a, b, c),
           standard_samples(((2, 3), (3, 4), (4, 5))), gradgrad=True),
    OpInfo("einsum_three_shared", lambda lib, a, b, c: lib.einsum("bi,bj,bk->bij", a, b, c),
           standard_samples(((2, 3), (2, 4), (2, 5)))),
    OpInfo("einsum_list_operands", lambda lib, a, b: lib.einsum("i,i->", [a, b]),
           standard_samples(((5,), (5,)))),
    _errors("einsum_errors", lambda lib, a, b: lib.einsum("ij,jk->ik", a, b),
            ((3, 4), (5, 6)), ((3, 4, 1), (4, 6))),
    _errors("einsum_bad_output", lambda lib, a, b: lib.einsum("ij,jk->iz", a, b),
            ((3, 4), (4, 6))),
    _errors("einsum_too_few", lambda lib, a: lib.einsum("ij,jk", a), ((3, 4),)),
    _errors("einsum_repeated_mismatch", lambda lib, a: lib.einsum("ii", a), ((3, 4),)),
    _errors("einsum_ellipsis_mismatch", lambda lib, a, b: lib.einsum("...ij,...jk", a, b),
            ((2, 3, 4), (3, 4, 5))),
    OpInfo("tensordot_int", _tensordot,
           [Sample(((2, 3, 4), (3, 4, 5))), Sample(((2, 3, 4), (4, 5)), {"dims": 1}),
            Sample(((2, 3), (4, 5)), {"dims": 0}),
            Sample(((2, 3, 4), (3, 4, 5)), {"dims": 2}, noncontig=True)],
           gradgrad=True),
    OpInfo("tensordot_pairs", _tensordot,
           [Sample(((2, 3, 4), (4, 3, 5)), {"dims": ([1, 2], [1, 0])}),
            Sample(((2, 3, 4), (5, 2)), {"dims": ([0], [1])}),
            Sample(((2, 3, 4), (5, 2)), {"dims": ([-3], [-1])})]),
    OpInfo("tensordot_errors", _tensordot,
           [Sample(((2, 3, 4), (5, 2)), {"dims": ([1], [1])}),
            Sample(((2, 3), (4, 5)), {"dims": -1})],
           grad=False, gradcheck=False),
    # ---- the Kronecker product ------------------------------------------------------------------
    OpInfo("kron", lambda lib, a, b: lib.kron(a, b),
           standard_samples(((2, 3), (3, 2)), ((2,), (3, 4)), ((), (3,)), ((2, 1, 2), (3, 2)),
                            ((0, 2), (2, 2))),
           dtypes=FEW_DTYPES, gradgrad=True),
    OpInfo("kron_method_mixed", lambda lib, a, b: a.kron(b.to(lib.int64)),
           [Sample(((2, 2), (2, 3)))], dtypes=F32_64, grad_inputs=(0,)),
    # ---- addr --------------------------------------------------------------------------------
    OpInfo("addr", lambda lib, m, u, v: lib.addr(m, u, v, beta=0.5, alpha=-2),
           standard_samples(((3, 4), (3,), (4,)), ((4,), (3,), (4,)), ((), (3,), (4,)),
                            ((0, 4), (0,), (4,))),
           dtypes=FLOAT_DTYPES, gradgrad=True),
    OpInfo("addr_default", lambda lib, m, u, v: m.addr(u, v), [Sample(((3, 4), (3,), (4,)))],
           dtypes=FEW_DTYPES),
    # m / 0 has infinite derivatives: compared with PyTorch's gradient, not gradchecked.
    OpInfo("addr_beta0_nan", lambda lib, m, u, v: lib.addr(m / 0, u, v, beta=0),
           [Sample(((3, 4), (3,), (4,)))], dtypes=F32_64, gradcheck=False),
    OpInfo("addr_", lambda lib, m, u, v: (m * 1).addr_(u, v, alpha=3),
           [Sample(((3, 4), (3,), (4,)))], dtypes=F32_64),
    _errors("addr_matrix_vec", lambda lib, m, u, v: lib.addr(m, u, v), ((3, 4), (3, 1), (4,))),
    _errors("addr_bad_input", lambda lib, m, u, v: lib.addr(m, u, v), ((3, 5), (3,), (4,))),
]
