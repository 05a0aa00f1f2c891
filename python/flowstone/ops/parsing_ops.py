"""tf.io.parse_example and parse_single_example over the C++ ParseExampleV2 and
ParseSingleExample ops (src/ops/io/example_ops.cc), and parse_single_sequence_example over
ParseSequenceExampleV2 (src/ops/io/sequence_example_ops.cc).

Features: FixedLenFeature (a dense tensor), VarLenFeature (a SparseTensor),
FixedLenSequenceFeature (dense, its major dimension as long as the longest record's, the rest
padded), RaggedFeature (a RaggedTensor, its partitions applied here) and SparseFeature (a
SparseTensor whose indices come from index features, put together here from two VarLenFeatures
as TensorFlow does)."""

import collections

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.framework.tensor_shape import as_shape
from flowstone.ops import array_ops, math_ops, sparse_ops
from flowstone.ops.ragged_tensor import RaggedTensor
from flowstone.util.tf_export import tf_export


@tf_export("io.FixedLenFeature", "FixedLenFeature")
class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A feature of a fixed shape; without a default_value it is required."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


@tf_export("io.VarLenFeature", "VarLenFeature")
class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any number of values, parsed into a SparseTensor."""


@tf_export("io.FixedLenSequenceFeature", "FixedLenSequenceFeature")
class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature of any number of values of `shape`, parsed into a dense tensor
    [..., longest, *shape], shorter records padded with default_value (or zeros)."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


@tf_export("io.SparseFeature", "SparseFeature")
class SparseFeature(collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """A SparseTensor whose indices are the values of the int64 feature(s) `index_key` and whose
    values are those of `value_key`; its dense shape is `size`."""

    def __new__(cls, index_key, value_key, dtype, size, already_sorted=False):
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


class _Partition:
    """One row partition of a RaggedFeature, read from the int64 feature `key`."""

    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return f"{type(self).__name__}(key={self.key!r})"

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))


class _UniformRowLength(_Partition):
    """A partition into rows of `length` values (no feature)."""

    def __init__(self, length):
        super().__init__(None)
        self.length = length


@tf_export("io.RaggedFeature")
class RaggedFeature(collections.namedtuple(
        "RaggedFeature", ["dtype", "value_key", "partitions", "row_splits_dtype", "validate"])):
    """A feature parsed into a RaggedTensor: its values (from `value_key`, the feature's own key
    by default) in rows of each record, further partitioned by `partitions` (outermost first),
    each read from an int64 feature or of uniform length."""

    RowSplits = type("RowSplits", (_Partition,), {})
    RowLengths = type("RowLengths", (_Partition,), {})
    RowStarts = type("RowStarts", (_Partition,), {})
    RowLimits = type("RowLimits", (_Partition,), {})
    ValueRowIds = type("ValueRowIds", (_Partition,), {})
    UniformRowLength = _UniformRowLength

    def __new__(cls, dtype, value_key=None, partitions=(), row_splits_dtype=_dtypes.int32,
                validate=False):
        dtype = _dtypes.as_dtype(dtype)
        if dtype not in (_dtypes.int64, _dtypes.float32, _dtypes.string):
            raise ValueError(f"dtype must be one of tf.string, tf.float32, or tf.int64; got "
                             f"{dtype.name}")
        return super().__new__(cls, dtype, value_key, tuple(partitions),
                               _dtypes.as_dtype(row_splits_dtype), validate)


def _ragged_result(feature, key, values, splits, batched):
    """The RaggedTensor of a RaggedFeature from the parsed values and splits of its features
    (key -> (values, row splits of the batch)): the values, then each partition from the
    innermost out, then (batched) the rows of each record."""
    dtype = feature.row_splits_dtype
    value_key = feature.value_key or key
    result = values[value_key]
    record_splits = math_ops.cast(splits[value_key], dtype)
    for partition in reversed(feature.partitions):
        if isinstance(partition, _UniformRowLength):
            length = _ops.convert_to_tensor(partition.length, dtype=dtype)
            result = RaggedTensor.from_uniform_row_length(result, length, validate=False)
            record_splits = record_splits // length
            continue
        if batched:
            # The partition of every record as row lengths, the records' rows one after another.
            lengths = _record_row_lengths(partition, values[partition.key],
                                          splits[partition.key], record_splits)
            result = RaggedTensor.from_row_lengths(result, math_ops.cast(lengths.values, dtype),
                                                   validate=False)
            record_splits = math_ops.cast(lengths.row_splits, dtype)
            continue
        factory = {RaggedFeature.RowSplits: RaggedTensor.from_row_splits,
                   RaggedFeature.RowLengths: RaggedTensor.from_row_lengths,
                   RaggedFeature.RowStarts: RaggedTensor.from_row_starts,
                   RaggedFeature.RowLimits: RaggedTensor.from_row_limits,
                   RaggedFeature.ValueRowIds: RaggedTensor.from_value_rowids}[type(partition)]
        result = factory(result, math_ops.cast(values[partition.key], dtype), validate=False)
    if batched:
        return RaggedTensor.from_row_splits(result, record_splits, validate=False)
    return result


def _record_row_lengths(partition, values, splits, inner_splits):
    """Per record (a ragged [batch, rows] tensor), the lengths of the rows the partition feature
    (`values` of each record at `splits`) makes of the record's inner values (at
    `inner_splits`)."""
    given = RaggedTensor.from_row_splits(values, splits, validate=False)
    if isinstance(partition, RaggedFeature.RowLengths):
        return given
    if isinstance(partition, RaggedFeature.RowSplits):
        return given[:, 1:] - given[:, :-1]
    # Starts and limits: each value's neighbour in its own record, or the record's bound.
    rowids = given.value_rowids()
    positions = array_ops.range(array_ops.size(values, out_type=splits.dtype))
    zero = array_ops.zeros_like(values[:1])
    if isinstance(partition, RaggedFeature.RowLimits):
        first = math_ops.equal(positions, array_ops.gather(splits, rowids))
        previous = array_ops.concat([zero, values[:-1]], 0)
        return given.with_values(values - math_ops.where(first, array_ops.zeros_like(values),
                                                         previous))
    if isinstance(partition, RaggedFeature.RowStarts):
        last = math_ops.equal(positions, array_ops.gather(splits[1:], rowids) - 1)
        counts = math_ops.cast(inner_splits[1:] - inner_splits[:-1], values.dtype)
        following = array_ops.concat([values[1:], zero], 0)
        return given.with_values(math_ops.where(last, array_ops.gather(counts, rowids),
                                                following) - values)
    raise ValueError(f"Flowstone's batched parse_example takes RowLengths, RowSplits, RowStarts, "
                     f"RowLimits and UniformRowLength partitions; got {partition!r} (see "
                     "docs/COMPAT.md)")


class _ParseConfig:
    """The features of one parse as the ops want them: sorted keys, sparse then dense."""

    def __init__(self, features, allow_sequence):
        self.sparse_keys, self.sparse_types = [], []
        self.dense_keys, self.dense_types, self.dense_shapes, self.dense_defaults = [], [], [], []
        self.varlen_keys = []
        self.composites = {}  # SparseFeature key -> the feature
        self.ragged_keys, self.ragged_types = [], []
        self.ragged = {}  # RaggedFeature key -> the feature
        for key in sorted(features):
            feature = features[key]
            if isinstance(feature, RaggedFeature):
                self.ragged[key] = feature
                self._ragged(feature.value_key or key, feature.dtype)
                for partition in feature.partitions:
                    if partition.key is not None:
                        self._ragged(partition.key, _dtypes.int64)
            elif isinstance(feature, VarLenFeature):
                self.varlen_keys.append(key)
                self._sparse(key, feature.dtype)
            elif isinstance(feature, SparseFeature):
                self.composites[key] = feature
                for index_key in _as_list(feature.index_key):
                    self._sparse(index_key, _dtypes.int64)
                self._sparse(feature.value_key, feature.dtype)
            elif isinstance(feature, FixedLenFeature):
                self._dense(key, feature.dtype, as_shape(feature.shape), feature.default_value)
            elif isinstance(feature, FixedLenSequenceFeature):
                if allow_sequence and not feature.allow_missing:
                    raise ValueError(f"Unsupported: FixedLenSequenceFeature requires "
                                     f"allow_missing to be True. (feature {key!r})")
                self._dense(key, feature.dtype, as_shape([None]).concatenate(feature.shape),
                            feature.default_value)
            else:
                raise ValueError(f"Unsupported feature type {type(feature).__name__} for key "
                                 f"{key!r}: use FixedLenFeature, VarLenFeature, SparseFeature or "
                                 "FixedLenSequenceFeature.")

    def _sparse(self, key, dtype):
        if key in self.sparse_keys:
            return  # two SparseFeatures may share an index feature
        self.sparse_keys.append(key)
        self.sparse_types.append(_dtypes.as_dtype(dtype))

    def _ragged(self, key, dtype):
        if key not in self.ragged_keys:
            self.ragged_keys.append(key)
            self.ragged_types.append(_dtypes.as_dtype(dtype))

    def ragged_results(self, outputs, batched):
        """The {key: RaggedTensor} of the ragged outputs (values, then row splits)."""
        n = len(self.ragged_keys)
        values = dict(zip(self.ragged_keys, outputs[:n]))
        splits = dict(zip(self.ragged_keys, outputs[n:2 * n]))
        return {key: _ragged_result(feature, key, values, splits, batched)
                for key, feature in self.ragged.items()}

    def _dense(self, key, dtype, shape, default):
        dtype = _dtypes.as_dtype(dtype)
        self.dense_keys.append(key)
        self.dense_types.append(dtype)
        self.dense_shapes.append(shape)
        self.dense_defaults.append(default)

    def default_tensors(self):
        tensors = []
        for key, dtype, shape, default in zip(self.dense_keys, self.dense_types,
                                              self.dense_shapes, self.dense_defaults):
            name = "key_" + key.replace("/", "_")
            if default is None:
                empty = np.zeros([0], dtype=object if dtype == _dtypes.string
                                 else dtype.as_numpy_dtype)
                tensors.append(_ops.constant(empty, dtype=dtype, name=name))
            elif shape.ndims and shape.dims[0].value is None:
                tensors.append(_ops.constant(default, dtype=dtype, name=name))
            else:
                tensors.append(_ops.constant(default, dtype=dtype, shape=shape.as_list(),
                                             name=name))
        return tensors

    def shape_attr(self):
        return [[-1 if d is None else d for d in s.as_list()] for s in self.dense_shapes]

    def results(self, outputs):
        """The {key: Tensor or SparseTensor} of the ops' outputs."""
        n = len(self.sparse_keys)
        sparse = {key: SparseTensor(outputs[i], outputs[n + i], outputs[2 * n + i])
                  for i, key in enumerate(self.sparse_keys)}
        result = dict(zip(self.dense_keys, outputs[3 * n:3 * n + len(self.dense_keys)]))
        result.update({key: sparse[key] for key in self.varlen_keys})
        for key, feature in self.composites.items():
            result[key] = _combine_sparse_feature(feature, sparse)
        return result


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _combine_sparse_feature(feature, sparse):
    """The SparseTensor of a SparseFeature: the value feature's values at the positions its index
    feature(s) give, behind the record's index in the batch (TensorFlow's sparse_merge)."""
    values = sparse[feature.value_key]
    index_keys, sizes = _as_list(feature.index_key), _as_list(feature.size)
    with _ops.name_scope("SparseFeature_" + feature.value_key.replace("/", "_")):
        batch_rank = values.indices[:, :-1]
        positions = [array_ops.expand_dims(sparse[k].values, 1) for k in index_keys]
        indices = array_ops.concat([batch_rank] + positions, 1)
        shape = array_ops.concat([values.dense_shape[:-1],
                                  _ops.constant(sizes, dtype=_dtypes.int64)], 0)
        result = SparseTensor(indices, values.values, shape)
        return result if feature.already_sorted else sparse_ops.sparse_reorder(result)


