"""tf.layers: variables (names, shapes, initial values, reuse), outputs against numpy, dropout
and batch normalization in training and inference."""

import numpy as np
import pytest

import flowstone as tf
from flowstone import layers
from flowstone.ops import nn_impl, variable_scope


def _names(collection=tf.GraphKeys.GLOBAL_VARIABLES):
    return [v.name for v in tf.get_collection(collection)]


def _initialized_session():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess


# --- dense ---------------------------------------------------------------------------------------

def test_dense_variables_and_output():
    x = tf.placeholder(tf.float32, [None, 4])
    y = layers.dense(x, 3, activation=nn_impl.relu6)
    assert _names() == ["dense/kernel:0", "dense/bias:0"]
    kernel, bias = tf.global_variables()
    assert kernel.shape.as_list() == [4, 3] and bias.shape.as_list() == [3]
    assert y.shape.as_list() == [None, 3] and y.dtype == tf.float32
    x_value = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32) * 3
    with _initialized_session() as sess:
        k, b = sess.run([kernel, bias])
        bias.load(np.array([0.5, -0.5, 7.0], np.float32), sess)
        got = sess.run(y, {x: x_value})
    np.testing.assert_array_equal(b, 0.0)
    np.testing.assert_allclose(got, np.clip(x_value @ k + [0.5, -0.5, 7.0], 0, 6), rtol=1e-5,
                               atol=1e-6)


def test_dense_names_are_unique_and_scoped():
    x = tf.placeholder(tf.float32, [None, 2])
    layers.dense(x, 3)
    layers.dense(x, 3)
    with variable_scope.variable_scope("tower"):
        layers.dense(x, 1, name="logits", use_bias=False)
    assert _names() == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0",
                        "tower/logits/kernel:0"]


def test_dense_reuse_through_variable_scope():
    x = tf.placeholder(tf.float64, [None, 2])
    with variable_scope.variable_scope("model"):
        first = layers.dense(x, 3, name="fc")
    with variable_scope.variable_scope("model", reuse=True):
        second = layers.dense(x, 3, name="fc")
    third = layers.dense(x, 3, name="model/fc", reuse=True)
    assert _names() == ["model/fc/kernel:0", "model/fc/bias:0"]
    assert tf.global_variables()[0].dtype == tf.float64
    with _initialized_session() as sess:
        a, b, c = sess.run([first, second, third], {x: [[1.0, 2.0]]})
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    with pytest.raises(ValueError, match="already exists"):
        with variable_scope.variable_scope("model"):
            layers.dense(x, 3, name="fc")
    with pytest.raises(ValueError, match="does not exist"):
        layers.dense(x, 3, name="other", reuse=True)


def test_dense_glorot_uniform_kernel_and_zero_bias():
    fan_in, fan_out = 300, 200
    layers.dense(tf.placeholder(tf.float32, [None, fan_in]), fan_out)
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    with _initialized_session() as sess:
        kernel, bias = sess.run(tf.global_variables())
    assert kernel.shape == (fan_in, fan_out) and np.all(bias == 0)
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.99 * limit
    n = kernel.size
    # Uniform(-limit, limit): mean 0, variance limit^2 / 3; 6-sigma bounds.
    assert abs(kernel.mean()) < 6 * limit / np.sqrt(3 * n)
    assert abs(kernel.var() / (limit ** 2 / 3) - 1) < 6 * np.sqrt(0.8 / n)


