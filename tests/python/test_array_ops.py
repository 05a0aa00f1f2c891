"""Array ops against numpy: values, static shapes, dtypes, empty tensors and error paths."""

import importlib.util

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.framework import ops as tf_ops
from flowstone.ops import array_ops

ALL_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_, np.float16]


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def sample(shape, dtype=np.float32):
    """Distinct, recognizable values: 0, 1, 2, ... (or alternating for bool)."""
    values = np.arange(int(np.prod(shape)))
    if dtype == np.bool_:
        values = values % 3 == 0
    return values.astype(dtype).reshape(shape)


def static(t):
    return t.shape.as_list()


# --- Shape, Size, Rank ----------------------------------------------------------------------

def test_shape_size_rank_static_are_constants():
    x = tf.constant(sample((2, 3)))
    s, n, r = tf.shape(x), tf.size(x), tf.rank(x)
    assert s.op.type == n.op.type == r.op.type == "Const"
    assert static(s) == [2]
    np.testing.assert_array_equal(run(s), [2, 3])
    assert run([n, r]) == [6, 2]
    assert tf.shape(x, out_type=tf.int64).dtype == tf.int64


def test_shape_size_rank_of_placeholders_run_ops():
    p = tf.placeholder(tf.float32, [None, 3])
    q = tf.placeholder(tf.float32)
    s, s64, n, r = tf.shape(p), tf.shape(p, out_type=tf.int64), tf.size(p), tf.rank(q)
    assert (s.op.type, n.op.type, r.op.type) == ("Shape", "Size", "Rank")
    assert static(s) == [2] and s64.dtype == tf.int64 and static(n) == [] and static(r) == []
    assert tf.shape(q).shape.as_list() == [None]
    v = sample((4, 3))
    out = run([s, s64, n, r], {p: v, q: np.zeros((2, 0, 5, 1))})
    np.testing.assert_array_equal(out[0], [4, 3])
    assert out[1].dtype == np.int64 and out[2] == 12 and out[3] == 4
    # A known zero dim makes the size a constant 0.
    assert tf.size(tf.placeholder(tf.float32, [None, 0])).op.type == "Const"


def test_shape_op_of_a_known_shape_is_known_while_building():
    p = tf.placeholder(tf.float32, [2, 3])
    shape_op = tf_ops.apply_op("Shape", [p]).outputs[0]
    y = tf.reshape(tf.zeros([6]), shape_op)
    assert static(y) == [2, 3]
    np.testing.assert_array_equal(run(y, {p: sample((2, 3))}), np.zeros((2, 3)))


# --- Reshape --------------------------------------------------------------------------------

def test_reshape_values_and_inferred_dim():
    v = sample((2, 3, 4))
    x = tf.constant(v)
    cases = [[6, 4], [-1, 4], [4, -1], [24], [-1], [2, 3, 2, 2], [1, 24, 1]]
    outs = [tf.reshape(x, c) for c in cases]
    for c, o in zip(cases, outs):
        assert static(o) == list(np.reshape(v, c).shape)
    for c, got in zip(cases, run(outs)):
        np.testing.assert_array_equal(got, np.reshape(v, c))
    assert static(tf.reshape(tf.constant(5.0), [1, 1])) == [1, 1]
    np.testing.assert_array_equal(run(tf.reshape(tf.constant([7]), [])), 7)


def test_reshape_static_shapes_with_unknowns():
    p = tf.placeholder(tf.float32, [None, 4])
    assert static(tf.reshape(p, [-1, 2])) == [None, 2]
    assert static(tf.reshape(p, [2, 2, -1])) == [2, 2, None]
    dims = tf.placeholder(tf.int32, [3])
    assert static(tf.reshape(p, dims)) == [None, None, None]
    assert tf.reshape(p, tf.placeholder(tf.int32)).shape.rank is None
    # A rank-1 result of a fully known input has a known size even when the values are unknown.
    assert static(tf.reshape(tf.zeros([2, 3]), tf.placeholder(tf.int32, [1]))) == [6]
    # Shapes mixing ints and scalar tensors are packed into one shape tensor.
    y = tf.reshape(p, [tf.shape(p)[0], 2, 2])
    assert y.shape.rank == 3 and static(y)[0] is None
    np.testing.assert_array_equal(run(y, {p: sample((3, 4))}), sample((3, 4)).reshape(3, 2, 2))


def test_reshape_every_dtype_and_int64_shape():
    for dtype in ALL_DTYPES:
        v = sample((2, 3), dtype)
        p = tf.placeholder(tf.as_dtype(dtype), [2, 3])
        y = tf.reshape(p, np.array([3, 2], dtype=np.int64))
        assert y.dtype == tf.as_dtype(dtype)
        got = run(y, {p: v})
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, v.reshape(3, 2))


def test_reshape_empty():
    x = tf.zeros([0, 3])
    np.testing.assert_array_equal(run(tf.reshape(x, [-1, 3])).shape, (0, 3))
    assert static(tf.reshape(x, [3, 0, 5])) == [3, 0, 5]
    with pytest.raises(ValueError, match="cannot infer the missing input size for an empty"):
        tf.reshape(x, [0, -1])


def test_reshape_errors():
    x = tf.constant(sample((2, 3)))
    with pytest.raises(ValueError, match=r"Cannot reshape a tensor with 6 elements to shape "
                                         r"\[4\] \(4 elements\)"):
        tf.reshape(x, [4])
    with pytest.raises(ValueError, match="requested shape requires a multiple of 4"):
        tf.reshape(x, [4, -1])
    with pytest.raises(ValueError, match="Only one input size may be -1, not both 0 and 1"):
        tf.reshape(x, [-1, -1])
    with pytest.raises(ValueError, match="Size 1 must be non-negative, not -2"):
        tf.reshape(x, [-1, -2])
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.reshape(x, [[6]])
    # Known only at run time: the kernel reports the same problem.
    p = tf.placeholder(tf.float32)
    y = tf.reshape(p, [4])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Cannot reshape a tensor with 6 elements to shape \[4\]"):
        run(y, {p: sample((2, 3))})
    dims = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiple of 5"):
        run(tf.reshape(x, dims), {dims: [5, -1]})


# --- Transpose ------------------------------------------------------------------------------

