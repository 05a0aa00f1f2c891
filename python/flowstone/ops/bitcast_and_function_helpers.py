"""Small top-level TF1 names: tf.bitcast, tf.timestamp, tf.fingerprint and
tf.extract_volume_patches (one C++ op each), and the function helpers tf.recompute_grad and
tf.vectorized_map, composed as docs/COMPAT.md describes."""

import functools

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import functional_ops
from flowstone.util import nest
from flowstone.util.tf_export import tf_export


@tf_export("bitcast")
def bitcast(input, type, name=None):  # noqa: A002 - TensorFlow's argument names
    """The bytes of `input` as elements of `type`: a wider input gains a last dimension, a
    narrower one loses its last dimension (which must hold one element of `type`)."""
    with _ops.name_scope(name, "Bitcast", [input]) as scope:
        return _ops.apply_op("Bitcast", [_ops.convert_to_tensor(input, name="input")],
                             {"type": _dtypes.as_dtype(type)}, name=scope.rstrip("/"),
                             exact_name=True).outputs[0]


@tf_export("timestamp")
def timestamp(name=None):
    """A float64 scalar: seconds since the Unix epoch when the op runs."""
    return _ops.apply_op("Timestamp", [], name=name or "Timestamp").outputs[0]


@tf_export("recompute_grad")
def recompute_grad(f):
    """`f` for use where TensorFlow recomputes its forward pass in the backward pass to save
    memory. Flowstone runs `f` once and keeps its activations (the gradients are the same; the
    memory saving is not made: docs/COMPAT.md)."""
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        return f(*args, **kwargs)

    return wrapped


@tf_export("vectorized_map")
def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """fn applied to each slice of `elems` along dimension 0, results stacked. TensorFlow
    vectorizes fn (pfor); Flowstone runs it as tf.map_fn does, one slice per loop iteration, with
    the output structure and dtypes found by tracing fn on the first slice (docs/COMPAT.md)."""
    del fallback_to_while_loop, warn
    flat = [_ops.convert_to_tensor(e) for e in nest.flatten(elems)]
    with _ops.name_scope("vectorized_map"):
        first = nest.pack_sequence_as(elems, [t[0] for t in flat])
        signature = nest.map_structure(lambda t: _ops.convert_to_tensor(t).dtype, fn(first))
    return functional_ops.map_fn(fn, nest.pack_sequence_as(elems, flat), dtype=signature)


@tf_export("extract_volume_patches")
def extract_volume_patches(input, ksizes, strides, padding, name=None):  # noqa: A002
    """The ksizes[1:4] patches of an NDHWC volume at every strides[1:4] voxels, flattened into
    the depth dimension."""
    return _ops.apply_op("ExtractVolumePatches", [_ops.convert_to_tensor(input, name="input")],
                         {"ksizes": [int(k) for k in ksizes], "strides": [int(s) for s in strides],
                          "padding": padding}, name=name or "ExtractVolumePatches").outputs[0]


@tf_export("fingerprint")
def fingerprint(data, method="farmhash64", name=None):
    """A 64-bit fingerprint of each row (along dimension 0) of `data`, as [rows, 8] uint8
    (little-endian), with TensorFlow's method "farmhash64"."""
    return _ops.apply_op("Fingerprint", [_ops.convert_to_tensor(data, name="data"),
                                         _ops.convert_to_tensor(method, name="method")],
                         name=name or "Fingerprint").outputs[0]