def test_dense_options():
    x = tf.placeholder(tf.float32, [None, 2])
    y = layers.dense(x, 2, use_bias=False, trainable=False,
                     kernel_initializer=tf.constant_initializer([[1.0, 2.0], [3.0, 4.0]]),
                     kernel_regularizer=lambda w: nn_impl.l2_loss(w),
                     activity_regularizer=lambda a: nn_impl.l2_loss(a))
    assert _names() == ["dense/kernel:0"] and tf.trainable_variables() == []
    reg = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(reg) == 2
    with _initialized_session() as sess:
        got, kernel_loss, activity_loss = sess.run([y, reg[0], reg[1]],
                                                   {x: [[1.0, 0.0], [0.0, 1.0]]})
    np.testing.assert_allclose(got, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(kernel_loss, 15.0)
    np.testing.assert_allclose(activity_loss, 15.0 / 2)  # per example


def test_dense_on_higher_rank_inputs():
    x = tf.placeholder(tf.float32, [None, 5, 4])
    y = layers.dense(x, 2)
    assert y.shape.as_list() == [None, 5, 2]
    x_value = np.random.default_rng(1).standard_normal((3, 5, 4)).astype(np.float32)
    with _initialized_session() as sess:
        kernel = sess.run(tf.global_variables()[0])
        np.testing.assert_allclose(sess.run(y, {x: x_value}), x_value @ kernel, rtol=1e-5,
                                   atol=1e-6)


def test_dense_input_errors():
    with pytest.raises(ValueError, match="expected min_ndim=2, found ndim=1"):
        layers.dense(tf.placeholder(tf.float32, [4]), 2)
    with pytest.raises(ValueError, match="last dimension of the inputs"):
        layers.dense(tf.placeholder(tf.float32, [None, None]), 2)


# --- convolution and pooling ---------------------------------------------------------------------

def _np_conv2d_valid(x, k):
    n, h, w, _ = x.shape
    kh, kw, _, f = k.shape
    out = np.zeros((n, h - kh + 1, w - kw + 1, f))
    for i in range(out.shape[1]):
        for j in range(out.shape[2]):
            out[:, i, j, :] = np.tensordot(x[:, i:i + kh, j:j + kw, :], k, axes=3)
    return out


def test_conv2d_variables_and_output():
    x = tf.placeholder(tf.float64, [None, 5, 6, 3])
    y = layers.conv2d(x, 4, 3, activation=nn_impl.elu)
    z = layers.conv2d(x, 2, (1, 2), strides=2, padding="same", use_bias=False)
    assert _names() == ["conv2d/kernel:0", "conv2d/bias:0", "conv2d_1/kernel:0"]
    assert tf.global_variables()[0].shape.as_list() == [3, 3, 3, 4]
    assert y.shape.as_list() == [None, 3, 4, 4] and z.shape.as_list() == [None, 3, 3, 2]
    x_value = np.random.default_rng(2).standard_normal((2, 5, 6, 3))
    with _initialized_session() as sess:
        kernel = sess.run(tf.global_variables()[0])
        tf.global_variables()[1].load(np.array([0.1, 0.2, 0.3, 0.4]), sess)
        got = sess.run(y, {x: x_value})
    pre = _np_conv2d_valid(x_value, kernel) + [0.1, 0.2, 0.3, 0.4]
    np.testing.assert_allclose(got, np.where(pre > 0, pre, np.expm1(pre)), rtol=1e-10)


def test_conv2d_channels_first_matches_channels_last():
    x_value = np.random.default_rng(3).standard_normal((2, 3, 5, 5))
    x = tf.constant(x_value)
    first = layers.conv2d(x, 2, 3, data_format="channels_first",
                          kernel_initializer=tf.constant_initializer(0.5))
    last = layers.conv2d(tf.constant(x_value.transpose(0, 2, 3, 1)), 2, 3,
                         kernel_initializer=tf.constant_initializer(0.5))
    assert first.shape.as_list() == [2, 2, 3, 3]
    with _initialized_session() as sess:
        a, b = sess.run([first, last])
    np.testing.assert_allclose(a, b.transpose(0, 3, 1, 2), rtol=1e-12)


def test_conv2d_argument_errors():
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=3"):
        layers.conv2d(tf.placeholder(tf.float32, [None, 5, 3]), 2, 3)
    with pytest.raises(ValueError, match="kernel_size"):
        layers.conv2d(tf.placeholder(tf.float32, [None, 5, 5, 3]), 2, (1, 2, 3))
    with pytest.raises(ValueError, match="padding"):
        layers.conv2d(tf.placeholder(tf.float32, [None, 5, 5, 3]), 2, 3, padding="full")
    with pytest.raises(ValueError, match="data_format"):
        layers.conv2d(tf.placeholder(tf.float32, [None, 5, 5, 3]), 2, 3, data_format="NWHC")


def test_pooling():
    x_value = np.arange(2 * 4 * 4 * 3, dtype=np.float32).reshape(2, 4, 4, 3)
    x = tf.constant(x_value)
    max_out = layers.max_pooling2d(x, 2, 2)
    avg_out = layers.average_pooling2d(x, (2, 2), (2, 2), name="avg")
    assert max_out.shape.as_list() == [2, 2, 2, 3] and avg_out.op.name.startswith("avg/")
    got_max, got_avg = tf.Session().run([max_out, avg_out])
    blocks = x_value.reshape(2, 2, 2, 2, 2, 3)
    np.testing.assert_array_equal(got_max, blocks.max(axis=(2, 4)))
    np.testing.assert_allclose(got_avg, blocks.mean(axis=(2, 4)))
    nchw = layers.max_pooling2d(tf.constant(x_value.transpose(0, 3, 1, 2)), 2, 2,
                                data_format="channels_first")
    np.testing.assert_array_equal(tf.Session().run(nchw), got_max.transpose(0, 3, 1, 2))


# --- flatten -------------------------------------------------------------------------------------

def test_flatten_channels_last_and_first():
    x_value = np.arange(2 * 2 * 3 * 4, dtype=np.float32).reshape(2, 2, 3, 4)
    x = tf.placeholder(tf.float32, [None, 2, 3, 4])
    last = layers.flatten(x)
    first = layers.flatten(x, data_format="channels_first")
    assert last.shape.as_list() == [None, 24] and first.shape.as_list() == [None, 24]
    with tf.Session() as sess:
        got_last, got_first = sess.run([last, first], {x: x_value})
    np.testing.assert_array_equal(got_last, x_value.reshape(2, 24))
    # channels_first data is flattened in channels-last order, as TensorFlow does.
    np.testing.assert_array_equal(got_first, x_value.transpose(0, 2, 3, 1).reshape(2, 24))


def test_flatten_unknown_dims_and_vectors():
    x = tf.placeholder(tf.float32, [None, None, 3])
    y = layers.flatten(x)
    assert y.shape.as_list()[0] is None
    with tf.Session() as sess:
        assert sess.run(y, {x: np.zeros((4, 5, 3))}).shape == (4, 15)
        assert sess.run(layers.flatten(np.arange(3.0))).shape == (3, 1)


# --- dropout -------------------------------------------------------------------------------------

def test_dropout_layer_training_flag():
    x = np.ones((1000, 100), np.float32)
    assert layers.dropout(tf.constant(x), training=False).op.type == "Const"
    y = layers.dropout(x, rate=0.25, training=True)
    got = tf.Session().run(y)
    assert abs((got == 0).mean() - 0.25) < 0.01
    np.testing.assert_allclose(got[got != 0], 1 / 0.75)


def test_dropout_layer_training_placeholder():
    training = tf.placeholder(tf.bool, [])
    y = layers.dropout(np.ones((500, 100)), rate=0.5, training=training)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {training: False}), 1.0)
        got = sess.run(y, {training: True})
    assert abs((got == 0).mean() - 0.5) < 0.02
    np.testing.assert_allclose(got[got != 0], 2.0)