def test_transpose_matches_numpy():
    v = sample((2, 3, 4, 5))
    x = tf.constant(v)
    perms = [None, [0, 1, 2, 3], [3, 2, 1, 0], [0, 2, 3, 1], [0, 3, 1, 2], [1, 0, 2, 3],
             [2, 3, 0, 1], [1, 2, 3, 0]]
    outs = [tf.transpose(x, p) for p in perms]
    for p, o, got in zip(perms, outs, run(outs)):
        expected = np.transpose(v, p)
        assert static(o) == list(expected.shape)
        np.testing.assert_array_equal(got, expected)
    assert outs[0].op.name == "transpose"


def test_transpose_size_one_dims_dtypes_and_empty():
    v = sample((1, 3, 1, 4))
    outs = [tf.transpose(tf.constant(v), p) for p in ([2, 1, 0, 3], [1, 0, 3, 2], [3, 1, 2, 0])]
    for o, got, p in zip(outs, run(outs), ([2, 1, 0, 3], [1, 0, 3, 2], [3, 1, 2, 0])):
        np.testing.assert_array_equal(got, np.transpose(v, p))
    for dtype in ALL_DTYPES:
        m = sample((3, 5), dtype)
        np.testing.assert_array_equal(run(tf.transpose(tf.constant(m))), m.T)
    assert run(tf.transpose(tf.zeros([0, 3]))).shape == (3, 0)
    np.testing.assert_array_equal(run(tf.transpose(tf.constant(3.0))), 3.0)
    big = sample((300, 200))
    np.testing.assert_array_equal(run(tf.transpose(tf.constant(big))), big.T)


def test_transpose_static_shapes_and_errors():
    p = tf.placeholder(tf.float32, [None, 3])
    assert static(tf.transpose(p)) == [3, None]
    assert static(tf.transpose(p, tf.placeholder(tf.int32, [2]))) == [None, None]
    assert static(tf.transpose(tf.placeholder(tf.float32), [1, 0, 2])) == [None] * 3
    x = tf.constant(sample((2, 3)))
    with pytest.raises(ValueError, match="Dimension must be 2 but is 3"):
        tf.transpose(x, [0, 1, 2])
    with pytest.raises(ValueError, match="1 is missing from"):
        tf.transpose(x, [0, 0])
    with pytest.raises(ValueError, match=r"2 is out of range \[0 .. 2\)"):
        tf.transpose(x, [2, 0])
    perm = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="0 is missing from"):
        run(tf.transpose(x, perm), {perm: [1, 1]})


@pytest.mark.skipif(not hasattr(tf.Tensor, "__sub__"), reason="needs math ops (Tensor - int)")
def test_transpose_default_of_unknown_rank():
    p = tf.placeholder(tf.float32)
    v = sample((2, 3, 4))
    np.testing.assert_array_equal(run(tf.transpose(p), {p: v}), v.T)


# --- ExpandDims, Squeeze --------------------------------------------------------------------

def test_expand_dims():
    v = sample((2, 3))
    x = tf.constant(v)
    axes = [0, 1, 2, -1, -2, -3]
    outs = [tf.expand_dims(x, a) for a in axes]
    for a, o, got in zip(axes, outs, run(outs)):
        assert static(o) == list(np.expand_dims(v, a).shape)
        np.testing.assert_array_equal(got, np.expand_dims(v, a))
    assert static(tf.expand_dims(x, dim=1)) == [2, 1, 3]
    assert static(tf.expand_dims(tf.constant(1.0), 0)) == [1]
    assert static(tf.expand_dims(x, tf.placeholder(tf.int32, []))) == [None] * 3
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        tf.expand_dims(x, 0, dim=0)
    with pytest.raises(ValueError, match="Must specify an axis"):
        tf.expand_dims(x)
    with pytest.raises(ValueError, match="Tried to expand dim index 3 for tensor with 2 dim"):
        tf.expand_dims(x, 3)
    with pytest.raises(ValueError, match="Tried to expand dim index -4"):
        tf.expand_dims(x, -4)
    a = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tried to expand dim index 5"):
        run(tf.expand_dims(x, a), {a: 5})


def test_squeeze():
    v = sample((1, 2, 1, 3, 1))
    x = tf.constant(v)
    cases = [None, [0], [2, 4], [-1], 0, [0, 2, -1]]
    outs = [tf.squeeze(x, c) for c in cases]
    for c, o, got in zip(cases, outs, run(outs)):
        expected = np.squeeze(v, None if c is None else tuple(np.atleast_1d(c)))
        assert static(o) == list(expected.shape)
        np.testing.assert_array_equal(got, expected)
    assert static(tf.squeeze(x, squeeze_dims=[0])) == [2, 1, 3, 1]
    p = tf.placeholder(tf.float32, [None, 1, 3])
    assert static(tf.squeeze(p, [1])) == [None, 3]
    assert tf.squeeze(p).shape.rank is None  # the unknown dim may or may not be 1
    np.testing.assert_array_equal(run(tf.squeeze(p), {p: sample((1, 1, 3))}), sample((3,)))
    assert static(tf.squeeze(tf.zeros([0, 1]))) == [0]


def test_squeeze_errors():
    x = tf.constant(sample((1, 3)))
    with pytest.raises(ValueError, match=r"Can not squeeze dim\[1\], expected a dimension of "
                                         r"1, got 3"):
        tf.squeeze(x, [1])
    with pytest.raises(ValueError, match="Tried to squeeze dim index 2 for tensor with 2"):
        tf.squeeze(x, [2])
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.squeeze(x, [0], squeeze_dims=[0])
    p = tf.placeholder(tf.float32, [None, None])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Can not squeeze dim\[0\], expected a dimension of 1, got 2"):
        run(tf.squeeze(p, [0]), {p: sample((2, 3))})


# --- ConcatV2 -------------------------------------------------------------------------------

