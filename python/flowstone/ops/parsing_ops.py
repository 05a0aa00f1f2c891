"""tf.io.parse_single_example over the C++ ParseSingleExample op (dense features only)."""

import collections

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import as_shape
from flowstone.util.tf_export import tf_export


@tf_export("io.FixedLenFeature", "FixedLenFeature")
class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A feature of a fixed shape; without a default_value it is required."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


@tf_export("io.parse_single_example", "parse_single_example")
def parse_single_example(serialized, features, name=None, example_names=None):
    """A dict of the `features` (FixedLenFeatures) of one serialized tf.train.Example."""
    del example_names
    keys = sorted(features)
    for key in keys:
        if not isinstance(features[key], FixedLenFeature):
            raise NotImplementedError(
                f"Feature {key!r} is a {type(features[key]).__name__}: only FixedLenFeature is "
                "parsed so far (VarLenFeature needs SparseTensor, which Flowstone lacks).")
    defaults, shapes = [], []
    with _ops.name_scope(name or "ParseSingleExample"):
        for key in keys:
            feature = features[key]
            dtype = _dtypes.as_dtype(feature.dtype)
            shape = as_shape(feature.shape)
            shapes.append(shape.as_proto_dims())
            if feature.default_value is None:
                default = np.zeros([0], dtype=object if dtype == _dtypes.string
                                   else dtype.as_numpy_dtype)
                defaults.append(_ops.constant(default, dtype=dtype, name="key_" + key))
            else:
                defaults.append(_ops.constant(feature.default_value, dtype=dtype,
                                              shape=shape.as_list(), name="key_" + key))
        outputs = _ops.apply_op("ParseSingleExample", [
            _ops.convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized"), defaults],
            {"dense_keys": keys, "dense_shapes": shapes},
            name="ParseSingleExample").outputs
    return dict(zip(keys, outputs))
