"""flowstone.horovod: Horovod's TensorFlow API (horovod.tensorflow) for data-parallel training
over MPI. A TF1 Horovod program runs with its import changed to

    import flowstone.horovod as hvd

and is started with `flowstone-run -np N python train.py` or `mpirun -np N python train.py`.
The collectives are graph ops (HorovodAllreduce, ...) run by a background thread in C++ that
negotiates with the other ranks, fuses small tensors and calls Open MPI (see
docs/architecture/distributed.md).
"""

from flowstone.horovod.basics import (  # noqa: F401
    cross_rank, cross_size, gloo_built, gloo_enabled, init, is_initialized, local_rank,
    local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank, shutdown, size)
from flowstone.horovod.compression import Compression  # noqa: F401
from flowstone.horovod.mpi_ops import (  # noqa: F401
    Adasum, Average, Sum, allgather, allreduce, alltoall, broadcast, grouped_allreduce,
    local_rank_op, local_size_op, rank_op, size_op)
from flowstone.horovod.functions import (  # noqa: F401
    BroadcastGlobalVariablesHook, broadcast_global_variables, broadcast_variables)
from flowstone.horovod.optimizer import DistributedOptimizer  # noqa: F401
from flowstone.horovod.gradient_tape import DistributedGradientTape  # noqa: F401
