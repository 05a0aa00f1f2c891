"""Conformance cases for the tf.data ops (see op_cases.py). A dataset is a variant, which can be
neither fed nor fetched, so each case builds a pipeline around its op (`build`) from fed tensors:
the whole dataset is batched into one element, read by an iterator initialized in the same run.
tests/python/data/test_data_dataset.py covers ordering, epochs, re-initialization and errors."""

import numpy as np

import flowstone as tf
from op_cases import Case, rand

Dataset = tf.data.Dataset


def _all(dataset):
    """The op whose output is the whole of `dataset` (its first component) as one batch, read by
    an iterator that a control dependency starts in the same run."""
    iterator = dataset.batch(1000).make_initializable_iterator()
    with tf.control_dependencies([iterator.initializer]):
        return tf.identity(_first(iterator.get_next())).op


def _first_batch(dataset):
    """The op whose output is the first element of `dataset` (already a batch)."""
    iterator = dataset.make_initializable_iterator()
    with tf.control_dependencies([iterator.initializer]):
        return tf.identity(iterator.get_next()).op


def _first(structure):
    return structure[0] if isinstance(structure, tuple) else structure


def _one_shot_first():
    dataset = Dataset.from_tensor_slices(tf.constant([[1.5, 2.5], [3.5, 4.5]]))
    iterator = dataset.make_one_shot_iterator()
    return tf.identity(iterator.get_next()).op


def _through_string_handle(x, op):
    """The op whose output is `x` read by a feedable iterator (op: IteratorFromStringHandle or
    its V2) over the string handle of an iterator of the whole of `x` in one batch."""
    iterator = Dataset.from_tensor_slices(x).batch(1000).make_initializable_iterator()
    resource = getattr(tf.raw_ops, op)(string_handle=iterator.string_handle(),
                                       output_types=[x.dtype], output_shapes=[[None, 2]])
    element = tf.raw_ops.IteratorGetNext(iterator=resource, output_types=[x.dtype],
                                         output_shapes=[[None, 2]])
    with tf.control_dependencies([iterator.initializer]):
        return tf.identity(element[0]).op


def _i64(x):
    return np.array(x, np.int64)


X = rand(6, 2)

# A tf.train.Example with label: int64_list [7] and box: float_list [0.25, 0.5, 1.5], serialized by
# TensorFlow (tests/python/data/test_data_example.py has the whole record).
EXAMPLE = bytes.fromhex("0a290a0e0a056c6162656c12051a030a01070a170a03626f781210120e0a0c0000803e"
                        "0000003f0000c03f")

# A tf.train.SequenceExample with context label: [7] and feature list x: [[1.0], [2.0]].
SEQUENCE_EXAMPLE = bytes.fromhex("0a100a0e0a056c6162656c12051a030a0107121b0a190a017812140a0812060a04"
                                 "0000803f0a0812060a0400000040")

