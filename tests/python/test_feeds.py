"""The Python boundary of feeds: every kind of value a TF1 program may feed either converts to
the placeholder's dtype exactly as TensorFlow converts it (numpy's casting rules) or fails with
TensorFlow's error class and a message that names the value and the tensor."""

import decimal
import fractions

import numpy as np
import pytest

import flowstone as tf


def fed(dtype, value, shape=None):
    """What a placeholder of `dtype` holds when fed `value` (through sess.run)."""
    x = tf.placeholder(dtype, shape)
    with tf.Session() as sess:
        return sess.run(tf.identity(x), {x: value})


def fed_through_callable(dtype, value):
    x = tf.placeholder(dtype)
    with tf.Session() as sess:
        return sess.make_callable(tf.identity(x), [x])(value)


@pytest.mark.parametrize("feed", [fed, fed_through_callable])
@pytest.mark.parametrize("value, detected", [
    ([[1.0, 2.0], [3.0]], r"The detected shape was \(2,\) \+ inhomogeneous part"),
    ([[[1.0, 2.0]], [[3.0]]], r"The detected shape was \(2, 1\) \+ inhomogeneous part"),
    ([1.0, [2.0, 3.0]], r"The detected shape was \(2,\) \+ inhomogeneous part"),
])
def test_a_ragged_nested_list_is_a_value_error_naming_the_tensor(feed, value, detected):
    with pytest.raises(ValueError, match=r"Cannot feed value .* for Tensor 'Placeholder:0' with "
                                         r"dtype float32: setting an array element with a "
                                         r"sequence\. .*" + detected):
        feed(tf.float32, value)


def test_after_a_bad_feed_the_session_is_usable():
    x = tf.placeholder(tf.float32)
    y = x * 2.0
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="inhomogeneous"):
            sess.run(y, {x: [[1.0], [2.0, 3.0]]})
        np.testing.assert_array_equal(sess.run(y, {x: [[1.0], [2.0]]}), [[2.0], [4.0]])


BASE = np.arange(24, dtype=np.float32).reshape(4, 6) - 7.5


def _read_only(array):
    array = array.copy()
    array.setflags(write=False)
    return array


@pytest.mark.parametrize("value", [
    BASE.T,                                     # Fortran order
    BASE[::2, 1::3],                            # strided in both dims
    BASE[::-1, ::-2],                           # negative strides
    BASE[:, 2],                                 # a column: non-contiguous 1-d
    _read_only(BASE),                           # read-only memory
    np.broadcast_to(BASE[0], (3, 6)),           # a zero stride (read-only view)
    BASE.astype(">f4"),                         # byte-swapped float32
    np.lib.stride_tricks.as_strided(BASE, (3, 2), (8, 4)),  # overlapping rows
], ids=["transposed", "strided", "negative-strides", "column", "read-only", "broadcast",
        "byte-swapped", "overlapping"])
def test_non_contiguous_strided_read_only_and_byte_swapped_arrays(value):
    got = fed(tf.float32, value)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.array(value, np.float32))


@pytest.mark.parametrize("dtype, value", [
    (tf.int64, np.arange(-6, 6, dtype=">i8").reshape(3, 4)[:, ::-1]),
    (tf.int32, np.arange(-6, 6, dtype=">i4")[::3]),
    (tf.float64, np.linspace(-1, 1, 7).astype(">f8")[::-1]),
    (tf.float16, np.array([1.5, -2.25, 65504.0], ">f2")),
])
def test_byte_swapped_and_reversed_arrays_of_other_dtypes(dtype, value):
    got = fed(dtype, value)
    assert got.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(got, value.astype(dtype.as_numpy_dtype))


def test_a_fed_array_is_copied_not_aliased():
    source = BASE.copy()
    x = tf.placeholder(tf.float32)
    y = tf.identity(x)
    with tf.Session() as sess:
        got = sess.run(y, {x: source})
        source[0, 0] = 1000.0
        assert got[0, 0] == -7.5


@pytest.mark.parametrize("dtype, value, expected", [
    (tf.float32, np.array(2.5), np.float32(2.5)),                 # 0-d float64 array
    (tf.int32, np.array(7, np.int64), np.int32(7)),
    (tf.bool, np.array(True), np.bool_(True)),
    (tf.float32, 3, np.float32(3)),                               # Python int
    (tf.float64, 0.1, np.float64(0.1)),                           # Python float
    (tf.float32, True, np.float32(1)),                            # Python bool
    (tf.int64, 2**62, np.int64(2**62)),
    (tf.int32, -2**31, np.int32(-2**31)),
    (tf.uint8, 255, np.uint8(255)),
    (tf.bool, 1, np.bool_(True)),
    (tf.bool, 0.5, np.bool_(True)),
    (tf.int32, 2.9, np.int32(2)),                                 # truncated, like TF
    (tf.float32, np.float64(1e300), np.float32(np.inf)),          # overflows to inf, like TF
    (tf.float32, np.int16(-3), np.float32(-3)),                   # numpy scalar types
    (tf.int64, np.uint32(4000000000), np.int64(4000000000)),
    (tf.float16, np.float32(0.1), np.float16(0.1)),
    (tf.float32, fractions.Fraction(1, 4), np.float32(0.25)),
    (tf.float64, decimal.Decimal("1.25"), np.float64(1.25)),
    (tf.float32, "1.5", np.float32(1.5)),                         # numpy parses numeric strings
], ids=lambda v: type(v).__name__ if not isinstance(v, tf.DType) else v.name)
def test_zero_d_arrays_and_python_and_numpy_scalars(dtype, value, expected):
    got = fed(dtype, value)
    assert got.shape == () and got.dtype == expected.dtype
    assert got == expected


