"""torch.distributed.algorithms.ddp_comm_hooks.default_hooks: allreduce_hook, fp16_compress_hook,
bf16_compress_hook. A hook takes (state, bucket) and returns a Future of the bucket's new buffer."""
import ember
from ember.distributed import distributed_c10d as dist

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _allreduce_fut(process_group, tensor):
    group_to_use = process_group if process_group is not None else dist.group.WORLD
    tensor.div_(group_to_use.size())
    return dist.all_reduce(tensor, group=group_to_use, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """Average the bucket over the group: divide by its size, then all-reduce (SUM)."""
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group_to_use = process_group if process_group is not None else dist.group.WORLD
    world_size = group_to_use.size()
    buffer = bucket[0] if isinstance(bucket, tuple) else bucket.buffer()
    compressed_tensor = buffer.to(dtype).div_(world_size)

    def decompress(fut):
        value = fut if isinstance(fut, ember.Tensor) else fut.value()[0]
        buffer.copy_(value)
        return buffer

    fut = dist.all_reduce(compressed_tensor, group=group_to_use, async_op=True).get_future()
    return fut.then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Cast the bucket to float16, divide by the group size, all-reduce, and cast back."""
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    return _compress_hook(ember.bfloat16, process_group, bucket)
