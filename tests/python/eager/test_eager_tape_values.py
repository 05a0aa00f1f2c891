"""The tape keeps only the values each op's gradient reads (GradientTape::GradientReads): for a
range of ops, eager gradients must equal graph-mode tf.gradients of the same function, with the
values the tape dropped never missing."""

import numpy as np
import pytest

import flowstone as tf

RNG = np.random.RandomState(0)
X = RNG.uniform(0.5, 1.5, [2, 3]).astype(np.float32)
Y = RNG.uniform(0.5, 1.5, [2, 3]).astype(np.float32)

CASES = {
    "exp_log_sqrt": lambda x, y: tf.sqrt(tf.log(tf.exp(x) + y)),
    "trig": lambda x, y: tf.sin(x) * tf.cos(y) + tf.tanh(x * y),
    "sigmoid_relu_softplus": lambda x, y: tf.nn.sigmoid(x) + tf.nn.relu(x - y) + tf.nn.softplus(y),
    "div_pow_square": lambda x, y: x / y + tf.pow(x, y) + tf.square(x - y),
    "max_min_abs": lambda x, y: tf.maximum(x, y) - tf.minimum(x, y) * tf.abs(x - 1.0),
    "broadcast": lambda x, y: x * y[0] + tf.reduce_sum(y, axis=0),
    "reductions": lambda x, y: (tf.reduce_mean(x * y, axis=1) + tf.reduce_max(x, axis=1) +
                                tf.reduce_prod(y, axis=1)),
    "matmul": lambda x, y: tf.matmul(x, y, transpose_b=True),
    "reshape_transpose": lambda x, y: tf.transpose(tf.reshape(x * y, [3, 2])) * x,
    "concat_stack_split": lambda x, y: tf.split(tf.concat([x, y * y], axis=1), 2, axis=1)[1] +
                                       tf.reduce_sum(tf.stack([x, y]), axis=0),
    "gather_slice_tile": lambda x, y: tf.gather(x, [1, 0, 1]) * tf.tile(y[:1, 1:], [3, 1])[:, :1],
    "pad_expand_squeeze": lambda x, y: tf.squeeze(tf.expand_dims(tf.pad(x, [[1, 0], [0, 1]]), 0))
                                       [1:, :3] * y,
    "softmax_xent": lambda x, y: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.nn.softmax(y), logits=x) + tf.reduce_sum(tf.nn.log_softmax(x), axis=1),
    "where_cast": lambda x, y: tf.where(x > y, x * x, y * 3.0) + tf.cast(tf.cast(x, tf.float64),
                                                                         tf.float32),
}


def _graph_gradients(fn):
    with tf.Graph().as_default():
        x, y = tf.constant(X), tf.constant(Y)
        target = tf.reduce_sum(fn(x, y))
        grads = tf.gradients(target, [x, y])
        with tf.Session() as sess:
            return sess.run(grads)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_gradients_match_graph_gradients(name):
    fn = CASES[name]
    x, y = tf.constant(X), tf.constant(Y)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        target = tf.reduce_sum(fn(x, y))
    eager = tape.gradient(target, [x, y])
    for got, want in zip(eager, _graph_gradients(fn)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_second_derivatives_through_ops_whose_values_were_dropped():
    x = tf.constant([0.3, -0.7, 1.1])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(tf.tanh(x) + tf.exp(x * 0.5))
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x).numpy()
    t = np.tanh([0.3, -0.7, 1.1])
    expected = -2 * t * (1 - t * t) + 0.25 * np.exp(0.5 * np.array([0.3, -0.7, 1.1]))
    np.testing.assert_allclose(d2y, expected, rtol=1e-5)
