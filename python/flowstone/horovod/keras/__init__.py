"""flowstone.horovod.keras: Horovod's Keras API (horovod.tensorflow.keras) for tf.keras models:

    import flowstone.horovod.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size())),
                  ...)
    model.fit(..., callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                              hvd.callbacks.MetricAverageCallback()])
"""

from flowstone.horovod.basics import (  # noqa: F401
    cross_rank, cross_size, init, is_initialized, local_rank, local_size, mpi_threads_supported,
    rank, shutdown, size)
from flowstone.horovod.compression import Compression  # noqa: F401
from flowstone.horovod.functions import broadcast_global_variables  # noqa: F401
from flowstone.horovod.keras import callbacks  # noqa: F401
from flowstone.horovod.keras.optimizer import DistributedOptimizer  # noqa: F401
from flowstone.horovod.mpi_ops import Average, Sum, allgather, allreduce, broadcast  # noqa: F401
