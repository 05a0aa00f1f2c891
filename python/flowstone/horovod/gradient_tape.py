"""hvd.DistributedGradientTape: a tf.GradientTape whose gradient() allreduces the gradients over
the ranks (eager execution and tf.function)."""

from flowstone.horovod.compression import Compression
from flowstone.horovod.gradient_reduction import allreduce_gradients
from flowstone.horovod.mpi_ops import Average
from flowstone.util import nest


class _DistributedGradientTape:
    def __init__(self, tape, compression, sparse_as_dense, op):
        self._tape = tape
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op

    def __getattr__(self, name):  # watch, stop_recording, reset, ... of the wrapped tape
        return getattr(self._tape, name)

    def __enter__(self):
        self._tape.__enter__()
        return self

    def __exit__(self, *exc):
        return self._tape.__exit__(*exc)

    def gradient(self, target, sources, output_gradients=None, **kwargs):
        grads = self._tape.gradient(target, sources, output_gradients, **kwargs)
        flat = allreduce_gradients(nest.flatten(grads), self._op, self._compression,
                                   self._sparse_as_dense)
        return nest.pack_sequence_as(grads, flat)


def DistributedGradientTape(gradtape, device_dense="", device_sparse="",  # noqa: N802
                            compression=Compression.none, sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None):
    """Wraps a tf.GradientTape: gradient() returns the gradients averaged over all ranks
    (op=hvd.Sum sums them)."""
    return _DistributedGradientTape(gradtape, compression, sparse_as_dense, op)