def test_concat_matches_numpy():
    a, b, c = sample((2, 3)), sample((2, 3)) + 10, sample((1, 3)) + 100
    ta, tb, tc = tf.constant(a), tf.constant(b), tf.constant(c)
    outs = [tf.concat([ta, tb], 0), tf.concat([ta, tb], 1), tf.concat([ta, tb, tc], -2),
            tf.concat([ta, tb], -1), tf.concat((ta, tc), axis=0)]
    expected = [np.concatenate([a, b], 0), np.concatenate([a, b], 1),
                np.concatenate([a, b, c], 0), np.concatenate([a, b], -1),
                np.concatenate([a, c], 0)]
    for o, got, e in zip(outs, run(outs), expected):
        assert static(o) == list(e.shape)
        np.testing.assert_array_equal(got, e)
    assert outs[0].op.type == "ConcatV2" and outs[0].op.name == "concat"
    single = tf.concat([ta], 1)
    assert single.op.type == "Identity"
    np.testing.assert_array_equal(run(single), a)


def test_concat_dtypes_empty_and_python_values():
    for dtype in ALL_DTYPES:
        a, b = sample((2, 2), dtype), sample((2, 1), dtype)
        np.testing.assert_array_equal(run(tf.concat([tf.constant(a), tf.constant(b)], 1)),
                                      np.concatenate([a, b], 1))
    e = tf.concat([tf.zeros([0, 3]), tf.ones([2, 3])], 0)
    np.testing.assert_array_equal(run(e), np.ones((2, 3)))
    assert static(tf.concat([tf.zeros([2, 0]), tf.zeros([2, 0])], 1)) == [2, 0]
    # Python values take the dtype of the tensors they join.
    x = tf.constant([1.5, 2.5])
    np.testing.assert_array_equal(run(tf.concat([x, [3, 4]], 0)), [1.5, 2.5, 3, 4])
    big = [sample((300, 40)), sample((300, 60))]
    np.testing.assert_array_equal(run(tf.concat([tf.constant(v) for v in big], 1)),
                                  np.concatenate(big, 1))


def test_concat_static_shapes_with_unknowns():
    p = tf.placeholder(tf.float32, [None, 3])
    q = tf.placeholder(tf.float32, [2, None])
    assert static(tf.concat([p, q], 0)) == [None, 3]
    assert static(tf.concat([p, q], 1)) == [2, None]
    assert static(tf.concat([p, tf.placeholder(tf.float32)], 1)) == [None, None]
    assert static(tf.concat([p, q], tf.placeholder(tf.int32, []))) == [None, None]


def test_concat_errors():
    a, b = tf.zeros([2, 3]), tf.zeros([3, 4])
    with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal, but are 2 "
                                         "and 3"):
        tf.concat([a, b], 1)
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
        tf.concat([a, tf.zeros([3])], 0)
    with pytest.raises(ValueError, match=r"Expected concatenating dimensions in the range "
                                         r"\[-2, 2\), but got 2"):
        tf.concat([a, a], 2)
    with pytest.raises(ValueError, match="Can't concatenate scalars"):
        tf.concat([tf.constant(1.0), tf.constant(2.0)], 0)
    with pytest.raises(TypeError):
        tf.concat([a, tf.zeros([2, 3], dtype=tf.int32)], 0)
    p = tf.placeholder(tf.float32, [None, None])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"ConcatOp : Dimensions of inputs should match: shape\[0\] = "
                             r"\[2,3\] vs. shape\[1\] = \[3,3\]"):
        run(tf.concat([a, p], 1), {p: np.zeros((3, 3))})


# --- Pack / Unpack --------------------------------------------------------------------------