def test_float_nan_and_inf_scalars_keep_their_value():
    assert np.isnan(fed(tf.float32, float("nan")))
    assert fed(tf.float64, float("-inf")) == -np.inf
    assert fed(tf.float32, 1e-45) == np.float32(1e-45)  # a float32 denormal survives


@pytest.mark.parametrize("dtype, value", [
    (tf.int32, 2**40), (tf.int32, -2**31 - 1), (tf.uint8, -1), (tf.uint8, 256), (tf.bool, 3),
    (tf.int64, 2**63),
])
def test_python_ints_that_do_not_fit_are_type_errors_as_in_tf(dtype, value):
    with pytest.raises(TypeError, match=f"Type of feed value {value} with type <class 'int'> is "
                                        f"not compatible with Tensor type {dtype.name}. Try "
                                        "explicitly setting the type of the feed tensor to a "
                                        r"larger type \(e.g. int64\)."):
        fed(dtype, value)


def test_numpy_bool_and_unsigned_arrays():
    mask = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(fed(tf.bool, mask), mask)
    np.testing.assert_array_equal(fed(tf.float32, mask), mask.astype(np.float32))
    pixels = np.array([0, 17, 255], np.uint8)
    assert fed(tf.uint8, pixels).dtype == np.uint8
    np.testing.assert_array_equal(fed(tf.uint8, pixels), pixels)
    np.testing.assert_array_equal(fed(tf.int32, pixels), [0, 17, 255])
    # Wider unsigned values wrap like a C cast (numpy's astype), as TensorFlow's feeds do.
    np.testing.assert_array_equal(fed(tf.int32, np.array([65535, 2**32 - 1], np.uint32)),
                                  [65535, -1])
    np.testing.assert_array_equal(fed(tf.int64, np.array([2**63 + 5], np.uint64)),
                                  [-2**63 + 5])
    np.testing.assert_array_equal(fed(tf.bool, np.array([0, 2], np.uint16)), [False, True])


def test_object_arrays():
    np.testing.assert_array_equal(fed(tf.float32, np.array([1, 2.5, True], dtype=object)),
                                  np.array([1.0, 2.5, 1.0], np.float32))
    np.testing.assert_array_equal(fed(tf.int64, np.array([[2**40], [-3]], dtype=object)),
                                  [[2**40], [-3]])
    with pytest.raises(ValueError, match="Cannot feed value .*could not convert string to "
                                         "float: 'a'"):
        fed(tf.float32, np.array(["a", 1.0], dtype=object))
    with pytest.raises(TypeError, match="Cannot feed value .*float\\(\\) argument must be a "
                                        "string or a real number, not 'dict'"):
        fed(tf.float32, np.array([{}], dtype=object))


def test_values_of_the_wrong_kind_are_type_errors():
    with pytest.raises(TypeError, match="Cannot feed value .* of type dict for Tensor "
                                        "'Placeholder:0' with dtype float32"):
        fed(tf.float32, {"a": 1})
    with pytest.raises(TypeError, match="Cannot feed value None of type NoneType .*int32"):
        fed(tf.int32, None)


def test_a_long_value_is_shortened_in_the_message():
    with pytest.raises(ValueError) as info:
        fed(tf.float32, [list(range(1000)), [1]])
    assert len(str(info.value)) < 600 and "..." in str(info.value)


def test_bfloat16_feeds_round_to_nearest_even():
    got = fed(tf.bfloat16, [1.0, 1.00390625, 1.01171875, -3.5])
    # bfloat16 keeps 8 significant bits: 1 + 2**-8 rounds to 1 (even), 1 + 3 * 2**-8 up.
    np.testing.assert_array_equal(got, [1.0, 1.0, 1.015625, -3.5])


def test_an_array_larger_than_host_memory_is_resource_exhausted():
    # A 4 TiB view of one float (stride 0): no memory behind it, so only the fed copy fails.
    huge = np.broadcast_to(np.float32(1.0), (2**40,))
    x = tf.placeholder(tf.float32)
    y = tf.reduce_sum(x)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError,
                           match=r"OOM when allocating a fed tensor with shape \[1099511627776\] "
                                 "and type float on the host"):
            sess.run(y, {x: huge})
        assert sess.run(y, {x: np.ones(3, np.float32)}) == 3.0


def test_a_feed_bigger_than_the_session_memory_limit_fails_where_it_is_used():
    config = tf.ConfigProto()
    config.experimental.cpu_memory_limit_mb = 8
    x = tf.placeholder(tf.float32, [None])
    twice = tf.concat([x, x], 0)
    # 16 MiB is fed (host memory, outside the limit); the 32 MiB result is the session's own.
    value = np.ones(4 << 20, np.float32)
    with tf.Session(config=config) as sess:
        with pytest.raises(tf.errors.ResourceExhaustedError, match="OOM when allocating tensor "
                                                                   r"with shape\[8388608\]"):
            sess.run(twice, {x: value})
        np.testing.assert_array_equal(sess.run(twice, {x: [1.0, 2.0]}), [1.0, 2.0, 1.0, 2.0])
