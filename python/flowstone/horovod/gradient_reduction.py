"""What DistributedOptimizer, DistributedGradientTape and hvd.keras's DistributedOptimizer share:
a list of gradients reduced over the ranks, IndexedSlices allgathered or first made dense. In a
graph on the CPU, each dense gradient's allreduce starts as soon as the gradient exists, so the
reductions overlap with the rest of the backward pass (the background thread fuses those
submitted together); elsewhere the dense ones go in one grouped allreduce per dtype."""

from flowstone.framework.indexed_slices import IndexedSlices
from flowstone import tf_config as _tf_config
from flowstone.horovod.mpi_ops import allreduce, grouped_allreduce, overlapped_allreduce
from flowstone.framework import ops as _ops


def _overlaps():
    """Whether gradients' allreduces start one by one during the backward pass: in graphs
    (eager code runs them one at a time anyway) without GPUs (GPU gradients go to NCCL in one
    grouped allreduce: the split ops have CPU kernels only)."""
    return not _ops.executing_eagerly() and not _tf_config.list_logical_devices("GPU")


def densify(grad):
    """An IndexedSlices gradient as the dense tensor it stands for (rows of repeated indices
    add up); other gradients as they are."""
    if not isinstance(grad, IndexedSlices):
        return grad
    if grad.dense_shape is None:
        raise ValueError("sparse_as_dense needs IndexedSlices gradients with a dense_shape")
    return _ops.convert_to_tensor(grad)


def allreduce_gradients(grads, op, compression, sparse_as_dense=False, name=None,
                        prescale_factor=1.0, postscale_factor=1.0):
    """`grads` (tensors, IndexedSlices or None) reduced over the ranks with `op`, in order;
    None stays None. The scale factors multiply each rank's gradient before the reduction and
    the result after it (IndexedSlices values: both at once, as their allgather adds nothing)."""
    if sparse_as_dense:
        grads = [densify(g) for g in grads]
    dense = [i for i, g in enumerate(grads) if g is not None and not isinstance(g, IndexedSlices)]
    out = list(grads)
    if _overlaps():
        reduced = overlapped_allreduce([grads[i] for i in dense], op=op, compression=compression,
                                       prescale_factor=prescale_factor,
                                       postscale_factor=postscale_factor)
    else:
        reduced = grouped_allreduce([grads[i] for i in dense], op=op, compression=compression,
                                    name=name, prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor)
    for i, r in zip(dense, reduced):
        out[i] = r
    scale = prescale_factor * postscale_factor
    for i, g in enumerate(grads):
        if isinstance(g, IndexedSlices):
            if scale != 1.0:
                g = IndexedSlices(g.values * scale, g.indices, g.dense_shape)
            out[i] = allreduce(g, op=op)
    return out