def test_stack_matches_numpy():
    vs = [sample((2, 3)) + 10 * i for i in range(3)]
    ts = [tf.constant(v) for v in vs]
    axes = [0, 1, 2, -1, -3]
    outs = [tf.stack(ts, axis=a) for a in axes]
    for a, o, got in zip(axes, outs, run(outs)):
        assert static(o) == list(np.stack(vs, a).shape)
        np.testing.assert_array_equal(got, np.stack(vs, a))
    assert outs[0].op.type == "Pack"
    np.testing.assert_array_equal(run(tf.stack([1, 2, 3])), [1, 2, 3])
    assert tf.stack([1, 2]).dtype == tf.int32
    x = tf.constant(2.5)
    np.testing.assert_array_equal(run(tf.stack([x, 1])), [2.5, 1.0])
    for dtype in ALL_DTYPES:
        v = sample((2,), dtype)
        np.testing.assert_array_equal(run(tf.stack([tf.constant(v)] * 2, 1)), np.stack([v] * 2, 1))
    assert static(tf.stack([tf.zeros([0, 2])] * 3, 1)) == [0, 3, 2]
    v = tf.Variable([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(tf.stack([v, [3.0, 4.0]])), [[1, 2], [3, 4]])
        np.testing.assert_array_equal(sess.run(v[::-1]), [2, 1])


def test_stack_errors():
    with pytest.raises(ValueError, match=r"Shapes of all inputs must match: values\[0\].shape = "
                                         r"\[2\] != values\[1\].shape = \[3\]"):
        tf.stack([tf.zeros([2]), tf.zeros([3])])
    with pytest.raises(ValueError, match=r"axis = 2 not in \[-2, 2\)"):
        tf.stack([tf.zeros([2]), tf.zeros([2])], axis=2)
    p = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Shapes of all inputs must match"):
        run(tf.stack([tf.zeros([2]), p]), {p: np.zeros(3)})


def test_unstack_matches_numpy():
    v = sample((2, 3, 4))
    x = tf.constant(v)
    for axis in (0, 1, 2, -1):
        parts = tf.unstack(x, axis=axis)
        assert len(parts) == v.shape[axis]
        assert static(parts[0]) == list(np.take(v, 0, axis).shape)
        for got, k in zip(run(parts), range(v.shape[axis])):
            np.testing.assert_array_equal(got, np.take(v, k, axis))
    assert tf.unstack(tf.zeros([0, 2])) == []
    p = tf.placeholder(tf.float32, [None, 2])
    parts = tf.unstack(p, num=3)
    assert static(parts[0]) == [2]
    got = run(parts, {p: sample((3, 2))})
    np.testing.assert_array_equal(got[2], [4, 5])
    with pytest.raises(ValueError, match="Cannot infer num from shape"):
        tf.unstack(p)
    with pytest.raises(ValueError, match="Dimension must be 4 but is 2"):
        tf.unstack(x, num=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Input shape axis 0 must equal 3"):
        run(parts, {p: sample((2, 2))})


# --- Split / SplitV -------------------------------------------------------------------------

def test_split_equal_pieces():
    v = sample((4, 6))
    x = tf.constant(v)
    for num, axis in ((2, 0), (3, 1), (1, 0), (6, -1)):
        parts = tf.split(x, num, axis)
        expected = np.split(v, num, axis)
        assert len(parts) == num and static(parts[0]) == list(expected[0].shape)
        for got, e in zip(run(parts), expected):
            np.testing.assert_array_equal(got, e)
    for dtype in ALL_DTYPES:
        m = sample((2, 4), dtype)
        for got, e in zip(run(tf.split(tf.constant(m), 2, 1)), np.split(m, 2, 1)):
            np.testing.assert_array_equal(got, e)
    p = tf.placeholder(tf.float32, [None, 6])
    assert static(tf.split(p, 3, 1)[0]) == [None, 2]
    assert static(tf.split(p, 2, 0)[0]) == [None, 6]


def test_split_sizes():
    v = sample((3, 7))
    x = tf.constant(v)
    parts = tf.split(x, [2, -1, 1], axis=1)
    assert [static(t) for t in parts] == [[3, 2], [3, 4], [3, 1]]
    for got, e in zip(run(parts), np.split(v, [2, 6], axis=1)):
        np.testing.assert_array_equal(got, e)
    zero = tf.split(x, [0, 3], axis=0)
    assert static(zero[0]) == [0, 7]
    np.testing.assert_array_equal(run(zero[1]), v)
    sizes = tf.placeholder(tf.int32, [2])
    dyn = tf.split(x, sizes, axis=1)
    assert static(dyn[0]) == [3, None]
    got = run(dyn, {sizes: [5, 2]})
    np.testing.assert_array_equal(got[1], v[:, 5:])
    with pytest.raises(ValueError, match="Cannot infer num"):
        tf.split(x, tf.placeholder(tf.int32), axis=1)


def test_split_errors():
    x = tf.zeros([3, 5])
    with pytest.raises(ValueError, match="Dimension size must be evenly divisible by 2 but is 5"):
        tf.split(x, 2, 1)
    with pytest.raises(ValueError, match="Determined shape must either match input shape along "
                                         "split_dim exactly"):
        tf.split(x, [2, 2], 1)
    with pytest.raises(ValueError, match="only one -1"):
        tf.split(x, [-1, -1], 1)
    with pytest.raises(ValueError, match=r"split_dim < input rank \(2\), but got 2"):
        tf.split(x, 1, 2)
    p = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Number of ways to split should evenly divide the split dimension, "
                             r"but got split_dim 0 \(size = 5\) and num_split 2"):
        run(tf.split(p, 2), {p: np.zeros(5)})
    sizes = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Determined shape must"):
        run(tf.split(x, sizes, 1), {sizes: [1, 1]})


# --- Slice ----------------------------------------------------------------------------------

def test_slice_matches_numpy():
    v = sample((3, 4, 5))
    x = tf.constant(v)
    cases = [([0, 0, 0], [3, 4, 5]), ([1, 2, 0], [2, 1, 5]), ([1, 0, 3], [-1, -1, -1]),
             ([2, 4, 5], [1, 0, 0]), ([0, 1, 2], [1, 2, 3])]
    outs = [tf.slice(x, b, s) for b, s in cases]
    for (b, s), o, got in zip(cases, outs, run(outs)):
        index = tuple(slice(bi, None if si == -1 else bi + si) for bi, si in zip(b, s))
        assert static(o) == list(v[index].shape)
        np.testing.assert_array_equal(got, v[index])
    for dtype in ALL_DTYPES:
        m = sample((4,), dtype)
        np.testing.assert_array_equal(run(tf.slice(tf.constant(m), [1], [2])), m[1:3])
    p = tf.placeholder(tf.float32, [None, 4])
    assert static(tf.slice(p, [1, 1], [2, -1])) == [2, 3]
    assert static(tf.slice(p, [1, 1], [-1, 2])) == [None, 2]
    assert static(tf.slice(p, tf.placeholder(tf.int32, [2]), [2, -1])) == [2, None]


def test_slice_errors():
    x = tf.zeros([2, 3])
    with pytest.raises(ValueError, match=r"Expected size\[0\] in \[0, 1\], but got 3"):
        tf.slice(x, [1, 0], [3, 1])
    with pytest.raises(ValueError, match=r"Expected begin\[1\] in \[0, 3\], but got 4"):
        tf.slice(x, [0, 4], [1, 1])
    with pytest.raises(ValueError, match="Expected begin and size arguments to be 1-D tensors "
                                         "of size 2"):
        tf.slice(x, [0], [1])
    b = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected size\[1\] in \[0, 1\], "
                                                             r"but got 2"):
        run(tf.slice(x, b, [1, 2]), {b: [0, 2]})


# --- StridedSlice and Tensor.__getitem__ ----------------------------------------------------

V345 = sample((3, 4, 5))

INDEX_EXPRESSIONS = [
    (1,), (-1,), (0, 1), (1, 2, 3), (-1, -2, -3),
    (slice(None),), (slice(1, None),), (slice(None, 2),), (slice(1, -1),),
    (slice(None, None, 2),), (slice(None, None, -1),), (slice(None, None, -2),),
    (slice(2, 0, -1),), (slice(-1, None, -1),), (slice(None, -4, -1),), (slice(5, -10, -1),),
    (slice(-100, 100),), (slice(100, 200),), (slice(2, 1),), (slice(1, 2, -1),),
    (Ellipsis,), (Ellipsis, 0), (0, Ellipsis), (Ellipsis, slice(None, None, -1)),
    (1, Ellipsis, 2), (Ellipsis, 1, 2), (slice(None), Ellipsis, slice(1, 3)),
    (None,), (None, 1), (1, None), (Ellipsis, None), (None, Ellipsis, None),
    (slice(None), None, 1, slice(None, None, -2)), (None, None, 0, None, 1),
    (1, None, Ellipsis, None, 3), (Ellipsis, None, slice(1, 4, 2), None),
    (slice(0, 3, 2), slice(3, 0, -2), slice(None, None, 3)), (slice(None, None, 5),),
    (-3, slice(-2, None), -5), (slice(1, 2), 1, slice(4, 5)), (),
]