# --- batch normalization -------------------------------------------------------------------------

def _batch(seed, shape=(8, 3)):
    return np.random.default_rng(seed).standard_normal(shape) * [2.0, 0.5, 1.0][:shape[-1]] + 1


def test_batch_normalization_variables():
    layers.batch_normalization(tf.placeholder(tf.float32, [None, 3]))
    assert _names() == ["batch_normalization/gamma:0", "batch_normalization/beta:0",
                        "batch_normalization/moving_mean:0",
                        "batch_normalization/moving_variance:0"]
    assert _names(tf.GraphKeys.TRAINABLE_VARIABLES) == ["batch_normalization/gamma:0",
                                                       "batch_normalization/beta:0"]
    with _initialized_session() as sess:
        gamma, beta, mean, var = sess.run(tf.global_variables())
    np.testing.assert_array_equal([gamma, beta, mean, var], [[1] * 3, [0] * 3, [0] * 3, [1] * 3])
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    layers.batch_normalization(tf.placeholder(tf.float32, [None, 3]), center=False, scale=False)
    assert _names()[4:] == ["batch_normalization_1/moving_mean:0",
                            "batch_normalization_1/moving_variance:0"]


def test_batch_normalization_training_and_moving_averages():
    x = tf.placeholder(tf.float64, [None, 3])
    y = layers.batch_normalization(x, momentum=0.9, epsilon=1e-3, training=True)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(update_ops) == 2
    with tf.control_dependencies(update_ops):
        step = tf.identity(y)
    moving_mean, moving_var = np.zeros(3), np.ones(3)
    with _initialized_session() as sess:
        for i in range(4):
            batch = _batch(i)
            got = sess.run(step, {x: batch})
            np.testing.assert_allclose(got, (batch - batch.mean(0)) / np.sqrt(batch.var(0) + 1e-3),
                                       rtol=1e-10)
            moving_mean = moving_mean - (moving_mean - batch.mean(0)) * 0.1
            moving_var = moving_var - (moving_var - batch.var(0)) * 0.1
        got_mean, got_var = sess.run(tf.global_variables()[2:])
    np.testing.assert_allclose(got_mean, moving_mean, rtol=1e-10)
    np.testing.assert_allclose(got_var, moving_var, rtol=1e-10)