def _keys(values, key_name):
    """A constant vector of feature keys."""
    return _ops.constant(np.array(values, dtype=object).reshape([len(values)]),
                         dtype=_dtypes.string, name=key_name)


@tf_export("io.parse_example", "parse_example")
def parse_example(serialized, features, name=None, example_names=None):
    """A dict of the `features` of a batch (a vector) of serialized tf.train.Examples."""
    del example_names
    config = _ParseConfig(features, allow_sequence=True)
    with _ops.name_scope(name or "ParseExample"):
        serialized = _ops.convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        outputs = _ops.apply_op("ParseExampleV2", [
            serialized, _keys([], "names"), _keys(config.sparse_keys, "sparse_keys"),
            _keys(config.dense_keys, "dense_keys"), _keys(config.ragged_keys, "ragged_keys"),
            config.default_tensors()],
            {"num_sparse": len(config.sparse_keys), "sparse_types": config.sparse_types,
             "Tdense": config.dense_types, "dense_shapes": config.shape_attr(),
             "ragged_value_types": config.ragged_types,
             "ragged_split_types": [_dtypes.int64] * len(config.ragged_keys)},
            name="ParseExampleV2").outputs
        first_ragged = 3 * len(config.sparse_keys) + len(config.dense_keys)
        result = config.results(outputs)
        result.update(config.ragged_results(outputs[first_ragged:], batched=True))
        return result


