"""Sparse gradients against PyTorch: ``nn.Embedding(sparse=True)``/``EmbeddingBag``, the
optimizers that take sparse gradients (SGD, Adagrad, SparseAdam) and the errors of those that
do not, the function forms of the sparse ops, mixed dense/sparse arithmetic and gradient
clipping."""
import numpy as np
import pytest
import torch

import ember
from torch_compare import assert_same, compare, compare_error

pytestmark = pytest.mark.filterwarnings("ignore:.*[Ss]parse.*:UserWarning")

LIBS = (torch, ember)


def _on(lib, device):
    return {"device": device} if lib is ember else {}


def assert_grad_same(expected, actual, exact_pattern=False, rtol=1e-5, atol=1e-6):
    """Same layout, shape, dtype and coalesced flag; the same coalesced indices and values (and,
    with ``exact_pattern``, the same stored arrays in the same order)."""
    assert actual.is_sparse and expected.is_sparse
    assert tuple(actual.shape) == tuple(expected.shape)
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert actual.is_coalesced() == expected.is_coalesced()
    if exact_pattern:
        np.testing.assert_array_equal(np.asarray(actual._indices()), expected._indices().numpy())
        assert_same(expected._values(), actual._values(), rtol, atol)
    e, a = expected.coalesce(), actual.coalesce()
    np.testing.assert_array_equal(np.asarray(a.indices()), e.indices().numpy())
    assert_same(e.values(), a.values(), rtol, atol)


def _table(lib, rows=7, dim=3, seed=0, dtype="float32"):
    data = np.random.default_rng(seed).standard_normal((rows, dim))
    return lib.tensor(data, dtype=getattr(lib, dtype))


# ---- nn.Embedding(sparse=True) ------------------------------------------------------------------
INPUTS = [[[0, 1, 2], [2, 5, 1]], [4], [3, 3, 3, 0], [[6, 0], [0, 6], [6, 6]]]


@pytest.mark.parametrize("indices", INPUTS)
@pytest.mark.parametrize("padding_idx", [None, 1, 3, -1])
def test_embedding_sparse_gradient(indices, padding_idx, device):
    results = {}
    for lib in LIBS:
        emb = lib.nn.Embedding.from_pretrained(_table(lib), freeze=False,
                                               padding_idx=padding_idx, sparse=True)
        if lib is ember:
            emb = emb.to(device)
        x = lib.tensor(indices, **_on(lib, device))
        out = emb(x)
        assert type(out.grad_fn).__name__ == "EmbeddingBackward0"
        weights = lib.arange(out.numel(), dtype=lib.float32, **_on(lib, device)).reshape(out.shape)
        (out * weights).sum().backward()
        results[lib] = emb.weight.grad
    # one entry per looked-up position, in input order, padding positions left out
    assert_grad_same(results[torch], results[ember], exact_pattern=True)


def test_embedding_sparse_gradient_is_sparse_for_the_function_form(device):
    grads = []
    for lib in LIBS:
        w = _table(lib).requires_grad_()
        if lib is ember:
            w = w.detach().to(device).requires_grad_()
        x = lib.tensor([[1, 2], [2, 4]], **_on(lib, device))
        lib.nn.functional.embedding(x, w, sparse=True).pow(2).sum().backward()
        grads.append(w.grad)
    assert_grad_same(*grads, exact_pattern=True)
    assert grads[1].device == ember.empty(0, device=device).device


def test_embedding_sparse_gradients_accumulate_over_two_backwards(device):
    grads = []
    for lib in LIBS:
        emb = lib.nn.Embedding.from_pretrained(_table(lib), freeze=False, sparse=True)
        if lib is ember:
            emb = emb.to(device)
        emb(lib.tensor([[0, 5], [5, 2]], **_on(lib, device))).sum().backward()
        emb(lib.tensor([2, 6, 6], **_on(lib, device))).pow(2).sum().backward()
        grads.append(emb.weight.grad)
    assert_grad_same(*grads)
    assert not grads[1].is_coalesced()


