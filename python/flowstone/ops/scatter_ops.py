"""Indexing with index vectors and scattering into tensors and variables.

tf.gather_nd, tf.scatter_nd, tf.tensor_scatter_nd_update / _add / _sub / _max / _min,
tf.batch_gather, and the in-place sparse updates of variables (tf.scatter_update / _add / _sub /
_mul / _div / _max / _min, tf.scatter_nd_update / _add / _sub). Index checks, shapes and errors
are the C++ ops' (src/ops/array/scatter_nd_ops.cc, resource_scatter_ops.cc).
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops as _array_ops
from flowstone.ops import manip_ops as _manip_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import reduction_ops as _reduction_ops
from flowstone.util.tf_export import tf_export


def _op(op_type, inputs, scope, attrs=None):
    """Adds the op named exactly after the enclosing name scope, as TensorFlow's wrappers do."""
    return _ops.apply_op(op_type, inputs, attrs, name=scope.rstrip("/") or op_type,
                         exact_name=bool(scope)).outputs[0]


def _indices(value):
    return _ops.convert_to_tensor(value, preferred_dtype=_dtypes.int32, name="indices")


@tf_export("gather_nd", "manip.gather_nd")
def gather_nd(params, indices, name=None, batch_dims=0, bad_indices_policy=""):
    """Slices of `params` at the index vectors in the last dimension of `indices`. With
    batch_dims = b, the first b dims of params and indices are batch dims gathered in step:
    output[n..., i...] = params[n..., indices[n..., i..., :]]."""
    with _ops.name_scope(name, "GatherNd", [params, indices]) as scope:
        params = _ops.convert_to_tensor(params, name="params")
        indices = _indices(indices)
        attrs = {"bad_indices_policy": bad_indices_policy}
        if batch_dims == 0:
            return _op("GatherNd", [params, indices], scope, attrs)
        return _batch_gather_nd(params, indices, int(batch_dims), attrs)


def _batch_gather_nd(params, indices, batch_dims, attrs):
    """gather_nd with batch dims: the batch is flattened into one dim, whose position is
    prepended to every index vector, and the result is reshaped back."""
    depth = indices.shape.as_list()[-1] if indices.shape.ndims else None
    if depth is None:
        raise ValueError("gather_nd with batch_dims needs indices with a known last dimension.")
    if not 0 < batch_dims < indices.shape.ndims:
        raise ValueError(f"batch_dims = {batch_dims} must be in [0, {indices.shape.ndims}), the "
                         f"rank of indices less one.")
    params_shape = _array_ops.shape(params)
    indices_shape = _array_ops.shape(indices, out_type=indices.dtype)
    batch = _reduction_ops.reduce_prod(indices_shape[:batch_dims], keepdims=True)
    flat_params = _array_ops.reshape(
        params, _array_ops.concat([_math_ops.cast(batch, _dtypes.int32),
                                   params_shape[batch_dims:]], 0))
    flat_indices = _array_ops.reshape(
        indices, _array_ops.concat([batch, _ops.constant([-1, depth], indices.dtype)], 0))
    positions = _array_ops.reshape(_array_ops.range(batch[0], dtype=indices.dtype), [-1, 1, 1])
    positions = _manip_ops.broadcast_to(
        positions, _array_ops.concat([_array_ops.shape(flat_indices, out_type=indices.dtype)[:2],
                                      _ops.constant([1], indices.dtype)], 0))
    gathered = _ops.apply_op("GatherNd", [flat_params, _array_ops.concat(
        [positions, flat_indices], 2)], attrs).outputs[0]
    return _array_ops.reshape(gathered, _array_ops.concat(
        [_array_ops.shape(indices)[:-1], params_shape[batch_dims + depth:]], 0))


@tf_export("scatter_nd", "manip.scatter_nd")
def scatter_nd(indices, updates, shape, bad_indices_policy="", name=None):
    """Zeros of `shape` with the slices of `updates` added at `indices` (duplicates add up)."""
    with _ops.name_scope(name, "ScatterNd", [indices, updates, shape]) as scope:
        indices = _indices(indices)
        updates = _ops.convert_to_tensor(updates, name="updates")
        shape = _ops.convert_to_tensor(shape, dtype=indices.dtype, name="shape")
        return _op("ScatterNd", [indices, updates, shape], scope,
                   {"bad_indices_policy": bad_indices_policy})


def _tensor_scatter(op_type, tensor, indices, updates, name):
    with _ops.name_scope(name, op_type, [tensor, indices, updates]) as scope:
        tensor = _ops.convert_to_tensor(tensor, name="tensor")
        updates = _ops.convert_to_tensor(updates, dtype=tensor.dtype, name="updates")
        return _op(op_type, [tensor, _indices(indices), updates], scope)


