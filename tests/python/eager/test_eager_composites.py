"""SparseTensors and RaggedTensors while executing eagerly: iterating datasets of them, and
tf.function arguments and results that are composites (flattened to their component tensors in
the function's signature), with and without an input_signature of TypeSpecs."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

Dataset = tf.data.Dataset


def _example(values):
    return tf.train.Example(features=tf.train.Features(feature={
        "f": tf.train.Feature(int64_list=tf.train.Int64List(value=values))})).SerializeToString()


def test_iterating_parsed_var_len_features_gives_sparse_tensors():
    records = [_example([1, 2]), _example([]), _example([3, 4, 5])]
    dataset = Dataset.from_tensor_slices(records).map(
        lambda s: tf.io.parse_single_example(s, {"f": tf.io.VarLenFeature(tf.int64)}))
    elements = [e["f"] for e in dataset]
    assert all(isinstance(e, tf.SparseTensor) for e in elements)
    assert [e.values.numpy().tolist() for e in elements] == [[1, 2], [], [3, 4, 5]]
    assert [e.dense_shape.numpy().tolist() for e in elements] == [[2], [0], [3]]
    (batch,) = list(dataset.batch(3))
    np.testing.assert_array_equal(tf.sparse.to_dense(batch["f"]).numpy(),
                                  [[1, 2, 0], [0, 0, 0], [3, 4, 5]])


def test_iterating_ragged_batches_and_unbatching_them():
    dataset = Dataset.range(5).map(lambda x: tf.fill([x], x)).ragged_batch(2)
    batches = list(dataset)
    assert all(isinstance(b, tf.RaggedTensor) for b in batches)
    assert [b.to_list() for b in batches] == [[[], [1]], [[2, 2], [3, 3, 3]], [[4] * 4]]
    rows = [r.numpy().tolist() for r in dataset.unbatch()]
    assert rows == [[], [1], [2, 2], [3, 3, 3], [4] * 4]


def test_single_element_reduce_and_numpy_iterator():
    rt = tf.ragged.constant([[1, 2], [3]])
    sp = tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 3])
    got = Dataset.from_tensors({"r": rt, "s": sp}).get_single_element()
    assert got["r"].to_list() == [[1, 2], [3]]
    np.testing.assert_array_equal(got["s"].indices.numpy(), [[0, 1], [1, 0]])
    total = Dataset.from_tensor_slices(rt).reduce(np.int32(0),
                                                  lambda s, r: s + tf.reduce_sum(r))
    assert int(total.numpy()) == 6
    # As TensorFlow's: a SparseTensor comes out dense, a RaggedTensor as an array of rows.
    (dense,) = list(Dataset.from_tensors(sp).as_numpy_iterator())
    np.testing.assert_array_equal(dense, [[0, 1, 0], [2, 0, 0]])
    (rows,) = list(Dataset.from_tensors(rt).as_numpy_iterator())
    assert [r.tolist() for r in rows] == [[1, 2], [3]]


SIGNATURE = [tf.SparseTensorSpec([None, 3], tf.float32), tf.RaggedTensorSpec([None, None],
                                                                            tf.int32)]


def test_function_with_composite_input_signature():
    @tf.function(input_signature=SIGNATURE)
    def f(sp, rt):
        return tf.sparse.reduce_sum(sp), rt * 2, sp

    sp = tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 3])
    total, doubled, same = f(sp, tf.ragged.constant([[1, 2], [3]]))
    assert float(total.numpy()) == 3.0
    assert isinstance(doubled, tf.RaggedTensor) and doubled.to_list() == [[2, 4], [6]]
    assert isinstance(same, tf.SparseTensor)
    np.testing.assert_array_equal(same.dense_shape.numpy(), [2, 3])
    # Another sparse of the signature's shape and more rows reuses the one trace.
    f(tf.SparseTensor([[4, 2]], [5.0], [5, 3]), tf.ragged.constant([[1], [], [2, 3]]))
    assert f.experimental_get_tracing_count() == 1
    inputs = f.get_concrete_function().inputs
    assert [t.dtype for t in inputs] == [tf.int64, tf.float32, tf.int64, tf.int32, tf.int64]
    assert [t.shape.as_list() for t in inputs] == [[None, 2], [None], [2], [None], [None]]


def test_function_rejects_values_outside_its_signature():
    @tf.function(input_signature=SIGNATURE)
    def f(sp, rt):
        return rt

    rt = tf.ragged.constant([[1, 2], [3]])
    with pytest.raises(TypeError, match="incompatible with input_signature"):
        f(rt, rt)
    wrong_rank = tf.SparseTensor([[0, 0, 0]], [1.0], [1, 1, 3])
    with pytest.raises(TypeError, match="incompatible with input_signature"):
        f(wrong_rank, rt)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def dense(x):
        return x

    with pytest.raises(TypeError, match="incompatible with input_signature"):
        dense(tf.SparseTensor([[0, 1]], [1.0], [2, 3]))


def test_function_without_signature_traces_per_composite_type():
    @tf.function
    def add_one(rt):
        return rt + 1

    assert add_one(tf.ragged.constant([[1, 2], [3]])).to_list() == [[2, 3], [4]]
    assert add_one(tf.ragged.constant([[1, 2], [3]])).to_list() == [[2, 3], [4]]
    assert add_one.experimental_get_tracing_count() == 1
    assert add_one(tf.ragged.constant([[[1.5]]], ragged_rank=1)).to_list() == [[[2.5]]]
    assert add_one.experimental_get_tracing_count() == 2


@requires_tensorflow
def test_function_results_match_tensorflow():
    script = """
        import json
        import tensorflow as tf
        @tf.function(input_signature=[tf.SparseTensorSpec([None, 3], tf.float32),
                                      tf.RaggedTensorSpec([None, None], tf.int32)])
        def f(sp, rt):
            dense = tf.sparse.to_dense(sp)
            return tf.reduce_sum(dense, axis=1), tf.reduce_sum(rt, axis=1), rt[:, :1]
        sp = tf.SparseTensor([[0, 1], [2, 0], [2, 2]], [1.5, 2.0, -1.0], [3, 3])
        rt = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
        a, b, c = f(sp, rt)
        print(json.dumps([a.numpy().tolist(), b.numpy().tolist(), c.to_list(),
                          repr(f.input_signature)]))
    """
    theirs = json.loads(run_tensorflow(script).strip().splitlines()[-1])

    @tf.function(input_signature=SIGNATURE)
    def f(sp, rt):
        dense = tf.sparse.to_dense(sp)
        return tf.reduce_sum(dense, axis=1), tf.reduce_sum(rt, axis=1), rt[:, :1]

    sp = tf.SparseTensor([[0, 1], [2, 0], [2, 2]], [1.5, 2.0, -1.0], [3, 3])
    a, b, c = f(sp, tf.ragged.constant([[1, 2], [3], [4, 5, 6]]))
    assert [a.numpy().tolist(), b.numpy().tolist(), c.to_list()] == theirs[:3]
    assert repr(tuple(f.input_signature)) == theirs[3]