def test_embedding_sparse_gradient_flags_of_tiny_gradients():
    # PyTorch flags a COO tensor with fewer than two entries as coalesced
    for indices, padding_idx in (([4], None), ([0, 0], 0), ([0, 3], 0)):
        grads = []
        for lib in LIBS:
            emb = lib.nn.Embedding(6, 2, sparse=True, padding_idx=padding_idx)
            emb(lib.tensor(indices)).sum().backward()
            grads.append(emb.weight.grad)
        assert_grad_same(*grads, exact_pattern=True)
        assert grads[1]._nnz() == grads[0]._nnz()


def test_embedding_sparse_with_max_norm():
    results = []
    for lib in LIBS:
        emb = lib.nn.Embedding.from_pretrained(_table(lib) * 3, freeze=False, sparse=True,
                                               max_norm=1.5)
        out = emb(lib.tensor([[1, 2, 1], [6, 0, 2]]))
        (out * out).sum().backward()
        results.append((emb.weight.detach(), out.detach(), emb.weight.grad))
    assert_same(results[0][:2], results[1][:2])
    assert_grad_same(results[0][2], results[1][2], exact_pattern=True)


def test_embedding_mixed_dense_and_sparse_gradients_give_a_dense_grad():
    for order in ("dense first", "sparse first", "one backward"):
        grads = []
        for lib in LIBS:
            emb = lib.nn.Embedding.from_pretrained(_table(lib), freeze=False, sparse=True)
            x = lib.tensor([1, 1, 3])
            if order == "dense first":
                (emb.weight * 2).sum().backward()
                emb(x).sum().backward()
            elif order == "sparse first":
                emb(x).sum().backward()
                (emb.weight * 2).sum().backward()
            else:
                (emb(x).sum() + (emb.weight * 2).sum()).backward()
            grads.append(emb.weight.grad)
        assert_same(*grads)
        assert grads[1].layout is ember.strided


def test_embedding_sparse_scale_grad_by_freq_raises_at_backward():
    def fn(lib):
        emb = lib.nn.Embedding(5, 2, sparse=True, scale_grad_by_freq=True)
        out = emb(lib.tensor([1, 1]))
        out.sum().backward()
    compare_error(fn)


# ---- nn.EmbeddingBag(sparse=True) ---------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_sparse_gradient(mode, padding_idx, device):
    grads = []
    for lib in LIBS:
        bag = lib.nn.EmbeddingBag.from_pretrained(_table(lib), freeze=False, mode=mode,
                                                  sparse=True, padding_idx=padding_idx)
        if lib is ember:
            bag = bag.to(device)
        x = lib.tensor([[0, 2, 2], [5, 2, 1]], **_on(lib, device))
        out = bag(x)
        (out * lib.arange(out.numel(), dtype=lib.float32, **_on(lib, device)).reshape(
            out.shape)).sum().backward()
        grads.append(bag.weight.grad)
    assert_grad_same(*grads, exact_pattern=True)


def test_embedding_bag_sparse_with_offsets_and_per_sample_weights():
    grads = []
    for lib in LIBS:
        bag = lib.nn.EmbeddingBag.from_pretrained(_table(lib), freeze=False, mode="sum",
                                                  sparse=True)
        out = bag(lib.tensor([0, 3, 3, 6, 1]), lib.tensor([0, 1, 4]),
                  per_sample_weights=lib.tensor([1.0, 2.0, 3.0, -1.0, 0.5]))
        out.pow(2).sum().backward()
        grads.append(bag.weight.grad)
    assert_grad_same(*grads, exact_pattern=True)


def test_embedding_bag_max_mode_refuses_sparse():
    compare_error(lambda lib: lib.nn.EmbeddingBag(5, 2, mode="max", sparse=True)(
        lib.tensor([[1, 2]])))
    compare_error(lambda lib: lib.nn.functional.embedding_bag(
        lib.tensor([[1, 2]]), lib.ones(5, 2), mode="max", scale_grad_by_freq=True))


# ---- optimizers with sparse gradients ---------------------------------------------------------
BATCHES = [[[0, 5, 5], [2, 0, 6]], [[3, 3, 3], [1, 0, 5]], [[6, 2, 1], [1, 1, 4]],
           [[0, 0, 0], [0, 0, 0]], [[2, 4, 6], [6, 4, 2]]]

