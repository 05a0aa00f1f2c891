"""tf.nn.top_k (TopKV2, its gradient) and tf.math.in_top_k (InTopKV2) against numpy."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.ops import nn_impl as nn


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _np_top_k(x, k):
    """Largest first, ties in index order, NaN above every number."""
    descending = -x.astype(np.float64)
    is_number = ~np.isnan(descending)
    # lexsort is stable and sorts by its last key first: NaNs (is_number False), then values.
    order = np.lexsort((np.nan_to_num(descending), is_number), axis=-1)[..., :k]
    return np.take_along_axis(x, order, -1), order


DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k", [((5,), 1), ((5,), 3), ((5,), 5), ((4, 7), 2),
                                     ((2, 3, 50), 10), ((3, 4), 0), ((0, 4), 2),
                                     ((6, 1000), 1), ((2, 1000), 999)])
def test_top_k_matches_numpy(dtype, shape, k):
    rng = np.random.default_rng(sum(shape) + k)
    # Few distinct values, so that ties are common and their order is checked.
    x = rng.integers(0, 20, size=shape).astype(dtype)
    values, indices = nn.top_k(x, k)
    assert values.shape.as_list() == list(shape[:-1]) + [k]
    assert values.dtype == tf.as_dtype(dtype) and indices.dtype == tf.int32
    got_values, got_indices = _run([values, indices])
    expected_values, expected_indices = _np_top_k(x, k)
    assert got_values.dtype == dtype and got_indices.dtype == np.int32
    np.testing.assert_array_equal(got_values, expected_values)
    np.testing.assert_array_equal(got_indices, expected_indices)


def test_top_k_default_k_is_one_and_result_is_a_named_tuple():
    result = nn.top_k(np.array([[1.0, 3.0, 2.0], [5.0, 4.0, 6.0]]))
    values, indices = _run([result.values, result.indices])
    np.testing.assert_array_equal(values, [[3.0], [6.0]])
    np.testing.assert_array_equal(indices, [[1], [2]])
    assert result.values.op.type == "TopKV2" and result.values.op.name == "TopKV2"


def test_top_k_special_floats():
    x = np.array([[1.0, np.nan, 3.0, 3.0, -np.inf, np.inf, np.nan, -0.0, 0.0]])
    values, indices = _run(nn.top_k(x, 9))
    np.testing.assert_array_equal(indices, [[1, 6, 5, 2, 3, 0, 7, 8, 4]])
    np.testing.assert_array_equal(values, x[:, indices[0]])


def test_top_k_unsorted_returns_the_same_set():
    x = np.random.default_rng(3).standard_normal((4, 30))
    values, indices = _run(nn.top_k(x, 5, sorted=False))
    expected = np.sort(np.argsort(-x, axis=-1)[:, :5], axis=-1)
    np.testing.assert_array_equal(np.sort(indices, axis=-1), expected)
    np.testing.assert_array_equal(values, np.take_along_axis(x, indices, -1))


def test_top_k_int64_indices_and_k():
    values, indices = nn.top_k(np.array([2.0, 7.0, 5.0]), tf.constant(2, tf.int64),
                               index_type=tf.int64)
    assert indices.dtype == tf.int64
    got_values, got_indices = _run([values, indices])
    np.testing.assert_array_equal(got_values, [7.0, 5.0])
    np.testing.assert_array_equal(got_indices, [1, 2])


def test_top_k_shape_errors_at_graph_build():
    with pytest.raises(ValueError, match="last dimension >= k = 4 but is 3"):
        nn.top_k(np.zeros((2, 3)), 4)
    with pytest.raises(ValueError, match="Need k >= 0, got -1"):
        nn.top_k(np.zeros((2, 3)), -1)
    with pytest.raises(ValueError, match="at least rank 1 but is rank 0"):
        nn.top_k(np.float32(1.0), 1)
    with pytest.raises(ValueError, match="rank 0 but is rank 1"):
        nn.top_k(np.zeros(3), [1, 2])
    with pytest.raises(TypeError, match="TopKV2"):
        nn.top_k(np.array([True, False]), 1)


def test_top_k_with_unknown_shapes_and_run_time_errors():
    x = tf.placeholder(tf.float32, None)
    k = tf.placeholder(tf.int32, [])
    values, indices = nn.top_k(x, k)
    assert values.shape.rank is None
    with tf.Session() as sess:
        got = sess.run(values, {x: [[1.0, 4.0, 2.0]], k: 2})
        np.testing.assert_array_equal(got, [[4.0, 2.0]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="at least k columns. Had 3, "
                                                                 "needed 4"):
            sess.run(values, {x: [[1.0, 4.0, 2.0]], k: 4})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need k >= 0, got -2"):
            sess.run(values, {x: [1.0], k: -2})
        with pytest.raises(tf.errors.InvalidArgumentError, match="input must be >= 1-D"):
            sess.run(values, {x: 1.0, k: 0})
    partial = tf.placeholder(tf.float32, [None, 6])
    assert nn.top_k(partial, k)[0].shape.as_list() == [None, None]
    assert nn.top_k(partial, 3)[1].shape.as_list() == [None, 3]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top_k_gradient_scatters_to_the_chosen_positions(dtype):
    x_value = np.array([[1.0, 5.0, 3.0, 5.0], [0.0, -1.0, 2.0, 1.0]], dtype)
    upstream = np.array([[10.0, 20.0], [30.0, 40.0]], dtype)
    x = tf.constant(x_value)
    values, _ = nn.top_k(x, 2)
    (grad,) = tf.gradients(values, [x], grad_ys=[tf.constant(upstream)])
    got = _run(grad)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, [[0.0, 10.0, 0.0, 20.0], [0.0, 0.0, 30.0, 40.0]])


def test_top_k_gradient_with_unknown_shape():
    x = tf.placeholder(tf.float64, [None, None, None])
    values, _ = nn.top_k(x, 1)
    (grad,) = tf.gradients(values, [x])
    x_value = np.random.default_rng(5).standard_normal((2, 3, 4))
    expected = (x_value == x_value.max(axis=-1, keepdims=True)).astype(np.float64)
    np.testing.assert_array_equal(_run(grad, {x: x_value}), expected)


# --- in_top_k ------------------------------------------------------------------------------------

PREDICTIONS = np.array([[0.1, 0.5, 0.5, 0.2],
                        [np.nan, 1.0, 2.0, 3.0],
                        [1.0, 2.0, np.inf, 0.0],
                        [1.0, 2.0, 3.0, 4.0]], np.float32)


@pytest.mark.parametrize("targets,k,expected", [
    ([2, 3, 1, 3], 1, [True, False, False, True]),      # a tie with the largest counts
    ([0, 3, 2, 2], 3, [False, False, False, True]),     # NaN row and inf target are misses
    ([1, 3, 1, 4], 2, [True, False, False, False]),     # target 4 is out of range
    ([1, 3, 1, -1], 4, [True, False, False, False]),    # so is -1
    ([1, 3, 2, 0], 0, [False, False, False, False]),
    ([1, 3, 2, 0], -1, [False, False, False, False]),
])
@pytest.mark.parametrize("target_dtype", [np.int32, np.int64])
def test_in_top_k(targets, k, expected, target_dtype):
    result = nn.in_top_k(PREDICTIONS, np.array(targets, target_dtype), k)
    assert result.dtype == tf.bool and result.shape.as_list() == [4]
    np.testing.assert_array_equal(_run(result), expected)


def test_in_top_k_against_numpy_ranks():
    rng = np.random.default_rng(6)
    predictions = rng.integers(0, 5, size=(50, 8)).astype(np.float32)
    targets = rng.integers(0, 8, size=50)
    for k in (1, 3, 8):
        larger = (predictions > predictions[np.arange(50), targets][:, None]).sum(axis=1)
        got = _run(tf.math.in_top_k(predictions, targets, k))
        np.testing.assert_array_equal(got, larger < k)


def test_in_top_k_accepts_float64_predictions_and_empty_batches():
    got = _run(nn.in_top_k(np.array([[0.3, 0.7]]), [1], 1))
    np.testing.assert_array_equal(got, [True])
    assert _run(nn.in_top_k(np.zeros((0, 3), np.float32), np.zeros(0, np.int32), 1)).shape == (0,)


def test_in_top_k_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 4 and 3"):
        nn.in_top_k(PREDICTIONS, [1, 3, 2], 1)
    with pytest.raises(ValueError, match="rank 2 but is rank 1"):
        nn.in_top_k(np.zeros(3, np.float32), [0], 1)
    predictions = tf.placeholder(tf.float32, None)
    targets = tf.placeholder(tf.int32, None)
    result = nn.in_top_k(predictions, targets, 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"expected shape \[2\], got \[3\]"):
        _run(result, {predictions: np.zeros((2, 3)), targets: [0, 1, 2]})


def test_in_top_k_has_no_gradient():
    predictions = tf.constant(PREDICTIONS)
    assert tf.gradients(nn.in_top_k(predictions, [0, 0, 0, 0], 1), [predictions]) == [None]


def test_namespaces():
    assert tf.math.top_k is tf.nn.top_k is nn.top_k
    assert tf.math.in_top_k is tf.nn.in_top_k is nn.in_top_k
