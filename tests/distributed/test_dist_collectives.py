"""Every collective of ember.distributed on 2 real MPI ranks, checked against its definition:
each rank's input is a known function of its rank, so each rank computes locally what the
collective must give. One rank job runs every section; each test reads its section's result."""
import pytest

from ranks import assert_section_passed, run_ranks

_BODY = r'''
import datetime
import numpy as np
import ember
import ember.distributed as dist

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2
SECTIONS = []


def section(fn):
    SECTIONS.append(fn)
    return fn


def data(r, shape=(2, 3), dtype=ember.float32):
    n = int(np.prod(shape))
    return (ember.arange(n, dtype=ember.float64).reshape(shape) * (r + 1) + r).to(dtype)


def same(t, expected):
    e = expected if isinstance(expected, np.ndarray) else np.asarray(expected)
    got = t.float().numpy() if t.dtype == ember.bfloat16 else t.numpy()
    assert got.shape == e.shape, (got.shape, e.shape)
    assert np.array_equal(got, e.astype(got.dtype)), (got, e)


def all_data(shape=(2, 3), dtype=ember.float32):
    return [data(r, shape, dtype).double().numpy() for r in range(size)]


@section
def all_reduce_ops_and_dtypes():
    R = dist.ReduceOp
    for dtype in (ember.float32, ember.float64, ember.int64, ember.bfloat16, ember.int32,
                  ember.float16, ember.uint8):
        vals = all_data(dtype=dtype)
        for op, fn in ((R.SUM, np.add.reduce), (R.PRODUCT, np.multiply.reduce),
                       (R.MIN, np.minimum.reduce), (R.MAX, np.maximum.reduce)):
            t = data(rank, dtype=dtype)
            assert dist.all_reduce(t, op=op) is None
            expected = fn(vals)
            if dtype == ember.bfloat16:
                expected = ember.from_numpy(expected).to(dtype).float().numpy()
            same(t, expected)
    for dtype in (ember.int64, ember.int32, ember.uint8):
        vals = [v.astype(np.int64) for v in all_data(dtype=dtype)]
        for op, fn in ((R.BAND, np.bitwise_and.reduce), (R.BOR, np.bitwise_or.reduce),
                       (R.BXOR, np.bitwise_xor.reduce)):
            t = data(rank, dtype=dtype)
            dist.all_reduce(t, op=op)
            same(t, fn(vals))
    # AVG: floats divide the sum, integers truncate toward zero (as NCCL)
    t = data(rank, dtype=ember.float64)
    dist.all_reduce(t, op=R.AVG)
    same(t, sum(all_data(dtype=ember.float64)) / size)
    t = ember.tensor([3, -3, 4]) + rank  # sums 7, -5, 9
    dist.all_reduce(t, op=dist.ReduceOp(R.AVG))
    same(t, np.array([3, -2, 4]))
    # bool: SUM/MAX are or, PRODUCT/MIN are and
    b = ember.tensor([True, False, rank == 0])
    c = b.clone()
    dist.all_reduce(b, op=R.SUM)
    dist.all_reduce(c, op=R.MIN)
    same(b, np.array([True, False, True]))
    same(c, np.array([True, False, False]))
    # complex sums
    z = ember.tensor([1 + 2j, 3 - 1j]) * (rank + 1)
    dist.all_reduce(z)
    same(z, np.array([3 + 6j, 9 - 3j]))


@section
def all_reduce_views_0d_async_and_no_autograd():
    base = ember.arange(24.).reshape(4, 6)
    view = base[:, 1::2]  # non-contiguous: packed once and written back into the view
    assert not view.is_contiguous()
    before = base._version
    dist.all_reduce(view)
    expected = np.arange(24.).reshape(4, 6)
    expected[:, 1::2] *= size
    same(base, expected)
    assert base._version > before
    z = ember.tensor(float(rank + 1))
    dist.all_reduce(z, op=dist.ReduceOp.PRODUCT)
    assert z.shape == () and z.item() == 2.0
    e = ember.zeros(0)
    dist.all_reduce(e)
    assert e.shape == (0,)
    t = data(rank)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert work.exception() is None
    same(t, sum(all_data()))
    assert work.result()[0] is t
    t = data(rank)
    future = dist.all_reduce(t, async_op=True).get_future()
    doubled = future.then(lambda f: f.value()[0] * 2)
    same(doubled.wait(), sum(all_data()) * 2)  # waiting on the chained Future drives the op
    assert future.done() and future.value()[0] is t
    # several in flight at once, waited in reverse
    ts = [data(rank) + i for i in range(4)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    for w in reversed(works):
        w.wait()
    for i, x in enumerate(ts):
        same(x, sum(all_data()) + size * i)
    p = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        dist.all_reduce(p)
    assert p.grad_fn is None and p.requires_grad
    q = ember.ones(3, requires_grad=True) * 2
    dist.all_reduce(q)  # c10d ops are not differentiable: no history is recorded for them
    same(q.detach(), np.full(3, 4.0))


@section
def broadcast_and_reduce():
    for dtype in (ember.float32, ember.int64, ember.bfloat16, ember.bool, ember.complex64):
        for src in range(size):
            t = data(rank, dtype=dtype)
            dist.broadcast(t, src)
            same(t, data(src, dtype=dtype).double().numpy().astype(t.numpy().dtype)
                 if dtype not in (ember.bfloat16,) else data(src, dtype=dtype).float().numpy())
    t = data(rank)[:, ::2]
    dist.broadcast(t, src=1)
    same(t, data(1)[:, ::2].numpy())
    t = data(rank)
    w = dist.broadcast(t, group_src=0, async_op=True)
    w.wait()
    same(t, data(0).numpy())
    for dst in range(size):
        t = data(rank)
        dist.reduce(t, dst, op=dist.ReduceOp.MAX)
        if rank == dst:
            same(t, np.maximum.reduce(all_data()))
        t = data(rank, dtype=ember.float64)
        dist.reduce(t, dst=dst, op=dist.ReduceOp.AVG)
        if rank == dst:
            same(t, sum(all_data(dtype=ember.float64)) / size)
    t = data(rank)
    dist.reduce(t, group_dst=1).__class__  # None: returns nothing when sync
    if rank == 1:
        same(t, sum(all_data()))


@section
def all_gather_family():
    for dtype in (ember.float32, ember.int64, ember.bfloat16, ember.bool):
        outs = [ember.zeros((2, 3), dtype=dtype) for _ in range(size)]
        dist.all_gather(outs, data(rank, dtype=dtype))
        for r in range(size):
            same(outs[r], data(r, dtype=dtype).float().numpy() if dtype == ember.bfloat16
                 else data(r, dtype=dtype).numpy())
    cat = ember.zeros((2 * size, 3))
    dist.all_gather_into_tensor(cat, data(rank))
    same(cat, np.concatenate(all_data()))
    stacked = ember.zeros((size, 2, 3))
    w = dist.all_gather_into_tensor(stacked, data(rank), async_op=True)
    w.wait()
    same(stacked, np.stack(all_data()))
    big = ember.zeros((2 * size, 6))
    out_view = big[:, ::2]  # non-contiguous output
    dist.all_gather_into_tensor(out_view, data(rank).t().contiguous().t().contiguous())
    same(big[:, ::2], np.concatenate(all_data()))
    same(big[:, 1::2], np.zeros((2 * size, 3)))
    scalar_out = ember.zeros(size)
    dist.all_gather_into_tensor(scalar_out, ember.tensor([float(rank)]))
    same(scalar_out, np.arange(size, dtype=np.float32))


@section
def reduce_scatter_family():
    inp = ember.arange(4 * size, dtype=ember.float32).reshape(2 * size, 2) * (rank + 1)
    out = ember.zeros((2, 2))
    dist.reduce_scatter_tensor(out, inp)
    full = sum(np.arange(4 * size, dtype=np.float64).reshape(2 * size, 2) * (r + 1)
               for r in range(size))
    same(out, full[2 * rank:2 * rank + 2])
    out = ember.zeros((2, 2))
    w = dist.reduce_scatter_tensor(out, inp.reshape(size, 2, 2), op=dist.ReduceOp.MAX,
                                   async_op=True)
    w.wait()
    same(out, (np.arange(4 * size).reshape(2 * size, 2) * size)[2 * rank:2 * rank + 2])
    out = ember.zeros(3, dtype=ember.int64)
    dist.reduce_scatter(out, [ember.full((3,), 10 * r + rank) for r in range(size)])
    same(out, np.full(3, 10 * rank * size + sum(range(size))))
    out = ember.zeros(3, dtype=ember.bfloat16)
    dist.reduce_scatter(out, [ember.full((3,), 0.5 + r, dtype=ember.bfloat16)
                              for r in range(size)])
    same(out, np.full(3, (0.5 + rank) * size))


@section
def gather_and_scatter():
    for root in range(size):
        lst = [ember.zeros((2, 3)) for _ in range(size)] if rank == root else None
        dist.gather(data(rank), lst, dst=root)
        if rank == root:
            for r in range(size):
                same(lst[r], data(r).numpy())
        out = ember.zeros((2, 3), dtype=ember.int64)
        src_list = [data(r, dtype=ember.int64) * 10 for r in range(size)] \
            if rank == root else None
        dist.scatter(out, src_list, src=root)
        same(out, data(rank, dtype=ember.int64).numpy() * 10)
    lst = [ember.zeros(2) for _ in range(size)] if rank == 0 else []
    w = dist.gather(ember.full((2,), float(rank)), lst, group_dst=0, async_op=True)
    w.wait()
    if rank == 0:
        same(ember.stack(lst), np.array([[0., 0.], [1., 1.]]))


@section
def all_to_all_family():
    inp = ember.arange(4, dtype=ember.float32) + 10 * rank
    out = ember.zeros(4)
    dist.all_to_all_single(out, inp)
    same(out, np.array([0, 1, 10, 11]) + 2 * rank)
    # uneven splits: rank r sends r+1 rows to rank 0 and 2-r... to rank 1
    in_splits = [1, 2] if rank == 0 else [3, 1]
    out_splits = [1, 3] if rank == 0 else [2, 1]
    inp = (ember.arange(sum(in_splits) * 2).reshape(-1, 2) + 100 * rank)
    out = ember.zeros((sum(out_splits), 2), dtype=ember.int64)
    w = dist.all_to_all_single(out, inp, out_splits, in_splits, async_op=True)
    w.wait()
    if rank == 0:
        same(out, np.array([[0, 1], [100, 101], [102, 103], [104, 105]]))
    else:
        same(out, np.array([[2, 3], [4, 5], [106, 107]]))
    outs = [ember.zeros(r + 1) for r in range(size)]
    ins = [ember.full((rank + 1,), float(10 * rank + r)) for r in range(size)]
    dist.all_to_all(outs, ins)
    for r in range(size):
        same(outs[r], np.full(r + 1, 10 * r + rank))


@section
def point_to_point():
    peer = 1 - rank
    t = ember.full((3,), float(rank))
    if rank == 0:
        dist.send(t + 5, 1)
        got = ember.zeros(3)
        assert dist.recv(got, 1) == 1
        same(got, np.full(3, 7.0))
    else:
        got = ember.zeros(3)
        assert dist.recv(got) == 0  # any source
        same(got, np.full(3, 5.0))
        dist.send(got + 2, dst=0)
    # both directions at once, nonblocking, with tags
    send_buf = ember.arange(5.) + rank
    recv_a, recv_b = ember.zeros(5), ember.zeros(5)
    works = [dist.isend(send_buf, peer, tag=7), dist.isend(send_buf * 2, peer, tag=8),
             dist.irecv(recv_b, peer, tag=8), dist.irecv(recv_a, peer, tag=7)]
    for w in works:
        w.wait()
    same(recv_a, np.arange(5.) + peer)
    same(recv_b, (np.arange(5.) + peer) * 2)
    nc = ember.zeros((3, 4))[:, 1]
    ops = [dist.P2POp(dist.isend, ember.full((3,), rank + 1.0), peer),
           dist.P2POp(dist.irecv, nc, peer)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    same(nc, np.full(3, peer + 1.0))
    try:
        dist.send(t, rank)
    except ValueError as e:
        assert "should not be the same" in str(e)
    else:
        raise AssertionError("send to self accepted")


@section
def object_collectives():
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": rank, "payload": "x" * (rank * 100)})
    assert objs == [{"rank": r, "payload": "x" * (r * 100)} for r in range(size)]
    lst = [rank, {"a": [1, 2]}, None] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(lst, src=1)
    assert lst == [1, {"a": [1, 2]}, None]
    got = [None] * size if rank == 0 else None
    dist.gather_object(("hi", rank), got, dst=0)
    if rank == 0:
        assert got == [("hi", 0), ("hi", 1)]
    out = [None]
    dist.scatter_object_list(out, [{"to": r} for r in range(size)] if rank == 0 else None,
                             src=0)
    assert out == [{"to": rank}]


@section
def argument_errors():
    def raises(kind, fn, text=None):
        try:
            fn()
        except kind as e:
            assert text is None or text in str(e), str(e)
        else:
            raise AssertionError(f"{fn} did not raise {kind}")
    raises(TypeError, lambda: dist.all_reduce([1, 2]), "Expected parameter `tensor`")
    raises(RuntimeError, lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND),
           "Cannot use ReduceOp.BAND")
    raises(ValueError, lambda: dist.all_reduce(ember.ones(2, dtype=ember.complex64),
                                               op=dist.ReduceOp.MAX), "complex")
    raises(ValueError, lambda: dist.broadcast(ember.ones(2), src=0, group_src=0),
           "Can't specify both")
    raises(ValueError, lambda: dist.broadcast(ember.ones(2)), "Must specify")
    raises(ValueError, lambda: dist.broadcast(ember.ones(2), 5), "not part of group")
    raises(ValueError, lambda: dist.all_gather_into_tensor(ember.zeros(5), ember.ones(2)),
           "must have shape")
    raises(ValueError, lambda: dist.all_gather([ember.zeros(2)], ember.ones(2)),
           "one tensor per rank")
    raises(ValueError, lambda: dist.all_to_all_single(ember.zeros(3), ember.zeros(3)),
           "divide evenly")
    raises(ValueError, lambda: dist.gather(ember.ones(2), [ember.ones(2)] * 2, dst=1 - rank),
           "must NOT be specified")
    raises(ValueError, lambda: dist.init_process_group("mpi"), "twice")


for fn in SECTIONS:
    fn()
    dist.barrier()
    print(f"PASS {fn.__name__} rank{rank}", flush=True)
dist.destroy_process_group()
assert not dist.is_initialized()
'''

_SECTIONS = ["all_reduce_ops_and_dtypes", "all_reduce_views_0d_async_and_no_autograd",
             "broadcast_and_reduce", "all_gather_family", "reduce_scatter_family",
             "gather_and_scatter", "all_to_all_family", "point_to_point", "object_collectives",
             "argument_errors"]


@pytest.fixture(scope="module")
def job():
    return run_ranks(_BODY, nprocs=2, timeout=240, check=False)


@pytest.mark.parametrize("name", _SECTIONS)
def test_collective(job, name):
    assert_section_passed(job, name)


def test_job_exits_cleanly(job):
    assert job.returncode == 0, job.stderr