@tf_export("io.parse_single_example", "parse_single_example")
def parse_single_example(serialized, features, name=None, example_names=None):
    """A dict of the `features` of one serialized tf.train.Example."""
    del example_names
    config = _ParseConfig(features, allow_sequence=True)
    with _ops.name_scope(name or "ParseSingleExample"):
        serialized = _ops.convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        outputs = _ops.apply_op("ParseSingleExample", [serialized, config.default_tensors()], {
            "num_sparse": len(config.sparse_keys), "sparse_keys": config.sparse_keys,
            "sparse_types": config.sparse_types, "dense_keys": config.dense_keys,
            "Tdense": config.dense_types, "dense_shapes": config.shape_attr()},
            name="ParseSingleExample").outputs
        result = config.results(outputs)
        if config.ragged:
            # Ragged features come from ParseExampleV2 over a batch of this one record.
            outputs = _ops.apply_op("ParseExampleV2", [
                array_ops.reshape(serialized, [1]), _keys([], "names"), _keys([], "sparse_keys"),
                _keys([], "dense_keys"), _keys(config.ragged_keys, "ragged_keys"), []],
                {"num_sparse": 0, "sparse_types": [], "Tdense": [], "dense_shapes": [],
                 "ragged_value_types": config.ragged_types,
                 "ragged_split_types": [_dtypes.int64] * len(config.ragged_keys)},
                name="ParseExampleV2").outputs
            result.update(config.ragged_results(outputs, batched=False))
        return result



