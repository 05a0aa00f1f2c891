"""SparseTensor and RaggedTensor elements through tf.data (graph mode): sources, map (the
tf.Example VarLenFeature pipeline), batch / unbatch / ragged_batch, the other transformations,
TF1 iterators, each compared with numpy and, where it is installed, real TensorFlow's output."""

import json
import os
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import requires_tensorflow, run_tensorflow  # noqa: E402
from dataset_drain import drain  # noqa: E402

Dataset = tf.data.Dataset


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _example(values):
    return tf.train.Example(features=tf.train.Features(feature={
        "f": tf.train.Feature(int64_list=tf.train.Int64List(value=values))})).SerializeToString()


RECORDS = [_example([1, 2]), _example([]), _example([3, 4, 5])]


def _drain(dataset):
    return drain(dataset, raise_errors=True)


def _render(value):
    """A fetched element as JSON-able lists (SparseTensorValue: its three arrays)."""
    if isinstance(value, tf.SparseTensorValue):
        return {"sp": [np.asarray(v).tolist() for v in value]}
    if isinstance(value, tf.ragged.RaggedTensorValue):
        return {"rt": value.to_list()}
    if isinstance(value, dict):
        return {k: _render(v) for k, v in sorted(value.items())}
    if isinstance(value, tuple):
        return [_render(v) for v in value]
    return np.asarray(value).tolist()


# Pipelines built from the same source by Flowstone and TensorFlow.
SETUP = """
sp = tf.SparseTensor([[0, 1], [1, 0], [1, 2], [3, 3]], [1.0, 2.0, 3.0, 4.0], [4, 5])
rt = tf.ragged.constant([[1, 2], [3], [], [4, 5, 6]])
rt2 = tf.ragged.constant([[[1], [2, 3]], [[4]], [[5, 6], [], [7]]])
"""
PIPELINES = [
    "D.from_tensors(sp)",
    "D.from_tensor_slices(sp)",
    "D.from_tensor_slices(sp).batch(3)",
    "D.from_tensor_slices(sp).batch(2).batch(2)",
    "D.from_tensors(sp).unbatch()",
    "D.from_tensor_slices(sp).batch(3).unbatch()",
    "D.from_tensor_slices(sp).map(tf.sparse.to_dense)",
    "D.from_tensor_slices(sp).filter(lambda s: tf.size(s.values) > 0)",
    "D.zip((D.from_tensor_slices(sp), D.range(4)))",
    "D.from_tensor_slices(sp).concatenate(D.from_tensor_slices(sp)).take(6)",
    "D.from_tensors(rt)",
    "D.from_tensor_slices(rt)",
    "D.from_tensor_slices(rt).batch(3)",
    "D.from_tensor_slices(rt2).batch(2)",
    "D.from_tensor_slices(rt2).batch(2).unbatch()",
    "D.from_tensors(rt).unbatch()",
    "D.from_tensors(rt2).unbatch().batch(2)",
    "D.from_tensor_slices(rt).batch(2).map(lambda r: r * 2)",
    "D.from_tensor_slices(rt).repeat(2).take(5)",
    "D.range(5).map(lambda x: tf.fill([x], x)).ragged_batch(2)",
    "D.range(5).map(lambda x: tf.fill([x], x)).ragged_batch(2, drop_remainder=True)",
    "D.range(5).map(lambda x: (tf.fill([x, 2], x), x)).apply("
    "tf.data.experimental.dense_to_ragged_batch(3))",
    "D.range(4).map(lambda x: tf.fill([x, x], x)).ragged_batch(3)",
    "D.range(4).map(lambda x: tf.fill([x], x)).ragged_batch(2).unbatch()",
    "D.range(5).map(lambda x: tf.fill([x], x)).ragged_batch(2).ragged_batch(2)",
    "D.range(4).map(lambda x: tf.fill([x], x)).apply("
    "tf.data.experimental.dense_to_ragged_batch(2, row_splits_dtype=tf.int32))",
    "D.from_tensor_slices(records).map(lambda s: tf.io.parse_single_example("
    "s, {'f': tf.io.VarLenFeature(tf.int64)}))",
    "D.from_tensor_slices(records).map(lambda s: tf.io.parse_single_example("
    "s, {'f': tf.io.VarLenFeature(tf.int64)})).batch(3)",
    "D.from_tensor_slices(records).batch(2).map(lambda s: tf.io.parse_example("
    "s, {'f': tf.io.VarLenFeature(tf.int64)}))",
    "D.from_tensor_slices(records).map(lambda s: tf.io.parse_single_example("
    "s, {'f': tf.io.RaggedFeature(tf.int64)})).ragged_batch(2)",
    "D.from_tensor_slices(records).batch(2).map(lambda s: tf.io.parse_example("
    "s, {'f': tf.io.RaggedFeature(tf.int64)}))",
]