CASES = [
    Case("TensorSliceDataset", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x))),
    Case("TensorDataset", [X], lambda x: x[None], build=lambda x: _all(Dataset.from_tensors(x))),
    Case("RangeDataset", [_i64(2), _i64(9)], lambda a, b: np.arange(2, 9, 2),
         build=lambda a, b: _all(Dataset.range(a, b, 2))),
    Case("MapDataset", [X, np.array(3.0)], lambda x, s: x * s + 1,
         build=lambda x, s: _all(Dataset.from_tensor_slices(x).map(lambda r: r * s + 1))),
    Case("ParallelMapDatasetV2", [X], lambda x: x ** 2,
         build=lambda x: _all(Dataset.from_tensor_slices(x).map(lambda r: r * r,
                                                                num_parallel_calls=3))),
    Case("MapAndBatchDataset", [X], lambda x: x[:4] ** 2,
         build=lambda x: _first_batch(Dataset.from_tensor_slices(x).apply(
             tf.data.experimental.map_and_batch(lambda r: r * r, 4, num_parallel_calls=2)))),
    Case("FilterDataset", [X], lambda x: x[x[:, 0] > 0],
         build=lambda x: _all(Dataset.from_tensor_slices(x).filter(lambda r: r[0] > 0))),
    Case("FlatMapDataset", [X], lambda x: np.repeat(x, 2, axis=0),
         build=lambda x: _all(Dataset.from_tensor_slices(x).flat_map(
             lambda r: Dataset.from_tensors(r).repeat(2)))),
    Case("InterleaveDataset", [X[:2]], lambda x: x[[0, 1, 0, 1]],
         build=lambda x: _all(Dataset.from_tensor_slices(x).interleave(
             lambda r: Dataset.from_tensors(r).repeat(2), cycle_length=2, block_length=1))),
    Case("BatchDatasetV2", [X], lambda x: x[:4],
         build=lambda x: _first_batch(Dataset.from_tensor_slices(x).batch(4))),
    Case("PaddedBatchDatasetV2", [X], lambda x: np.concatenate([x[:3], np.zeros((3, 1))], 1),
         build=lambda x: _first_batch(Dataset.from_tensor_slices(x).padded_batch(3, [3]))),
    Case("CacheDataset", [X[:2]], lambda x: np.concatenate([x, x]),
         build=lambda x: _all(Dataset.from_tensor_slices(x).cache().repeat(2))),
    Case("RepeatDataset", [X[:2]], lambda x: np.concatenate([x, x, x]),
         build=lambda x: _all(Dataset.from_tensor_slices(x).repeat(3))),
    Case("TakeDataset", [X], lambda x: x[:4],
         build=lambda x: _all(Dataset.from_tensor_slices(x).take(4))),
    Case("SkipDataset", [X], lambda x: x[4:],
         build=lambda x: _all(Dataset.from_tensor_slices(x).skip(4))),
    Case("ShardDataset", [X], lambda x: x[1::2],
         build=lambda x: _all(Dataset.from_tensor_slices(x).shard(2, 1))),
    # A buffer of one keeps the order, which makes the output checkable.
    Case("ShuffleDataset", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x).shuffle(1, seed=3))),
    Case("PrefetchDataset", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x).prefetch(2))),
    Case("ZipDataset", [X, X[:4, 0]], lambda x, y: x[:4],
         build=lambda x, y: _all(Dataset.zip((Dataset.from_tensor_slices(x),
                                              Dataset.from_tensor_slices(y))))),
    Case("ConcatenateDataset", [X[:2], X[4:]], lambda a, b: np.concatenate([a, b]),
         build=lambda a, b: _all(Dataset.from_tensor_slices(a).concatenate(
             Dataset.from_tensor_slices(b)))),
    Case("IteratorV2", [X], lambda x: x, build=lambda x: _all(Dataset.from_tensor_slices(x))),
    Case("MakeIterator", [X], lambda x: x, build=lambda x: _all(Dataset.from_tensor_slices(x))),
    Case("IteratorGetNext", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x))),
    Case("IteratorToStringHandle", [X], lambda x: x,
         build=lambda x: _through_string_handle(x, "IteratorFromStringHandleV2")),
    Case("IteratorFromStringHandleV2", [X], lambda x: x,
         build=lambda x: _through_string_handle(x, "IteratorFromStringHandleV2")),
    Case("IteratorFromStringHandle", [X], lambda x: x,
         build=lambda x: _through_string_handle(x, "IteratorFromStringHandle")),
    Case("OneShotIterator", [], lambda: np.array([1.5, 2.5], np.float32),
         build=_one_shot_first),
    Case("ReduceDataset", [X], lambda x: x.sum(axis=0), rtol=1e-12,
         build=lambda x: Dataset.from_tensor_slices(x).reduce(
             tf.constant(np.zeros(2)), lambda s, r: s + r).op),
    Case("UnbatchDataset", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x).batch(4).unbatch())),
    Case("WindowDataset", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x).window(4).flat_map(lambda w: w))),
    Case("IgnoreErrorsDataset", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x).ignore_errors())),
    Case("ParseExampleV2", [np.array([EXAMPLE, EXAMPLE], dtype=object)],
         lambda s: (np.array([[0, 0], [1, 0]], np.int64), np.array([7, 7], np.int64),
                    np.array([2, 1], np.int64), np.array([[0.25, 0.5, 1.5]] * 2, np.float32)),
         outputs=4, build=lambda s: tf.io.parse_example(s, {
             "box": tf.io.FixedLenFeature([3], tf.float32),
             "label": tf.io.VarLenFeature(tf.int64)})["box"].op),
    Case("ParseSequenceExampleV2", [np.array(SEQUENCE_EXAMPLE, dtype=object)],
         lambda s: (np.array(7, np.int64), np.array([[1.0], [2.0]], np.float32),
                    np.array(2, np.int64)),
         outputs=3, build=lambda s: tf.io.parse_single_sequence_example(
             s, {"label": tf.io.FixedLenFeature([], tf.int64)},
             {"x": tf.io.FixedLenSequenceFeature([1], tf.float32)})[0]["label"].op),
    Case("ParseSingleExample", [np.array(EXAMPLE, dtype=object)],
         lambda s: (np.array([0.25, 0.5, 1.5], np.float32), np.array(7, np.int64)), outputs=2,
         build=lambda s: tf.io.parse_single_example(s, {
             "box": tf.io.FixedLenFeature([3], tf.float32),
             "label": tf.io.FixedLenFeature([], tf.int64)})["box"].op),
]
