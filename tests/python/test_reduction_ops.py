"""Reductions (reduce_sum/mean/max/min/prod) and argmax/argmin against numpy."""

import itertools

import numpy as np
import pytest

import flowstone as tf

REDUCTIONS = {
    "sum": (tf.reduce_sum, np.sum),
    "mean": (tf.reduce_mean, np.mean),
    "max": (tf.reduce_max, np.max),
    "min": (tf.reduce_min, np.min),
    "prod": (tf.reduce_prod, np.prod),
}
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]


def _requires_ops(*names):
    missing = [n for n in names if n not in tf._C.op_names()]
    return pytest.mark.skipif(bool(missing), reason=f"ops not registered yet: {missing}")


def _input(kind, dtype, shape, rng):
    """Values for which every reduction of `kind` stays exact or in range for `dtype`."""
    if kind == "prod":
        values = rng.choice([1, 1, -1] if dtype != np.uint8 else [1], size=shape)
        if np.issubdtype(dtype, np.floating):
            values = values * rng.uniform(0.5, 1.5, size=shape)
        return np.asarray(values, dtype=dtype)
    if dtype == np.uint8:
        return rng.integers(0, 2, size=shape).astype(dtype)  # sums of up to 120 fit
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-50, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _expected(kind, x, axis, keepdims):
    if kind == "mean" and np.issubdtype(x.dtype, np.integer):
        # Integer means truncate toward zero like C++ (and TensorFlow), unlike numpy's floor.
        total = np.sum(x.astype(np.int64), axis=axis, keepdims=keepdims)
        count = x.size // max(total.size, 1) if x.size else 0
        return np.trunc(total / count).astype(x.dtype)
    _, np_fn = REDUCTIONS[kind]
    return np_fn(x, axis=axis, keepdims=keepdims).astype(x.dtype)


def _tolerance(dtype):
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 0}


@pytest.mark.parametrize("kind", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_axis_subset_and_keepdims(kind, dtype):
    rng = np.random.default_rng(0)
    tf_fn, _ = REDUCTIONS[kind]
    cases = []
    for shape in [(), (7,), (3, 4), (2, 3, 4), (2, 3, 4, 5), (3, 1, 4)]:
        x = _input(kind, dtype, shape, rng)
        rank = len(shape)
        subsets = [c for r in range(rank + 1) for c in itertools.combinations(range(rank), r)]
        for axes in subsets:
            # Every subset, also spelled with negative axes.
            negative = tuple(a - rank for a in axes)
            for axis_arg in {axes, negative}:
                for keepdims in (False, True):
                    out = tf_fn(x, axis=list(axis_arg), keepdims=keepdims)
                    cases.append((out, _expected(kind, x, axes, keepdims)))
    with tf.Session() as sess:
        results = sess.run([out for out, _ in cases])
    for (out, expected), got in zip(cases, results):
        assert got.dtype == dtype
        assert got.shape == expected.shape
        assert tuple(out.shape.as_list()) == expected.shape  # static shape inference agrees
        np.testing.assert_allclose(got, expected, **_tolerance(dtype))


@pytest.mark.parametrize("kind", sorted(REDUCTIONS))
def test_axis_none_scalar_axis_and_int64_axis(kind):
    tf_fn, np_fn = REDUCTIONS[kind]
    x = np.random.default_rng(1).uniform(0.5, 1.5, size=(3, 4, 5))
    outs = [tf_fn(x), tf_fn(x, 1), tf_fn(x, -1, keepdims=True),
            tf_fn(x, np.array([0, 2], dtype=np.int64)), tf_fn(x, axis=[])]
    expected = [np_fn(x), np_fn(x, axis=1), np_fn(x, axis=-1, keepdims=True),
                np_fn(x, axis=(0, 2)), x]
    assert outs[0].shape.as_list() == []
    with tf.Session() as sess:
        for got, want in zip(sess.run(outs), expected):
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_repeated_axes_reduce_once():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.reduce_sum(x, [1, -1, 1])), [3, 12])


