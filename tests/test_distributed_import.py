"""``ember.distributed`` before any process group, as ``torch.distributed``: the availability
flags (honest: MPI through mpi4py, NCCL where CuPy is installed, never gloo), the constants,
and every call that needs a group raising PyTorch's error; ``init_process_group("gloo")`` says
plainly that Ember has no gloo and names the backend to use."""
import importlib.util
import pickle

import pytest
import torch
import torch.distributed as tdist

import ember
import ember.distributed as dist
from torch_compare import compare_error

def _calls(lib):
    t = lib.ones(2)
    d = lib.distributed
    return {
        "get_rank": lambda: d.get_rank(),
        "get_world_size": lambda: d.get_world_size(),
        "barrier": lambda: d.barrier(),
        "monitored_barrier": lambda: d.monitored_barrier(),
        "get_backend": lambda: d.get_backend(),
        "new_group": lambda: d.new_group([0]),
        "get_process_group_ranks": lambda: d.get_process_group_ranks(None),
        "all_reduce": lambda: d.all_reduce(t, op=d.ReduceOp.MAX),
        "broadcast": lambda: d.broadcast(t, 0),
        "reduce": lambda: d.reduce(t, 0),
        "all_gather": lambda: d.all_gather([t, t], t),
        "gather": lambda: d.gather(t, [t], 0),
        "scatter": lambda: d.scatter(t, [t], 0),
        "reduce_scatter": lambda: d.reduce_scatter(t, [t]),
        "all_to_all": lambda: d.all_to_all([t], [t]),
        "all_to_all_single": lambda: d.all_to_all_single(t, t),
        "send": lambda: d.send(t, 1),
        "recv": lambda: d.recv(t, 0),
        "isend": lambda: d.isend(t, 1),
        "irecv": lambda: d.irecv(t, 0),
        "all_gather_object": lambda: d.all_gather_object([None], 1),
        "broadcast_object_list": lambda: d.broadcast_object_list([1], 0),
        "scatter_object_list": lambda: d.scatter_object_list([None], [1], 0),
        "gather_object": lambda: d.gather_object(1, [None], 0),
        "destroy_process_group": lambda: d.destroy_process_group(),
    }


@pytest.mark.parametrize("name", sorted(_calls(torch)))
def test_calls_before_init_raise_torchs_error(name):
    compare_error(lambda lib: _calls(lib)[name]())


def test_all_gather_into_tensor_and_reduce_scatter_tensor_raise_torchs_error():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch deprecates these names
        compare_error(lambda lib: lib.distributed.all_gather_into_tensor(lib.ones(2), lib.ones(1)))
        compare_error(lambda lib: lib.distributed.reduce_scatter_tensor(lib.ones(1), lib.ones(2)))


def test_availability_is_honest():
    assert dist.is_available() is True and tdist.is_available() is True  # mpi4py is installed
    assert dist.is_initialized() is False and tdist.is_initialized() is False
    assert dist.is_mpi_available() is True
    if importlib.util.find_spec("cupy") is None:
        assert dist.is_nccl_available() is False
    assert (dist.is_gloo_available(), dist.is_ucc_available(), dist.is_xccl_available()) == \
        (False,) * 3
    assert dist.is_torchelastic_launched() == tdist.is_torchelastic_launched()


def test_init_process_group_refuses_gloo_and_names_mpi():
    with pytest.raises(RuntimeError, match="no gloo backend: use backend='mpi'"):
        dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    assert dist.is_initialized() is False


def test_backend_names_as_torch():
    for name in ("gloo", "GLOO", "nccl", "Mpi", "ucc", "xccl", "undefined", "custom"):
        assert dist.Backend(name) == tdist.Backend(name)
    for attr in ("UNDEFINED", "GLOO", "NCCL", "UCC", "MPI", "XCCL"):
        assert getattr(dist.Backend, attr) == getattr(tdist.Backend, attr)
    # torch's map gains entries as its test helpers register fake backends: compare the built-in
    for device_type, backend in dist.Backend.default_device_backend_map.items():
        assert tdist.Backend.default_device_backend_map[device_type] == backend
    compare_error(lambda lib: lib.distributed.Backend(3))


def test_reduce_op_as_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        assert (repr(ours), str(ours), int(ours), ours.name, ours.value) == \
            (repr(theirs), str(theirs), int(theirs), theirs.name, theirs.value)
        assert ours is getattr(dist.ReduceOp.RedOpType, name)
        if name == "PREMUL_SUM":  # needs a factor that only NCCL's helper gives
            with pytest.raises(RuntimeError):
                tdist.ReduceOp(theirs)
            with pytest.raises(RuntimeError):
                dist.ReduceOp(ours)
        else:
            assert dist.ReduceOp(ours) == ours and tdist.ReduceOp(theirs) == theirs
            assert dist.ReduceOp(ours) != dist.ReduceOp.PREMUL_SUM
        assert (ours == int(ours)) == (theirs == int(theirs))
    assert dist.ReduceOp.SUM != dist.ReduceOp.MAX
    assert pickle.loads(pickle.dumps(dist.ReduceOp.MAX)) is dist.ReduceOp.MAX


def test_groups_as_torch():
    assert dist.group.WORLD is None and tdist.group.WORLD is None
    assert dist.GroupMember.WORLD is None and tdist.GroupMember.WORLD is None
    assert dist.GroupMember.NON_GROUP_MEMBER == tdist.GroupMember.NON_GROUP_MEMBER
    # a process outside a group has nothing to destroy, in both
    assert dist.destroy_process_group(dist.GroupMember.NON_GROUP_MEMBER) is None
    assert tdist.destroy_process_group(tdist.GroupMember.NON_GROUP_MEMBER) is None


def test_is_a_lazy_attribute_of_ember():
    assert ember.distributed is dist
    assert not hasattr(dist, "no_such_function")


def test_the_mpi_backend_without_mpi4py_names_the_extra(monkeypatch):
    import sys
    from ember.distributed import process_group_mpi
    monkeypatch.setattr(process_group_mpi, "_MPI", None)
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py now fails
    with pytest.raises(ImportError, match=r"pip install 'ember\[distributed\]'"):
        process_group_mpi._mpi()
