"""ember.return_types against torch.return_types: the same classes, fields, constructors,
reprs and pickling, and the ops return them."""
import pickle

import pytest
import torch

import ember


def _public(module):
    return sorted(n for n in module.__all__ if n not in ("pytree_register_structseq",))


def test_names_and_fields_match_torch():
    assert _public(ember.return_types) == _public(torch.return_types)
    assert len(ember.return_types.all_return_types) == len(torch.return_types.all_return_types)
    for name in _public(ember.return_types):
        if name == "all_return_types":
            continue
        t_cls, e_cls = getattr(torch.return_types, name), getattr(ember.return_types, name)
        n = t_cls.n_fields
        t_res, e_res = t_cls(tuple(range(n))), e_cls(tuple(range(n)))
        assert e_res.n_fields == n and e_res.n_sequence_fields == t_res.n_sequence_fields
        assert e_res.n_unnamed_fields == t_res.n_unnamed_fields
        assert repr(e_res) == repr(t_res).replace("torch", "ember")
        assert tuple(e_res) == tuple(t_res) and e_res == t_res
        assert e_cls.__name__ == name and e_cls.__module__ == "ember.return_types"
        assert isinstance(e_res, tuple)


def test_constructor_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(TypeError) as error:
            lib.return_types.max((1, 2, 3))
        assert str(error.value) == (f"{lib.__name__}.return_types.max() takes a 2-sequence "
                                    "(3-sequence given)")
        with pytest.raises(TypeError, match="constructor requires a sequence"):
            lib.return_types.max(1, 2)
    assert ember.return_types.max([1, 2]).indices == torch.return_types.max([1, 2]).indices


OPS = [
    ("max", lambda lib, x: x.max(0)), ("min", lambda lib, x: lib.min(x, 1)),
    ("sort", lambda lib, x: x.sort()), ("topk", lambda lib, x: x.topk(1)),
    ("kthvalue", lambda lib, x: x.kthvalue(1)), ("mode", lambda lib, x: x.mode()),
    ("median", lambda lib, x: x.median(0)), ("nanmedian", lambda lib, x: x.nanmedian(0)),
    ("aminmax", lambda lib, x: lib.aminmax(x, dim=0)), ("cummax", lambda lib, x: x.cummax(0)),
    ("cummin", lambda lib, x: x.cummin(0)), ("frexp", lambda lib, x: lib.frexp(x)),
    ("geqrf", lambda lib, x: lib.geqrf(x)),
    ("histogram", lambda lib, x: lib.histogram(x.flatten(), 3)),
    ("histogramdd", lambda lib, x: lib.histogramdd(x, bins=2)),
    ("linalg_qr", lambda lib, x: lib.linalg.qr(x)), ("qr", lambda lib, x: lib.qr(x)),
    ("linalg_svd", lambda lib, x: lib.linalg.svd(x)), ("svd", lambda lib, x: lib.svd(x)),
    ("linalg_slogdet", lambda lib, x: lib.linalg.slogdet(x)),
    ("slogdet", lambda lib, x: lib.slogdet(x)),
    ("linalg_eigh", lambda lib, x: lib.linalg.eigh(x @ x.mT)),
    ("linalg_eig", lambda lib, x: lib.linalg.eig(x)),
    ("linalg_inv_ex", lambda lib, x: lib.linalg.inv_ex(x)),
    ("linalg_solve_ex", lambda lib, x: lib.linalg.solve_ex(x, x)),
    ("linalg_cholesky_ex", lambda lib, x: lib.linalg.cholesky_ex(x @ x.mT)),
    ("linalg_lstsq", lambda lib, x: lib.linalg.lstsq(x, x)),
    ("linalg_lu_factor", lambda lib, x: lib.linalg.lu_factor(x)),
    ("linalg_lu_factor_ex", lambda lib, x: lib.linalg.lu_factor_ex(x)),
    ("linalg_lu", lambda lib, x: lib.linalg.lu(x)),
    ("lu_unpack", lambda lib, x: lib.lu_unpack(*lib.linalg.lu_factor(x))),
    ("triangular_solve", lambda lib, x: lib.triangular_solve(x, x.triu())),
]


@pytest.mark.parametrize("name,op", OPS, ids=[name for name, _ in OPS])
def test_ops_return_the_classes(name, op):
    data = [[4.0, 1.0, 2.0], [1.0, 5.0, 0.5], [2.0, 0.5, 6.0]]
    t_res, e_res = op(torch, torch.tensor(data)), op(ember, ember.tensor(data))
    assert type(t_res).__name__ == name
    assert type(e_res) is getattr(ember.return_types, name)
    for t_field, e_field in zip(t_res, e_res):
        if isinstance(t_field, torch.Tensor):
            assert tuple(e_field.shape) == tuple(t_field.shape)
    restored = pickle.loads(pickle.dumps(e_res))
    assert type(restored) is type(e_res) and len(restored) == len(e_res)


def test_repr_of_an_op_result_matches_torch():
    t = torch.tensor([[1.0, 3.0], [2.0, 0.0]]).max(0)
    e = ember.tensor([[1.0, 3.0], [2.0, 0.0]]).max(0)
    assert repr(e) == repr(t).replace("torch", "ember")
    assert type(e) is ember.return_types.max and e.values is e[0] and e.indices is e[1]


