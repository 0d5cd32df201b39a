"""ember.distributed (torch.distributed): process groups and collectives over MPI.

    import ember as torch
    import ember.distributed as dist
    dist.init_process_group("gloo")      # "gloo" runs on ember's MPI engine; "mpi" too
    dist.all_reduce(t)

Start the ranks with `python -m ember.distributed.run --nproc-per-node N script.py` (or mpirun).
mpi4py is imported only by init_process_group. See docs/distributed.md.
"""
from ember.distributed._mpi import DistBackendError, DistError
from ember.distributed.distributed_c10d import (Backend, DistNetworkError, DistStoreError, Future, GradBucket,
                                                GroupMember,
                                                P2POp, ProcessGroup, ReduceOp, Work, _all_gather_base,
                                                _reduce_scatter_base, all_gather, all_gather_into_tensor,
                                                all_gather_object, all_reduce, all_to_all, all_to_all_single,
                                                barrier, batch_isend_irecv, broadcast, broadcast_object_list,
                                                default_pg_timeout, destroy_process_group, gather, gather_object,
                                                get_backend, get_default_group, get_global_rank, get_group_rank,
                                                get_process_group_ranks, get_rank, get_world_size, group,
                                                init_process_group, irecv, is_available, is_backend_available,
                                                is_gloo_available, is_initialized, is_mpi_available,
                                                is_nccl_available, is_torchelastic_launched, is_ucc_available,
                                                is_xccl_available, isend, monitored_barrier, new_group, recv,
                                                reduce, reduce_op, reduce_scatter, reduce_scatter_tensor, scatter,
                                                scatter_object_list, send)
from ember.distributed import algorithms

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024

__all__ = ["Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "GradBucket",
           "GroupMember",
           "P2POp", "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object",
           "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
           "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather", "gather_object",
           "get_backend", "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "irecv", "is_available", "is_backend_available",
           "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "isend", "monitored_barrier", "new_group", "recv", "reduce", "reduce_op",
           "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send", "Future",
           "_all_gather_base", "_reduce_scatter_base",
           "get_default_group", "is_ucc_available", "is_xccl_available", "algorithms"]
