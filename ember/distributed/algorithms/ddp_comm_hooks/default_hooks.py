"""DDP's built-in communication hooks, as ``torch.distributed.algorithms.ddp_comm_hooks.
default_hooks``: ``hook(process_group, bucket) -> Future`` of the bucket's new flat tensor.

A hook receives a ``GradBucket`` whose ``buffer()`` holds the bucket's gradients, not yet
divided by the world size (the hook divides, as torch's do), and returns a Future that DDP
waits for at the end of backward.
"""
from .... import _dtype as _dt
from ....futures import Future

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def _dist():
    from .... import distributed
    return distributed


def _group_size(process_group):
    if process_group is not None and hasattr(process_group, "size"):
        return process_group.size()
    return _dist().get_world_size(process_group)


def _work_future(work, tensor):
    """A Future holding ``[tensor]`` once ``work`` completes (what ``Work.get_future()``
    returns); built here when the backend's Work has no ``get_future``."""
    get_future = getattr(work, "get_future", None)
    if get_future is not None:
        return get_future()
    fut = Future()

    def drive():
        work.wait()
        fut.set_result([tensor])

    fut._driver = drive
    return fut


def _allreduce_fut(process_group, tensor):
    # Divide first: a float16 sum of undivided gradients may overflow.
    tensor.div_(_group_size(process_group))
    work = _dist().all_reduce(tensor, group=process_group, async_op=True)
    return _work_future(work, tensor).then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """Average the bucket over ``process_group`` (None: the default group), as DDP does
    without a hook."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    world_size = _group_size(process_group)
    buffer = bucket[0] if isinstance(bucket, tuple) else bucket.buffer()
    compressed = buffer.to(dtype).div_(world_size)

    def decompress(fut):
        # Back into the original buffer, so no second full-precision bucket exists.
        buffer.copy_(fut.value()[0])
        return buffer

    work = _dist().all_reduce(compressed, group=process_group, async_op=True)
    return _work_future(work, compressed).then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Cast the bucket to float16, divide by the world size, all-reduce, and cast back."""
    return _compress_hook(_dt.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Cast the bucket to bfloat16, divide by the world size, all-reduce, and cast back."""
    return _compress_hook(_dt.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook, name):
    def wrapper_hook(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            decompressed = bucket.buffer()
            decompressed.copy_(fut.value())
            return decompressed

        return fut.then(decompress)

    wrapper_hook.__name__ = wrapper_hook.__qualname__ = name
    return wrapper_hook


def fp16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to float16; its result is cast back."""
    return _compress_wrapper(_dt.float16, hook, "fp16_compress_wrapper_hook")


def bf16_compress_wrapper(hook):
    """``hook`` run on the bucket cast to bfloat16; its result is cast back."""
    return _compress_wrapper(_dt.bfloat16, hook, "bf16_compress_wrapper_hook")