SPARSE_OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "initial_accumulator_value": 0.2}),
    ("Adagrad", {"lr": 0.1, "maximize": True, "eps": 1e-6}),
    ("SparseAdam", {}),
    ("SparseAdam", {"lr": 0.01, "betas": (0.8, 0.9), "eps": 1e-6}),
    ("SparseAdam", {"lr": 0.01, "maximize": True}),
]


def _train(lib, name, kwargs, device="cpu", padding_idx=None):
    """Weights after each step of an embedding model trained with optimizer ``name``."""
    emb = lib.nn.Embedding.from_pretrained(_table(lib), freeze=False, sparse=True,
                                           padding_idx=padding_idx)
    head = lib.nn.Linear(3, 2)
    with lib.no_grad():
        head.weight.copy_(lib.tensor([[0.5, -0.25, 1.0], [0.1, 0.2, -0.3]]))
        head.bias.zero_()
    if lib is ember:
        emb, head = emb.to(device), head.to(device)
    head.requires_grad_(False)
    opt = getattr(lib.optim, name)(emb.parameters(), **kwargs)
    weights = []
    for batch in BATCHES:
        opt.zero_grad()
        loss = head(emb(lib.tensor(batch, **_on(lib, device)))).pow(2).sum()
        loss.backward()
        opt.step()
        weights.append(emb.weight.detach().clone())
    return weights, opt


@pytest.mark.parametrize("name,kwargs", SPARSE_OPTIMIZERS,
                         ids=[f"{n}-{'-'.join(map(str, kw))}" for n, kw in SPARSE_OPTIMIZERS])
def test_sparse_optimizer_trajectory_matches_torch(name, kwargs, device):
    expected, torch_opt = _train(torch, name, kwargs)
    actual, ember_opt = _train(ember, name, kwargs, device)
    for step, (e, a) in enumerate(zip(expected, actual)):
        assert_same(e, a, rtol=1e-5, atol=1e-6), step
    # the optimizer's state as well: moments, accumulators, momentum buffers, step counts
    assert len(torch_opt.state) == len(ember_opt.state)  # SGD without momentum keeps none
    for e_state, a_state in zip(torch_opt.state.values(), ember_opt.state.values()):
        _assert_state_same(e_state, a_state)


def _assert_state_same(e_state, a_state):
    assert sorted(e_state) == sorted(a_state)
    for key, value in e_state.items():
        if isinstance(value, torch.Tensor) and value.is_sparse:
            assert_grad_same(value, a_state[key])
        elif isinstance(value, torch.Tensor):
            assert_same(value, a_state[key], rtol=1e-5, atol=1e-6)
        else:
            assert type(a_state[key]) is type(value) and a_state[key] == value


def test_sparse_optimizer_with_padding_idx(device):
    expected, _ = _train(torch, "SparseAdam", {"lr": 0.05}, padding_idx=0)
    actual, _ = _train(ember, "SparseAdam", {"lr": 0.05}, device, padding_idx=0)
    assert_same(expected[-1], actual[-1])


def test_lbfgs_takes_sparse_gradients():
    def fn(lib):
        emb = lib.nn.Embedding.from_pretrained(_table(lib), freeze=False, sparse=True)
        opt = lib.optim.LBFGS(emb.parameters(), lr=0.5, max_iter=4)
        x = lib.tensor([[1, 2], [2, 6]])

        def closure():
            opt.zero_grad()
            loss = (emb(x) - 1).pow(2).sum()
            loss.backward()
            return loss
        opt.step(closure)
        return emb.weight.detach()
    compare(fn, rtol=1e-4, atol=1e-5)


def _with_sparse_grad(lib):
    p = lib.nn.Parameter(lib.ones(4, 2))
    p.grad = lib.sparse_coo_tensor(lib.tensor([[0, 2, 2]]),
                                   lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), (4, 2))
    return p


REFUSING = [("Adam", {}), ("Adam", {"amsgrad": True}), ("AdamW", {}), ("Adamax", {}),
            ("NAdam", {}), ("RAdam", {}), ("RMSprop", {}), ("Adadelta", {}), ("ASGD", {}),
            ("Rprop", {}), ("Adafactor", {}), ("Muon", {}),
            ("SGD", {"weight_decay": 0.1}), ("SGD", {"momentum": 0.9, "weight_decay": 0.1}),
            ("Adagrad", {"weight_decay": 0.1})]