def test_empty_tensors_give_identities():
    x = np.zeros((0, 3), np.float32)
    xi = np.zeros((4, 0), np.int32)
    outs = {
        "sum0": tf.reduce_sum(x, 0), "sum1": tf.reduce_sum(x, 1), "sum_all": tf.reduce_sum(x),
        "prod0": tf.reduce_prod(x, 0), "max0": tf.reduce_max(x, 0), "min0": tf.reduce_min(x, 0),
        "mean0": tf.reduce_mean(x, 0), "imax": tf.reduce_max(xi, 1), "imin": tf.reduce_min(xi, 1),
        "imean": tf.reduce_mean(xi, 1), "iprod": tf.reduce_prod(xi, 1),
        "keep": tf.reduce_sum(x, 0, keepdims=True),
    }
    with tf.Session() as sess:
        r = sess.run(outs)
    np.testing.assert_array_equal(r["sum0"], np.zeros(3))
    assert r["sum1"].shape == (0,)
    assert r["sum_all"] == 0 and r["sum_all"].shape == ()
    np.testing.assert_array_equal(r["prod0"], np.ones(3))
    np.testing.assert_array_equal(r["max0"], np.full(3, -np.inf))
    np.testing.assert_array_equal(r["min0"], np.full(3, np.inf))
    assert np.isnan(r["mean0"]).all()
    np.testing.assert_array_equal(r["imax"], np.full(4, np.iinfo(np.int32).min))
    np.testing.assert_array_equal(r["imin"], np.full(4, np.iinfo(np.int32).max))
    np.testing.assert_array_equal(r["imean"], np.zeros(4))
    np.testing.assert_array_equal(r["iprod"], np.ones(4))
    assert r["keep"].shape == (1, 3)


@pytest.mark.parametrize("kind", sorted(REDUCTIONS) + ["any", "all"])
def test_reducing_nothing_returns_the_input(kind):
    """An empty axis list, or only axes of size 1, leaves each element alone: the input comes back
    bit for bit (NaN and -0.0 included), reshaped when keepdims drops the size-1 axes. The
    gradients of broadcasting ops build such Sums whenever shapes are known only at run time."""
    fn = {"any": tf.reduce_any, "all": tf.reduce_all}.get(kind) or REDUCTIONS[kind][0]
    if kind in ("any", "all"):
        x = np.array([[[True], [False], [True]]])
    else:
        x = np.array([[[1.5], [np.nan], [-0.0]]], np.float32)
    graph = tf.Graph()
    with graph.as_default():
        ph = tf.placeholder(tf.as_dtype(x.dtype), [None, None, None])
        axes = tf.placeholder(tf.int32, [None])
        outs = [fn(ph, axes), fn(ph, axes, keepdims=True)]
    with tf.Session(graph=graph) as sess:
        for axis_list in ([], [0], [0, 2], [-1]):
            dropped, kept = sess.run(outs, {ph: x, axes: axis_list})
            np.testing.assert_array_equal(kept.view(np.uint8), x.view(np.uint8))
            expected = x.reshape([d for i, d in enumerate(x.shape) if i - 3 not in axis_list
                                  and i not in axis_list])
            assert dropped.shape == expected.shape
            np.testing.assert_array_equal(dropped.view(np.uint8), expected.view(np.uint8))


def test_integer_mean_truncates_toward_zero():
    x = np.array([[-3, 4], [-3, -4], [7, 0]], np.int32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.reduce_mean(x, 1)), [0, -3, 3])
        assert sess.run(tf.reduce_mean(np.array([200, 200, 200], np.uint8))) == 200


def test_integer_sum_wraps_like_tensorflow():
    x = np.array([2**31 - 1, 1], np.int32)
    with tf.Session() as sess:
        assert sess.run(tf.reduce_sum(x)) == -2**31


def test_max_and_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.float32)
    with tf.Session() as sess:
        mx, mn, mx0 = sess.run([tf.reduce_max(x, 1), tf.reduce_min(x, 1), tf.reduce_max(x, 0)])
    assert np.isnan(mx[0]) and mx[1] == 3.0
    assert np.isnan(mn[0]) and mn[1] == 1.0
    assert np.isnan(mx0[1]) and mx0[0] == 1.0 and mx0[2] == 3.0


def test_float32_sum_is_accurate():
    # A naive float32 running sum of a million 0.1s is off by almost 1%.
    x = np.full(1_000_000, 0.1, np.float32)
    exact = np.sum(x.astype(np.float64))
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(tf.reduce_sum(x)), exact, rtol=1e-6)
        np.testing.assert_allclose(sess.run(tf.reduce_mean(x)), exact / x.size, rtol=1e-6)


@pytest.mark.parametrize("shape,axis", [
    ((3, 300_000), 1),     # few long rows: split into chunks
    ((300_000, 3), 0),     # few long columns
    ((200, 3000), 0),      # many column blocks
    ((40, 50, 60), (0, 2)),  # two passes
    ((2, 400_000), None),  # everything
])
def test_large_inputs_match_numpy_exactly_for_integers(shape, axis):
    x = np.random.default_rng(2).integers(-1000, 1000, size=shape).astype(np.int64)
    with tf.Session() as sess:
        got = sess.run([tf.reduce_sum(x, axis), tf.reduce_max(x, axis), tf.reduce_min(x, axis)])
    np.testing.assert_array_equal(got[0], np.sum(x, axis=axis))
    np.testing.assert_array_equal(got[1], np.max(x, axis=axis))
    np.testing.assert_array_equal(got[2], np.min(x, axis=axis))


