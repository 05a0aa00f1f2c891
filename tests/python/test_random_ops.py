"""Random ops: shapes, dtypes, statistics, seeding rules, concurrency and huge shapes."""

import threading

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework import ops as ops_lib
from flowstone.ops import random_ops

N = 100_000


def _requires_ops(*names):
    missing = [n for n in names if n not in tf._C.op_names()]
    return pytest.mark.skipif(bool(missing), reason=f"ops not registered yet: {missing}")


needs_math = _requires_ops("Mul", "AddV2", "Sub")


def _raw(op_type, shape, dtype=tf.float32, seed=0, seed2=0):
    """The raw kernel (as TensorFlow's gen_random_ops calls it), without scaling ops."""
    shape = tf.constant(np.asarray(shape, np.int32))
    return ops_lib.apply_op(op_type, [shape], {"dtype": dtype, "seed": seed,
                                              "seed2": seed2}).outputs[0]


# --- the kernels ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_standard_normal_statistics(dtype):
    out = _raw("RandomStandardNormal", [N], dtype, seed=1, seed2=2)
    with tf.Session() as sess:
        x = sess.run(out)
    assert x.dtype == dtype.as_numpy_dtype and x.shape == (N,)
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1.0) < 0.02
    assert abs(np.mean(x**3)) < 0.05  # symmetric
    assert 0.30 < np.mean(np.abs(x) > 1.0) < 0.34  # P(|z| > 1) = 0.317
    assert len(np.unique(x)) > N * 0.99


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_uniform_statistics(dtype):
    out = _raw("RandomUniform", [100, 1000], dtype, seed=3)
    with tf.Session() as sess:
        x = sess.run(out)
    assert x.dtype == dtype.as_numpy_dtype and x.shape == (100, 1000)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 1 / 12) < 0.005
    counts, _ = np.histogram(x, bins=10, range=(0, 1))
    assert counts.min() > N / 10 * 0.95 and counts.max() < N / 10 * 1.05


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_truncated_normal_statistics_and_bound(dtype):
    out = _raw("TruncatedNormal", [N], dtype, seed=4)
    with tf.Session() as sess:
        x = sess.run(out)
    assert x.dtype == dtype.as_numpy_dtype
    assert np.abs(x).max() < 2.0
    assert abs(x.mean()) < 0.02
    assert abs(x.std() - 0.8796) < 0.01  # the stddev of a unit normal cut at +-2
    assert np.mean(np.abs(x) > 1.9) > 0.002  # the tails up to the bound are present


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_uniform_int_range_and_balance(dtype):
    out = tf.random_uniform([N], minval=-3, maxval=7, dtype=dtype, seed=5)
    assert out.op.type == "RandomUniformInt" and out.dtype == dtype
    with tf.Session() as sess:
        x = sess.run(out)
    assert x.dtype == dtype.as_numpy_dtype
    counts = np.bincount(x + 3, minlength=10)
    assert len(counts) == 10 and counts.min() > N / 10 * 0.93


def test_uniform_int_full_and_wide_ranges():
    full32 = tf.random_uniform([1000], -2**31, 2**31 - 1, dtype=tf.int32, seed=6)
    wide64 = tf.random_uniform([1000], -2**62, 2**62, dtype=tf.int64, seed=6)
    with tf.Session() as sess:
        a, b = sess.run([full32, wide64])
    assert a.min() < -2**30 and a.max() > 2**30
    assert b.min() < -2**61 and b.max() > 2**61


def test_static_shapes():
    n = tf.placeholder(tf.int32, [3])
    assert _raw("RandomUniform", [2, 3]).shape.as_list() == [2, 3]
    assert _raw("RandomUniform", []).shape.as_list() == []
    dynamic = ops_lib.apply_op("RandomStandardNormal", [n], {"dtype": tf.float32}).outputs[0]
    assert dynamic.shape.as_list() == [None, None, None]
    with tf.Session() as sess:
        assert sess.run(dynamic, {n: [2, 0, 4]}).shape == (2, 0, 4)
        assert sess.run(_raw("RandomUniform", [])).shape == ()