@pytest.mark.parametrize("name,kwargs", REFUSING,
                         ids=[f"{n}-{'-'.join(map(str, kw))}" for n, kw in REFUSING])
def test_optimizers_refusing_sparse_gradients_raise_torchs_error(name, kwargs):
    if not hasattr(ember.optim, name):
        pytest.skip(f"ember.optim.{name} is not in this build")

    def fn(lib):
        getattr(lib.optim, name)([_with_sparse_grad(lib)], **kwargs).step()
    compare_error(fn)


def test_refusing_optimizer_leaves_its_group_untouched():
    for lib in LIBS:
        dense = lib.nn.Parameter(lib.ones(3))
        dense.grad = lib.ones(3)
        opt = lib.optim.Adam([dense, _with_sparse_grad(lib)])
        with pytest.raises(RuntimeError):
            opt.step()
        assert dense.detach().tolist() == [1.0, 1.0, 1.0]


def test_sparse_adam_errors():
    compare_error(lambda lib: lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))], lr=0.0))
    compare_error(lambda lib: lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))], eps=0.0))
    compare_error(lambda lib: lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))],
                                                   betas=(1.0, 0.9)))
    compare_error(lambda lib: lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))],
                                                   betas=(0.9, -0.1)))
    compare_error(lambda lib: lib.optim.SparseAdam([lib.nn.Parameter(lib.ones(2))],
                                                   lr=lib.tensor([0.1, 0.2])))
    compare_error(lambda lib: lib.optim.SparseAdam(
        [lib.nn.Parameter(lib.ones(2)), lib.ones(2, 2).to_sparse()]))
    compare_error(lambda lib: lib.optim.SparseAdam(
        [{"params": [lib.nn.Parameter(lib.ones(2))]},
         {"params": [lib.nn.Parameter(lib.ones(2, dtype=lib.complex64))]}]))

    def dense_grad(lib):
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.ones(2)
        lib.optim.SparseAdam([p]).step()
    compare_error(dense_grad)


def test_sparse_adam_defaults_and_state_dict():
    for lib in LIBS:
        p = _with_sparse_grad(lib)
        opt = lib.optim.SparseAdam([p])
        opt.step()
        opt.step()
        group = opt.state_dict()["param_groups"][0]
        state = opt.state_dict()["state"][0]
        if lib is torch:
            expected = (group, state["step"])
        else:
            assert group == expected[0]
            assert type(state["step"]) is int and state["step"] == expected[1] == 2


def test_sparse_adam_skips_an_empty_gradient_but_counts_the_step():
    results = []
    for lib in LIBS:
        p = lib.nn.Parameter(lib.ones(4, 2))
        opt = lib.optim.SparseAdam([p])
        p.grad = lib.sparse_coo_tensor(lib.zeros((1, 0), dtype=lib.int64), lib.zeros(0, 2),
                                       (4, 2))
        opt.step()
        p.grad = _with_sparse_grad(lib).grad
        opt.step()
        results.append((p.detach(), opt.state[p]["exp_avg"], opt.state[p]["step"]))
    assert_same(*results)


# ---- function forms and mixed dense/sparse arithmetic -------------------------------------------
def _pair(lib, device="cpu", dtype="float64"):
    idx = lib.tensor([[0, 2, 2, 1], [1, 0, 0, 2]], **_on(lib, device))
    vals = lib.tensor([1.0, 2.0, 3.0, -4.0], dtype=getattr(lib, dtype), **_on(lib, device))
    s = lib.sparse_coo_tensor(idx, vals, (3, 3))
    d = lib.arange(9, dtype=getattr(lib, dtype), **_on(lib, device)).reshape(3, 3) - 4
    return s, d