def _numpy_index(expr):
    return V345[expr]


def test_getitem_matches_numpy():
    x = tf.constant(V345)
    outs = [x[expr] for expr in INDEX_EXPRESSIONS]
    for expr, o in zip(INDEX_EXPRESSIONS, outs):
        assert static(o) == list(_numpy_index(expr).shape), expr
    for expr, got in zip(INDEX_EXPRESSIONS, run(outs)):
        np.testing.assert_array_equal(got, _numpy_index(expr), err_msg=str(expr))


def test_getitem_random_expressions_match_numpy():
    rng = np.random.RandomState(0)
    x = tf.constant(V345)
    exprs = []
    for _ in range(150):
        entries, dims_used = [], 0
        for _ in range(rng.randint(0, 5)):
            kind = rng.randint(6)
            if kind == 0 and Ellipsis not in entries:
                entries.append(Ellipsis)
            elif kind == 1:
                entries.append(None)
            elif kind == 2 and dims_used < 3:
                dims_used += 1
                dim = V345.shape[min(dims_used - 1, 2)]
                entries.append(int(rng.randint(-dim, dim)))
            elif dims_used < 3:
                dims_used += 1
                pick = lambda: None if rng.rand() < 0.3 else int(rng.randint(-7, 8))  # noqa: E731
                step = None if rng.rand() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
                entries.append(slice(pick(), pick(), step))
        expr = tuple(entries)
        try:
            expected = V345[expr]
        except IndexError:
            continue  # an integer index out of range for the dim it landed on
        exprs.append((expr, expected))
    outs = [x[expr] for expr, _ in exprs]
    for (expr, expected), o, got in zip(exprs, outs, run(outs)):
        assert static(o) == list(expected.shape), expr
        np.testing.assert_array_equal(got, expected, err_msg=str(expr))
    assert len(exprs) > 100


def test_getitem_with_tensor_indices_and_unknown_shapes():
    x = tf.constant(V345)
    i = tf.placeholder(tf.int32, [])
    j = tf.placeholder(tf.int32, [])
    k = tf.placeholder(tf.int64, [])
    a, b, c, d = x[i], x[:, i:], x[1, k, ::-1], x[i, ..., j]
    assert static(a) == [4, 5]  # the shrunk dim goes whatever i is
    assert static(b) == [3, None, 5]
    assert static(c) == [5]
    assert static(d) == [4]
    assert c.op.inputs[1].dtype == tf.int64
    got = run([a, b, c, d], {i: 2, j: -1, k: -1})
    np.testing.assert_array_equal(got[0], V345[2])
    np.testing.assert_array_equal(got[1], V345[:, 2:])
    np.testing.assert_array_equal(got[2], V345[1, -1, ::-1])
    np.testing.assert_array_equal(got[3], V345[2, ..., -1])
    p = tf.placeholder(tf.float32, [None, None, 5])
    assert static(p[0]) == [None, 5]
    assert static(p[..., 1:3]) == [None, None, 2]
    assert static(p[:, None, ::2]) == [None, 1, None, 5]
    assert tf.placeholder(tf.float32)[0].shape.rank is None
    np.testing.assert_array_equal(run(p[0, :, 1:3], {p: V345}), V345[0, :, 1:3])
    # np.int64 and Tensor entries work like ints.
    np.testing.assert_array_equal(run(x[np.int64(1), np.int32(-1)]), V345[1, -1])


@pytest.mark.skipif(importlib.util.find_spec("flowstone.ops.math_ops") is None,
                    reason="mixing int32 and int64 indices needs math ops (Cast)")
def test_getitem_mixed_index_dtypes():
    i = tf.placeholder(tf.int32, [])
    k = tf.placeholder(tf.int64, [])
    y = tf.constant(V345)[i, k]
    np.testing.assert_array_equal(run(y, {i: 1, k: 2}), V345[1, 2])


def test_getitem_names_dtypes_and_empty():
    x = tf.constant(V345)
    y = x[0]
    assert y.op.type == "StridedSlice" and y.op.name == "strided_slice"
    assert [t.op.name for t in y.op.inputs[1:]] == ["strided_slice/stack", "strided_slice/stack_1",
                                                    "strided_slice/stack_2"]
    assert x[1].op.name == "strided_slice_1"
    for dtype in ALL_DTYPES:
        m = sample((4, 3), dtype)
        np.testing.assert_array_equal(run(tf.constant(m)[::-2, 1:]), m[::-2, 1:])
    e = tf.zeros([0, 3])
    assert static(e[:, 1]) == [0]
    assert static(e[::-1]) == [0, 3]
    assert run(e[1:]).shape == (0, 3)
    s = tf.constant(7.0)
    assert static(s[None]) == [1] and static(s[...]) == []
    np.testing.assert_array_equal(run(s[None, ..., None]), [[7.0]])
    # Iterating a tensor of known first dim indexes it.
    rows = list(tf.constant(sample((2, 3))))
    np.testing.assert_array_equal(run(rows[1]), [3, 4, 5])


def test_strided_slice_direct_with_masks():
    x = tf.constant(V345)
    # begin_mask on dim 0, end_mask on dim 1, shrink on dim 2: x[:2, 1:, 3] written with masks.
    y = tf.strided_slice(x, [1, 1, 3], [2, 0, 4], [1, 1, 1], begin_mask=1, end_mask=2,
                         shrink_axis_mask=4)
    assert static(y) == [2, 3]
    np.testing.assert_array_equal(run(y), V345[:2, 1:, 3])
    z = tf.strided_slice(x, [0, 0], [0, 0], ellipsis_mask=1, new_axis_mask=2)
    np.testing.assert_array_equal(run(z), V345[..., None])
    w = tf.strided_slice(x, [0, -1], [0, 0], [1, 1], begin_mask=1, end_mask=1,
                         shrink_axis_mask=2)
    np.testing.assert_array_equal(run(w), V345[:, -1])


