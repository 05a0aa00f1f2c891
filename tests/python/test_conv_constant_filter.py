"""A convolution whose filter the plan holds as a constant (a Const, or a filter with a batch norm
folded in) keeps the filter reordered into oneDNN's layout across runs. The kept copy must never
stand in for another filter: a fed value of the Const, or the same node in another session."""
import numpy as np

import flowstone as tf
from test_conv_row_bands import reference_conv, same_pads


def _conv_relu(x, f, b):
    pads = same_pads(x.shape[1], f.shape[0], 1, 1)
    return np.maximum(reference_conv(x, f, (1, 1), (pads, pads), (1, 1)) + b, 0)


def test_constant_filter_is_reordered_once_and_a_fed_filter_still_wins():
    rng = np.random.RandomState(5)
    f_value = (rng.rand(3, 3, 32, 64).astype(np.float32) - 0.5) / 10
    other = (rng.rand(3, 3, 32, 64).astype(np.float32) - 0.5) / 10
    b_value = rng.rand(64).astype(np.float32) - 0.5
    x = tf.placeholder(tf.float32, [None, 20, 20, 32])
    f = tf.constant(f_value)
    plain = tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME")
    fused = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"), b_value))
    with tf.Session() as sess:
        for seed in range(3):  # new inputs each run, the kept filter each time
            x_value = np.random.RandomState(seed).rand(1 + seed, 20, 20, 32).astype(np.float32)
            got_plain, got_fused = sess.run([plain, fused], {x: x_value})
            pads = same_pads(20, 3, 1, 1)
            np.testing.assert_allclose(
                got_plain, reference_conv(x_value, f_value, (1, 1), (pads, pads), (1, 1)),
                rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(got_fused, _conv_relu(x_value, f_value, b_value),
                                       rtol=1e-4, atol=1e-5)
        # Feeding the Const replaces its value for this run only.
        got_plain, got_fused = sess.run([plain, fused], {x: x_value, f: other})
        np.testing.assert_allclose(got_fused, _conv_relu(x_value, other, b_value),
                                   rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(
            got_plain, reference_conv(x_value, other, (1, 1), (pads, pads), (1, 1)),
            rtol=1e-4, atol=1e-5)
        again = sess.run(fused, {x: x_value})
        np.testing.assert_allclose(again, _conv_relu(x_value, f_value, b_value),
                                   rtol=1e-4, atol=1e-5)


def test_folded_batch_norm_filter_is_kept_per_session():
    rng = np.random.RandomState(6)
    x = tf.placeholder(tf.float32, [None, 16, 16, 8])
    f = tf.constant(rng.rand(3, 3, 8, 16).astype(np.float32) - 0.5)
    scale, offset, mean = (tf.constant(rng.rand(16).astype(np.float32) + 0.5) for _ in range(3))
    variance = tf.constant(rng.rand(16).astype(np.float32) + 0.5)
    y, _, _ = tf.nn.fused_batch_norm(tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"), scale, offset,
                                     mean=mean, variance=variance, is_training=False)
    y = tf.nn.relu(y)
    x_value = rng.rand(2, 16, 16, 8).astype(np.float32)
    off = tf.ConfigProto()
    off.graph_options.rewrite_options.remapping = tf.protos.RewriterConfig.OFF
    with tf.Session() as sess, tf.Session(config=off) as unfused:
        want = unfused.run(y, {x: x_value})
        for _ in range(2):
            np.testing.assert_allclose(sess.run(y, {x: x_value}), want, rtol=1e-5, atol=1e-5)