SPARSE_RESULTS = {
    "add": lambda lib, s, d: lib.add(s, s),
    "add_coalesced": lambda lib, s, d: lib.add(s.coalesce(), s.coalesce(), alpha=2),
    "sub": lambda lib, s, d: lib.sub(s, s.coalesce() * 2),
    "mul_scalar": lambda lib, s, d: lib.mul(s, 2.5),
    "mul_dense": lambda lib, s, d: lib.mul(s, d),
    "dense_mul": lambda lib, s, d: lib.mul(d, s),
    "operator_sparse_times_dense": lambda lib, s, d: s * d,
    "operator_dense_times_sparse": lambda lib, s, d: d * s,
    "mul_broadcast_row": lambda lib, s, d: s * d[0],
    "mul_coalesced": lambda lib, s, d: s.coalesce() * d,
    "mul_zero_dim": lambda lib, s, d: s * d[1, 1],
    "neg": lambda lib, s, d: lib.neg(s),
    "t": lambda lib, s, d: lib.t(s),
    "transpose": lambda lib, s, d: lib.transpose(s, 0, 1),
    "sum_dim": lambda lib, s, d: lib.sum(s, 1),
    "dense_mul_method": lambda lib, s, d: d.mul(s),
}


@pytest.mark.parametrize("name", list(SPARSE_RESULTS))
def test_function_forms_with_sparse_results(name, device):
    expected = SPARSE_RESULTS[name](torch, *_pair(torch))
    actual = SPARSE_RESULTS[name](ember, *_pair(ember, device))
    assert actual.is_sparse
    # PyTorch merges the stored entries of an uncoalesced sum where Ember concatenates them:
    # the same tensor, the same flag, a different order of the stored entries
    assert_grad_same(expected, actual, exact_pattern=name != "sub")


DENSE_RESULTS = {
    "sum": lambda lib, s, d: lib.sum(s),
    "dense_plus_sparse": lambda lib, s, d: d + s,
    "add_function": lambda lib, s, d: lib.add(d, s, alpha=3),
    "dense_minus_sparse": lambda lib, s, d: d - s,
    "sub_function": lambda lib, s, d: lib.sub(d, s, alpha=0.5),
    "promoting": lambda lib, s, d: d.to(lib.int64) + s.to(lib.float32),
    "add_": lambda lib, s, d: d.clone().add_(s, alpha=-2),
    "iadd": lambda lib, s, d: d.clone().__iadd__(s),
    "sub_": lambda lib, s, d: d.clone().sub_(s),
    "add_keeps_dtype": lambda lib, s, d: d.to(lib.float32).add_(s),
    "mul_": lambda lib, s, d: d.clone().mul_(s),
    "dense_add_method": lambda lib, s, d: d.add(s, alpha=2),
    "dense_sub_method": lambda lib, s, d: d.sub(s),
    "imul": lambda lib, s, d: d.clone().__imul__(s),
}


def test_in_place_forms_on_a_large_temporary():
    # operators on a large temporary may compute into its buffer: not with a sparse operand
    def fn(lib):
        d = lib.ones(600, 600, dtype=lib.float64)
        s = lib.sparse_coo_tensor(lib.tensor([[0, 5, 5], [1, 7, 7]]),
                                  lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64), (600, 600))
        x = d * 1
        x += s
        y = d * 1
        y -= s
        return (d * 1) + s, (d * 1) - s, ((d * 2) * s).to_dense(), x, y
    compare(fn)


@pytest.mark.parametrize("name", list(DENSE_RESULTS))
def test_mixed_forms_with_dense_results(name, device):
    expected = DENSE_RESULTS[name](torch, *_pair(torch))
    actual = DENSE_RESULTS[name](ember, *_pair(ember, device))
    assert actual.layout is ember.strided
    assert_same(expected, actual)


def test_add_of_dense_into_a_view_takes_the_general_path():
    def fn(lib):
        s, d = _pair(lib)
        d[:, :].add_(s)
        return d
    compare(fn)


MIXED_ERRORS = {
    "sparse_plus_dense": lambda lib, s, d: s + d,
    "add_sparse_dense": lambda lib, s, d: lib.add(s, d),
    "sub_sparse_dense": lambda lib, s, d: lib.sub(s, d),
    "dense_plus_sparse_of_other_shape": lambda lib, s, d: lib.ones(3, 4) + s,
}


