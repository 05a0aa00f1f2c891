"""tf.random.stateless_*: values are a pure function of shape and seed (same in every session,
run and thread count, different for another seed), have the right statistics and ranges, and
bad seeds and bounds fail clearly."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

N = 100_000


def run(fetches, config=None):
    with tf.Session(config=config) as sess:
        return sess.run(fetches)


@pytest.mark.parametrize("fn", [tf.random.stateless_uniform, tf.random.stateless_normal,
                                tf.random.stateless_truncated_normal])
def test_same_seed_same_values_in_every_run_session_and_thread_count(fn):
    values = fn([1000], seed=[3, 4])
    other = fn([1000], seed=[3, 5])
    single = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf.Session() as sess:
        first, again, different = sess.run(values), sess.run(values), sess.run(other)
    alone = run(values, config=single)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, alone)
    assert not np.array_equal(first, different)
    # A second op with the same seed gives the same values: no state is shared or advanced.
    np.testing.assert_array_equal(run(fn([1000], seed=[3, 4])), first)


def test_same_values_in_a_new_process():
    program = textwrap.dedent("""
        import flowstone as tf
        with tf.Session() as sess:
            print(sess.run(tf.random.stateless_uniform([4], seed=[11, 12])).tolist())
    """)
    outputs = [subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                              timeout=120, env=dict(os.environ)).stdout for _ in range(2)]
    assert outputs[0] == outputs[1] and outputs[0].startswith("[")


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_statistics(dtype):
    uniform, normal, truncated = run([
        tf.random.stateless_uniform([N], seed=[1, 2], minval=-2.0, maxval=6.0, dtype=dtype),
        tf.random.stateless_normal([N], seed=[1, 2], mean=3.0, stddev=0.5, dtype=dtype),
        tf.random.stateless_truncated_normal([N], seed=[1, 2], dtype=dtype)])
    assert uniform.dtype == dtype.as_numpy_dtype
    assert uniform.min() >= -2.0 and uniform.max() < 6.0
    assert abs(uniform.mean() - 2.0) < 0.05 and abs(uniform.var() - 64 / 12) < 0.1
    assert abs(normal.mean() - 3.0) < 0.01 and abs(normal.std() - 0.5) < 0.01
    assert np.abs(truncated).max() < 2.0 and abs(truncated.std() - 0.8796) < 0.01


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_integers_cover_the_range_evenly(dtype):
    values = run(tf.random.stateless_uniform([N], seed=[9, 9], minval=-3, maxval=4,
                                             dtype=dtype))
    assert values.dtype == dtype.as_numpy_dtype
    counts = np.bincount(values + 3, minlength=7)
    assert counts.size == 7 and counts.min() > N / 7 * 0.95


def test_categorical_follows_the_probabilities_and_the_seed():
    logits = tf.math.log([[0.2, 0.8], [0.5, 0.5]])
    samples = tf.random.stateless_categorical(logits, 20_000, seed=[1, 1])
    v1 = tf.random.stateless_multinomial(logits, 5, seed=[1, 1], output_dtype=tf.int32)
    got, again, small = run([samples, samples, v1])
    np.testing.assert_array_equal(got, again)
    assert got.dtype == np.int64 and small.dtype == np.int32 and small.shape == (2, 5)
    assert abs(got[0].mean() - 0.8) < 0.02 and abs(got[1].mean() - 0.5) < 0.02


def test_static_shapes_and_errors():
    assert tf.random.stateless_normal([2, 3], seed=[1, 2]).shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match=r"seed must have shape \[2\], not \[3\]"):
        tf.random.stateless_uniform([2], seed=[1, 2, 3])
    with pytest.raises(TypeError, match="seed must be int32 or int64"):
        tf.random.stateless_uniform([2], seed=[1.0, 2.0])
    with pytest.raises(ValueError, match="minval` and `maxval` must be both None or not None"):
        tf.random.stateless_uniform([2], seed=[1, 2], dtype=tf.int32)
    seed = tf.placeholder(tf.int64, [None])
    bounded = tf.random.stateless_uniform([2], seed=[1, 2], minval=5, maxval=5, dtype=tf.int32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"not \[1\]"):
            sess.run(tf.random.stateless_uniform([2], seed=seed), {seed: [1]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
            sess.run(bounded)
        # The session survives its errors.
        assert sess.run(tf.random.stateless_uniform([2], seed=seed), {seed: [1, 2]}).shape == (2,)


def test_ops_are_stateless_and_not_differentiable():
    for op in ["StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal",
               "StatelessRandomUniformInt"]:
        schema = tf._C.op_def(op)
        assert not schema["stateful"] and schema["not_differentiable"], op
    mean = tf.constant(1.0)
    y = tf.random.stateless_normal([3], seed=[1, 2], mean=mean)
    with tf.Session() as sess:  # the gradient reaches mean through the shift
        assert sess.run(tf.gradients(tf.reduce_sum(y), mean)[0]) == 3.0