def test_geqrf_out_returns_the_out_class():
    a = [[2.0, 1.0], [1.0, 3.0]]
    t_out = (torch.empty(2, 2), torch.empty(2))
    e_out = (ember.empty(2, 2), ember.empty(2))
    assert type(torch.geqrf(torch.tensor(a), out=t_out)).__name__ == "geqrf_out"
    assert type(ember.geqrf(ember.tensor(a), out=e_out)) is ember.return_types.geqrf_out


OUT_OPS = [
    ("linalg_qr", lambda lib, x, o: lib.linalg.qr(x, out=o), [(3, 3), (3, 3)], None),
    ("qr", lambda lib, x, o: lib.qr(x, out=o), [(3, 3), (3, 3)], None),
    ("linalg_svd", lambda lib, x, o: lib.linalg.svd(x, out=o), [(3, 3), (3,), (3, 3)], None),
    ("svd", lambda lib, x, o: lib.svd(x, out=o), [(3, 3), (3,), (3, 3)], None),
    ("linalg_eigh", lambda lib, x, o: lib.linalg.eigh(x, out=o), [(3,), (3, 3)], None),
    ("linalg_eig", lambda lib, x, o: lib.linalg.eig(x, out=o), [(3,), (3, 3)], "cfloat"),
    ("linalg_slogdet", lambda lib, x, o: lib.linalg.slogdet(x, out=o), [(), ()], None),
    ("linalg_lu_factor", lambda lib, x, o: lib.linalg.lu_factor(x, out=o), [(3, 3), (3,)],
     [None, "int32"]),
    ("linalg_lu_factor_ex", lambda lib, x, o: lib.linalg.lu_factor_ex(x, out=o),
     [(3, 3), (3,), ()], [None, "int32", "int32"]),
    ("linalg_lu", lambda lib, x, o: lib.linalg.lu(x, out=o), [(3, 3)] * 3, None),
    ("linalg_inv_ex", lambda lib, x, o: lib.linalg.inv_ex(x, out=o), [(3, 3), ()],
     [None, "int32"]),
    ("linalg_solve_ex", lambda lib, x, o: lib.linalg.solve_ex(x, x, out=o), [(3, 3), ()],
     [None, "int32"]),
    ("linalg_cholesky_ex", lambda lib, x, o: lib.linalg.cholesky_ex(x, out=o), [(3, 3), ()],
     [None, "int32"]),
    ("triangular_solve", lambda lib, x, o: lib.triangular_solve(x, x.triu(), out=o),
     [(3, 3), (3, 3)], None),
    ("lu_unpack", lambda lib, x, o: lib.lu_unpack(*lib.linalg.lu_factor(x), out=o),
     [(3, 3)] * 3, None),
]


def _outs(lib, shapes, dtypes, empty_first=False):
    if dtypes is None or isinstance(dtypes, str):
        dtypes = [dtypes] * len(shapes)
    return tuple(lib.empty(0 if empty_first and i == 0 else shape,
                           dtype=getattr(lib, d) if d else None)
                 for i, (shape, d) in enumerate(zip(shapes, dtypes)))


@pytest.mark.parametrize("name,op,shapes,dtypes", OUT_OPS, ids=[c[0] for c in OUT_OPS])
def test_out_fills_the_tensors_and_returns_the_out_class(name, op, shapes, dtypes):
    data = [[4.0, 1.0, 2.0], [1.0, 5.0, 0.5], [2.0, 0.5, 6.0]]
    t_out, e_out = _outs(torch, shapes, dtypes, True), _outs(ember, shapes, dtypes, True)
    t_res = op(torch, torch.tensor(data), t_out)
    e_res = op(ember, ember.tensor(data), e_out)
    assert type(t_res).__name__ == f"{name}_out"
    assert type(e_res) is getattr(ember.return_types, f"{name}_out")
    for t_field, e_field, target in zip(t_res, e_res, e_out):
        assert e_field is target
        assert tuple(e_field.shape) == tuple(t_field.shape)
    plain = op(ember, ember.tensor(data), None)
    for e_field, p_field in zip(e_res, plain):
        assert e_field.tolist() == p_field.tolist()


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.linalg.qr(x, out=(lib.empty(3, 3, dtype=lib.float64), lib.empty(3, 3))),
    lambda lib, x: lib.linalg.qr(x, out=lib.empty(3)),
    lambda lib, x: lib.linalg.qr(x, out=(lib.empty(3),)),
    lambda lib, x: lib.linalg.qr(x.requires_grad_(), out=(lib.empty(3, 3), lib.empty(3, 3))),
])
def test_out_errors_match_torch(call):
    data = [[4.0, 1.0], [1.0, 5.0]]
    outcomes = []
    for lib in (torch, ember):
        with pytest.raises(Exception) as error:
            call(lib, lib.tensor(data))
        outcomes.append((type(error.value), str(error.value).replace("torch", "ember")))
    assert outcomes[0] == outcomes[1]


def test_out_resize_warns_as_torch():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match=r"An output with one or more elements was resized "
                                             r"since it had shape \[2\], which does not match "
                                             r"the required output shape \[3, 3\]"):
            lib.linalg.qr(lib.eye(3), out=(lib.empty(2), lib.empty(3, 3)))
