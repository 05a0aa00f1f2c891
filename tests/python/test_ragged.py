"""tf.RaggedTensor and tf.ragged (python/flowstone/ops/ragged_tensor.py, ragged_ops.py): the
factories, conversions, row-partition accessors, indexing, operators, reductions and the
dispatched tf.concat / tf.gather, fetched from sessions as RaggedTensorValues and fed through
tf.ragged.placeholder, checked against hand-computed values; EXPRESSIONS are also evaluated by
real TensorFlow (the peer venv) and must give the same lists."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, SKIP_REASON, run_tensorflow


def _run(value, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(value, feed_dict)


def _as_list(value):
    if isinstance(value, tf.ragged.RaggedTensorValue):
        return value.to_list()
    return np.asarray(value).tolist()


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield


def test_constant_fetches_a_ragged_tensor_value():
    rt = tf.ragged.constant([[1, 2], [], [3, 4, 5]])
    assert rt.ragged_rank == 1 and rt.dtype == tf.int32 and rt.shape.as_list() == [3, None]
    value = _run(rt)
    assert isinstance(value, tf.ragged.RaggedTensorValue)
    assert value.to_list() == [[1, 2], [], [3, 4, 5]]
    np.testing.assert_array_equal(value.row_splits, [0, 2, 2, 5])
    np.testing.assert_array_equal(value.values, [1, 2, 3, 4, 5])
    assert "RaggedTensor" in repr(rt)


def test_factories_agree():
    values = [3, 1, 4, 1, 5, 9, 2]
    expected = [[3, 1, 4, 1], [], [5, 9], [2]]
    for rt in [tf.RaggedTensor.from_row_splits(values, [0, 4, 4, 6, 7]),
               tf.RaggedTensor.from_row_lengths(values, [4, 0, 2, 1]),
               tf.RaggedTensor.from_value_rowids(values, [0, 0, 0, 0, 2, 2, 3]),
               tf.RaggedTensor.from_value_rowids(values, [0, 0, 0, 0, 2, 2, 3], nrows=4),
               tf.RaggedTensor.from_row_starts(values, [0, 4, 4, 6]),
               tf.RaggedTensor.from_row_limits(values, [4, 4, 6, 7])]:
        assert _run(rt).to_list() == expected
    # Python lists give int64 partitions, as in TensorFlow; a tensor keeps its own dtype.
    assert tf.RaggedTensor.from_row_lengths(values, [4, 0, 2, 1]).row_splits.dtype == tf.int64
    narrow = tf.RaggedTensor.from_row_splits(values, tf.constant([0, 7], tf.int32))
    assert narrow.row_splits.dtype == tf.int32 and _run(narrow).to_list() == [values]
    # A trailing empty row needs nrows.
    rt = tf.RaggedTensor.from_value_rowids([1, 2], [0, 1], nrows=4)
    assert _run(rt).to_list() == [[1], [2], [], []]


def test_nested_factories_and_accessors():
    rt = tf.RaggedTensor.from_nested_row_lengths([1, 2, 3, 4, 5], [[2, 1], [2, 0, 3]])
    assert rt.ragged_rank == 2
    assert _run(rt).to_list() == [[[1, 2], []], [[3, 4, 5]]]
    splits = _run(list(rt.nested_row_splits))
    assert [s.tolist() for s in splits] == [[0, 2, 3], [0, 2, 2, 5]]
    assert _run(rt.flat_values).tolist() == [1, 2, 3, 4, 5]
    assert _run(rt.bounding_shape()).tolist() == [2, 2, 3]
    assert _run(rt.row_lengths(axis=2)).to_list() == [[2, 0], [3]]
    assert [x.tolist() for x in _run(list(rt.nested_row_lengths()))] == [[2, 1], [2, 0, 3]]
    value = _run(rt)
    assert value.ragged_rank == 2 and value.flat_values.tolist() == [1, 2, 3, 4, 5]


def test_to_tensor_to_sparse_and_back():
    rt = tf.ragged.constant([[1.5, 2.5], [], [3.5]])
    np.testing.assert_array_equal(_run(rt.to_tensor()), [[1.5, 2.5], [0, 0], [3.5, 0]])
    np.testing.assert_array_equal(_run(rt.to_tensor(default_value=-1.0, shape=[2, 3])),
                                  [[1.5, 2.5, -1], [-1, -1, -1]])
    st = _run(rt.to_sparse())
    np.testing.assert_array_equal(st.indices, [[0, 0], [0, 1], [2, 0]])
    np.testing.assert_array_equal(st.dense_shape, [3, 2])
    back = tf.RaggedTensor.from_sparse(rt.to_sparse())
    assert _run(back).to_list() == [[1.5, 2.5], [], [3.5]]
    gap = tf.SparseTensor([[0, 1]], [1.0], [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not right-ragged"):
        _run(tf.RaggedTensor.from_sparse(gap))
    dense = tf.constant([[1, 2, 0], [3, 0, 0], [0, 0, 0]])
    assert _run(tf.RaggedTensor.from_tensor(dense)).to_list() == [[1, 2, 0], [3, 0, 0],
                                                                  [0, 0, 0]]
    assert _run(tf.RaggedTensor.from_tensor(dense, padding=0)).to_list() == [[1, 2], [3], []]
    assert _run(tf.RaggedTensor.from_tensor(dense, lengths=[1, 0, 2])).to_list() == \
        [[1], [], [0, 0]]
    strings = tf.ragged.constant([["a", "bc"], ["d"]])
    np.testing.assert_array_equal(_run(strings.to_tensor()),
                                  np.array([[b"a", b"bc"], [b"d", b""]], dtype=object))


def test_to_tensor_gradient_flows_to_values_and_default():
    values = tf.constant([1.0, 2.0, 3.0])
    default = tf.constant(0.0)
    rt = tf.RaggedTensor.from_row_splits(values, [0, 2, 2, 3])
    dense = rt.to_tensor(default_value=default)
    weights = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    loss = tf.reduce_sum(dense * weights)
    grad_values, grad_default = _run(tf.gradients(loss, [values, default]))
    np.testing.assert_allclose(grad_values, [1.0, 2.0, 5.0])
    np.testing.assert_allclose(grad_default, 3.0 + 4.0 + 6.0)


def test_gather_dispatch_and_its_gradient():
    values = tf.constant([1.0, 2.0, 3.0, 4.0])
    rt = tf.RaggedTensor.from_row_splits(values, [0, 1, 3, 4])
    picked = tf.gather(rt, [2, 0, 2])
    assert _run(picked).to_list() == [[4.0], [1.0], [4.0]]
    grad = _run(tf.gradients(tf.reduce_sum(picked.flat_values), values)[0])
    np.testing.assert_allclose(grad, [1.0, 0.0, 0.0, 2.0])


def test_indexing():
    rt = tf.ragged.constant([[1, 2, 3], [4], [5, 6]])
    assert _run(rt[0]).tolist() == [1, 2, 3]
    assert _run(rt[-1]).tolist() == [5, 6]
    assert _run(rt[1:]).to_list() == [[4], [5, 6]]
    assert _run(rt[::2]).to_list() == [[1, 2, 3], [5, 6]]
    assert _run(rt[:, 1:]).to_list() == [[2, 3], [], [6]]
    assert _run(rt[:, :-1]).to_list() == [[1, 2], [], [5]]
    assert _run(rt[2, 1]) == 6
    with pytest.raises(ValueError, match="Cannot index into an inner ragged dimension"):
        rt[:, 0]
    matrix = tf.RaggedTensor.from_row_splits([[1, 2], [3, 4], [5, 6]], [0, 2, 3])
    assert _run(matrix[:, :, 1]).to_list() == [[2, 4], [6]]
    nested = tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])
    assert _run(nested[:, :, 1:]).to_list() == [[[2], []], [[5, 6]]]
    assert _run(nested[1, 0]).tolist() == [4, 5, 6]
    with pytest.raises(ValueError, match="Ellipsis"):
        rt[..., 0]


def test_operators_and_map_flat_values():
    a = tf.ragged.constant([[1.0, 2.0], [3.0]])
    b = tf.ragged.constant([[10.0, 20.0], [30.0]])
    assert _run(a + b).to_list() == [[11.0, 22.0], [33.0]]
    assert _run(2.0 * a - 1.0).to_list() == [[1.0, 3.0], [5.0]]
    assert _run(-a).to_list() == [[-1.0, -2.0], [-3.0]]
    assert _run(a > 1.5).to_list() == [[False, True], [True]]
    assert _run(a * tf.constant([[2.0], [3.0]])).to_list() == [[2.0, 4.0], [9.0]]
    assert _run(tf.ragged.map_flat_values(tf.square, a)).to_list() == [[1.0, 4.0], [9.0]]
    assert _run(tf.ragged.map_flat_values(tf.add, a, b)).to_list() == [[11.0, 22.0], [33.0]]
    mismatched = tf.ragged.constant([[1.0], [2.0, 3.0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="identical ragged splits"):
        _run(a + mismatched)
    with pytest.raises(tf.errors.InvalidArgumentError, match="identical ragged splits"):
        _run(tf.ragged.map_flat_values(tf.add, a, mismatched))


def test_reductions():
    rt = tf.ragged.constant([[3.0, 1.0, 4.0], [], [1.0, 5.0]])
    np.testing.assert_allclose(_run(tf.reduce_sum(rt, axis=1)), [8.0, 0.0, 6.0])
    np.testing.assert_allclose(_run(tf.reduce_sum(rt, axis=0)), [4.0, 6.0, 4.0])
    np.testing.assert_allclose(_run(tf.reduce_mean(rt, axis=0)), [2.0, 3.0, 4.0])
    np.testing.assert_allclose(_run(tf.reduce_max(rt, axis=-1))[[0, 2]], [4.0, 5.0])
    assert _run(tf.reduce_sum(rt)) == 14.0
    mean = _run(tf.reduce_mean(rt, axis=1))
    assert mean[0] == pytest.approx(8.0 / 3) and np.isnan(mean[1]) and mean[2] == 3.0


def test_concat_stack_range_boolean_mask():
    a = tf.ragged.constant([[1, 2], [3]])
    b = tf.ragged.constant([[4], [], [5, 6]])
    assert _run(tf.concat([a, b], axis=0)).to_list() == [[1, 2], [3], [4], [], [5, 6]]
    c = tf.ragged.constant([[7], [8, 9]])
    assert _run(tf.concat([a, c], axis=1)).to_list() == [[1, 2, 7], [3, 8, 9]]
    assert _run(tf.ragged.stack([a, c], axis=0)).to_list() == [[[1, 2], [3]], [[7], [8, 9]]]
    assert _run(tf.ragged.stack([a, c], axis=1)).to_list() == [[[1, 2], [7]], [[3], [8, 9]]]
    assert _run(tf.ragged.range([3, 0, 2])).to_list() == [[0, 1, 2], [], [0, 1]]
    assert _run(tf.ragged.range([0, 5], [3, 3], [1, -1])).to_list() == [[0, 1, 2], [5, 4]]
    masked = tf.ragged.boolean_mask([[1, 2, 3], [4, 5, 6]], [[True, False, True],
                                                             [False, False, False]])
    assert _run(masked).to_list() == [[1, 3], []]
    keep = tf.ragged.constant([[True, False], [True]])
    assert _run(tf.ragged.boolean_mask(a, keep)).to_list() == [[1], [3]]
    assert _run(tf.ragged.boolean_mask(b, [True, False, True])).to_list() == [[4], [5, 6]]


def test_with_values_merge_dims_and_splits_dtype():
    rt = tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])
    assert _run(rt.merge_dims(1, 2)).to_list() == [[1, 2, 3], [4, 5, 6]]
    assert _run(rt.merge_dims(0, 1)).to_list() == [[1, 2], [3], [4, 5, 6]]
    assert _run(rt.merge_dims(0, 2)).tolist() == [1, 2, 3, 4, 5, 6]
    doubled = rt.with_flat_values(rt.flat_values * 2)
    assert _run(doubled).to_list() == [[[2, 4], [6]], [[8, 10, 12]]]
    narrow = rt.with_row_splits_dtype(tf.int32)
    assert narrow.row_splits.dtype == tf.int32 and narrow.values.row_splits.dtype == tf.int32
    assert _run(narrow.to_tensor()).tolist() == [[[1, 2, 0], [3, 0, 0]], [[4, 5, 6], [0, 0, 0]]]


def test_placeholder_feeds_values_and_lists():
    p = tf.ragged.placeholder(tf.float32, ragged_rank=1)
    doubled = p * 2.0
    assert _run(doubled, {p: [[1.0], [2.0, 3.0]]}).to_list() == [[2.0], [4.0, 6.0]]
    value = tf.ragged.constant_value([[1.0, 2.0], []], dtype=tf.float32)
    assert _run(doubled, {p: value}).to_list() == [[2.0, 4.0], []]
    with pytest.raises(ValueError, match="ragged_rank"):
        _run(doubled, {p: tf.ragged.constant_value([[[1.0]]])})


def test_invalid_splits_are_errors_naming_the_fix():
    rt = tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 1, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must start at 0, not decrease"):
        _run(rt.to_tensor())
    with pytest.raises(ValueError, match="constructor is private"):
        tf.RaggedTensor([1], [0, 1])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not in \\[0, 2\\)"):
        _run(tf.gather(tf.ragged.constant([[1], [2]]), [2]))


def test_to_list_needs_eager_in_graph_mode():
    with pytest.raises(ValueError, match="eager"):
        tf.ragged.constant([[1]]).to_list()


# Evaluated by Flowstone (graph mode) and by TensorFlow 2 (eager): the same results.
EXPRESSIONS = [
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]]) * 2 + 1",
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]]).to_tensor(default_value=-1)",
    "tf.ragged.constant([[[1, 2], []], [[3]]]).to_tensor()",
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]]).to_tensor(shape=[2, 4])",
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]]).row_lengths()",
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]]).value_rowids()",
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]]).bounding_shape()",
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]])[:, 1:]",
    "tf.ragged.constant([[1, 2], [], [3, 4, 5]])[1:]",
    "tf.ragged.constant([[3, 1, 4], [1, 5], [9], [2, 6]])[1:3, -1:]",
    "tf.reduce_sum(tf.ragged.constant([[3, 1, 4], [1, 5], [9], [2, 6]]), axis=0)",
    "tf.reduce_sum(tf.ragged.constant([[3, 1, 4], [1, 5], [9], [2, 6]]), axis=1)",
    "tf.reduce_max(tf.ragged.constant([[3, 1, 4], [1, 5], [9], [2, 6]]), axis=0)",
    "tf.reduce_min(tf.ragged.constant([[3, 1, 4], [1, 5], [9], [2, 6]]), axis=1)",
    "tf.reduce_mean(tf.ragged.constant([[3., 1., 4.], [1., 5.], [9.], [2., 6.]]), axis=0)",
    "tf.reduce_sum(tf.ragged.constant([[[1, 2], [3]], [[4]]]), axis=2)",
    "tf.reduce_any(tf.ragged.constant([[True, False], [], [False]]), axis=1)",
    "tf.reduce_all(tf.ragged.constant([[True, False], [], [True]]), axis=1)",
    "tf.reduce_prod(tf.ragged.constant([[2., 3.], [], [4.]]), axis=1)",
    "tf.concat([tf.ragged.constant([[1, 2], [3]]), tf.ragged.constant([[4], []])], axis=1)",
    "tf.gather(tf.ragged.constant([[1, 2], [3], [4, 5, 6]]), [[2, 0], [1, 1]])",
    "tf.ragged.stack([tf.ragged.constant([[1, 2], [3]]), tf.ragged.constant([[4], []])], 1)",
    "tf.ragged.range([1, 4, 2], [4, 4, 9], [1, 1, 3])",
    "tf.ragged.range([0.5, 1.0], 2.0, 0.5)",
    "tf.ragged.boolean_mask([[1, 2], [3, 4]], [[False, True], [True, True]])",
    "tf.RaggedTensor.from_tensor([[1, 0, 0], [2, 3, 0]], padding=0)",
    "tf.RaggedTensor.from_value_rowids([1, 2, 3], [0, 2, 2], nrows=4)",
    "tf.ragged.constant([[[1, 2], [3]], [[4, 5]]]).merge_dims(0, 1)",
    "tf.compat.v1.strings.split(['a b c', '', 'd e'], result_type='RaggedTensor')",
    "tf.compat.v1.strings.split([['a b', 'c'], ['d', '']], result_type='RaggedTensor')",
    "tf.sparse.to_dense(tf.ragged.constant([[1, 2], [], [3]]).to_sparse())",
    "tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])[:, :, 1:]",
    "tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])[1, 0]",
    "tf.ragged.constant([[], []]).to_tensor()",
    "tf.ragged.constant([[2**40], [1]])",
    "tf.ragged.constant([[1, 2], [3]]) < tf.ragged.constant([[2, 2], [1]])",
    "tf.RaggedTensor.from_sparse(tf.sparse.SparseTensor([[0, 0], [0, 1], [2, 0]], [5, 6, 7],"
    " [3, 2]))",
]

TF_SCRIPT = """
import json
import numpy as np
import tensorflow as tf
out = []
for expr in json.loads({exprs!r}):
    value = eval(expr)
    if isinstance(value, tf.RaggedTensor):
        value = value.to_list()
    else:
        value = value.numpy().tolist()
    out.append(value)