def _flowstone_results():
    results = {}
    for source in PIPELINES:
        tf.reset_default_graph()
        scope = {"tf": tf, "D": Dataset, "records": RECORDS}
        exec(SETUP, scope)
        dataset = eval(source, scope)
        results[source] = {"spec": repr(dataset.element_spec),
                           "values": [_render(v) for v in _drain(dataset)]}
    return results


def test_pipelines_give_numpy_checked_values():
    got = _flowstone_results()
    sliced = got["D.from_tensor_slices(sp)"]["values"]
    assert sliced == [{"sp": [[[1]], [1.0], [5]]}, {"sp": [[[0], [2]], [2.0, 3.0], [5]]},
                      {"sp": [[], [], [5]]}, {"sp": [[[3]], [4.0], [5]]}]
    # A batch of SparseTensors: rank + 1, dense shape the largest in the batch.
    assert got["D.from_tensor_slices(sp).batch(3)"]["values"][0] == {
        "sp": [[[0, 1], [1, 0], [1, 2]], [1.0, 2.0, 3.0], [3, 5]]}
    assert got["D.from_tensor_slices(rt).batch(3)"]["values"] == [
        {"rt": [[1, 2], [3], []]}, {"rt": [[4, 5, 6]]}]
    parsed = got["D.from_tensor_slices(records).map(lambda s: tf.io.parse_single_example("
                 "s, {'f': tf.io.VarLenFeature(tf.int64)})).batch(3)"]
    assert parsed["spec"] == "{'f': SparseTensorSpec(TensorShape([None, None]), tf.int64)}"
    assert parsed["values"] == [{"f": {"sp": [[[0, 0], [0, 1], [2, 0], [2, 1], [2, 2]],
                                              [1, 2, 3, 4, 5], [3, 3]]}}]
    dense = got["D.from_tensor_slices(sp).map(tf.sparse.to_dense)"]["values"]
    expected = np.zeros([4, 5], np.float32)
    expected[[0, 1, 1, 3], [1, 0, 2, 3]] = [1, 2, 3, 4]
    np.testing.assert_array_equal(np.array(dense), expected)


@requires_tensorflow
def test_pipelines_match_tensorflow():
    script = textwrap.dedent("""
        import json
        import numpy as np
        import tensorflow as tf
        D = tf.data.Dataset
        def example(values):
            return tf.train.Example(features=tf.train.Features(feature={
                "f": tf.train.Feature(int64_list=tf.train.Int64List(value=values))}
            )).SerializeToString()
        records = [example([1, 2]), example([]), example([3, 4, 5])]
        def render(value):
            if isinstance(value, tf.SparseTensor):
                return {"sp": [value.indices.numpy().tolist(), value.values.numpy().tolist(),
                               value.dense_shape.numpy().tolist()]}
            if isinstance(value, tf.RaggedTensor):
                return {"rt": value.to_list()}
            if isinstance(value, dict):
                return {k: render(v) for k, v in sorted(value.items())}
            if isinstance(value, tuple):
                return [render(v) for v in value]
            return value.numpy().tolist()
    """) + SETUP + textwrap.dedent(f"""
        out = {{}}
        for source in {PIPELINES!r}:
            dataset = eval(source)
            out[source] = {{"spec": repr(dataset.element_spec),
                           "values": [render(v) for v in dataset]}}
        print(json.dumps(out))
    """)
    theirs = json.loads(run_tensorflow(script).strip().splitlines()[-1])
    ours = _flowstone_results()
    for source in PIPELINES:
        assert ours[source] == theirs[source], source


def test_map_returning_sparse_of_varying_length_then_batch():
    def ones(n):
        return tf.SparseTensor(tf.reshape(tf.range(n), [-1, 1]), tf.ones([n]),
                               tf.reshape(n, [1]))

    dataset = Dataset.range(1, 4).map(ones)
    assert dataset.element_spec == tf.SparseTensorSpec([None], tf.float32)
    (batch,) = _drain(dataset.batch(3))
    dense = np.zeros(batch.dense_shape)
    dense[tuple(batch.indices.T)] = batch.values
    np.testing.assert_array_equal(dense, np.tril(np.ones([3, 3])))