def test_same_seeds_replay_in_a_fresh_session_and_runs_differ():
    for op_type in ["RandomStandardNormal", "RandomUniform", "TruncatedNormal"]:
        out = _raw(op_type, [1001], seed=7, seed2=8)
        with tf.Session() as sess:
            first, second = sess.run(out), sess.run(out)
        with tf.Session() as sess:
            replay_first, replay_second = sess.run(out), sess.run(out)
        assert not np.array_equal(first, second)
        np.testing.assert_array_equal(first, replay_first)
        np.testing.assert_array_equal(second, replay_second)


def test_different_seeds_differ_and_zero_seeds_are_nondeterministic():
    a = _raw("RandomUniform", [100], seed=1, seed2=2)
    b = _raw("RandomUniform", [100], seed=1, seed2=3)
    c = _raw("RandomUniform", [100], seed=2, seed2=2)
    unseeded = _raw("RandomUniform", [100])
    with tf.Session() as sess:
        va, vb, vc, u1 = sess.run([a, b, c, unseeded])
    with tf.Session() as sess:
        u2 = sess.run(unseeded)
    assert not np.array_equal(va, vb) and not np.array_equal(va, vc)
    assert not np.array_equal(u1, u2)


def test_concurrent_runs_draw_disjoint_parts_of_the_sequence():
    # Each run reserves its own range of the stream atomically, so 8 concurrent runs produce
    # exactly the numbers of 8 sequential runs, in some order.
    out = tf.random_uniform([4096], 0, 2**31 - 1, dtype=tf.int32, seed=9)
    with tf.Session() as sess:
        sequential = sorted(tuple(sess.run(out)) for _ in range(8))
    results = []
    with tf.Session() as sess:
        def work():
            results.append(tuple(sess.run(out)))
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(results) == sequential