def test_large_float_reductions_are_reproducible():
    x = np.random.default_rng(3).standard_normal((4, 500_000)).astype(np.float32)
    s = tf.reduce_sum(x, 1)
    with tf.Session() as sess:
        first = sess.run(s)
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(s), first)
    np.testing.assert_allclose(first, np.sum(x.astype(np.float64), axis=1), rtol=1e-6)


def test_deprecated_argument_spellings():
    x = np.ones((2, 3), np.float32)
    a = tf.reduce_sum(x, reduction_indices=[1], keep_dims=True)
    assert a.shape.as_list() == [2, 1]
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        tf.reduce_sum(x, axis=1, reduction_indices=1)
    with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
        tf.reduce_sum(x, keepdims=True, keep_dims=True)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(a), [[3], [3]])


def test_static_shapes():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    axis = tf.placeholder(tf.int32, [None])
    assert tf.reduce_sum(x, 1).shape.as_list() == [None, 4]
    assert tf.reduce_max(x, [0, 2], keepdims=True).shape.as_list() == [1, 3, 1]
    assert tf.reduce_sum(x).shape.as_list() == []
    assert tf.reduce_sum(x, axis).shape.rank is None
    assert tf.reduce_sum(x, axis, keepdims=True).shape.as_list() == [None, None, None]
    assert tf.reduce_sum(tf.placeholder(tf.float32), 0).shape.rank is None


def test_axis_out_of_range_is_a_graph_error():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="Invalid reduction dimension 2 for input with 2 dim"):
        tf.reduce_sum(x, 2)
    with pytest.raises(ValueError, match="Invalid reduction dimension -3"):
        tf.reduce_mean(x, [0, -3])
    with pytest.raises(ValueError, match="scalar or a vector"):
        tf.reduce_sum(x, [[0]])


def test_axis_out_of_range_at_run_time():
    x = np.ones((2, 3), np.float32)
    axis = tf.placeholder(tf.int32)
    out = tf.reduce_sum(x, axis)
    with tf.Session() as sess:
        assert sess.run(out, {axis: -1}).tolist() == [3, 3]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid reduction dimension 5"):
            sess.run(out, {axis: 5})


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError):
        tf.reduce_sum(np.array([True, False]))


@_requires_ops("Rank", "Range")
def test_axis_none_with_unknown_rank_reduces_everything():
    x = tf.placeholder(tf.float32)
    out = tf.reduce_sum(x)
    with tf.Session() as sess:
        assert sess.run(out, {x: np.ones((2, 3, 4))}) == 24


# --- argmax / argmin ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_argmax_argmin_every_axis(dtype):
    rng = np.random.default_rng(4)
    cases = []
    for shape in [(7,), (3, 4), (2, 3, 4), (2, 700, 3)]:
        x = rng.permutation(np.prod(shape)).reshape(shape) % 200
        x = x.astype(dtype)
        for axis in range(-len(shape), len(shape)):
            cases.append((tf.argmax(x, axis), np.argmax(x, axis)))
            cases.append((tf.argmin(x, axis=axis, output_type=tf.int32), np.argmin(x, axis)))
    with tf.Session() as sess:
        results = sess.run([c for c, _ in cases])
    for (out, expected), got in zip(cases, results):
        assert got.dtype == out.dtype.as_numpy_dtype
        assert tuple(out.shape.as_list()) == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_argmax_defaults_ties_and_nan():
    x = np.array([[1.0, 5.0, 5.0], [7.0, 7.0, 2.0], [np.nan, 9.0, np.nan]], np.float32)
    default = tf.argmax(x)
    assert default.dtype == tf.int64
    with tf.Session() as sess:
        got = sess.run([default, tf.argmax(x, 1), tf.argmin(x, 1), tf.argmax(x, dimension=1)])
    np.testing.assert_array_equal(got[0], np.argmax(x, 0))
    np.testing.assert_array_equal(got[1], [1, 0, 0])  # first of ties; NaN wins like numpy
    np.testing.assert_array_equal(got[2], [0, 2, 0])
    np.testing.assert_array_equal(got[3], got[1])
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
        tf.argmax(x, axis=0, dimension=0)


def test_argmax_errors():
    with pytest.raises(ValueError, match=r"Expected dimension in the range \[-2, 2\), but got 2"):
        tf.argmax(np.ones((2, 3)), 2)
    with pytest.raises(ValueError, match="Shape must be rank 0"):
        tf.argmax(np.ones((2, 3)), [0])
    empty_axis = tf.argmax(np.zeros((0, 3), np.float32), 0)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Reduction axis 0 is empty"):
            sess.run(empty_axis)
        np.testing.assert_array_equal(sess.run(tf.argmax(np.zeros((0, 3)), 1)),
                                      np.zeros(0, np.int64))