@pytest.mark.parametrize("name", list(MIXED_ERRORS))
def test_mixed_form_errors(name):
    compare_error(lambda lib: MIXED_ERRORS[name](lib, *_pair(lib)))


def test_gradients_of_mixed_forms():
    for form in ("add", "sub", "mul"):
        grads = []
        for lib in LIBS:
            s, d = _pair(lib)
            s, d = s.requires_grad_(), d.requires_grad_()
            if form == "mul":
                (s * d).to_dense().pow(2).sum().backward()
            else:
                out = d + s if form == "add" else lib.sub(d, s, alpha=2)
                assert type(out.grad_fn).__name__ == ("AddBackward0" if form == "add"
                                                      else "SubBackward0")
                (out * out).sum().backward()
            grads.append((s.grad, d.grad))
        (es, ed), (a_s, a_d) = grads
        for e, a in ((es, a_s), (ed, a_d)):
            if e.is_sparse:
                assert_grad_same(e, a)
            else:
                assert a.layout is ember.strided
                assert_same(e, a)


# ---- gradient clipping --------------------------------------------------------------------------
def _params_with_sparse_grad(lib):
    sparse = _with_sparse_grad(lib)
    dense = lib.nn.Parameter(lib.ones(2))
    dense.grad = lib.tensor([3.0, 4.0])
    return [sparse, dense]


@pytest.mark.parametrize("foreach", [None, False, True])
def test_clip_grad_norm_of_sparse_gradients_raises_as_torch(foreach):
    # PyTorch 2.13 has no norm kernel for sparse COO tensors, whichever path clip_grad_norm_ takes
    gist = "Could not run 'aten::linalg_vector_norm' with arguments from the 'SparseCPU' backend"
    compare_error(lambda lib: lib.nn.utils.clip_grad_norm_(_params_with_sparse_grad(lib), 1.0,
                                                           foreach=foreach), gist)
    compare_error(lambda lib: lib.nn.utils.get_total_norm(
        [_with_sparse_grad(lib).grad], foreach=foreach), gist)


@pytest.mark.parametrize("foreach,kernel", [(None, "clamp_min_"), (False, "clamp_"),
                                            (True, "clamp_min_")])
def test_clip_grad_value_of_sparse_gradients_raises_as_torch(foreach, kernel):
    gist = f"Could not run 'aten::{kernel}' with arguments from the 'SparseCPU' backend"
    compare_error(lambda lib: lib.nn.utils.clip_grad_value_(_params_with_sparse_grad(lib), 1.0,
                                                            foreach=foreach), gist)


def test_clip_grads_with_norm_scales_sparse_gradients():
    results = []
    for lib in LIBS:
        params = _params_with_sparse_grad(lib)
        lib.nn.utils.clip_grads_with_norm_(params, 2.0, lib.tensor(10.0))
        results.append(params)
    assert_grad_same(results[0][0].grad, results[1][0].grad, exact_pattern=True)
    assert_same(results[0][1].grad, results[1][1].grad)


def test_sparse_mul_in_place_keeps_the_dtype():
    for lib in LIBS:
        s = _with_sparse_grad(lib).grad
        assert s.mul_(lib.tensor(2.0, dtype=lib.float64)) is s
        assert str(s.dtype).endswith("float32")
    compare_error(lambda lib: _with_sparse_grad(lib).grad.mul_(1j))


def test_zero_grad_without_set_to_none_empties_a_sparse_gradient():
    grads = []
    for lib in LIBS:
        emb = lib.nn.Embedding.from_pretrained(_table(lib), freeze=False, sparse=True)
        opt = lib.optim.SGD(emb.parameters(), lr=0.1)
        emb(lib.tensor([1, 1, 3])).sum().backward()
        opt.zero_grad(set_to_none=False)
        emptied = emb.weight.grad
        assert emptied._nnz() == 0 and emptied.is_coalesced() and tuple(emptied.shape) == (7, 3)
        emb(lib.tensor([2, 2, 5])).sum().backward()
        assert emb.weight.grad is emptied  # accumulated into, as torch does
        grads.append(emptied)
    assert_grad_same(*grads, exact_pattern=True)
    compare(lambda lib: lib.ones(2, 3).to_sparse_csr().zero_().crow_indices())
