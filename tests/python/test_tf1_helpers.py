"""Random composites (shuffle, multinomial/categorical, random_crop), switch_case,
grad_pass_through, saturate_cast, histogram_fixed_width_bins and the other small TF1 helpers.
(Deterministic values were compared with TensorFlow's when written.)"""

import numpy as np
import pytest

import flowstone as tf


def test_random_shuffle_is_a_permutation_of_rows():
    tf.set_random_seed(3)
    x = tf.constant(np.arange(20).reshape(10, 2))
    shuffled = tf.random_shuffle(x)
    with tf.Session() as sess:
        a, b = sess.run(shuffled), sess.run(shuffled)
    assert sorted(a[:, 0].tolist()) == list(range(0, 20, 2))
    np.testing.assert_array_equal(a[:, 1], a[:, 0] + 1)
    assert not np.array_equal(a, b)
    assert tf.random.shuffle is tf.random_shuffle


def test_multinomial_frequencies_follow_softmax():
    tf.set_random_seed(5)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    with np.errstate(divide="ignore"):
        logits = np.log(probs)
    samples = tf.multinomial(logits, 20000)
    categorical = tf.random.categorical(logits, 5, dtype=tf.int32)
    assert samples.dtype == tf.int64 and categorical.dtype == tf.int32
    with tf.Session() as sess:
        drawn, few = sess.run([samples, categorical])
    assert drawn.shape == (2, 20000) and few.shape == (2, 5)
    for row, p in zip(drawn, probs):
        # 20,000 draws: the standard error of each frequency is below 0.004.
        np.testing.assert_allclose(np.bincount(row, minlength=3) / 20000, p, atol=0.02)
    assert not np.any(drawn[1] == 2)  # a class of probability 0 is never drawn


def test_random_crop():
    value = np.arange(20).reshape(4, 5)
    crop = tf.random_crop(tf.constant(value), [2, 3])
    with tf.Session() as sess:
        for _ in range(5):
            got = sess.run(crop)
            r, c = np.argwhere(value == got[0, 0])[0]
            np.testing.assert_array_equal(got, value[r:r + 2, c:c + 3])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
            sess.run(tf.random_crop(tf.constant(value), [5, 1]))


def test_switch_case():
    index = tf.placeholder(tf.int32, [])
    listed = tf.switch_case(index, [lambda: tf.constant(10), lambda: tf.constant(20)],
                            default=lambda: tf.constant(-1))
    keyed = tf.switch_case(index, {0: lambda: tf.constant(1), 1: lambda: tf.constant(2)})
    with tf.Session() as sess:
        assert [sess.run([listed, keyed], {index: k}) for k in (0, 1, 7)] == [
            [10, 1], [20, 2], [-1, 2]]
    with pytest.raises(TypeError, match="branch_index must be an int32 Tensor"):
        tf.switch_case(tf.constant(1, tf.int64), [lambda: tf.constant(1)])
    with pytest.raises(ValueError, match="at least one item"):
        tf.switch_case(index, [])


def test_grad_pass_through_and_guarantee_const():
    x = tf.constant(2.0)
    y = tf.grad_pass_through(lambda t: tf.round(t * 1.3))(x)
    c = tf.guarantee_const(x)
    with tf.Session() as sess:
        assert sess.run([y, tf.gradients(y, x)[0], c]) == [3.0, 1.0, 2.0]


def test_value_helpers():
    with tf.Session() as sess:
        bins, saturated, quotient = sess.run([
            tf.histogram_fixed_width_bins([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0], [0.0, 5.0], nbins=5),
            tf.saturate_cast([-300.0, 3.7, 300.0], tf.uint8), tf.floor_div(-7, 2)])
    assert bins.tolist() == [0, 0, 1, 2, 4, 4]
    assert saturated.tolist() == [0, 3, 255] and saturated.dtype == np.uint8
    assert quotient == -4
    sp = tf.convert_to_tensor_or_sparse_tensor(tf.SparseTensorValue([[0]], [1.0], [2]))
    assert isinstance(sp, tf.SparseTensor)
    with pytest.raises(RuntimeError, match="Sparse dtype: requested"):
        tf.convert_to_tensor_or_sparse_tensor(sp, dtype=tf.int32)
    assert isinstance(tf.convert_to_tensor_or_sparse_tensor([1, 2]), tf.Tensor)
    assert tf.control_flow_v2_enabled()
