"""hvd.keras.DistributedOptimizer: a Keras optimizer whose gradients are allreduced over the
ranks (after its own clipping, as Horovod's get_gradients does) before they are applied."""

from flowstone import errors
from flowstone.horovod.compression import Compression
from flowstone.horovod.gradient_reduction import allreduce_gradients
from flowstone.horovod.mpi_ops import Average
from flowstone.keras import optimizers as _optimizers


def _distributed_class(base, compression, op, sparse_as_dense):
    def apply_gradients(self, grads_and_vars, name=None):
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        reduced = allreduce_gradients([g for g, _ in pairs], op, compression, sparse_as_dense,
                                      name=f"{self.name}_DistributedAllreduce")
        return base.apply_gradients(self, list(zip(reduced, [v for _, v in pairs])), name)

    return type(base.__name__, (base,), {"apply_gradients": apply_gradients})


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",  # noqa: N802
                         compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=Average):
    """A copy of the Keras `optimizer` (same class and configuration) that averages (op=hvd.Sum:
    sums) the gradients over all ranks before applying them."""
    if not isinstance(optimizer, _optimizers.Optimizer):
        raise ValueError(f"hvd.keras.DistributedOptimizer wraps a tf.keras optimizer, got "
                         f"{type(optimizer).__name__}")
    if backward_passes_per_step != 1:
        raise errors.UnimplementedError(
            None, None, "hvd.keras.DistributedOptimizer(backward_passes_per_step=...) other "
            "than 1 is not implemented in flowstone.horovod (see docs/COMPAT.md)")
    config = optimizer.get_config()
    if name is not None:
        config["name"] = name
    return _distributed_class(type(optimizer), compression, op, sparse_as_dense).from_config(config)
