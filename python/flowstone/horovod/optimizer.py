"""hvd.DistributedOptimizer: wraps a tf.train optimizer so that compute_gradients returns the
gradients averaged (or summed) over all ranks, in one grouped allreduce per dtype so that the
background thread fuses them."""

from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.horovod.compression import Compression
from flowstone.horovod.gradient_reduction import allreduce_gradients
from flowstone.horovod.mpi_ops import Average
from flowstone.train.optimizer import Optimizer


class _DistributedOptimizer(Optimizer):
    def __init__(self, optimizer, name, use_locking, compression, sparse_as_dense, op):
        if name is None:
            name = f"Distributed{type(optimizer).__name__}"
        super().__init__(use_locking=use_locking, name=name)
        self._optimizer = optimizer
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients, allreduced over the ranks."""
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        grads = [g for g, _ in grads_and_vars]
        reduced = self._allreduce_grads(grads)
        return list(zip(reduced, [v for _, v in grads_and_vars]))

    def _allreduce_grads(self, grads):
        with _ops.name_scope(f"{self.get_name()}_Allreduce"):
            return allreduce_gradients(grads, self._op, self._compression, self._sparse_as_dense)

    def apply_gradients(self, *args, **kwargs):
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="",  # noqa: N802
                         device_sparse="", compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0, groups=None):
    """Wraps `optimizer` (any tf.train.Optimizer): its compute_gradients (and so minimize)
    returns gradients averaged over all ranks (op=hvd.Sum sums them). IndexedSlices gradients
    are allgathered, or made dense first with sparse_as_dense=True. compression=
    hvd.Compression.fp16 sends them as float16."""
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"hvd.DistributedOptimizer wraps a tf.train.Optimizer, got "
                         f"{type(optimizer).__name__}")
    if backward_passes_per_step != 1:
        raise _errors.UnimplementedError(
            None, None, "hvd.DistributedOptimizer(backward_passes_per_step=...) other than 1 is "
            "not implemented in flowstone.horovod (see docs/COMPAT.md); accumulate gradients "
            "over a larger batch instead")
    if gradient_predivide_factor != 1.0:
        raise _errors.UnimplementedError(
            None, None, "hvd.DistributedOptimizer(gradient_predivide_factor=...) is not "
            "implemented in flowstone.horovod (see docs/COMPAT.md)")
    return _DistributedOptimizer(optimizer, name, use_locking, compression, sparse_as_dense, op)