def test_getitem_errors():
    x = tf.constant(V345)
    with pytest.raises(ValueError, match="slice index 3 of dimension 0 out of bounds"):
        x[3]
    with pytest.raises(ValueError, match="slice index -6 of dimension 2 out of bounds"):
        x[..., -6]
    with pytest.raises(ValueError, match=r"strides\[1\] must be non-zero"):
        x[:, ::0]
    with pytest.raises(ValueError, match="Multiple ellipses in slice spec not allowed"):
        x[..., 0, ...]
    with pytest.raises(ValueError, match="Index out of range using input dim 3; input has only "
                                         "3 dims"):
        x[0, 0, 0, 0]
    for bad in (1.5, "a", [1, 2], True, tf.constant([1, 2]), tf.constant(1.0)):
        with pytest.raises(TypeError, match="Only integers, slices"):
            x[bad]
    i = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="slice index 7 of dimension 1 out of bounds"):
        run(x[0, i], {i: 7})


# --- GatherV2 -------------------------------------------------------------------------------

def test_gather_matches_numpy():
    v = sample((5, 4, 3))
    x = tf.constant(v)
    cases = [([4, 0, 2], 0), ([[1, 2], [3, 0]], 1), ([2, 2, 0], -1), (3, 0), (np.int64(1), 1),
             ([], 0)]
    outs = [tf.gather(x, i, axis=a) for i, a in cases]
    for (i, a), o, got in zip(cases, outs, run(outs)):
        expected = np.take(v, np.asarray(i, dtype=np.int64), axis=a)
        assert static(o) == list(expected.shape)
        np.testing.assert_array_equal(got, expected)
    assert outs[0].op.type == "GatherV2"
    for dtype in ALL_DTYPES:
        m = sample((4, 2), dtype)
        np.testing.assert_array_equal(run(tf.gather(m, [3, 1])), m[[3, 1]])
    idx = tf.placeholder(tf.int64, [None])
    assert static(tf.gather(x, idx)) == [None, 4, 3]
    np.testing.assert_array_equal(run(tf.gather(x, idx, axis=2), {idx: [2, 2]}), v[:, :, [2, 2]])
    assert static(tf.gather(x, [0], axis=tf.placeholder(tf.int32, []))) == [None, None, None]


def test_gather_batch_dims():
    params = sample((2, 4, 3))
    indices = np.array([[3, 0], [1, 1]])
    y = tf.gather(params, indices, axis=1, batch_dims=1)
    expected = np.stack([params[b][indices[b]] for b in range(2)])
    assert static(y) == list(expected.shape)
    np.testing.assert_array_equal(run(y), expected)
    indices = np.array([[2, 0], [1, 1]])
    z = tf.gather(params, indices, axis=2, batch_dims=-1)
    expected = np.stack([params[b][:, indices[b]] for b in range(2)])
    assert static(z) == list(expected.shape)
    np.testing.assert_array_equal(run(z), expected)
    with pytest.raises(ValueError, match=r"params.shape\[0\]: 2 should be equal to "
                                         r"indices.shape\[0\]: 3"):
        tf.gather(params, np.zeros((3, 1), np.int32), axis=1, batch_dims=1)
    with pytest.raises(ValueError, match=r"batch_dims \(1\) must be less than or equal to axis "
                                         r"\(0\)"):
        tf.gather(params, indices, axis=0, batch_dims=1)
    # With no axis, the axis is the first after the batch dimensions, as in TensorFlow.
    indices = np.array([[3, 0], [1, 1]])
    np.testing.assert_array_equal(run(tf.gather(params, indices, batch_dims=1)),
                                  np.stack([params[b][indices[b]] for b in range(2)]))


