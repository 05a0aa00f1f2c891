"""Horovod's collectives as graph ops: allreduce, grouped_allreduce, allgather, broadcast,
alltoall, and the rank/size ops. Each wraps one C++ op (src/ops/distributed/horovod_ops.cc);
every rank must build the same collectives with the same names, which the names below derive
from the tensors' names as Horovod's do."""

import re
import warnings

from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.framework.indexed_slices import IndexedSlices
from flowstone.horovod import basics as _basics
from flowstone.horovod.compression import Compression
from flowstone.ops import math_ops as _math_ops

# Horovod's reduce ops, as the HorovodAllreduce op's reduce_op attr numbers them.
Average = 0
Sum = 1
Adasum = 2


def _normalize_name(name):
    """Node names from tensor names: 'dense/kernel:0' -> 'dense_kernel_0'."""
    return re.sub("[^a-zA-Z0-9_]", "_", name)


def _reduce_op(op, average):
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of "
                             "them.")
        return op
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                      DeprecationWarning, stacklevel=3)
        return Average if average else Sum
    return Average


def _check_op(op):
    if op == Adasum:
        raise _errors.UnimplementedError(
            None, None, "hvd.Adasum is not implemented in flowstone.horovod; use op=hvd.Average "
            "or op=hvd.Sum (see docs/COMPAT.md)")
    if op not in (Average, Sum):
        raise ValueError(f"op must be hvd.Average or hvd.Sum, got {op!r}")


def _apply(op_type, inputs, attrs, name, default_prefix, tensor):
    # Eager collectives run one at a time in program order, so they need no distinct names.
    if name is None and not _ops.executing_eagerly():
        name = f"{default_prefix}_{_normalize_name(tensor.name)}"
    return _ops.apply_op(op_type, inputs, attrs, name=name)


def allreduce(tensor, average=None, device_dense="", device_sparse="",
              compression=Compression.none, op=None, prescale_factor=1.0, postscale_factor=1.0,
              name=None):
    """The tensor reduced over all ranks: their average (op=hvd.Average, the default) or sum
    (op=hvd.Sum). An IndexedSlices is allgathered instead (its values divided by size() for an
    average). `compression=hvd.Compression.fp16` sends floating-point tensors as float16."""
    op = _reduce_op(op, average)
    _check_op(op)
    if isinstance(tensor, IndexedSlices):
        values = allgather(tensor.values)
        indices = allgather(tensor.indices)
        if op == Average:
            size = _ops.convert_to_tensor(_basics.size(), dtype=values.dtype)
            values = _math_ops.divide(values, size)
        return IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    tensor = _ops.convert_to_tensor(tensor)
    compressed, ctx = compression.compress(tensor)
    reduced = _apply("HorovodAllreduce", [compressed],
                     {"reduce_op": op, "prescale_factor": float(prescale_factor),
                      "postscale_factor": float(postscale_factor)},
                     name, "HorovodAllreduce", tensor).outputs[0]
    return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="",
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, name=None):
    """allreduce of every tensor in the list, negotiated together so that they are fused into
    as few transfers as HOROVOD_FUSION_THRESHOLD allows. Tensors are grouped by dtype (after
    compression); the results come back in the input order."""
    op = _reduce_op(op, average)
    _check_op(op)
    tensors = [_ops.convert_to_tensor(t) for t in tensors]
    if not tensors:
        return []
    compressed = [compression.compress(t) for t in tensors]
    by_dtype = {}
    for i, (t, _) in enumerate(compressed):
        by_dtype.setdefault(t.dtype, []).append(i)
    results = [None] * len(tensors)
    for dtype, indices in by_dtype.items():
        group_name = name if name is None or len(by_dtype) == 1 else f"{name}_{dtype.name}"
        node = _apply("HorovodGroupedAllreduce", [[compressed[i][0] for i in indices]],
                      {"reduce_op": op, "prescale_factor": float(prescale_factor),
                       "postscale_factor": float(postscale_factor)},
                      group_name, "HorovodGroupedAllreduce", tensors[indices[0]])
        for out, i in zip(node.outputs, indices):
            results[i] = compression.decompress(out, compressed[i][1])
    return results


def overlapped_allreduce(tensors, compression=Compression.none, op=None, prescale_factor=1.0,
                         postscale_factor=1.0):
    """The tensors allreduced as grouped_allreduce does, each submitted as soon as it is
    computed and awaited where its result is used (HorovodAllreduceStart / HorovodAllreduceDone),
    so a backward pass's allreduces overlap with the rest of it, as Horovod's asynchronous ops
    do. Graph mode only: each Start runs early in the plan."""
    op = _reduce_op(op, None)
    _check_op(op)
    attrs = {"reduce_op": op, "prescale_factor": float(prescale_factor),
             "postscale_factor": float(postscale_factor)}
    results = []
    for tensor in tensors:
        tensor = _ops.convert_to_tensor(tensor)
        compressed, ctx = compression.compress(tensor)
        handle = _apply("HorovodAllreduceStart", [compressed], attrs, None, "HorovodAllreduce",
                        tensor).outputs[0]
        reduced = _ops.apply_op("HorovodAllreduceDone", [handle, compressed],
                                name=f"{handle.op.name}_done").outputs[0]
        results.append(compression.decompress(reduced, ctx))
    return results


def allgather(tensor, name=None):
    """The ranks' tensors concatenated along the first dimension, in rank order; the first
    dimensions may differ between ranks, the others must agree."""
    tensor = _ops.convert_to_tensor(tensor)
    return _apply("HorovodAllgather", [tensor], None, name, "HorovodAllgather",
                  tensor).outputs[0]


def broadcast(tensor, root_rank, name=None):
    """root_rank's tensor, on every rank."""
    tensor = _ops.convert_to_tensor(tensor)
    return _apply("HorovodBroadcast", [tensor], {"root_rank": int(root_rank)}, name,
                  "HorovodBroadcast", tensor).outputs[0]


def alltoall(tensor, splits=None, name=None):
    """Sends splits[r] rows of the tensor (the first dimension divided evenly when splits is
    None) to rank r and returns the rows received, concatenated in rank order. With splits, also
    returns how many rows came from each rank."""
    tensor = _ops.convert_to_tensor(tensor)
    splits_tensor = _ops.convert_to_tensor(
        [] if splits is None else splits, dtype=_dtypes.int32)
    op = _apply("HorovodAlltoall", [tensor, splits_tensor], None, name, "HorovodAlltoall", tensor)
    if splits is None:
        return op.outputs[0]
    return op.outputs[0], op.outputs[1]


def _scalar_op(op_type, name):
    return _ops.apply_op(op_type, [], name=name or op_type).outputs[0]


def rank_op(name=None):
    """This process's rank as an int32 tensor, read when the graph runs."""
    return _scalar_op("HorovodRank", name)


def size_op(name=None):
    return _scalar_op("HorovodSize", name)


def local_rank_op(name=None):
    return _scalar_op("HorovodLocalRank", name)


def local_size_op(name=None):
    return _scalar_op("HorovodLocalSize", name)