def test_parallel_map_and_fused_map_and_batch_carry_composites():
    def parse(s):
        return tf.io.parse_single_example(s, {"f": tf.io.VarLenFeature(tf.int64)})["f"]

    records = Dataset.from_tensor_slices(RECORDS)
    for dataset in [records.map(parse, num_parallel_calls=2).batch(3),
                    records.apply(tf.data.experimental.map_and_batch(parse, 3))]:
        (batch,) = _drain(dataset)
        np.testing.assert_array_equal(batch.values, [1, 2, 3, 4, 5])
        np.testing.assert_array_equal(batch.dense_shape, [3, 3])


def test_shuffle_prefetch_cache_and_window_keep_composites_whole():
    rt = tf.ragged.constant([[1], [2, 2], [3, 3, 3], [4, 4, 4, 4]])
    dataset = Dataset.from_tensor_slices(rt).cache().shuffle(4, seed=3).prefetch(2)
    rows = sorted(v.tolist() for v in _drain(dataset))
    assert rows == [[1], [2, 2], [3, 3, 3], [4, 4, 4, 4]]
    sp = tf.SparseTensor([[0, 0], [1, 1], [2, 0]], [1, 2, 3], [3, 2])
    windows = Dataset.from_tensor_slices(sp).window(2).flat_map(lambda w: w.batch(2))
    first, second = _drain(windows)
    np.testing.assert_array_equal(first.indices, [[0, 0], [1, 1]])
    np.testing.assert_array_equal(second.dense_shape, [1, 2])


def test_get_single_element_and_reduce_with_composites():
    rt = tf.ragged.constant([[1, 2], [3]])
    sp = tf.SparseTensor([[1]], [7.0], [3])
    single = Dataset.from_tensors((rt, sp)).get_single_element()
    total = Dataset.from_tensor_slices(rt).reduce(np.int32(0), lambda s, r: s + tf.reduce_sum(r))
    with tf.Session() as sess:
        got_rt, got_sp, got_total = sess.run([single[0], single[1], total])
    assert got_rt.to_list() == [[1, 2], [3]]
    np.testing.assert_array_equal(got_sp.values, [7.0])
    assert got_total == 6


def test_initializable_and_reinitializable_iterators():
    sp = tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 3])
    dataset = Dataset.from_tensor_slices(sp)
    iterator = tf.data.Iterator.from_structure(
        tf.data.get_output_types(dataset), tf.data.get_output_shapes(dataset),
        output_classes=tf.data.get_output_classes(dataset))
    assert tf.data.get_output_classes(dataset) is tf.SparseTensor
    init = iterator.make_initializer(dataset)
    element = iterator.get_next()
    assert isinstance(element, tf.SparseTensor)
    with tf.Session() as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(element).indices, [[1]])
    placeholder = tf.placeholder(tf.int64, [])
    ragged = Dataset.range(4).map(lambda x: tf.fill([x], x)).take(placeholder).ragged_batch(2)
    iterator = ragged.make_initializable_iterator()
    element = iterator.get_next()
    with tf.Session() as sess:
        sess.run(iterator.initializer, {placeholder: 3})
        assert sess.run(element).to_list() == [[], [1]]
        assert sess.run(element).to_list() == [[2, 2]]


def test_feedable_iterator_of_ragged_and_sparse_components():
    sp = tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], [2, 3])
    rt = tf.ragged.constant([[1, 2], [3]])
    dataset = Dataset.from_tensor_slices((sp, rt))
    handle = tf.placeholder(tf.string, [])
    iterator = tf.data.Iterator.from_string_handle(
        handle, tf.data.get_output_types(dataset), tf.data.get_output_shapes(dataset),
        tf.data.get_output_classes(dataset))
    sparse_row, ragged_row = iterator.get_next()
    assert isinstance(sparse_row, tf.SparseTensor)
    source = dataset.make_one_shot_iterator()
    with tf.Session() as sess:
        feed = {handle: sess.run(source.string_handle())}
        got_sparse, got_ragged = sess.run([sparse_row, ragged_row], feed)
    np.testing.assert_array_equal(got_sparse.indices, [[1]])
    np.testing.assert_array_equal(got_ragged, [1, 2])


def test_legacy_structure_properties():
    rt = tf.ragged.constant([[1, 2], [3]])
    dataset = Dataset.from_tensors(rt)
    assert tf.data.get_output_types(dataset) == tf.int32
    assert tf.data.get_output_shapes(dataset).as_list() == [2, None]
    # As TensorFlow's: the spec itself where TF1 had no class.
    assert tf.data.get_output_classes(dataset) == tf.RaggedTensorSpec([2, None], tf.int32, 1)