def test_batch_normalization_inference_uses_moving_statistics():
    x = tf.placeholder(tf.float64, [None, 3])
    y = layers.batch_normalization(x, epsilon=0.01, training=False)
    with _initialized_session() as sess:
        gamma, beta, mean, var = tf.global_variables()
        gamma.load([1.0, 2.0, 3.0], sess)
        beta.load([0.0, 1.0, -1.0], sess)
        mean.load([0.5, 0.0, 1.0], sess)
        var.load([4.0, 1.0, 0.25], sess)
        batch = _batch(9)
        got = sess.run(y, {x: batch})
    expected = (batch - [0.5, 0.0, 1.0]) / np.sqrt(np.array([4.0, 1.0, 0.25]) + 0.01)
    np.testing.assert_allclose(got, expected * [1.0, 2.0, 3.0] + [0.0, 1.0, -1.0], rtol=1e-12)


def test_batch_normalization_training_placeholder():
    x = tf.placeholder(tf.float64, [None, 3])
    training = tf.placeholder(tf.bool, [])
    y = layers.batch_normalization(x, momentum=0.5, training=training)
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    batch = _batch(11)
    with _initialized_session() as sess:
        inferred = sess.run([y] + update_ops, {x: batch, training: False})[0]
        np.testing.assert_allclose(inferred, batch / np.sqrt(1 + 1e-3), rtol=1e-12)
        stats = sess.run(tf.global_variables()[2:])
        np.testing.assert_array_equal(stats, [np.zeros(3), np.ones(3)])
        trained = sess.run([y] + update_ops, {x: batch, training: True})[0]
        stats = sess.run(tf.global_variables()[2:])
    np.testing.assert_allclose(trained, (batch - batch.mean(0)) / np.sqrt(batch.var(0) + 1e-3),
                               rtol=1e-10)
    np.testing.assert_allclose(stats[0], batch.mean(0) / 2, rtol=1e-12)
    np.testing.assert_allclose(stats[1], (1 + batch.var(0)) / 2, rtol=1e-12)


