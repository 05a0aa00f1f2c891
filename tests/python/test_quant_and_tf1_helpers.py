"""tf.quantization.fake_quant_* (values, nudging, straight-through gradients, errors, against
TensorFlow), tf.bitcast, tf.timestamp, tf.recompute_grad and tf.vectorized_map."""

import time

import numpy as np
import pytest

import flowstone as tf
from flowstone import errors
from peers import requires_tensorflow, run_tensorflow


def _run(fetches, feed_dict=None, init=False):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


# The first 4 bytes of TensorFlow's fingerprints of b"q" * 129 and bytes(range(200)).
FINGERPRINTS_OF_LONG = [[161, 206, 194, 184], [179, 111, 214, 38]]

X = np.array([-7.0, -6.0, -1.3, 0.0, 0.02, 2.51, 5.9, 6.2], np.float32)


def test_fake_quant_args_levels_and_gradient():
    with tf.Graph().as_default():
        x = tf.constant(X)
        y = tf.fake_quant_with_min_max_args(x, min=-6.0, max=6.0)
        g = tf.gradients(tf.reduce_sum(y * np.arange(8, dtype=np.float32)), x)[0]
        yv, gv = _run([y, g])
    scale = np.float32(12.0 / 255)
    # 0 is a level after nudging, every output is one of the 256 levels, within the range.
    assert yv[3] == 0.0
    levels = np.round((yv - yv.min()) / scale)
    np.testing.assert_allclose((yv - yv.min()) / scale, levels, atol=1e-3)
    assert yv.min() >= -6.05 and yv.max() <= 6.05
    np.testing.assert_allclose(np.abs(yv - np.clip(X, yv.min(), yv.max())), 0,
                               atol=scale / 2 + 1e-6)
    # Straight through inside the nudged range, 0 outside.
    np.testing.assert_array_equal(gv, [0, 1, 2, 3, 4, 5, 6, 0])


def test_fake_quant_vars_gradients_for_min_and_max():
    with tf.Graph().as_default():
        x = tf.constant(X)
        lo = tf.Variable(-2.0)
        hi = tf.Variable(3.0)
        y = tf.quantization.fake_quant_with_min_max_vars(x, lo, hi, num_bits=4)
        gx, glo, ghi = tf.gradients(tf.reduce_sum(y), [x, lo, hi])
        gxv, glov, ghiv = _run([gx, glo, ghi], init=True)
    inside = (X >= -2.0) & (X <= 3.0)
    np.testing.assert_array_equal(gxv, inside.astype(np.float32))
    assert glov == (X < -2.0).sum() and ghiv == (X > 3.0).sum()


def test_fake_quant_per_channel_gradients():
    x0 = np.array([[-3.0, 0.5], [1.0, 5.0], [0.2, -0.1]], np.float32)
    with tf.Graph().as_default():
        x = tf.constant(x0)
        lo = tf.constant([-1.0, 0.0])
        hi = tf.constant([1.0, 4.0])
        y = tf.fake_quant_with_min_max_vars_per_channel(x, lo, hi)
        gx, glo, ghi = tf.gradients(tf.reduce_sum(y), [x, lo, hi])
        gxv, glov, ghiv = _run([gx, glo, ghi])
    np.testing.assert_array_equal(gxv, [[0, 1], [1, 0], [1, 0]])
    np.testing.assert_array_equal(glov, [1, 1])
    np.testing.assert_array_equal(ghiv, [0, 1])


def test_fake_quant_errors():
    with tf.Graph().as_default():
        bad_range = tf.fake_quant_with_min_max_args(X, min=1.0, max=-1.0)
        bad_bits = tf.fake_quant_with_min_max_args(X, num_bits=17)
        lo = tf.placeholder(tf.float32)
        bad_shape = tf.fake_quant_with_min_max_vars_per_channel(np.ones((2, 3), np.float32), lo,
                                                                 np.ones(3, np.float32))
        with pytest.raises(errors.InvalidArgumentError, match="min has to be smaller than max"):
            _run(bad_range)
        with pytest.raises(errors.InvalidArgumentError, match="between 2 and 16, was: 17"):
            _run(bad_bits)
        with pytest.raises(errors.InvalidArgumentError, match="last dimension"):
            _run(bad_shape, {lo: np.zeros(2, np.float32)})


@requires_tensorflow
def test_fake_quant_matches_tensorflow():
    rng = np.random.default_rng(3)
    x = rng.uniform(-8, 8, size=(50, 3)).astype(np.float32)
    lo = [-1.7, -6.0, 0.3]
    hi = [2.2, 5.0, 9.0]
    out = run_tensorflow(f"""
        import numpy as np, tensorflow as tf
        x = np.array({x.tolist()}, np.float32)
        a = tf.quantization.fake_quant_with_min_max_args(x, -2.5, 3.1, num_bits=5,
                                                         narrow_range=True)
        v = tf.quantization.fake_quant_with_min_max_vars(x, -1.7, 2.2)
        c = tf.quantization.fake_quant_with_min_max_vars_per_channel(x, {lo}, {hi}, num_bits=3)
        for t in (a, v, c):
            print(repr(t.numpy().ravel().tolist()))
    """).split("\n")
    with tf.Graph().as_default():
        got = _run([tf.fake_quant_with_min_max_args(x, -2.5, 3.1, num_bits=5, narrow_range=True),
                    tf.fake_quant_with_min_max_vars(x, -1.7, 2.2),
                    tf.fake_quant_with_min_max_vars_per_channel(x, lo, hi, num_bits=3)])
    for g, line in zip(got, out):
        np.testing.assert_allclose(g.ravel(), eval(line), rtol=1e-6, atol=1e-6)