def test_padded_batch_rejects_composites_as_tensorflow():
    sp = tf.SparseTensor([[0, 1]], [1.0], [2, 3])
    with pytest.raises(TypeError, match=r"`padded_batch` is only supported for datasets that "
                       r"produce tensor elements .* not a subclass of TensorSpec: "
                       r"`SparseTensorSpec\(TensorShape\(\[2, 3\]\), tf.float32\)`"):
        Dataset.from_tensors(sp).padded_batch(2)
    with pytest.raises(TypeError, match="RaggedTensorSpec"):
        Dataset.from_tensors(tf.ragged.constant([[1], []])).padded_batch(2)


def test_unbatch_and_slices_need_a_first_dimension():
    scalar_sparse = tf.SparseTensor(tf.zeros([0, 0], tf.int64), tf.zeros([0]),
                                    tf.zeros([0], tf.int64))
    with pytest.raises(ValueError, match="Cannot unbatch an input with scalar components"):
        Dataset.from_tensors(scalar_sparse).unbatch()
    with pytest.raises(ValueError, match="rank >= 1"):
        Dataset.from_tensor_slices(scalar_sparse)


def test_batching_ragged_rows_of_different_inner_dims_is_an_error():
    a = tf.RaggedTensor.from_row_splits(tf.zeros([2, 2]), [0, 2])
    b = tf.RaggedTensor.from_row_splits(tf.zeros([1, 3]), [0, 1])
    dataset = Dataset.from_tensors(a).concatenate(Dataset.from_tensors(b))
    assert dataset.element_spec == tf.RaggedTensorSpec([1, None, None], tf.float32, 1)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"flat values of encoded_ragged\[1\] have shape \[1,3\].*differ"):
        _drain(dataset.batch(2))


def test_concatenating_sparse_with_dense_is_a_type_error():
    sp = Dataset.from_tensors(tf.SparseTensor([[0]], [1.0], [2]))
    dense = Dataset.from_tensors(tf.constant([1.0, 0.0]))
    with pytest.raises(TypeError, match="different types"):
        sp.concatenate(dense)


def test_scan_carries_a_composite_state():
    sp = tf.SparseTensor([[0]], [1.0], [3])
    counting = Dataset.range(3).scan(sp, lambda state, _: (
        tf.SparseTensor(state.indices, state.values + 1.0, state.dense_shape), state))
    assert [v.values.tolist() for v in _drain(counting)] == [[1.0], [2.0], [3.0]]
    rt = tf.ragged.constant([[1], [2, 2], [3, 3, 3]])
    growing = Dataset.from_tensor_slices(rt).scan(
        tf.ragged.constant([[0]]), lambda rows, r: (
            tf.concat([rows, tf.RaggedTensor.from_row_splits(
                r, [0, tf.size(r, out_type=tf.int64)])], 0), rows.nrows()))
    assert [int(v) for v in _drain(growing)] == [1, 2, 3]


def test_from_generator_names_what_it_takes():
    with pytest.raises(TypeError, match="takes TensorSpecs in `output_signature`, got "
                       r"SparseTensorSpec\(TensorShape\(\[3\]\), tf.float32\)"):
        Dataset.from_generator(lambda: iter([]), output_signature=tf.SparseTensorSpec([3]))


def test_decoding_errors_name_what_was_expected():
    sp = tf.SparseTensor([[0, 1]], [1.0], [2, 3])
    encoded = tf.io.serialize_sparse(sp, out_type=tf.variant)
    wrong_dtype = tf.raw_ops.DeserializeSparse(serialized_sparse=encoded, dtype=tf.int32)
    rt = tf.ragged.constant([[1, 2], [3]])
    ragged = tf.raw_ops.RaggedTensorToVariant(rt_nested_splits=[rt.row_splits],
                                              rt_dense_values=rt.values, batched_input=False)
    wrong_rank = tf.raw_ops.RaggedTensorFromVariant(
        encoded_ragged=ragged, input_ragged_rank=2, output_ragged_rank=2, Tvalues=tf.int32)
    not_ragged = tf.raw_ops.RaggedTensorFromVariant(
        encoded_ragged=encoded, input_ragged_rank=-1, output_ragged_rank=1, Tvalues=tf.int64)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Requested SparseTensor of type int32 but SparseTensor"):
            sess.run(wrong_dtype)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"encoded_ragged\[0\] has 1 ragged dimensions, expected "
                                 "input_ragged_rank = 2"):
            sess.run(wrong_rank)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"encoded_ragged\[0\] is not a ragged tensor"):
            sess.run(not_ragged)
    with pytest.raises(TypeError, match="out_type must be tf.string or tf.variant"):
        tf.io.serialize_sparse(sp, out_type=tf.int32)
