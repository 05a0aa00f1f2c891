"""hvd.DistributedOptimizer: wraps a tf.train optimizer so that compute_gradients returns the
gradients averaged (or summed) over all ranks, in one grouped allreduce per dtype so that the
background thread fuses them."""

from flowstone.framework import ops as _ops
from flowstone.horovod.compression import Compression
from flowstone.horovod.gradient_aggregation import LocalGradientAggregation
from flowstone.horovod.gradient_reduction import allreduce_gradients
from flowstone.horovod.mpi_ops import Average
from flowstone.train.optimizer import Optimizer


class _DistributedOptimizer(Optimizer):
    def __init__(self, optimizer, name, use_locking, compression, sparse_as_dense, op,
                 predivide_factor, aggregation):
        if name is None:
            name = f"Distributed{type(optimizer).__name__}"
        super().__init__(use_locking=use_locking, name=name)
        self._optimizer = optimizer
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op
        self._predivide_factor = predivide_factor
        self._aggregation = aggregation

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients, allreduced over the ranks (with
        backward_passes_per_step=N: accumulated locally, and allreduced every N-th run)."""
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        grads = [g for g, _ in grads_and_vars]
        if self._aggregation is None:
            reduced = self._allreduce_grads(grads)
        else:
            with _ops.name_scope(f"{self.get_name()}_Aggregation"):
                reduced = self._aggregation.reduce(grads, self._allreduce_grads)
        return list(zip(reduced, [v for _, v in grads_and_vars]))

    def _allreduce_grads(self, grads):
        # Horovod's predivide: each rank's gradient is divided by the factor before the sum and
        # the sum multiplied by it after (then averaged over the ranks), to keep fp16 sums in range.
        with _ops.name_scope(f"{self.get_name()}_Allreduce"):
            return allreduce_gradients(grads, self._op, self._compression, self._sparse_as_dense,
                                       prescale_factor=1.0 / self._predivide_factor,
                                       postscale_factor=self._predivide_factor)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        if self._aggregation is None:
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name)
        # The counter is read after this run's gradients (and so its accumulation) exist.
        with _ops.control_dependencies([g for g, _ in grads_and_vars if g is not None]):
            return self._aggregation.apply(
                lambda: self._optimizer.apply_gradients(grads_and_vars, global_step, name),
                global_step)

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
    hvd.Compression.fp16 sends them as float16.

    backward_passes_per_step=N accumulates N runs' gradients locally (in local variables: run
    tf.local_variables_initializer()) and allreduces and applies them every N-th run; their sum
    is applied, or their mean with average_aggregated_gradients=True. gradient_predivide_factor=f
    (op=Average only) divides the gradients by f before the sum and multiplies by f after."""
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"hvd.DistributedOptimizer wraps a tf.train.Optimizer, got "
                         f"{type(optimizer).__name__}")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if gradient_predivide_factor <= 0:
        raise ValueError(f"gradient_predivide_factor must be positive, got "
                         f"{gradient_predivide_factor}")
    aggregation = None
    if backward_passes_per_step != 1:
        aggregation = LocalGradientAggregation(backward_passes_per_step,
                                               average_aggregated_gradients)
    return _DistributedOptimizer(optimizer, name, use_locking, compression, sparse_as_dense, op,
                                 float(gradient_predivide_factor), aggregation)
