"""Elementwise math, comparisons, logic, casts and selection against numpy."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from flowstone.ops import math_ops

FLOATS = [np.float32, np.float64]
REALS = FLOATS + [np.int32, np.int64]
NUMERIC = REALS + [np.uint8]


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def sample(dtype, shape, low=-9, high=9, nonzero=False, seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        low = max(low, 0)
    if dtype.kind == "f":
        values = rng.uniform(low, high, size=shape)
    else:
        values = rng.integers(low, high + 1, size=shape)
    values = np.asarray(values).astype(dtype)
    if nonzero:
        values[values == 0] = 1
    return values


def check(actual, expected, dtype):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape
    if np.dtype(dtype).kind == "f":
        rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(actual, expected)


# --- binary arithmetic ------------------------------------------------------------------------

BINARY = [
    # tf function, numpy reference, dtypes, operand options
    (tf.add, np.add, NUMERIC, {}),
    (tf.subtract, np.subtract, NUMERIC, {}),
    (tf.multiply, np.multiply, NUMERIC, {}),
    (tf.realdiv, np.true_divide, FLOATS, {"nonzero": True}),
    (tf.floordiv, np.floor_divide, NUMERIC, {"nonzero": True}),
    (tf.floormod, np.mod, NUMERIC, {"nonzero": True}),
    (tf.maximum, np.maximum, NUMERIC, {}),
    (tf.minimum, np.minimum, NUMERIC, {}),
    (tf.squared_difference, lambda a, b: np.square(a - b), REALS, {}),
]


@pytest.mark.parametrize("tf_fn,np_fn,dtypes,opts", BINARY,
                         ids=[b[0].__name__ for b in BINARY])
def test_binary_matches_numpy(tf_fn, np_fn, dtypes, opts):
    fetches, expected = [], []
    for i, dtype in enumerate(dtypes):
        a = sample(dtype, (4, 5), seed=i)
        b = sample(dtype, (4, 5), seed=100 + i, **opts)
        fetches.append(tf_fn(tf.constant(a), tf.constant(b)))
        if np.dtype(dtype) == np.uint8 and np_fn is np.subtract:
            expected.append((a.astype(np.int64) - b).astype(np.uint8))  # wraps, as numpy's does
        else:
            expected.append(np_fn(a, b))
    for dtype, actual, want in zip(dtypes, run(fetches), expected):
        check(actual, want, dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_raw_div_truncates_integers(dtype):
    a = np.array([7, -7, 7, -7, 0, 9], dtype)
    b = np.array([2, 2, -2, -2, 3, -1], dtype)
    out = run(apply_op("Div", [tf.constant(a), tf.constant(b)]).outputs[0])
    np.testing.assert_array_equal(out, np.array([3, -3, -3, 3, 0, -9], dtype))


def test_raw_div_float_and_uint8():
    a, b = np.array([7.0, -1.5], np.float32), np.array([2.0, 0.5], np.float32)
    fa = apply_op("Div", [tf.constant(a), tf.constant(b)]).outputs[0]
    u = apply_op("Div", [tf.constant(np.array([200, 7], np.uint8)),
                         tf.constant(np.array([3, 2], np.uint8))]).outputs[0]
    fa_out, u_out = run([fa, u])
    np.testing.assert_allclose(fa_out, a / b)
    np.testing.assert_array_equal(u_out, np.array([66, 3], np.uint8))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_floor_division_of_negatives_is_pythonic(dtype):
    a = np.array([7, -7, 7, -7, 6, -6], dtype)
    b = np.array([2, 2, -2, -2, -3, 3], dtype)
    q, r = run([tf.floordiv(a, tf.constant(b)), tf.floormod(tf.constant(a), b)])
    np.testing.assert_array_equal(q, np.array([7 // 2, -7 // 2, 7 // -2, -7 // -2, -2, -2], dtype))
    np.testing.assert_array_equal(r, np.array([7 % 2, -7 % 2, 7 % -2, -7 % -2, 0, 0], dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_floor_division_and_mod_match_numpy(dtype):
    a = np.array([7.5, -7.5, 7.5, -7.5, 1.0, -0.0, 3.0], dtype)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.1, 5.0, 0.0], dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        want_q, want_r = np.floor_divide(a, b), np.mod(a, b)
    q, r = run([tf.floordiv(tf.constant(a), b), tf.floormod(tf.constant(a), b)])
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(r[:-1], want_r[:-1])
    assert np.isnan(r[-1])


def test_int_min_divided_by_minus_one_wraps_instead_of_trapping():
    lo32, lo64 = np.iinfo(np.int32).min, np.iinfo(np.int64).min
    a32 = tf.constant(np.array([lo32, 5], np.int32))
    a64 = tf.constant(np.array([lo64, 5], np.int64))
    outs = run([tf.floordiv(a32, -1), tf.floormod(a32, -1), a64 // -1, a64 % -1,
                apply_op("Div", [a32, tf.constant(np.int32(-1))]).outputs[0], -a32, tf.abs(a32)])
    np.testing.assert_array_equal(outs[0], [lo32, -5])
    np.testing.assert_array_equal(outs[1], [0, 0])
    np.testing.assert_array_equal(outs[2], [lo64, -5])
    np.testing.assert_array_equal(outs[3], [0, 0])
    np.testing.assert_array_equal(outs[4], [lo32, -5])
    np.testing.assert_array_equal(outs[5], [lo32, -5])
    np.testing.assert_array_equal(outs[6], [lo32, 5])


def test_integer_overflow_wraps():
    big = tf.constant(np.array([2**31 - 1], np.int32))
    u = tf.constant(np.array([250], np.uint8))
    outs = run([big + 1, big * 2, u + np.uint8(10), tf.square(u), big - (-1)])
    np.testing.assert_array_equal(outs[0], [-2**31])
    np.testing.assert_array_equal(outs[1], [-2])
    np.testing.assert_array_equal(outs[2], [4])
    np.testing.assert_array_equal(outs[3], [np.uint8(250 * 250 % 256)])
    np.testing.assert_array_equal(outs[4], [-2**31])


@pytest.mark.parametrize("dtype", REALS)
def test_pow(dtype):
    if np.dtype(dtype).kind == "f":
        base, exponent = sample(dtype, (3, 4), 0.5, 3.0), sample(dtype, (3, 4), -2, 2, seed=5)
    else:
        base, exponent = sample(dtype, (3, 4), -5, 5), sample(dtype, (3, 4), 0, 5, seed=5)
    check(run(tf.pow(tf.constant(base), exponent)), np.power(base, exponent), dtype)


def test_integer_pow_wraps_and_handles_zero_exponent():
    base = tf.constant(np.array([3, -2, 0, 7], np.int32))
    out = run(base ** np.array([40, 3, 0, 0], np.int32))
    np.testing.assert_array_equal(out, np.power(np.array([3, -2, 0, 7], np.int32),
                                                np.array([40, 3, 0, 0], np.int32)))


def test_negative_integer_exponent_fails():
    out = tf.pow(tf.constant([2, 3]), tf.constant([1, -1]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Integers to negative integer powers are not allowed"):
        run(out)


def test_maximum_minimum_propagate_nan():
    a = tf.constant([np.nan, 1.0, 2.0])
    b = tf.constant([1.0, np.nan, 1.0])
    hi, lo = run([tf.maximum(a, b), tf.minimum(a, b)])
    np.testing.assert_array_equal(hi, [np.nan, np.nan, 2.0])
    np.testing.assert_array_equal(lo, [np.nan, np.nan, 1.0])


def test_float_division_by_zero_gives_inf():
    out = run(tf.constant([1.0, -1.0, 0.0]) / 0.0)
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])


def test_add_n():
    a, b, c = (sample(np.float32, (2, 3), seed=i) for i in range(3))
    total = tf.add_n([tf.constant(a), b, tf.constant(c)])
    single = tf.add_n([tf.constant(a)])
    assert total.op.type == "AddN" and total.op.name == "AddN"
    out, one = run([total, single])
    np.testing.assert_allclose(out, a + b + c, rtol=1e-6)
    np.testing.assert_array_equal(one, a)
    with pytest.raises(ValueError, match="at least one Tensor"):
        tf.add_n([])
    with pytest.raises(ValueError, match="same shape"):
        tf.add_n([tf.constant(a), tf.constant(a[0])])


# --- truediv and friends ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,out_dtype", [(np.int32, np.float64), (np.int64, np.float64),
                                              (np.uint8, np.float32), (np.float32, np.float32),
                                              (np.float64, np.float64)])
def test_truediv_converts_integers(dtype, out_dtype):
    a = np.array([7, 3, 9], dtype)
    b = np.array([2, 4, 3], dtype)
    t = tf.truediv(tf.constant(a), tf.constant(b))
    assert t.dtype == tf.as_dtype(out_dtype)
    out = run([t, tf.divide(tf.constant(a), b), tf.constant(a) / b])
    for o in out:
        np.testing.assert_allclose(o, a.astype(out_dtype) / b)
        assert o.dtype == out_dtype


def test_truediv_dtype_mismatch():
    with pytest.raises(TypeError, match="x and y must have the same dtype"):
        tf.truediv(tf.constant([1.0]), tf.constant([1]))


def test_div_has_python2_semantics():
    i, f = run([tf.div(tf.constant([-7, 7]), 2), tf.div(tf.constant([-7.0, 7.0]), 2)])
    np.testing.assert_array_equal(i, [-4, 3])
    np.testing.assert_array_equal(f, [-3.5, 3.5])


# --- integer division by zero -------------------------------------------------------------------

@pytest.mark.parametrize("op", ["Div", "FloorDiv", "FloorMod"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_division_by_zero_is_an_error(op, dtype):
    x = tf.placeholder(tf.as_dtype(dtype), [None])
    y = tf.placeholder(tf.as_dtype(dtype), [None])
    out = apply_op(op, [x, y]).outputs[0]
    with tf.Session() as sess:
        np.testing.assert_array_equal(
            sess.run(out, {x: np.array([6, 4], dtype), y: np.array([3, 2], dtype)}).shape, [2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(out, {x: np.array([6, 4], dtype), y: np.array([3, 0], dtype)})
        # Broadcast zero divisor, and a zero divisor that meets no element: empty output.
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            sess.run(out, {x: np.array([6, 4], dtype), y: np.array([0], dtype)})
        assert sess.run(out, {x: np.zeros([0], dtype), y: np.array([0], dtype)}).shape == (0,)


def test_division_by_zero_through_operators():
    x = tf.constant([5, 6])
    for expr in (x // 0, x % 0, tf.div(x, 0)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
            run(expr)


# --- broadcasting -------------------------------------------------------------------------------

BROADCAST_SHAPES = [
    ((), ()), ((), (3,)), ((3,), ()), ((2, 3), ()), ((), (2, 3)),
    ((3, 1), (1, 4)), ((1, 4), (3, 1)), ((2, 3, 4), (4,)), ((4,), (2, 3, 4)),
    ((5,), (2, 3, 5)), ((2, 1, 3), (4, 1)), ((1,), ()), ((1, 1), (1,)),
    ((0, 3), (3,)), ((0, 1), (1, 5)), ((2, 0), (1,)), ((0,), ()), ((2, 0, 3), (2, 1, 3)),
    ((2, 3, 1, 5), (3, 4, 1)), ((6, 1, 1), (1, 1, 7)),
    ((2, 1, 3, 1, 2, 1, 2), (1, 2, 1, 3, 1, 2, 1)),
    ((1, 2, 1, 1, 3, 1, 1, 2), (2, 1, 5, 3, 1, 1, 1)),
]


@pytest.mark.parametrize("shape_a,shape_b", BROADCAST_SHAPES, ids=str)
def test_broadcasting_matches_numpy(shape_a, shape_b):
    a = sample(np.float32, shape_a, seed=1)
    b = sample(np.float32, shape_b, seed=2)
    sum_t = tf.add(tf.constant(a), tf.constant(b))
    less_t = tf.less(tf.constant(a), tf.constant(b))
    expected_shape = np.broadcast_shapes(shape_a, shape_b)
    assert sum_t.shape.as_list() == list(expected_shape)
    s, lt = run([sum_t, less_t])
    np.testing.assert_allclose(s, a + b, rtol=1e-6)
    np.testing.assert_array_equal(lt, a < b)


@pytest.mark.parametrize("shape_a,shape_b", [((513, 1031), (1031,)), ((513, 1), (1, 1031)),
                                             ((1031,), (513, 1031)), ((400, 700), (400, 700)),
                                             ((), (300000,))])
def test_large_tensors_split_across_threads(shape_a, shape_b):
    a = sample(np.float32, shape_a, seed=3)
    b = sample(np.float32, shape_b, seed=4)
    s, e = run([tf.constant(a) - tf.constant(b), tf.exp(tf.constant(b) / 10.0)])
    np.testing.assert_allclose(s, a - b, rtol=1e-6)
    np.testing.assert_allclose(e, np.exp(b / np.float32(10)), rtol=1e-5)


def test_runtime_broadcasting_of_unknown_dims():
    x = tf.placeholder(tf.float32, [None, None])
    y = tf.placeholder(tf.float32, [None])
    z = x * y
    assert z.shape.as_list() == [None, None]
    a, b = sample(np.float32, (3, 1)), sample(np.float32, (4,), seed=9)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(z, {x: a, y: b}), a * b, rtol=1e-6)
        np.testing.assert_allclose(sess.run(z, {x: a.T[:, :1], y: b[:1]}), a.T[:, :1] * b[:1])


def test_static_shape_inference():
    p = tf.placeholder(tf.float32, [None, 3])
    assert (p + tf.placeholder(tf.float32, [4, 1])).shape.as_list() == [4, 3]
    assert (p + 1.0).shape.as_list() == [None, 3]
    assert (p + tf.placeholder(tf.float32, [2, 1, 1])).shape.as_list() == [2, None, 3]
    assert (p + tf.placeholder(tf.float32)).shape.ndims is None
    assert tf.sqrt(p).shape.as_list() == [None, 3]
    assert tf.cast(p, tf.int32).shape.as_list() == [None, 3]
    assert tf.where(p > 0).shape.as_list() == [None, 2]
    assert tf.where(tf.placeholder(tf.bool)).shape.as_list() == [None, None]


def test_incompatible_static_shapes_fail_at_graph_build():
    a = tf.constant(np.zeros((2, 3), np.float32))
    b = tf.constant(np.zeros((4,), np.float32))
    with pytest.raises(ValueError, match=r"Incompatible shapes: \[2,3\] vs\. \[4\].*"
                                         r"input shapes: \[2,3\], \[4\]"):
        tf.add(a, b)
    with pytest.raises(ValueError, match=r"\[2,3\].*\[4\]"):
        tf.less(a, b)
    with pytest.raises(ValueError, match=r"\[2,3\].*\[4\]"):
        _ = a * b
    with pytest.raises(ValueError, match=r"\[2,3\].*\[4\]"):
        tf.where(tf.constant(np.ones((2, 3), bool)), a, b)


def test_incompatible_runtime_shapes_fail_at_run():
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 3])
    out = x + y
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Incompatible shapes: \[2,3\] vs\. \[4,3\]"):
            sess.run(out, {x: np.zeros((2, 3)), y: np.zeros((4, 3))})
        # A dimension of 1 broadcasts at run time.
        assert sess.run(out, {x: np.zeros((2, 3)), y: np.zeros((1, 3))}).shape == (2, 3)


def test_incompatible_runtime_shapes_in_comparisons_and_select():
    x = tf.placeholder(tf.float32, [None])
    y = tf.placeholder(tf.float32, [None])
    c = tf.placeholder(tf.bool, [None])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2\] vs\. \[3\]"):
            sess.run(tf.equal(x, y), {x: np.zeros(2), y: np.zeros(3)})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"condition \[3\], then \[2\], and else \[2\] must be "
                                 r"broadcastable"):
            sess.run(tf.where(c, x, y), {c: np.ones(3, bool), x: np.zeros(2), y: np.zeros(2)})


# --- dtype errors -------------------------------------------------------------------------------

def test_dtype_mismatch_is_a_type_error():
    f = tf.constant([1.0, 2.0])
    i = tf.constant([1, 2])
    with pytest.raises(TypeError, match="Input 'y' of 'AddV2' Op has type int32 that does not "
                                        "match type float32 of argument 'x'"):
        tf.add(f, i)
    with pytest.raises(TypeError, match="does not match"):
        _ = f * i
    with pytest.raises(TypeError, match="does not match"):
        tf.less(i, f)
    with pytest.raises(TypeError):
        _ = i + 1.5  # 1.5 is not an int32


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="not in the list of allowed values"):
        tf.sqrt(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="not in the list of allowed values"):
        tf.add(tf.constant([True]), tf.constant([False]))
    with pytest.raises(TypeError, match="not in the list of allowed values"):
        tf.negative(tf.constant(np.array([1], np.uint8)))
    with pytest.raises(TypeError):
        tf.logical_and(tf.constant([1]), tf.constant([0]))


def test_python_values_take_the_tensor_dtype():
    x = tf.constant(np.array([1.0, 2.0], np.float64))
    for expr in (x + 1, 1 + x, x - 2, 3 * x, x / 2, tf.maximum(0, x), tf.add([1, 2], x)):
        assert expr.dtype == tf.float64
    i64 = tf.constant(np.array([1, 2], np.int64))
    assert (i64 * 3).dtype == tf.int64
    assert (tf.constant([1, 2]) + 1).dtype == tf.int32
    assert tf.add(1.5, 2.5).dtype == tf.float32
    np.testing.assert_allclose(run(tf.add([1.5], np.array([2.0]))), [3.5])
    # numpy values on the left defer to the Tensor's reflected operators.
    y = tf.constant([1.0, 2.0])
    left = [np.float32(2) * y, np.array([1.0, 1.0]) + y, np.array([3.0, 1.0]) > y]
    assert all(isinstance(t, tf.Tensor) for t in left)
    out = run(left)
    np.testing.assert_allclose(out[0], [2.0, 4.0])
    np.testing.assert_allclose(out[1], [2.0, 3.0])
    np.testing.assert_array_equal(out[2], [True, False])


# --- unary ops ----------------------------------------------------------------------------------

def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = [
    (tf.negative, np.negative, REALS, (-9, 9)),
    (tf.abs, np.abs, REALS, (-9, 9)),
    (tf.square, np.square, NUMERIC, (-9, 9)),
    (tf.sqrt, np.sqrt, FLOATS, (0, 9)),
    (tf.rsqrt, lambda x: 1 / np.sqrt(x), FLOATS, (0.1, 9)),
    (tf.exp, np.exp, FLOATS, (-5, 5)),
    (tf.log, np.log, FLOATS, (0.01, 9)),
    (tf.log1p, np.log1p, FLOATS, (-0.9, 9)),
    (tf.sign, np.sign, REALS, (-3, 3)),
    (tf.floor, np.floor, FLOATS, (-9, 9)),
    (tf.ceil, np.ceil, FLOATS, (-9, 9)),
    (tf.round, np.round, REALS, (-9, 9)),
    (tf.sigmoid, np_sigmoid, FLOATS, (-9, 9)),
    (tf.tanh, np.tanh, FLOATS, (-4, 4)),
    (math_ops.relu, lambda x: np.maximum(x, x.dtype.type(0)), NUMERIC, (-9, 9)),
]


@pytest.mark.parametrize("tf_fn,np_fn,dtypes,domain", UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary_matches_numpy(tf_fn, np_fn, dtypes, domain):
    inputs = [sample(d, (3, 5), *domain, seed=i) for i, d in enumerate(dtypes)]
    scalars = [np.array(v.flat[0]) for v in inputs]
    empties = [np.zeros((0, 2), d) for d in dtypes]
    fetches = [tf_fn(tf.constant(v)) for v in inputs + scalars + empties]
    for dtype, actual, value in zip(dtypes * 3, run(fetches), inputs + scalars + empties):
        check(np.asarray(actual), np.asarray(np_fn(value)), dtype)


def test_round_is_bankers():
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6], np.float32)
    np.testing.assert_array_equal(run(tf.round(values)),
                                  [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0, 3.0, -3.0])


def test_special_values():
    x = tf.constant([np.nan, -np.inf, np.inf, -0.0, 0.0, -1e-30])
    sign, relu, sig, absolute = run([tf.sign(x), math_ops.relu(x), tf.sigmoid(x), tf.abs(x)])
    np.testing.assert_array_equal(sign, [np.nan, -1, 1, 0, 0, -1])
    np.testing.assert_array_equal(relu, [np.nan, 0, np.inf, 0, 0, 0])
    np.testing.assert_array_equal(sig, [np.nan, 0, 1, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(absolute, np.array([np.nan, np.inf, np.inf, 0, 0, 1e-30],
                                                     np.float32))
    big = run(tf.sigmoid(tf.constant([-1000.0, 1000.0])))
    np.testing.assert_array_equal(big, [0.0, 1.0])


# --- comparisons and logic ----------------------------------------------------------------------

COMPARISONS = [(tf.equal, np.equal), (tf.not_equal, np.not_equal), (tf.less, np.less),
               (tf.less_equal, np.less_equal), (tf.greater, np.greater),
               (tf.greater_equal, np.greater_equal)]


@pytest.mark.parametrize("tf_fn,np_fn", COMPARISONS, ids=[c[0].__name__ for c in COMPARISONS])
def test_comparisons_match_numpy(tf_fn, np_fn):
    fetches, expected = [], []
    for i, dtype in enumerate(NUMERIC):
        a = sample(dtype, (4, 1, 3), -3, 3, seed=i)
        b = sample(dtype, (5, 1), -3, 3, seed=50 + i)
        b[0, 0] = a[0, 0, 0]  # at least one equal pair
        fetches.append(tf_fn(tf.constant(a), tf.constant(b)))
        expected.append(np_fn(a, b))
    for actual, want in zip(run(fetches), expected):
        assert actual.dtype == np.bool_
        np.testing.assert_array_equal(actual, want)


def test_equality_of_bools_and_nan():
    a = np.array([True, False, True])
    eq, ne = run([tf.equal(tf.constant(a), True), tf.not_equal(tf.constant(a), [True])])
    np.testing.assert_array_equal(eq, a)
    np.testing.assert_array_equal(ne, ~a)
    n = tf.constant([np.nan, 1.0])
    np.testing.assert_array_equal(run([tf.equal(n, n), tf.not_equal(n, n)]),
                                  [[False, True], [True, False]])


def test_equal_without_incompatible_shape_error():
    a, b = tf.constant([1, 2]), tf.constant([1, 2, 3])
    eq = apply_op("Equal", [a, b], {"incompatible_shape_error": False}).outputs[0]
    ne = apply_op("NotEqual", [a, b], {"incompatible_shape_error": False}).outputs[0]
    ok = apply_op("Equal", [a, tf.constant([2])], {"incompatible_shape_error": False}).outputs[0]
    assert eq.shape.ndims is None
    assert ok.shape.as_list() == [2]
    e, n, o = run([eq, ne, ok])
    assert e.shape == () and not e
    assert n.shape == () and n
    np.testing.assert_array_equal(o, [False, True])


def test_logical_ops():
    a = np.array([[True], [False]])
    b = np.array([True, False, True])
    fetches = [tf.logical_and(a, tf.constant(b)), tf.logical_or(tf.constant(a), b),
               tf.logical_not(tf.constant(b)), tf.logical_and(True, tf.constant(b))]
    out = run(fetches)
    np.testing.assert_array_equal(out[0], a & b)
    np.testing.assert_array_equal(out[1], a | b)
    np.testing.assert_array_equal(out[2], ~b)
    np.testing.assert_array_equal(out[3], b)


# --- Tensor operators ---------------------------------------------------------------------------

def test_arithmetic_operators():
    a = np.array([[1.5, -2.0], [3.0, 4.5]], np.float32)
    b = np.array([2.0, -3.0], np.float32)
    x, y = tf.constant(a), tf.constant(b)
    exprs = [x + y, x - y, x * y, x / y, x // y, x % y, x ** 2, -x, abs(x),
             1 + x, 1 - x, 2 * x, 1 / x, 7 // y, 7 % y, 2 ** y, x + b, b - x]
    want = [a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, -a, np.abs(a),
            1 + a, 1 - a, 2 * a, 1 / a, 7 // b, 7 % b, 2 ** b, a + b, b - a]
    for actual, expected in zip(run(exprs), want):
        np.testing.assert_allclose(actual, expected.astype(np.float32), rtol=1e-6)


def test_comparison_and_logical_operators():
    a = np.array([1, 5, 3], np.int32)
    x = tf.constant(a)
    p, q = tf.constant([True, True, False]), tf.constant([True, False, False])
    out = run([x < 3, x <= 3, x > 3, x >= 3, 3 < x, p & q, p | q, ~p, True & q, False | q])
    np.testing.assert_array_equal(out[0], a < 3)
    np.testing.assert_array_equal(out[1], a <= 3)
    np.testing.assert_array_equal(out[2], a > 3)
    np.testing.assert_array_equal(out[3], a >= 3)
    np.testing.assert_array_equal(out[4], a > 3)
    np.testing.assert_array_equal(out[5], [True, False, False])
    np.testing.assert_array_equal(out[6], [True, True, False])
    np.testing.assert_array_equal(out[7], [False, False, True])
    np.testing.assert_array_equal(out[8], [True, False, False])
    np.testing.assert_array_equal(out[9], [True, False, False])


def test_tensors_keep_identity_equality():
    x = tf.constant([1.0])
    y = tf.constant([1.0])
    assert (x == x) is True and (x == y) is False and (x != y) is True
    assert len({x, y, x}) == 2


def test_operator_node_names_follow_tensorflow():
    x = tf.placeholder(tf.float32, [2])
    assert tf.add(x, x).op.name == "Add"
    assert tf.add(x, x, name="total").op.name == "total"
    s = x + 1
    # Names are unique ignoring case, as in TensorFlow: "Add" is taken, so "add" becomes "add_1".
    assert s.op.name == "add_1" and s.op.type == "AddV2"
    assert s.op.inputs[1].op.name == "add_1/y"
    assert (x + 1).op.name == "add_2"
    assert (1 - x).op.name == "sub" and (x * x).op.name == "mul"
    assert (x / x).op.name == "truediv" and (x // x).op.name == "floordiv"
    assert (x % x).op.name == "mod" and (x ** x).op.name == "pow"
    assert (x < x).op.name == "Less" and (-x).op.name == "Neg"
    with tf.name_scope("layer"):
        assert tf.sqrt(x).op.name == "layer/Sqrt"
        assert (x * 2).op.name == "layer/mul"


def test_integer_truediv_operator_casts_under_its_scope():
    x = tf.constant([3, 4])
    t = x / 2
    assert t.op.name == "truediv" and t.op.type == "RealDiv" and t.dtype == tf.float64
    assert [i.op.type for i in t.op.inputs] == ["Cast", "Cast"]
    assert all(i.op.name.startswith("truediv/") for i in t.op.inputs)
    np.testing.assert_allclose(run(t), [1.5, 2.0])


def test_operators_on_variables():
    v = tf.Variable([2.0, 4.0])
    exprs = [v + 1, 1 + v, v * v, 9 // v, 9 % v, -v, v > 3.0, v ** 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(exprs)
    a = np.array([2.0, 4.0], np.float32)
    want = [a + 1, 1 + a, a * a, 9 // a, 9 % a, -a, a > 3, a ** 2]
    for actual, expected in zip(out, want):
        np.testing.assert_allclose(actual, expected)


def test_matmul_operator():
    matmul_ops = pytest.importorskip("flowstone.ops.matmul_ops")
    assert matmul_ops is not None
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = run([tf.constant(a) @ tf.constant(b), a @ tf.constant(b)])
    for o in out:
        np.testing.assert_allclose(o, a @ b)


# --- Cast ---------------------------------------------------------------------------------------

CAST_DTYPES = [tf.float32, tf.float64, tf.int32, tf.int64, tf.uint8, tf.bool, tf.float16,
               tf.bfloat16]


def _fetch_dtype(dtype):
    return np.float32 if dtype == tf.bfloat16 else dtype.as_numpy_dtype


@pytest.mark.parametrize("src", CAST_DTYPES, ids=lambda d: d.name)
def test_cast_between_all_dtypes(src):
    values = np.array([0, 1, 2, 3, 7, 100, 0, 1], np.float32)
    if src == tf.bool:
        values = values != 0
    x = tf.constant(values, dtype=src) if src != tf.bool else tf.constant(values)
    assert x.dtype == src
    casts = [tf.cast(x, dst) for dst in CAST_DTYPES]
    for dst, out in zip(CAST_DTYPES, run(casts)):
        assert out.dtype == _fetch_dtype(dst), (src, dst)
        np.testing.assert_array_equal(out, values.astype(_fetch_dtype(dst)), err_msg=dst.name)


def test_cast_returns_same_dtype_tensor_unchanged():
    x = tf.constant([1.0])
    assert tf.cast(x, tf.float32) is x
    y = tf.cast([1.7, -2.7], tf.int32)
    assert y.op.type == "Cast" and y.dtype == tf.int32
    np.testing.assert_array_equal(run(y), [1, -2])


def test_cast_float_to_int_truncates_and_saturates():
    x = tf.constant([3.9, -3.9, 1e10, -1e10, np.nan, np.inf, -np.inf, 255.5, -0.5])
    i32, i64, u8 = run([tf.cast(x, tf.int32), tf.cast(x, tf.int64), tf.cast(x, tf.uint8)])
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    np.testing.assert_array_equal(i32, [3, -3, hi, lo, 0, hi, lo, 255, 0])
    np.testing.assert_array_equal(i64, [3, -3, 10**10, -10**10, 0, np.iinfo(np.int64).max,
                                        np.iinfo(np.int64).min, 255, 0])
    np.testing.assert_array_equal(u8, [3, 0, 255, 0, 0, 255, 0, 255, 0])


def test_cast_integers_narrow_modulo():
    x = tf.constant(np.array([300, -1, 2**40 + 5], np.int64))
    u8, i32 = run([tf.cast(x, tf.uint8), tf.cast(x, tf.int32)])
    np.testing.assert_array_equal(u8, [44, 255, 5])
    np.testing.assert_array_equal(i32, [300, -1, 5])


def test_cast_to_bool_is_nonzero():
    x = tf.constant([0.0, -0.0, 0.5, np.nan, -2.0])
    np.testing.assert_array_equal(run(tf.cast(x, tf.bool)), [False, False, True, True, True])
    h = tf.cast(x, tf.float16)
    np.testing.assert_array_equal(run(tf.cast(h, tf.bool)), [False, False, True, True, True])


def _bfloat16_round(values):
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_float16_round_trip():
    values = np.concatenate([sample(np.float32, (200,), -70000, 70000),
                             sample(np.float32, (200,), -1e-6, 1e-6, seed=1),
                             np.array([65504, 65520, 1e-8, np.inf, -np.inf], np.float32)])
    x = tf.constant(values)
    h = tf.cast(x, tf.float16)
    back = tf.cast(h, tf.float32)
    via64 = tf.cast(tf.cast(tf.cast(values.astype(np.float64), tf.float16), tf.float64),
                    tf.float32)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    h_out, back_out, via64_out = run([h, back, via64])
    np.testing.assert_array_equal(h_out, want)
    np.testing.assert_array_equal(back_out, want.astype(np.float32))
    np.testing.assert_array_equal(via64_out, want.astype(np.float32))
    assert np.isnan(run(tf.cast(tf.cast(tf.constant([np.nan]), tf.float16), tf.float32))[0])


def test_bfloat16_round_trip():
    values = np.concatenate([sample(np.float32, (300,), -1000, 1000),
                             np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, -1e-40, 3.0e38], np.float32)])
    bf = tf.cast(tf.constant(values), tf.bfloat16)
    assert bf.dtype == tf.bfloat16
    back, via_int = run([tf.cast(bf, tf.float32), tf.cast(tf.cast(bf, tf.int32), tf.float64)])
    want = _bfloat16_round(values)
    np.testing.assert_array_equal(back, want)
    np.testing.assert_array_equal(via_int[:-1], np.trunc(want[:-1]))
    assert via_int[-1] == np.iinfo(np.int32).max  # saturated
    # A bfloat16 tensor fetched directly comes back as float32 holding the rounded values.
    np.testing.assert_array_equal(run(bf), want)


def test_cast_truncate_attr():
    values = np.array([1.0 + 2**-8 + 2**-9, -(1.0 + 2**-8 + 2**-9), 1.0 + 2**-10 + 2**-11],
                      np.float32)
    x = tf.constant(values)
    attrs = {"SrcT": tf.float32, "Truncate": True}
    bf = apply_op("Cast", [x], dict(attrs, DstT=tf.bfloat16)).outputs[0]
    h = apply_op("Cast", [x], dict(attrs, DstT=tf.float16)).outputs[0]
    bf_out, h_out, rounded = run([tf.cast(bf, tf.float32), tf.cast(h, tf.float32),
                                  tf.cast(tf.cast(x, tf.bfloat16), tf.float32)])
    truncated = (values.view(np.uint32) & 0xFFFF0000).view(np.float32)
    np.testing.assert_array_equal(bf_out, truncated)
    assert rounded[0] != bf_out[0]  # rounding and truncating differ here
    np.testing.assert_array_equal(h_out, (values.view(np.uint32) & ~np.uint32(0x1FFF))
                                  .view(np.float32))


def test_cast_helpers():
    x = tf.constant([1, 2])
    assert tf.to_float(x).dtype == tf.float32 and tf.to_float(x).op.name.startswith("ToFloat")
    assert tf.to_double(x).dtype == tf.float64
    assert tf.to_int64(x).dtype == tf.int64
    assert tf.to_int32(tf.constant([1.5])).dtype == tf.int32


# --- where ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape_c,shape_t,shape_e", [
    ((2, 3), (2, 3), (2, 3)), ((2, 3), (), ()), ((3,), (2, 3), (2, 1)), ((2, 1), (1, 3), ()),
    ((), (2, 3), (2, 3)), ((0, 3), (3,), ()), ((4, 1, 5), (3, 1), (1, 5)),
])
def test_select_broadcasts_like_numpy(shape_c, shape_t, shape_e):
    rng = np.random.default_rng(0)
    c = rng.random(shape_c) > 0.5
    t = sample(np.float64, shape_t, seed=1)
    e = sample(np.float64, shape_e, seed=2)
    out_t = tf.where(tf.constant(c), tf.constant(t), tf.constant(e))
    assert out_t.op.type == "SelectV2"
    expected = np.where(c, t, e)
    assert out_t.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(out_t), expected)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.complex64, np.uint8])
def test_select_random_condition_with_a_scalar_side_moves_bits(np_dtype):
    """Dropout's gradient shape: a random condition over a large array, one side a scalar. The
    kernel selects without branching; the values (NaN payloads, -0.0) must come through as bits."""
    rng = np.random.default_rng(3)
    c = rng.random((301, 37)) > 0.5
    t = (rng.standard_normal((301, 37)) * 100).astype(np_dtype)
    if np.issubdtype(np_dtype, np.floating):
        t.flat[::7] = np.nan
        t.flat[1::7] = -0.0
    zero = np.zeros((), np_dtype)
    with tf.Session() as sess:
        got = sess.run([tf.where(c, t, zero), tf.where(c, zero, t), tf.where(c, t, t[::-1])])
    for out, expected in zip(got, [np.where(c, t, zero), np.where(c, zero, t),
                                   np.where(c, t, t[::-1])]):
        np.testing.assert_array_equal(out.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.int64, tf.uint8, tf.bool,
                                   tf.float16, tf.bfloat16])
def test_select_all_dtypes(dtype):
    c = np.array([True, False, True])
    t = tf.cast(tf.constant([1, 2, 3]), dtype)
    e = tf.cast(tf.constant([0, 0, 0]), dtype)
    out = run(tf.cast(tf.where(c, t, e), tf.int32))
    np.testing.assert_array_equal(out, [1, 0, 1] if dtype == tf.bool else [1, 0, 3])


def test_where_python_values_and_names():
    x = tf.constant([1.0, -2.0, 3.0])
    r = tf.where(x > 0, x, 0)
    assert r.dtype == tf.float32 and r.op.name == "Select"
    assert tf.where_v2(x > 0, x, 0).op.name == "SelectV2"
    np.testing.assert_array_equal(run(r), [1.0, 0.0, 3.0])
    with pytest.raises(ValueError, match="x and y must both be non-None"):
        tf.where(x > 0, x)
    with pytest.raises(TypeError):
        tf.where(tf.constant([1.0]), x, x)  # the condition must be bool


@pytest.mark.parametrize("value", [
    np.array(True), np.array(False), np.array([True, False, True]), np.zeros((0, 3), bool),
    np.array([[True, False], [False, True], [True, True]]),
    np.random.default_rng(0).random((2, 3, 4, 2)) > 0.6,
    np.array([[0.0, 1.5], [-2.0, 0.0]]), np.array([0, 3, 0, -1], np.int64),
])
def test_where_one_argument_gives_coordinates(value):
    out = run(tf.where(tf.constant(value)))
    assert out.dtype == np.int64
    expected = np.argwhere(value)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


def test_where_one_argument_on_half_types():
    x = tf.constant([0.0, -0.0, 2.0, 0.5])
    for dtype in (tf.float16, tf.bfloat16):
        np.testing.assert_array_equal(run(tf.where(tf.cast(x, dtype))), [[2], [3]])


# --- in-place reuse ----------------------------------------------------------------------------

def test_in_place_reuse_keeps_feeds_and_constants_intact():
    x = tf.placeholder(tf.float32, [3])
    y = tf.exp(tf.sqrt(x + 1.0) * 2.0) - 1.0
    c = tf.constant([1.0, 4.0, 9.0])
    d = tf.square(tf.sqrt(c) + c)
    fed = np.array([0.0, 3.0, 8.0], np.float32)
    with tf.Session() as sess:
        first = sess.run(y, {x: fed})
        np.testing.assert_allclose(first, np.exp(np.sqrt(fed + 1) * 2) - 1, rtol=1e-6)
        np.testing.assert_array_equal(fed, [0.0, 3.0, 8.0])
        np.testing.assert_allclose(sess.run(y, {x: fed}), first)
        for _ in range(2):
            np.testing.assert_allclose(sess.run(d), [4.0, 36.0, 144.0])
        np.testing.assert_array_equal(sess.run(c), [1.0, 4.0, 9.0])


def test_shared_input_is_not_overwritten():
    x = tf.placeholder(tf.float32, [4])
    a = x * 2.0
    b = a + 1.0    # a has two readers: neither may overwrite it
    c = a * 3.0
    out = run([b, c, a], {x: np.arange(4, dtype=np.float32)})
    np.testing.assert_allclose(out[0], np.arange(4) * 2 + 1)
    np.testing.assert_allclose(out[1], np.arange(4) * 6)
    np.testing.assert_allclose(out[2], np.arange(4) * 2)


def test_v1_where_with_a_vector_condition_selects_rows():
    # TF1's Select: one bool per row of x and y (also when the row count is only known at run
    # time), where broadcasting would align the vector with the last axis.
    c = np.array([True, False, True])
    t = np.arange(9.0).reshape(3, 3)
    e = -t
    np.testing.assert_array_equal(run(tf.where(c, t, e)), np.where(c[:, None], t, e))
    cond = tf.placeholder(tf.bool, [None])
    rows = tf.placeholder(tf.float64, [None, 3])
    with tf.Session() as sess:
        got = sess.run(tf.where(cond, rows, tf.zeros_like(rows)), {cond: c, rows: t})
    np.testing.assert_array_equal(got, np.where(c[:, None], t, 0.0))
    # where_v2 broadcasts: the vector applies along the last axis.
    np.testing.assert_array_equal(run(tf.where_v2(c, t, e)), np.where(c, t, e))
