"""tf.nn.fractional_max_pool and fractional_avg_pool: region sequences drawn as TensorFlow
draws them (sizes k or k + 1 shuffled, or pseudo-random boundaries), outputs and gradients
against numpy pooling over the returned regions, seeding, and the errors. (The ops themselves,
over fixed regions, are compared with TensorFlow in op_cases_nnbreadth.py.)"""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from fractional_pool_reference import avg_pool_grad_reference, max_pool_grad_reference, pool, regions

RNG = np.random.default_rng(21)
IMAGE = RNG.permutation(2 * 10 * 9 * 3).reshape(2, 10, 9, 3).astype(np.float64)
RATIO = [1.0, 1.44, 1.73, 1.0]


def _check_sequence(seq, size, out_size):
    seq = np.asarray(seq)
    assert seq[0] == 0 and seq[-1] == size and len(seq) == out_size + 1
    k = size // out_size
    assert set(np.diff(seq)) <= {k, k + 1}


@pytest.mark.parametrize("pseudo_random", [False, True])
@pytest.mark.parametrize("overlapping", [False, True])
@pytest.mark.parametrize("pool_fn, reduce", [(tf.nn.fractional_max_pool, np.max),
                                          (tf.nn.fractional_avg_pool, np.mean)])
def test_pooling_over_the_regions_drawn(pool_fn, reduce, pseudo_random, overlapping):
    out, rows, cols = pool_fn(IMAGE, RATIO, pseudo_random=pseudo_random, overlapping=overlapping)
    assert out.shape.as_list() == [2, 6, 5, 3]
    assert rows.shape.as_list() == [7] and cols.shape.as_list() == [6]
    with tf.Session() as sess:
        got, r, c = sess.run((out, rows, cols))
    _check_sequence(r, 10, 6)
    _check_sequence(c, 9, 5)
    np.testing.assert_allclose(got, pool(IMAGE, r, c, overlapping, reduce), rtol=1e-12)


@pytest.mark.parametrize("overlapping", [False, True])
def test_gradients_follow_the_forwardregions(overlapping):
    x = tf.constant(IMAGE)
    for pool_fn in (tf.nn.fractional_max_pool, tf.nn.fractional_avg_pool):
        out, rows, cols = pool_fn(x, RATIO, overlapping=overlapping)
        weights = RNG.normal(size=(2, 6, 5, 3))
        (grad,) = tf.gradients(out, [x], grad_ys=tf.constant(weights))
        with tf.Session() as sess:
            y, r, c, g = sess.run((out, rows, cols, grad))
        if pool_fn is tf.nn.fractional_max_pool:
            want = max_pool_grad_reference(overlapping)(IMAGE, y, weights, r, c)
        else:
            want = avg_pool_grad_reference(overlapping)(IMAGE.shape, weights, r, c)
        np.testing.assert_allclose(g, want, rtol=1e-12)


def test_seeded_regions_repeat_and_unseeded_ones_vary():
    def sequences(**kwargs):
        graph = tf.Graph()
        with graph.as_default():
            _, rows, cols = tf.nn.fractional_max_pool(IMAGE, [1.0, 1.2, 1.2, 1.0], **kwargs)
        with tf.Session(graph=graph) as sess:
            return [np.concatenate(sess.run((rows, cols))) for _ in range(8)]

    seeded = sequences(deterministic=True, seed=7, seed2=3)
    assert all(np.array_equal(s, seeded[0]) for s in seeded)  # every run
    np.testing.assert_array_equal(sequences(deterministic=True, seed=7, seed2=3)[0], seeded[0])
    unseeded = sequences()
    assert any(not np.array_equal(s, unseeded[0]) for s in unseeded)


def test_integer_inputs_and_regions_for_an_even_ratio():
    x = np.arange(2 * 4 * 6 * 1, dtype=np.int32).reshape(2, 4, 6, 1)
    out, rows, cols = tf.nn.fractional_max_pool(x, [1.0, 2.0, 3.0, 1.0])
    with tf.Session() as sess:
        got, r, c = sess.run((out, rows, cols))
    np.testing.assert_array_equal(r, [0, 2, 4])
    np.testing.assert_array_equal(c, [0, 3, 6])
    np.testing.assert_array_equal(got, pool(x, r, c, False, np.max))
    assert got.dtype == np.int32
    assert regions([0, 3, 6], 6, True) == [(0, 3), (3, 5)]


def test_errors():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Both seed and seed2 should be 0 if deterministic is false"):
        with tf.Session() as sess:
            sess.run(tf.nn.fractional_avg_pool(IMAGE, RATIO, seed=1)[0])
    # Bad ratios fail while the graph is built (TensorFlow's kernel says the same at run time).
    with pytest.raises(ValueError, match="batch nor channel dimension"):
        tf.nn.fractional_max_pool(IMAGE, [2.0, 1.5, 1.5, 1.0])
    with pytest.raises(ValueError, match="cannot be smaller than 1"):
        tf.nn.fractional_max_pool(IMAGE, [1.0, 0.5, 1.5, 1.0])
    with pytest.raises(ValueError,
                       match="Pooling ratio is higher than input dimension size for dimension 2"):
        tf.nn.fractional_max_pool(IMAGE, [1.0, 1.0, 10.0, 1.0])
    with pytest.raises(ValueError, match="rank"):
        tf.nn.fractional_max_pool(IMAGE[0], RATIO)
    seq = np.array([0, 2, 4], np.int64)
    grad = apply_op("FractionalMaxPoolGrad", [IMAGE[:, :4, :4], np.zeros((2, 2, 2, 3)),
                                              np.ones((2, 2, 2, 3)), seq, seq]).outputs[0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not the maximum of any input"):
        with tf.Session() as sess:
            sess.run(grad)
    bad_sequence = apply_op("FractionalAvgPoolGrad", [
        np.array([2, 4, 4, 3], np.int64), np.ones((2, 2, 2, 3)), np.array([0, 3, 2], np.int64),
        seq]).outputs[0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="must increase from 0"):
        with tf.Session() as sess:
            sess.run(bad_sequence)
