"""The Python API of the indexing families (tf.gather_nd, scatters, segments, scans, sort,
unique, boolean_mask, ...) against numpy, TensorFlow's names and name scopes, the variable
scatters, error paths (out-of-range indices name the index and the valid range, and the session
stays usable) and results that do not depend on the number of threads."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# --- gather_nd and scatters ---------------------------------------------------------------------

def test_gather_nd_and_scatter_nd():
    params = np.arange(12.0).reshape(4, 3)
    got = _run(tf.gather_nd(params, [[1, 2], [3, 0]]))
    np.testing.assert_array_equal(got, [5.0, 9.0])
    rows = tf.manip.gather_nd(params, [[2], [0]])
    assert rows.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(_run(rows), params[[2, 0]])
    scattered = tf.scatter_nd([[1], [3], [1]], [1.0, 2.0, 3.0], [5])
    assert scattered.shape.as_list() == [5]
    np.testing.assert_array_equal(_run(scattered), [0, 4, 0, 2, 0])


def test_tensor_scatter_family():
    tensor = np.arange(6.0).reshape(3, 2)
    indices = [[0], [2]]
    updates = np.array([[10.0, -10.0], [1.0, 7.0]])
    fetches = {
        "update": tf.tensor_scatter_nd_update(tensor, indices, updates),
        "add": tf.tensor_scatter_nd_add(tensor, indices, updates),
        "sub": tf.tensor_scatter_sub(tensor, indices, updates),
        "max": tf.tensor_scatter_nd_max(tensor, indices, updates),
        "min": tf.tensor_scatter_nd_min(tensor, indices, updates),
    }
    got = _run(fetches)
    for key, combine in [("update", lambda a, b: b), ("add", np.add), ("sub", np.subtract),
                         ("max", np.maximum), ("min", np.minimum)]:
        expected = tensor.copy()
        expected[[0, 2]] = combine(tensor[[0, 2]], updates)
        np.testing.assert_array_equal(got[key], expected, err_msg=key)
    assert fetches["update"].op.name == "TensorScatterUpdate"
    assert tf.tensor_scatter_update is tf.tensor_scatter_nd_update


def test_out_of_range_indices_name_the_index_and_range_and_the_session_survives():
    x = tf.placeholder(tf.int32, [None, 1])
    gathered = tf.gather_nd(tf.constant(np.arange(5.0)), x)
    scattered = tf.scatter_nd(x, tf.ones([2]), [5])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[1\] = \[7\] does not index into param shape \[5\].*"
                                 r"not in \[0, 5\)"):
            sess.run(gathered, {x: [[0], [7]]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[0\] = \[-1\] does not index into shape \[5\]"):
            sess.run(scattered, {x: [[-1], [2]]})
        np.testing.assert_array_equal(sess.run(gathered, {x: [[4], [0]]}), [4.0, 0.0])


def test_scatter_shape_errors_at_graph_build():
    with pytest.raises(ValueError, match=r"updates must have shape .* = \[2,3\], got \[2,4\]"):
        tf.scatter_nd([[0], [1]], tf.zeros([2, 4]), [5, 3])
    with pytest.raises(ValueError, match="index innermost dimension length must be <= params "
                                         "rank; saw: 3 vs. 2"):
        tf.gather_nd(tf.zeros([2, 2]), [[0, 0, 0]])


def test_variable_scatters_update_in_place():
    v = tf.Variable(np.arange(8.0).reshape(4, 2))
    w = tf.Variable(np.zeros((2, 3), np.int32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(v)
        np.testing.assert_array_equal(
            sess.run(tf.scatter_update(v, [3, 0], [[1.0, 2.0], [3.0, 4.0]])),
            [[3, 4], [2, 3], [4, 5], [1, 2]])
        np.testing.assert_array_equal(before, np.arange(8.0).reshape(4, 2))  # fetched stays
        np.testing.assert_array_equal(sess.run(tf.scatter_add(v, [1, 1], [[1.0, 1.0]] * 2)),
                                      [[3, 4], [4, 5], [4, 5], [1, 2]])
        np.testing.assert_array_equal(sess.run(tf.scatter_sub(v, [2], [[4.0, 5.0]])),
                                      [[3, 4], [4, 5], [0, 0], [1, 2]])
        np.testing.assert_array_equal(sess.run(tf.scatter_mul(v, [0], 2.0)),
                                      [[6, 8], [4, 5], [0, 0], [1, 2]])
        np.testing.assert_array_equal(sess.run(tf.scatter_div(v, [0, 1], [[2.0, 4.0]] * 2)),
                                      [[3, 2], [2, 1.25], [0, 0], [1, 2]])
        np.testing.assert_array_equal(sess.run(tf.scatter_max(v, [3], [[0.0, 9.0]])),
                                      [[3, 2], [2, 1.25], [0, 0], [1, 9]])
        np.testing.assert_array_equal(sess.run(tf.scatter_min(v, [3], [[-1.0, 10.0]])),
                                      [[3, 2], [2, 1.25], [0, 0], [-1, 9]])
        np.testing.assert_array_equal(sess.run(tf.scatter_nd_update(w, [[1, 2], [0, 0]], [5, 6])),
                                      [[6, 0, 0], [0, 0, 5]])
        np.testing.assert_array_equal(sess.run(tf.scatter_nd_add(w, [[1]], [[1, 1, 1]])),
                                      [[6, 0, 0], [1, 1, 6]])
        np.testing.assert_array_equal(sess.run(tf.scatter_nd_sub(w, [[0, 0]], [6])),
                                      [[0, 0, 0], [1, 1, 6]])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[1\] = 4 is not in \[0, 4\)"):
            sess.run(tf.scatter_add(v, [0, 4], [[1.0, 1.0]] * 2))
        # The failed update changed nothing, and the session goes on.
        np.testing.assert_array_equal(sess.run(v), [[3, 2], [2, 1.25], [0, 0], [-1, 9]])


def test_variable_scatter_on_uninitialized_variable_fails_precondition():
    v = tf.Variable(tf.zeros([3]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
            sess.run(tf.scatter_update(v, [0], [1.0]))


def test_batch_gather_and_gather_with_batch_dims():
    params = np.arange(24.0).reshape(2, 3, 4)
    indices = np.array([[0, 3], [2, 2]])
    expected = np.take_along_axis(params, indices[:, None, :].repeat(3, 1), 2)
    got = _run(tf.gather(params, indices, axis=2, batch_dims=1))
    np.testing.assert_array_equal(got, expected)
    rows = np.array([[2, 0], [1, 1]])
    np.testing.assert_array_equal(_run(tf.batch_gather(params, rows)),
                                  np.take_along_axis(params, rows[:, :, None], 1))


# --- boolean_mask, partition, stitch, reverse, where -------------------------------------------

def test_boolean_mask():
    x = np.arange(24).reshape(2, 3, 4)
    mask = np.array([[True, False, True], [False, False, True]])
    masked = tf.boolean_mask(x, mask)
    assert masked.shape.as_list() == [None, 4]
    np.testing.assert_array_equal(_run(masked), x[mask])
    column_mask = np.array([True, False, False, True])
    np.testing.assert_array_equal(_run(tf.boolean_mask(x, column_mask, axis=2)),
                                  x[:, :, column_mask])
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        tf.boolean_mask(x, True)
    with pytest.raises(ValueError, match="incompatible"):
        tf.boolean_mask(x, [True, False, True])


def test_boolean_mask_gradient():
    x = tf.constant(np.arange(6.0).reshape(3, 2))
    y = tf.boolean_mask(x, [True, False, True])
    grad = tf.gradients(tf.reduce_sum(y * [[1.0, 2.0], [3.0, 4.0]]), x)[0]
    np.testing.assert_array_equal(_run(grad), [[1, 2], [0, 0], [3, 4]])


def test_dynamic_partition_and_stitch_round_trip():
    data = np.arange(10.0).reshape(5, 2)
    partitions = [1, 0, 1, 2, 0]
    parts = tf.dynamic_partition(data, partitions, 3)
    assert len(parts) == 3 and parts[0].op.name == "DynamicPartition"
    positions = tf.dynamic_partition(tf.range(5), partitions, 3)
    merged = tf.dynamic_stitch(positions, parts)
    got_parts, got_merged = _run([parts, merged])
    for p in range(3):
        np.testing.assert_array_equal(got_parts[p], data[np.array(partitions) == p])
    np.testing.assert_array_equal(got_merged, data)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"partitions\[1\] = 3 is not in \[0, 3\)"):
        _run(tf.dynamic_partition(data, tf.constant([0, 3, 0, 0, 0]), 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\]\[0\] = -2 is negative"):
        _run(tf.dynamic_stitch([[0], tf.constant([-2])], [[1.0], [2.0]]))


def test_reverse_and_reverse_sequence():
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(_run(tf.reverse(x, [0, -1])), x[::-1, :, ::-1])
    assert tf.reverse_v2 is tf.reverse
    with pytest.raises(tf.errors.InvalidArgumentError, match="axis 1 specified more than once"):
        _run(tf.reverse(x, tf.constant([1, -2])))
    seq = tf.reverse_sequence(x, [3, 1], seq_axis=2, batch_axis=0)
    expected = x.copy()
    expected[0, :, :3] = x[0, :, 2::-1]
    np.testing.assert_array_equal(_run(seq), expected)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"seq_lengths\[1\] = 5 is not in \[0, 4\]"):
        _run(tf.reverse_sequence(x, tf.constant([3, 5]), seq_dim=2))


def test_where_with_one_argument_matches_tensorflow():
    cond = np.array([[True, False], [False, True], [True, True]])
    where = tf.where(cond)
    assert where.dtype == tf.int64 and where.op.name == "Where"
    np.testing.assert_array_equal(_run(where), np.argwhere(cond))
    np.testing.assert_array_equal(_run(tf.where([0.0, 2.5, 0.0, -1.0])), [[1], [3]])


def test_unravel_index():
    np.testing.assert_array_equal(_run(tf.unravel_index([5, 1], [2, 3])), [[1, 0], [2, 1]])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"indices\[0\] = 7 is not in \[0, 6\)"):
        _run(tf.unravel_index(tf.constant([7]), [2, 3]))


# --- segments and scans -------------------------------------------------------------------------

def test_segment_functions_and_names():
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 9.0]])
    ids = [0, 0, 1, 3]
    got = _run({
        "sum": tf.math.segment_sum(data, ids), "mean": tf.segment_mean(data, ids),
        "max": tf.segment_max(data, ids), "min": tf.math.segment_min(data, ids),
        "prod": tf.segment_prod(data, ids),
    })
    np.testing.assert_array_equal(got["sum"], [[4, 6], [5, 6], [0, 0], [7, 9]])
    np.testing.assert_array_equal(got["mean"], [[2, 3], [5, 6], [0, 0], [7, 9]])
    np.testing.assert_array_equal(got["max"], [[3, 4], [5, 6], [0, 0], [7, 9]])
    np.testing.assert_array_equal(got["min"], [[1, 2], [5, 6], [0, 0], [7, 9]])
    np.testing.assert_array_equal(got["prod"], [[3, 8], [5, 6], [1, 1], [7, 9]])
    assert tf.segment_sum(data, ids).op.name == "SegmentSum_1"


def test_unsorted_segment_mean_and_sqrt_n():
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 9.0]])
    ids = [2, 0, 2, -1]
    mean, sqrt_n, maximum = _run([tf.math.unsorted_segment_mean(data, ids, 3),
                                  tf.unsorted_segment_sqrt_n(data, ids, 3),
                                  tf.unsorted_segment_max(data, ids, 3)])
    np.testing.assert_allclose(mean, [[3, 4], [0, 0], [3, 4]])
    np.testing.assert_allclose(sqrt_n, [[3, 4], [0, 0], [6 / np.sqrt(2), 8 / np.sqrt(2)]])
    np.testing.assert_array_equal(maximum[1], [np.finfo(np.float64).min] * 2)
    x = tf.constant(data)
    grad = tf.gradients(tf.reduce_sum(tf.math.unsorted_segment_mean(x, ids, 3)), x)[0]
    np.testing.assert_allclose(_run(grad), [[0.5, 0.5], [1, 1], [0.5, 0.5], [0, 0]])


def test_sparse_segment_with_num_segments():
    data = np.arange(6.0).reshape(3, 2)
    got = _run(tf.sparse.segment_sum(data, [0, 2], [0, 1], num_segments=4))
    np.testing.assert_array_equal(got, [[0, 1], [4, 5], [0, 0], [0, 0]])
    got = _run(tf.sparse_segment_mean(data, [0, 2, 1], [0, 0, 1]))
    np.testing.assert_array_equal(got, [[2, 3], [2, 3]])


def test_segment_errors():
    data = tf.constant(np.ones((3, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"segment ids are not increasing: segment_ids\[2\] = 1 follows "
                             r"segment_ids\[1\] = 2"):
        _run(tf.segment_sum(data, tf.constant([0, 2, 1])))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"segment_ids\[1\] = 5 is not in \[0, 3\)"):
        _run(tf.unsorted_segment_max(data, tf.constant([0, 5, 1]), 3))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"indices\[1\] = 3 is not in \[0, 3\)"):
        _run(tf.sparse_segment_sum(data, tf.constant([0, 3]), [0, 0]))
    with pytest.raises(ValueError, match="segment_ids should be the same size as dimension 0"):
        tf.segment_sum(data, [0, 0])


def test_cumsum_cumprod_and_cumulative_logsumexp():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    got = _run({
        "sum": tf.cumsum(x, axis=1), "excl": tf.math.cumsum(x, exclusive=True),
        "rev": tf.cumsum(x, axis=1, reverse=True), "prod": tf.cumprod(x, axis=-1),
        "lse": tf.math.cumulative_logsumexp(x, axis=1),
    })
    np.testing.assert_array_equal(got["sum"], np.cumsum(x, 1))
    np.testing.assert_array_equal(got["excl"], [[0, 0, 0], [1, 2, 3]])
    np.testing.assert_array_equal(got["rev"], np.cumsum(x[:, ::-1], 1)[:, ::-1])
    np.testing.assert_array_equal(got["prod"], np.cumprod(x, 1))
    np.testing.assert_allclose(got["lse"], np.logaddexp.accumulate(x, 1))
    big = np.array([1000.0, 1000.0])
    np.testing.assert_allclose(_run(tf.math.cumulative_logsumexp(big)),
                               [1000.0, 1000.0 + np.log(2.0)])
    assert tf.cumsum(x).op.name == "Cumsum_3"  # after the three unnamed above
    with pytest.raises(ValueError, match=r"Expected axis in the range \[-2, 2\), but got 2"):
        tf.cumsum(x, axis=2)


def test_cumprod_gradient_at_zero_is_zero_as_in_tensorflow():
    x = tf.constant([2.0, 0.0, 3.0])
    grad = tf.gradients(tf.reduce_sum(tf.cumprod(x)), x)[0]
    np.testing.assert_allclose(_run(grad), [1.0, 0.0, 0.0])


# --- sort, unique, search, count ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_sort_and_argsort_match_numpy(dtype):
    x = np.random.default_rng(3).integers(-5, 5, size=(3, 4, 6)).astype(dtype)
    for axis in [-1, 0, 1]:
        np.testing.assert_array_equal(_run(tf.sort(x, axis=axis)), np.sort(x, axis))
        np.testing.assert_array_equal(_run(tf.sort(x, axis=axis, direction="DESCENDING")),
                                      -np.sort(-x, axis))
        np.testing.assert_array_equal(_run(tf.argsort(x, axis=axis, stable=True)),
                                      np.argsort(x, axis, kind="stable"))
        np.testing.assert_array_equal(
            _run(tf.argsort(x, axis=axis, direction="DESCENDING")),
            np.argsort(-x, axis, kind="stable"))


def test_sort_errors_and_gradient():
    with pytest.raises(ValueError, match="direction"):
        tf.sort([1, 2], direction="UP")
    x = tf.constant([3.0, 1.0, 2.0])
    grad = tf.gradients(tf.reduce_sum(tf.sort(x) * [1.0, 2.0, 3.0]), x)[0]
    np.testing.assert_array_equal(_run(grad), [3.0, 1.0, 2.0])


def test_unique_and_setdiff():
    y, idx = _run(tf.unique([4, 1, 4, 7, 1]))
    np.testing.assert_array_equal(y, [4, 1, 7])
    np.testing.assert_array_equal(idx, [0, 1, 0, 2, 1])
    result = tf.unique_with_counts(tf.constant([2.0, 2.0, -1.0]), out_idx=tf.int64)
    assert result.count.dtype == tf.int64
    y, idx, count = _run(result)
    np.testing.assert_array_equal(count, [2, 1])
    out, where = _run(tf.setdiff1d([1, 2, 3, 4], [2, 4]))
    np.testing.assert_array_equal(out, [1, 3])
    np.testing.assert_array_equal(where, [0, 2])
    with pytest.raises(ValueError, match="rank 1"):
        tf.unique([[1, 2]])


def test_searchsorted_bincount_histogram():
    seq = np.array([[0.0, 1.0, 1.0, 4.0], [2.0, 3.0, 5.0, 9.0]])
    values = np.array([[1.0, 5.0], [2.0, 10.0]])
    left, right = _run([tf.searchsorted(seq, values), tf.searchsorted(seq, values, side="right")])
    np.testing.assert_array_equal(left, [[1, 4], [0, 4]])
    np.testing.assert_array_equal(right, [[3, 4], [1, 4]])
    with pytest.raises(ValueError, match="side"):
        tf.searchsorted(seq, values, side="middle")
    arr = np.array([1, 1, 3, 0, 7], np.int32)
    np.testing.assert_array_equal(_run(tf.math.bincount(arr)), np.bincount(arr))
    np.testing.assert_array_equal(_run(tf.bincount(arr, minlength=10)),
                                  np.bincount(arr, minlength=10))
    np.testing.assert_array_equal(_run(tf.bincount(arr, maxlength=2)), [1, 2])
    np.testing.assert_allclose(_run(tf.bincount(arr, weights=[0.5, 1.0, 2.0, 3.0, 4.0])),
                               np.bincount(arr, [0.5, 1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(_run(tf.bincount(np.zeros(0, np.int32))), [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input arr must be non-negative"):
        _run(tf.bincount(tf.constant([1, -1])))
    hist = tf.histogram_fixed_width([-1.0, 0.0, 0.2, 0.5, 0.99, 1.0, 2.0, 0.3, 0.6],
                                    [0.0, 1.0], nbins=5)
    np.testing.assert_array_equal(_run(hist), [2, 2, 1, 1, 3])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"value_range should satisfy value_range\[0\] < value_range\[1\]"):
        _run(tf.histogram_fixed_width([1.0], tf.constant([1.0, 0.0]), nbins=3))


# --- determinism --------------------------------------------------------------------------------

_DETERMINISM_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import flowstone as tf
    rng = np.random.default_rng(0)
    data = rng.standard_normal((4000, 64)).astype(np.float32)
    ids = rng.integers(0, 50, size=4000)
    indices = rng.integers(0, 50, size=(4000, 1))
    fetches = [tf.scatter_nd(indices, data, [50, 64]),
               tf.unsorted_segment_prod(data, ids, 50),
               tf.math.segment_sum(data, np.sort(ids)),
               tf.cumsum(data, axis=0),
               tf.tensor_scatter_nd_add(tf.zeros([50, 64]), indices, data)]
    config = tf.ConfigProto(intra_op_parallelism_threads=int(sys.argv[1]))
    with tf.Session(config=config) as sess:
        sys.stdout.buffer.write(b"".join(a.tobytes() for a in sess.run(fetches)))
""")