def _parse_sequence(serialized, context_features, sequence_features, name):
    """(context dict, feature list dict, lengths dict) of serialized SequenceExamples."""
    context = _ParseConfig(context_features or {}, allow_sequence=False)
    if context.composites:
        raise ValueError("SparseFeature is not supported in context_features; parse its index "
                         "and value features as VarLenFeatures.")
    list_sparse, list_sparse_types = [], []
    list_dense, list_dense_types, list_dense_shapes, assumed_empty = [], [], [], []
    for key in sorted(sequence_features or {}):
        feature = sequence_features[key]
        if isinstance(feature, VarLenFeature):
            list_sparse.append(key)
            list_sparse_types.append(_dtypes.as_dtype(feature.dtype))
        elif isinstance(feature, (FixedLenSequenceFeature, FixedLenFeature)):
            list_dense.append(key)
            list_dense_types.append(_dtypes.as_dtype(feature.dtype))
            list_dense_shapes.append(as_shape(feature.shape).as_list())
            assumed_empty.append(bool(getattr(feature, "allow_missing", False)))
        else:
            raise ValueError(f"Unsupported sequence feature type {type(feature).__name__} for "
                             f"key {key!r}: use FixedLenSequenceFeature or VarLenFeature.")
    with _ops.name_scope(name or "ParseSequenceExample"):
        serialized = _ops.convert_to_tensor(serialized, dtype=_dtypes.string, name="serialized")
        outputs = _ops.apply_op("ParseSequenceExampleV2", [
            serialized, _keys([], "debug_name"), _keys(context.sparse_keys, "context_sparse_keys"),
            _keys(context.dense_keys, "context_dense_keys"), _keys([], "context_ragged_keys"),
            _keys(list_sparse, "feature_list_sparse_keys"),
            _keys(list_dense, "feature_list_dense_keys"), _keys([], "feature_list_ragged_keys"),
            _ops.constant(np.array(assumed_empty, dtype=bool).reshape([len(assumed_empty)]),
                          dtype=_dtypes.bool, name="feature_list_dense_missing_assumed_empty"),
            context.default_tensors()],
            {"Ncontext_sparse": len(context.sparse_keys),
             "context_sparse_types": context.sparse_types, "Tcontext_dense": context.dense_types,
             "context_dense_shapes": context.shape_attr(),
             "Nfeature_list_sparse": len(list_sparse), "Nfeature_list_dense": len(list_dense),
             "feature_list_sparse_types": list_sparse_types,
             "feature_list_dense_types": list_dense_types,
             "feature_list_dense_shapes": list_dense_shapes,
             "context_ragged_value_types": [], "context_ragged_split_types": [],
             "feature_list_ragged_value_types": [], "feature_list_ragged_split_types": []},
            name="ParseSequenceExampleV2").outputs
        n_context = 3 * len(context.sparse_keys) + len(context.dense_keys)
        context_result = context.results(outputs[:n_context])
        rest = outputs[n_context:]
        ns = len(list_sparse)
        lists = {key: SparseTensor(rest[i], rest[ns + i], rest[2 * ns + i])
                 for i, key in enumerate(list_sparse)}
        lists.update(zip(list_dense, rest[3 * ns:3 * ns + len(list_dense)]))
        lengths = dict(zip(list_dense, rest[3 * ns + len(list_dense):]))
        return context_result, lists, lengths


@tf_export("io.parse_single_sequence_example", "parse_single_sequence_example")
def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """(context, feature_lists): dicts of the features of one serialized SequenceExample."""
    del example_name
    context, lists, _ = _parse_sequence(serialized, context_features, sequence_features,
                                        name or "ParseSingleSequenceExample")
    return context, lists


@tf_export("io.parse_sequence_example")
def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """(context, feature_lists, lengths) of a batch (a vector) of serialized SequenceExamples;
    lengths holds the number of steps of each dense feature list, per record."""
    del example_names
    return _parse_sequence(serialized, context_features, sequence_features, name)