def test_bad_shapes_and_ranges_fail_at_run_time():
    shape = tf.placeholder(tf.int32)
    out = ops_lib.apply_op("RandomUniform", [shape], {"dtype": tf.float32}).outputs[0]
    lo = tf.placeholder(tf.int32, [])
    ints = tf.random_uniform([3], lo, 5, dtype=tf.int32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Dimension -2 must be >= 0"):
            sess.run(out, {shape: [3, -2]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be a vector"):
            sess.run(out, {shape: 3})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
            sess.run(ints, {lo: 5})
        assert sess.run(ints, {lo: 4}).tolist() == [4, 4, 4]


def test_graph_time_argument_errors():
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random_uniform([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="Invalid dtype"):
        tf.random_uniform([2], dtype=tf.uint8)
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.random_uniform([[2, 3]], maxval=4, dtype=tf.int32)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.random_uniform([2], [0, 1], 4, dtype=tf.int32)


def test_ops_are_stateful_and_not_differentiable():
    for name in ["RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal"]:
        op_def = tf._C.op_def(name)
        assert op_def["stateful"] and op_def["not_differentiable"]


def test_huge_shape_fails_cleanly_and_the_session_survives():
    huge = _raw("RandomStandardNormal", [5000, 5000, 5000])
    small = _raw("RandomStandardNormal", [3], seed=1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="OOM when allocating tensor "
                                                                  "with shape"):
            sess.run(huge)
        assert sess.run(small).shape == (3,)


# --- seeds -----------------------------------------------------------------------------------

def test_get_seed_rules():
    graph = tf.get_default_graph()
    assert random_ops.get_seed(None) == (None, None)
    assert random_ops.get_seed(7) == (random_ops.DEFAULT_GRAPH_SEED, 7)
    tf.set_random_seed(5)
    tf.constant(1.0)
    assert random_ops.get_seed(None) == (5, graph._last_id)
    assert random_ops.get_seed(3) == (5, 3)
    assert random_ops.get_seed(2**31 + 4) == (5, 5)  # truncated to 31 bits like TensorFlow
    tf.set_random_seed(0)
    assert random_ops.get_seed(0) == (0, 2**31 - 1)  # (0, 0) would mean "nondeterministic"


def test_graph_seed_makes_programs_reproducible():
    def build():
        g = tf.Graph()
        with g.as_default():
            tf.set_random_seed(42)
            a = tf.random_uniform([50], 0, 1000, dtype=tf.int32)
            b = tf.random_uniform([50], 0, 1000, dtype=tf.int32)
        return g, a, b

    g1, a1, b1 = build()
    g2, a2, b2 = build()
    assert a1.op.get_attr("seed") == 42 and a1.op.get_attr("seed2") != b1.op.get_attr("seed2")
    with tf.Session(graph=g1) as sess:
        va1, vb1 = sess.run([a1, b1])
    with tf.Session(graph=g2) as sess:
        va2, vb2 = sess.run([a2, b2])
    np.testing.assert_array_equal(va1, va2)
    np.testing.assert_array_equal(vb1, vb2)
    assert not np.array_equal(va1, vb1)  # two ops of one graph differ


def test_op_seed_alone_is_reproducible():
    out = tf.random_uniform([20], 0, 100, dtype=tf.int64, seed=11)
    assert out.op.get_attr("seed") == random_ops.DEFAULT_GRAPH_SEED
    assert out.op.get_attr("seed2") == 11
    with tf.Session() as sess:
        first = sess.run(out)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(out), first)


# --- the public functions with mean/stddev/min/max ------------------------------------------

@needs_math
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_random_normal_mean_and_stddev(dtype):
    out = tf.random_normal([N], mean=3.0, stddev=2.0, dtype=dtype, seed=12)
    assert out.dtype == dtype and out.shape.as_list() == [N]
    assert out.op.name == "random_normal"
    with tf.Session() as sess:
        x = sess.run(out)
    assert abs(x.mean() - 3.0) < 0.04 and abs(x.std() - 2.0) < 0.04


@needs_math
def test_truncated_normal_mean_and_stddev():
    out = tf.truncated_normal([4, N // 4], mean=-1.0, stddev=0.5, seed=13)
    assert out.shape.as_list() == [4, N // 4]
    with tf.Session() as sess:
        x = sess.run(out)
    assert np.abs(x + 1.0).max() < 1.0  # within two stddevs
    assert abs(x.mean() + 1.0) < 0.01 and abs(x.std() - 0.5 * 0.8796) < 0.01


@needs_math
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_random_uniform_float_range(dtype):
    out = tf.random_uniform([N], minval=-2.0, maxval=6.0, dtype=dtype, seed=14)
    default = tf.random_uniform([10], seed=14)
    with tf.Session() as sess:
        x, d = sess.run([out, default])
    assert x.dtype == dtype.as_numpy_dtype
    assert x.min() >= -2.0 and x.max() < 6.0 and abs(x.mean() - 2.0) < 0.05
    assert d.min() >= 0.0 and d.max() < 1.0


@needs_math
def test_public_functions_accept_shape_tensors_and_tensor_shapes():
    n = tf.placeholder(tf.int32, [2])
    out = tf.random_normal(n)
    assert out.shape.as_list() == [None, None]
    assert tf.random_normal(tf.TensorShape([2, 3])).shape.as_list() == [2, 3]
    assert tf.truncated_normal([]).shape.as_list() == []
    with tf.Session() as sess:
        assert sess.run(out, {n: [2, 5]}).shape == (2, 5)


@needs_math
def test_random_normal_huge_shape_is_resource_exhausted():
    huge = tf.random_normal([5000, 5000, 5000])
    small = tf.random_normal([2, 2], seed=1)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError):
            sess.run(huge)
        assert sess.run(small).shape == (2, 2)