def test_gather_errors():
    x = tf.constant(sample((5, 2)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[3\] = 7 is not in "
                                                             r"\[0, 5\)"):
        run(tf.gather(x, [0, 1, 2, 7]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1,0\] = -1 is not in "
                                                             r"\[0, 5\)"):
        run(tf.gather(x, [[0, 1], [-1, 2]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices = 2 is not in \[0, 2\)"):
        run(tf.gather(x, 2, axis=1))
    with pytest.raises(ValueError, match=r"Expected axis in the range \[-2, 2\), but got 2"):
        tf.gather(x, [0], axis=2)
    with pytest.raises(ValueError, match="params must be at least 1 dimensional"):
        tf.gather(tf.constant(1.0), [0])
    with pytest.raises(TypeError):
        tf.gather(x, [0.5])


# --- OneHot ---------------------------------------------------------------------------------

def test_one_hot():
    indices = np.array([[0, 2], [-1, 5]])
    eye = np.eye(3, dtype=np.float32)

    def expected(axis=-1, on=1.0, off=0.0):
        out = np.where(np.concatenate([eye, np.zeros((1, 3))])[np.where(
            (indices >= 0) & (indices < 3), indices, 3)] == 1, on, off)
        return np.moveaxis(out, -1, axis)

    a = tf.one_hot(indices, 3)
    b = tf.one_hot(indices, 3, axis=0)
    c = tf.one_hot(indices, 3, on_value=5, off_value=-1, axis=1)
    d = tf.one_hot(indices, 3, dtype=tf.float64)
    e = tf.one_hot(indices, 3, on_value=True, off_value=False)
    assert a.dtype == tf.float32 and c.dtype == tf.int32 and d.dtype == tf.float64
    assert e.dtype == tf.bool
    assert static(a) == [2, 2, 3] and static(b) == [3, 2, 2] and static(c) == [2, 3, 2]
    ga, gb, gc, gd, ge = run([a, b, c, d, e])
    np.testing.assert_array_equal(ga, expected())
    np.testing.assert_array_equal(gb, expected(0))
    np.testing.assert_array_equal(gc, expected(1, 5, -1))
    np.testing.assert_array_equal(gd, expected())
    np.testing.assert_array_equal(ge, expected() == 1)
    assert static(tf.one_hot(indices, tf.placeholder(tf.int32, []))) == [2, 2, None]
    assert run(tf.one_hot(np.zeros([0], np.int64), 4)).shape == (0, 4)
    np.testing.assert_array_equal(run(tf.one_hot(np.uint8(1), 2)), [0, 1])


def test_one_hot_errors():
    with pytest.raises(TypeError, match="dtype int32 of on_value does not match dtype parameter "
                                        "float32"):
        tf.one_hot([0], 2, on_value=tf.constant(1), dtype=tf.float32)
    with pytest.raises(TypeError, match="dtype float32 of on_value does not match dtype int32 "
                                        "of off_value"):
        tf.one_hot([0], 2, on_value=1.0, off_value=0)
    with pytest.raises(ValueError, match="depth must be non-negative, got: -1"):
        tf.one_hot([0], -1)
    with pytest.raises(ValueError, match="Expected axis to be -1 or between"):
        tf.one_hot([0], 2, axis=3)
    depth = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="depth must be non-negative"):
        run(tf.one_hot([0], depth), {depth: -2})


# --- Fill, zeros, ones, zeros_like, ones_like -----------------------------------------------

def test_fill_zeros_ones():
    f = tf.fill([2, 3], 7)
    assert f.op.type == "Fill" and f.dtype == tf.int32 and static(f) == [2, 3]
    np.testing.assert_array_equal(run(f), np.full((2, 3), 7))
    np.testing.assert_array_equal(run(tf.fill([2], 1.5)), [1.5, 1.5])
    for dtype in ALL_DTYPES:
        z, o = tf.zeros([2, 2], dtype=dtype), tf.ones([3], dtype=dtype)
        assert z.dtype == tf.as_dtype(dtype) and z.op.type == "Const"
        gz, go = run([z, o])
        assert gz.dtype == dtype
        np.testing.assert_array_equal(gz, np.zeros((2, 2), dtype))
        np.testing.assert_array_equal(go, np.ones(3, dtype))
    big = tf.ones([40, 50])  # large: a Fill op rather than a big constant
    assert big.op.type == "Fill" and static(big) == [40, 50]
    assert big.op.inputs[0].op.name.startswith(big.op.name + "/")  # helpers in its scope
    np.testing.assert_array_equal(run(big), np.ones((40, 50), np.float32))
    assert tf.zeros([1000], dtype=tf.bool).op.type == "Fill"
    assert not run(tf.zeros([1000], dtype=tf.bool)).any()
    n = tf.placeholder(tf.int32, [])
    dyn = tf.zeros([n, 2])
    assert dyn.shape.rank == 2
    assert run(dyn, {n: 3}).shape == (3, 2)
    assert run(tf.zeros(tf.constant([0, 4]))).shape == (0, 4)
    assert static(tf.zeros(tf.TensorShape([2, 5]))) == [2, 5]
    dims = tf.placeholder(tf.int32, [2])
    assert static(tf.fill(dims, 1.0)) == [None, None]
    with pytest.raises(ValueError, match=r"Fill dimensions must be >= 0, got \[2,-1\]"):
        tf.fill([2, -1], 1.0)
    with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1"):
        tf.fill([2], [1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Fill dimensions must be >= 0"):
        run(tf.fill(dims, 1.0), {dims: [-3, 1]})


def test_zeros_like_ones_like():
    x = tf.constant(sample((2, 3), np.int64))
    z, o = tf.zeros_like(x), tf.ones_like(x, dtype=tf.float32)
    assert z.op.type == "Const" and z.dtype == tf.int64 and o.dtype == tf.float32
    np.testing.assert_array_equal(run(z), np.zeros((2, 3)))
    np.testing.assert_array_equal(run(o), np.ones((2, 3)))
    p = tf.placeholder(tf.float32, [None, 2])
    zp, op_, oc = tf.zeros_like(p), tf.ones_like(p), tf.ones_like(p, dtype=tf.int32)
    assert (zp.op.type, op_.op.type) == ("ZerosLike", "OnesLike")
    assert static(zp) == static(op_) == static(oc) == [None, 2] and oc.dtype == tf.int32
    got = run([zp, op_, oc], {p: sample((3, 2))})
    np.testing.assert_array_equal(got[0], np.zeros((3, 2)))
    np.testing.assert_array_equal(got[1], np.ones((3, 2)))
    np.testing.assert_array_equal(got[2], np.ones((3, 2)))
    for dtype in ALL_DTYPES:
        q = tf.placeholder(tf.as_dtype(dtype), [None])
        gz, go = run([tf.zeros_like(q), tf.ones_like(q)], {q: sample((3,), dtype)})
        assert gz.dtype == go.dtype == dtype
        np.testing.assert_array_equal(gz, np.zeros(3, dtype))
        np.testing.assert_array_equal(go, np.ones(3, dtype))
    assert tf.zeros_like(p, optimize=False).op.type == "ZerosLike"
    assert tf.zeros_like(x, optimize=False).op.type == "ZerosLike"


# --- Range ----------------------------------------------------------------------------------

def test_range_matches_numpy():
    cases = [((5,), {}), ((2, 9, 3), {}), ((10, 0, -3), {}), ((0, 1, 0.25), {}),
             ((3, 3), {}), ((1.5, -2.0, -0.5), {}), ((4,), {"dtype": tf.float64}),
             ((0, 10, 4), {"dtype": tf.int64})]
    outs = [tf.range(*args, **kw) for args, kw in cases]
    for (args, kw), o, got in zip(cases, outs, run(outs)):
        expected = np.arange(*args)
        assert static(o) == [len(expected)], args
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert [o.dtype for o in outs] == [tf.int32, tf.int32, tf.int32, tf.float32, tf.int32,
                                       tf.float32, tf.float64, tf.int64]
    assert tf.range(tf.constant(3, tf.int64), 10).dtype == tf.int64
    assert tf.range(2, 5.0).dtype == tf.float32
    n = tf.placeholder(tf.int32, [])
    dyn = tf.range(n)
    assert static(dyn) == [None] and dyn.op.type == "Range"
    np.testing.assert_array_equal(run(dyn, {n: 4}), [0, 1, 2, 3])
    assert tf.range(1000000).shape.as_list() == [1000000]
    big = tf.range(-(2 ** 31) + 1, 2 ** 31 - 1, 2 ** 30)
    np.testing.assert_array_equal(run(big), np.arange(-(2 ** 31) + 1, 2 ** 31 - 1, 2 ** 30))


def test_range_errors():
    with pytest.raises(ValueError, match="Requires delta != 0"):
        tf.range(0, 5, 0)
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0: 5/1"):
        tf.range(5, 1)
    with pytest.raises(ValueError, match="Requires start >= limit when delta < 0"):
        tf.range(1, 5, -1)
    with pytest.raises(ValueError, match="start must be a scalar"):
        tf.range(tf.constant([1, 2]), 5)
    with pytest.raises(TypeError):
        tf.range(0, 1.5, dtype=tf.int32)
    n = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires start <= limit"):
        run(tf.range(3, n), {n: 1})


# --- Tile -----------------------------------------------------------------------------------

def test_tile_matches_numpy():
    v = sample((2, 3))
    x = tf.constant(v)
    cases = [[1, 1], [2, 1], [1, 3], [3, 2], [0, 2]]
    outs = [tf.tile(x, m) for m in cases]
    for m, o, got in zip(cases, outs, run(outs)):
        assert static(o) == list(np.tile(v, m).shape)
        np.testing.assert_array_equal(got, np.tile(v, m))
    v3 = sample((2, 1, 3))
    np.testing.assert_array_equal(run(tf.tile(tf.constant(v3), [2, 3, 2])), np.tile(v3, [2, 3, 2]))
    for dtype in ALL_DTYPES:
        m = sample((2,), dtype)
        np.testing.assert_array_equal(run(tf.tile(tf.constant(m), [3])), np.tile(m, 3))
    np.testing.assert_array_equal(run(tf.tile(tf.constant(2.0), [])), 2.0)
    p = tf.placeholder(tf.float32, [None, 3])
    assert static(tf.tile(p, [2, 2])) == [None, 6]
    assert static(tf.tile(p, [0, 2])) == [0, 6]
    assert static(tf.tile(p, tf.placeholder(tf.int32, [2]))) == [None, None]
    assert run(tf.tile(tf.zeros([0, 2]), [3, 2])).shape == (0, 4)


def test_tile_errors():
    x = tf.zeros([2, 3])
    with pytest.raises(ValueError, match="Expected multiples argument to be a vector of length 2 "
                                         "but got length 3"):
        tf.tile(x, [1, 2, 3])
    with pytest.raises(ValueError, match=r"Expected multiples\[1\] >= 0, but got -1"):
        tf.tile(x, [1, -1])
    m = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="vector of length 2 but got length 1"):
        run(tf.tile(x, m), {m: [2]})


# --- Pad ------------------------------------------------------------------------------------

def test_pad_matches_numpy():
    v = sample((2, 3))
    x = tf.constant(v)
    paddings = [[1, 2], [0, 3]]
    cases = [
        (tf.pad(x, paddings), np.pad(v, paddings)),
        (tf.pad(x, paddings, constant_values=-1.5), np.pad(v, paddings, constant_values=-1.5)),
        (tf.pad(x, [[1, 1], [2, 2]], mode="REFLECT"), np.pad(v, [[1, 1], [2, 2]], "reflect")),
        (tf.pad(x, [[2, 1], [3, 0]], mode="symmetric"), np.pad(v, [[2, 1], [3, 0]], "symmetric")),
        (tf.pad(x, [[0, 0], [0, 0]]), v),
    ]
    for (o, e), got in zip(cases, run([c[0] for c in cases])):
        assert static(o) == list(e.shape)
        np.testing.assert_array_equal(got, e)
    assert cases[0][0].op.type == "Pad" and cases[1][0].op.type == "PadV2"
    assert cases[2][0].op.type == "MirrorPad"
    for dtype in ALL_DTYPES:
        m = sample((3,), dtype)
        np.testing.assert_array_equal(run(tf.pad(tf.constant(m), [[1, 2]])), np.pad(m, [[1, 2]]))
        np.testing.assert_array_equal(run(tf.pad(tf.constant(m), [[2, 1]], "SYMMETRIC")),
                                      np.pad(m, [[2, 1]], "symmetric"))
    v3 = sample((2, 3, 4))
    np.testing.assert_array_equal(run(tf.pad(tf.constant(v3), [[1, 0], [2, 1], [0, 3]], "REFLECT")),
                                  np.pad(v3, [[1, 0], [2, 1], [0, 3]], "reflect"))
    assert run(tf.pad(tf.zeros([0, 2]), [[1, 1], [0, 0]])).shape == (2, 2)
    p = tf.placeholder(tf.float32, [None, 3])
    assert static(tf.pad(p, paddings)) == [None, 6]
    assert static(tf.pad(p, tf.placeholder(tf.int32, [2, 2]))) == [None, None]


def test_pad_errors():
    x = tf.zeros([2, 3])
    with pytest.raises(ValueError, match="Paddings must be non-negative: -1 0"):
        tf.pad(x, [[-1, 0], [0, 0]])
    with pytest.raises(ValueError, match="The first dimension of paddings must be the rank of "
                                         "inputs"):
        tf.pad(x, [[1, 1]])
    with pytest.raises(ValueError, match="paddings must be less than the dimension size: 2, 0 "
                                         "not less than 2"):
        tf.pad(x, [[2, 0], [0, 0]], "REFLECT")
    with pytest.raises(ValueError, match="paddings must be no greater than the dimension size"):
        tf.pad(x, [[0, 0], [4, 0]], "SYMMETRIC")
    with pytest.raises(ValueError, match="Unknown padding mode: WRAP"):
        tf.pad(x, [[0, 0], [0, 0]], "wrap")
    pads = tf.placeholder(tf.int32, [2, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Paddings must be non-negative"):
        run(tf.pad(x, pads), {pads: [[0, -2], [0, 0]]})


# --- Registry -------------------------------------------------------------------------------

def test_gradient_marks_follow_tensorflow():
    not_differentiable = ["Shape", "Size", "Rank", "ZerosLike", "OnesLike", "Range", "OneHot"]
    differentiable = ["Reshape", "Transpose", "ExpandDims", "Squeeze", "ConcatV2", "Pack",
                      "Unpack", "Split", "SplitV", "Slice", "StridedSlice", "GatherV2", "Tile",
                      "Pad", "PadV2", "MirrorPad", "Fill"]
    for name in not_differentiable:
        assert _C.op_def(name)["not_differentiable"], name
    for name in differentiable:
        assert not _C.op_def(name)["not_differentiable"], name
        assert "CPU" in _C.op_def(name)["kernels"], name


def test_module_exports():
    for name in array_ops.__all__:
        assert hasattr(array_ops, name), name
    assert array_ops.newaxis is None