@tf_export("tensor_scatter_nd_update", "tensor_scatter_update")
def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of `tensor` with the slices at `indices` replaced by `updates`."""
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


@tf_export("tensor_scatter_nd_add", "tensor_scatter_add")
def tensor_scatter_nd_add(tensor, indices, updates, bad_indices_policy="", name=None):
    """A copy of `tensor` with `updates` added at `indices`."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


@tf_export("tensor_scatter_nd_sub", "tensor_scatter_sub")
def tensor_scatter_nd_sub(tensor, indices, updates, bad_indices_policy="", name=None):
    """A copy of `tensor` with `updates` subtracted at `indices`."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


@tf_export("tensor_scatter_nd_max")
def tensor_scatter_nd_max(tensor, indices, updates, bad_indices_policy="", name=None):
    """A copy of `tensor` with each slice at `indices` the maximum of itself and the update."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


@tf_export("tensor_scatter_nd_min")
def tensor_scatter_nd_min(tensor, indices, updates, bad_indices_policy="", name=None):
    """A copy of `tensor` with each slice at `indices` the minimum of itself and the update."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


@tf_export("batch_gather")
def batch_gather(params, indices, name=None):
    """params[b..., indices[b..., j]] for the leading batch dims that params and indices share:
    tf.gather with batch_dims = rank(indices) - 1."""
    with _ops.name_scope(name, "BatchGather", [params, indices]):
        params = _ops.convert_to_tensor(params, name="params")
        indices = _indices(indices)
        rank = indices.shape.ndims
        if rank is None:
            raise ValueError("batch_gather does not allow indices with unknown shape.")
        return _array_ops.gather(params, indices, axis=rank - 1, batch_dims=rank - 1)


# --- sparse updates of variables ------------------------------------------------------------

def _scatter_variable(op_type, ref, indices, updates, name, attrs=None):
    """Adds the in-place update of the variable `ref`; returns its value read after the update
    (TensorFlow's resource variables return such a read too)."""
    handle = getattr(ref, "handle", None)
    if handle is None or handle.dtype != _dtypes.resource:
        raise TypeError(f"{op_type} needs a tf.Variable to update, got {type(ref).__name__}")
    with _ops.name_scope(name, op_type, [indices, updates]) as scope:
        updates = _ops.convert_to_tensor(updates, dtype=ref.dtype, name="updates")
        op = _ops.apply_op(op_type, [handle, _indices(indices), updates], attrs,
                           name=scope.rstrip("/"), exact_name=True)
    with _ops.control_dependencies([op]):
        return ref.read_value()


def _variable_scatter(export_name, op_type, doc):
    def scatter(ref, indices, updates, use_locking=False, name=None):
        return _scatter_variable(op_type, ref, indices, updates, name)

    scatter.__name__ = export_name
    scatter.__qualname__ = export_name
    scatter.__doc__ = doc
    return tf_export(export_name)(scatter)


scatter_add = _variable_scatter("scatter_add", "ResourceScatterAdd",
                                "ref[indices] += updates in place; returns the new value.")
scatter_sub = _variable_scatter("scatter_sub", "ResourceScatterSub",
                                "ref[indices] -= updates in place; returns the new value.")
scatter_mul = _variable_scatter("scatter_mul", "ResourceScatterMul",
                                "ref[indices] *= updates in place; returns the new value.")
scatter_div = _variable_scatter("scatter_div", "ResourceScatterDiv",
                                "ref[indices] /= updates in place; returns the new value.")
scatter_max = _variable_scatter("scatter_max", "ResourceScatterMax",
                                "ref[indices] = max(ref[indices], updates) in place.")
scatter_min = _variable_scatter("scatter_min", "ResourceScatterMin",
                                "ref[indices] = min(ref[indices], updates) in place.")


@tf_export("scatter_update")
def scatter_update(ref, indices, updates, use_locking=True, name=None):
    """ref[indices] = updates in place (rows of ref's first dimension); returns the new value."""
    return _scatter_variable("ResourceScatterUpdate", ref, indices, updates, name)


@tf_export("scatter_nd_update")
def scatter_nd_update(ref, indices, updates, use_locking=True, name=None):
    """Sets the slices of ref at the index vectors in `indices`; returns the new value."""
    return _scatter_variable("ResourceScatterNdUpdate", ref, indices, updates, name,
                             {"use_locking": bool(use_locking)})


@tf_export("scatter_nd_add")
def scatter_nd_add(ref, indices, updates, use_locking=False, name=None):
    """Adds updates to the slices of ref at `indices`; returns the new value."""
    return _scatter_variable("ResourceScatterNdAdd", ref, indices, updates, name,
                             {"use_locking": bool(use_locking)})


@tf_export("scatter_nd_sub")
def scatter_nd_sub(ref, indices, updates, use_locking=False, name=None):
    """Subtracts updates from the slices of ref at `indices`; returns the new value."""
    return _scatter_variable("ResourceScatterNdSub", ref, indices, updates, name,
                             {"use_locking": bool(use_locking)})