@pytest.mark.parametrize("dtype,axis,bessel", [(np.float32, -1, True), (np.float32, 1, True),
                                               (np.float64, -1, False)])
def test_batch_normalization_on_images(dtype, axis, bessel):
    """As in TensorFlow, float32 images (the fused kernel's case) track the unbiased batch
    variance in the moving variance; other inputs track the biased one."""
    x_value = np.random.default_rng(12).standard_normal((2, 3, 4, 5)).astype(dtype)
    y = layers.batch_normalization(x_value, axis=axis, momentum=0.0, training=True)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        step = tf.identity(y)
    with _initialized_session() as sess:
        got = sess.run(step)
        moving_var = sess.run(tf.global_variables()[3])
    axes = tuple(a for a in range(4) if a != axis % 4)
    channels = x_value.astype(np.float64)
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    mean, var = channels.mean(axis=axes), channels.var(axis=axes)
    expected = (channels - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    n = x_value.size / x_value.shape[axis]
    np.testing.assert_allclose(moving_var, var * n / (n - 1) if bessel else var, rtol=1e-5)


def test_batch_normalization_errors():
    with pytest.raises(ValueError, match="undefined rank"):
        layers.batch_normalization(tf.placeholder(tf.float32, None))
    with pytest.raises(ValueError, match="should have a defined dimension"):
        layers.batch_normalization(tf.placeholder(tf.float32, [None, None]))
    with pytest.raises(NotImplementedError, match="renorm"):
        layers.batch_normalization(tf.placeholder(tf.float32, [None, 2]), renorm=True)


# --- training ---------------------------------------------------------------------------------

def test_constraints_are_applied_after_each_update():
    from flowstone.ops import math_ops
    x = tf.constant(np.ones((4, 3)))
    y = layers.dense(x, 2, kernel_initializer=tf.constant_initializer(0.05),
                     kernel_constraint=lambda w: math_ops.minimum(math_ops.maximum(w, -0.1),
                                                                  0.1))
    step = tf.train.GradientDescentOptimizer(10.0).minimize(tf.reduce_sum(y))
    with _initialized_session() as sess:
        sess.run(step)
        kernel, bias = sess.run(tf.global_variables())
    np.testing.assert_array_equal(kernel, -0.1)  # 0.05 - 10 * 4, clipped
    np.testing.assert_array_equal(bias, -40.0)   # unconstrained


def test_a_small_network_learns():
    """dense -> batch_normalization -> relu -> dropout -> dense, trained with Adam on a
    linearly separable problem, running the batch-norm updates with the train op."""
    rng = np.random.default_rng(13)
    data = rng.standard_normal((256, 4))
    labels = (data @ [1.0, -2.0, 0.5, 1.0] > 0).astype(np.int32)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.int32, [None])
    training = tf.placeholder_with_default(False, [])
    hidden = layers.dense(x, 16, use_bias=False)
    hidden = tf.nn.relu(layers.batch_normalization(hidden, training=training))
    hidden = layers.dropout(hidden, rate=0.1, training=training)
    logits = layers.dense(hidden, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        step = tf.train.AdamOptimizer(0.05).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(nn_impl.in_top_k(logits, y, 1), tf.float32))
    feed = {x: data.astype(np.float32), y: labels}
    with _initialized_session() as sess:
        initial = sess.run(loss, feed)
        for _ in range(60):
            sess.run(step, {**feed, training: True})
        final, final_accuracy = sess.run([loss, accuracy], feed)
        moving_mean = sess.run(tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES,
                                                 "batch_normalization/moving_mean")[0])
    assert final < initial / 3 and final_accuracy > 0.95
    assert np.abs(moving_mean).max() > 0  # the updates ran