def test_bitcast_shapes_and_errors():
    with tf.Graph().as_default():
        wide = tf.bitcast(tf.constant([1.0, 2.0]), tf.uint8)
        assert wide.shape.as_list() == [2, 4]
        back = tf.bitcast(wide, tf.float32)
        assert back.shape.as_list() == [2]
        np.testing.assert_array_equal(_run(back), [1.0, 2.0])
        with pytest.raises(ValueError, match="last dimension must be 4"):
            tf.bitcast(tf.constant([1, 2, 3], tf.uint8), tf.float32)


def test_timestamp_runs_each_time():
    with tf.Graph().as_default():
        ts = tf.timestamp()
        assert ts.dtype == tf.float64 and ts.shape.as_list() == []
        with tf.Session() as sess:
            before = time.time()
            first = sess.run(ts)
            time.sleep(0.01)
            second = sess.run(ts)
    assert before - 1 <= first < second <= time.time() + 1


def test_recompute_grad_keeps_values_and_gradients():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        f = tf.recompute_grad(lambda t: tf.square(t) * 3.0)
        y = f(x)
        g = tf.gradients(tf.reduce_sum(y), x)[0]
        yv, gv = _run([y, g])
    np.testing.assert_allclose(yv, [3.0, 12.0])
    np.testing.assert_allclose(gv, [6.0, 12.0])


def test_vectorized_map_maps_over_the_first_dimension():
    with tf.Graph().as_default():
        x = tf.constant(np.arange(6.0).reshape(3, 2))
        y = tf.vectorized_map(lambda row: tf.reduce_sum(row) * 2.0, x)
        pairs = tf.vectorized_map(lambda e: (e[0] + 1, tf.cast(e[1], tf.int32)),
                                  (x, tf.constant([1.5, 2.5, 3.5])))
        yv, (a, b) = _run([y, pairs])
    np.testing.assert_allclose(yv, [2.0, 10.0, 18.0])
    np.testing.assert_allclose(a, np.arange(6.0).reshape(3, 2) + 1)
    np.testing.assert_array_equal(b, [1, 2, 3])


def test_create_partitioned_variables():
    value = np.arange(10.0).reshape(5, 2).astype(np.float32)
    with tf.Graph().as_default():
        parts = tf.create_partitioned_variables([5, 2], [3, 1], value, name="w")
        ones = tf.create_partitioned_variables([2, 7], [1, 2], tf.ones_initializer())
        assert [p.name for p in parts] == ["w/part_0:0", "w/part_1:0", "w/part_2:0"]
        assert [p.shape.as_list() for p in ones] == [[2, 4], [2, 3]]
        got = _run(parts + ones, init=True)
        with pytest.raises(ValueError, match="must have the length"):
            tf.create_partitioned_variables([5, 2], [3], value)
    np.testing.assert_array_equal(np.concatenate(got[:3]), value)
    np.testing.assert_array_equal(got[3], np.ones((2, 4)))


def test_fingerprint_rows_are_their_bytes():
    values = np.arange(12, dtype=np.int32).reshape(3, 4)
    strings = np.array([row.tobytes() for row in values], dtype=object)
    long = np.array([b"q" * 129, bytes(range(200))], dtype=object)
    with tf.Graph().as_default():
        f = tf.fingerprint(values)
        assert f.shape.as_list() == [3, 8] and f.dtype == tf.uint8
        got, expected, long_value = _run([f, tf.fingerprint(strings), tf.fingerprint(long)])
        with pytest.raises(errors.InvalidArgumentError, match="Unsupported fingerprint method"):
            _run(tf.fingerprint(values, method="md5"))
    np.testing.assert_array_equal(got, expected)
    # TensorFlow's values for strings longer than 64 bytes (FarmHash's main loop).
    np.testing.assert_array_equal(long_value[:, :4], FINGERPRINTS_OF_LONG)


@requires_tensorflow
def test_fingerprint_matches_tensorflow():
    values = np.arange(60, dtype=np.float64).reshape(3, 20)
    out = run_tensorflow("""
        import numpy as np, tensorflow as tf
        print(tf.fingerprint(np.arange(60, dtype=np.float64).reshape(3, 20)).numpy().tolist())
    """)
    with tf.Graph().as_default():
        got = _run(tf.fingerprint(values))
    assert got.tolist() == eval(out)