print(json.dumps(out, default=lambda b: b.decode()))
"""


def _jsonable(value):
    return json.loads(json.dumps(value, default=lambda b: b.decode()))


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_expressions_equal_tensorflow():
    expected = json.loads(run_tensorflow(TF_SCRIPT.format(exprs=json.dumps(EXPRESSIONS)))
                          .strip().splitlines()[-1])
    assert len(expected) == len(EXPRESSIONS)
    for expr, want in zip(EXPRESSIONS, expected):
        tf.reset_default_graph()
        got = _jsonable(_as_list(_run(eval(expr))))
        assert got == want, expr


def _raw(op_type, inputs, attrs=None):
    from flowstone.framework import ops as ops_lib
    return ops_lib.apply_op(op_type, inputs, attrs or {}).outputs


@pytest.mark.parametrize("op_type, inputs, attrs, message", [
    ("RaggedRange", lambda: [tf.constant(0), tf.constant(5), tf.constant(0)], {}, "delta != 0"),
    ("RaggedRange", lambda: [tf.constant(0.0), tf.constant(np.inf), tf.constant(1.0)], {},
     "not finite or too large"),
    ("RaggedRange", lambda: [tf.constant(np.iinfo(np.int64).min),
                             tf.constant(np.iinfo(np.int64).max), tf.constant(np.int64(1))], {},
     "too large"),
    ("RaggedRange", lambda: [tf.constant([0, 1]), tf.constant([3, 4, 5]), tf.constant(1)], {},
     "same length"),
    ("RaggedTensorToTensor", lambda: [tf.constant(-1), tf.constant([1, 2]), tf.constant(0),
                              [tf.constant([1, 2]), tf.constant([0, 0])]],
     {"row_partition_types": ["FIRST_DIM_SIZE", "VALUE_ROWIDS"]}, "FIRST_DIM_SIZE must be"),
    ("RaggedTensorToTensor", lambda: [tf.constant(-1), tf.constant([1, 2]), tf.constant(0),
                              [tf.constant(2), tf.constant([1, 0])]],
     {"row_partition_types": ["FIRST_DIM_SIZE", "VALUE_ROWIDS"]}, "must be sorted"),
    ("RaggedTensorToTensor", lambda: [tf.constant(-1), tf.constant([1, 2]), tf.constant([0, 0, 0]),
                              [tf.constant(np.int64([0, 2]))]],
     {"row_partition_types": ["ROW_SPLITS"]}, "does not broadcast"),
    ("RaggedTensorToSparse", lambda: [[tf.constant(np.int64([0, 3]))], tf.constant([1, 2])], {},
     "must start at 0, not decrease and end at 2"),
    ("UnicodeEncode", lambda: [tf.constant([65, 66]), tf.constant(np.int64([0, 3]))],
     {"output_encoding": "UTF-8"}, "input_splits must start at 0"),
    ("UnicodeEncode", lambda: [tf.constant([-5]), tf.constant(np.int64([0, 1]))],
     {"output_encoding": "UTF-8", "errors": "strict"}, "Invalid code point -5"),
    ("StringNGrams", lambda: [tf.constant(["a"]), tf.constant(np.int64([0, 2]))],
     {"separator": " ", "ngram_widths": [2], "left_pad": "", "right_pad": "", "pad_width": 0,
      "preserve_short_sequences": False}, "data_splits must start at 0"),
    ("StringToHashBucketStrong", lambda: [tf.constant(["a"])], {"num_buckets": 0, "key": [1, 2]},
     "num_buckets must be positive"),
])
def test_kernels_reject_bad_input(op_type, inputs, attrs, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        _run(_raw(op_type, inputs(), attrs))


def test_gradients_through_to_sparse_and_row_reductions():
    values = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    rt = tf.RaggedTensor.from_row_splits(values, [0, 2, 3])
    sparse_grad = tf.gradients(tf.reduce_sum(rt.to_sparse().values * 2.0), values)[0]
    row_sums = tf.reduce_sum(rt, axis=1)  # [2 rows, 2]
    reduce_grad = tf.gradients(tf.reduce_sum(row_sums * [[1.0, 10.0], [100.0, 1000.0]]),
                               values)[0]
    got_sparse, got_reduce = _run([sparse_grad, reduce_grad])
    np.testing.assert_allclose(got_sparse, np.full((3, 2), 2.0))
    np.testing.assert_allclose(got_reduce, [[1.0, 10.0], [1.0, 10.0], [100.0, 1000.0]])