def test_results_do_not_depend_on_the_thread_count():
    outputs = [subprocess.run([sys.executable, "-c", _DETERMINISM_SCRIPT, str(threads)],
                              capture_output=True, check=True).stdout for threads in (1, 4)]
    assert len(outputs[0]) > 0
    assert outputs[0] == outputs[1]


# --- roll, broadcast_to, meshgrid, sequence_mask -----------------------------------------------

def test_roll_and_broadcast_to():
    x = np.arange(12).reshape(3, 4)
    rolled = tf.roll(x, shift=[1, -1, 3], axis=[0, 1, 1])
    assert rolled.op.name == "Roll"
    np.testing.assert_array_equal(_run(rolled), np.roll(x, (1, 2), (0, 1)))
    assert tf.manip.roll is tf.roll
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Expected axis in the range \[-2, 2\), but got 2"):
        _run(tf.roll(x, tf.constant(1), tf.constant(2)))
    b = tf.broadcast_to([[1.0], [2.0]], [3, 2, 4])
    assert b.shape.as_list() == [3, 2, 4]
    np.testing.assert_array_equal(_run(b), np.broadcast_to([[1.0], [2.0]], (3, 2, 4)))
    with pytest.raises(ValueError, match=r"Unable to broadcast tensor of shape \[2,3\] to tensor "
                                         r"of shape \[2,4\]"):
        tf.broadcast_to(tf.zeros([2, 3]), [2, 4])
    shape = tf.placeholder(tf.int32, [2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unable to broadcast"):
            sess.run(tf.broadcast_to(tf.zeros([2, 3]), shape), {shape: [3, 3]})
    v = tf.constant([1.0, 2.0, 3.0])
    grad = tf.gradients(tf.reduce_sum(tf.broadcast_to(v, [4, 3])), v)[0]
    np.testing.assert_array_equal(_run(grad), [4.0, 4.0, 4.0])


def test_meshgrid_matches_numpy():
    x, y, z = [1, 2, 3], [4.0, 5.0], [7, 8, 9, 10]
    for indexing in ["xy", "ij"]:
        got = _run(tf.meshgrid(x, [4, 5], z, indexing=indexing))
        for g, e in zip(got, np.meshgrid(x, [4, 5], z, indexing=indexing)):
            np.testing.assert_array_equal(g, e)
    got = _run(tf.meshgrid(y, y))
    np.testing.assert_array_equal(got[0], np.meshgrid(y, y)[0])
    with pytest.raises(ValueError, match="must be either 'xy' or 'ij'"):
        tf.meshgrid(x, indexing="xz")
    with pytest.raises(TypeError, match="'sparse' is an invalid keyword argument"):
        tf.meshgrid(x, sparse=True)


def test_sequence_mask():
    lengths = [1, 3, 0]
    np.testing.assert_array_equal(_run(tf.sequence_mask(lengths)),
                                  np.arange(3)[None, :] < np.array(lengths)[:, None])
    got = _run(tf.sequence_mask([[2], [1]], maxlen=4, dtype=tf.float32))
    np.testing.assert_array_equal(got, [[[1, 1, 0, 0]], [[1, 0, 0, 0]]])
    with pytest.raises(ValueError, match="`maxlen` must be scalar"):
        tf.sequence_mask(lengths, maxlen=[3])


def test_space_to_depth_and_back():
    x = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
    packed = tf.space_to_depth(x, 2)
    assert packed.op.name == "SpaceToDepth" and packed.shape.as_list() == [2, 2, 3, 12]
    assert tf.nn.depth_to_space is tf.depth_to_space
    np.testing.assert_array_equal(_run(tf.depth_to_space(packed, 2)), x)
    np.testing.assert_array_equal(_run(packed)[0, 0, 0], x[0, :2, :2].reshape(-1))
    with pytest.raises(ValueError, match="Image width 6 and height 4 should be divisible by "
                                         "block_size: 4"):
        tf.space_to_depth(x, 4)
    with pytest.raises(ValueError, match="Input depth dimension 3 should be divisible by: 4"):
        tf.depth_to_space(x, 2)
    with pytest.raises(ValueError, match="must be at least minimum 2"):
        tf.space_to_depth(x, 1)
    with pytest.raises(ValueError, match="Only NHWC"):
        tf.space_to_depth(x, 2, data_format="NCHW")


def test_gather_nd_with_batch_dims():
    rng = np.random.default_rng(5)
    params = rng.standard_normal((2, 3, 4, 5))
    indices = rng.integers(0, 3, size=(2, 3, 6, 2))  # index vectors into dims 2 and 3
    indices[..., 0] %= 4
    got = tf.gather_nd(params, indices.astype(np.int64), batch_dims=2)
    assert got.shape.ndims == 3
    expected = np.empty((2, 3, 6))
    for n in np.ndindex(2, 3):
        for i in range(6):
            expected[n + (i,)] = params[n][tuple(indices[n + (i,)])]
    np.testing.assert_array_equal(_run(got), expected)
    rows = tf.gather_nd(params, [[1], [0]], batch_dims=1)
    np.testing.assert_array_equal(_run(rows), params[[0, 1], [1, 0]])
    x = tf.constant(params)
    grad = tf.gradients(tf.reduce_sum(tf.gather_nd(x, [[1], [1]], batch_dims=1)), x)[0]
    expected_grad = np.zeros_like(params)
    expected_grad[[0, 1], [1, 1]] = 1.0
    np.testing.assert_array_equal(_run(grad), expected_grad)
    with pytest.raises(ValueError, match="batch_dims = 3 must be in"):
        tf.gather_nd(params, [[1], [0]], batch_dims=3)


def test_space_to_batch_and_back():
    x = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6, 1)
    batched = tf.space_to_batch(x, [[0, 0], [1, 1]], block_size=2)
    assert batched.op.name == "SpaceToBatchND" and batched.shape.as_list() == [8, 2, 4, 1]
    got = _run(batched)
    np.testing.assert_array_equal(got[0, :, 1:, 0], x[0, ::2, 1::2, 0])  # offset (0, 0)
    # Batch entries k * 2 + n with column offset 0 (k = 0, 2) start with the left padding.
    np.testing.assert_array_equal(got[[0, 1, 4, 5], :, 0], np.zeros((4, 2, 1)))
    back = tf.batch_to_space(batched, [[0, 0], [1, 1]], block_size=2)
    assert back.op.name == "BatchToSpaceND"
    np.testing.assert_array_equal(_run(back), x)
    assert tf.manip.batch_to_space_nd is tf.batch_to_space_nd
    with pytest.raises(ValueError, match=r"padded_shape\[0\]=5 is not divisible by "
                                         r"block_shape\[0\]=2"):
        tf.space_to_batch_nd(x, [2, 3], [[0, 1], [0, 0]])
    with pytest.raises(ValueError, match="All values in block_shape must be positive"):
        tf.space_to_batch_nd(x, [2, 0], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match=r"Input batch dimension \(2\) is not divisible by "
                                         r"product of block sizes \(4\)"):
        tf.batch_to_space_nd(x, [2, 2], [[0, 0], [0, 0]])
    block = tf.placeholder(tf.int32, [2])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="not divisible"):
            sess.run(tf.space_to_batch_nd(x, block, [[0, 0], [0, 0]]), {block: [3, 2]})


def test_extract_image_patches_names_and_shapes():
    x = np.arange(50, dtype=np.float32).reshape(1, 5, 5, 2)
    same = tf.extract_image_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
    valid = tf.image.extract_patches(x, [1, 2, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID")
    assert same.op.name == "ExtractImagePatches" and same.shape.as_list() == [1, 3, 3, 8]
    assert valid.shape.as_list() == [1, 2, 2, 8]
    got = _run(valid)
    np.testing.assert_array_equal(got[0, 1, 0], x[0, 2:4, 0:2].reshape(-1))
    with pytest.raises(ValueError, match="ksizes must be a list of 4 ints"):
        tf.image.extract_patches(x, [2, 2], [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="not in the list of allowed values"):
        tf.image.extract_patches(x, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")
