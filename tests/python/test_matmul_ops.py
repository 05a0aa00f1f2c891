"""tf.matmul (MatMul and BatchMatMulV2) against numpy."""

import numpy as np
import pytest

import flowstone as tf

DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _values(shape, dtype, rng):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _check(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype == np.float32:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    elif expected.dtype == np.float64:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (2, 3, 4), (5, 1, 7), (17, 33, 9), (70, 300, 90)])
def test_matmul_every_transpose_combination(dtype, m, k, n):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a = _values((m, k), dtype, rng)
    b = _values((k, n), dtype, rng)
    expected = np.matmul(a, b)
    outs = [
        tf.matmul(a, b),
        tf.matmul(a.T.copy(), b, transpose_a=True),
        tf.matmul(a, b.T.copy(), transpose_b=True),
        tf.matmul(a.T.copy(), b.T.copy(), transpose_a=True, transpose_b=True),
        tf.matmul(a.T.copy(), b.T.copy(), adjoint_a=True, adjoint_b=True),
    ]
    assert all(o.op.type == "MatMul" for o in outs)
    assert all(o.shape.as_list() == [m, n] for o in outs)
    with tf.Session() as sess:
        for got in sess.run(outs):
            _check(got, expected)


def test_float64_is_exact_on_moderately_large_sizes():
    # Integer-valued doubles: every product and partial sum is exact, so any blocking or
    # summation order must give numpy's answer bit for bit.
    rng = np.random.default_rng(7)
    a = rng.integers(-100, 100, size=(257, 129)).astype(np.float64)
    b = rng.integers(-100, 100, size=(129, 65)).astype(np.float64)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.matmul(a, b)), a @ b)
        np.testing.assert_array_equal(
            sess.run(tf.matmul(a.T.copy(), b.T.copy(), transpose_a=True, transpose_b=True)), a @ b)
    x = rng.standard_normal((257, 129))
    y = rng.standard_normal((129, 65))
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(tf.matmul(x, y)), x @ y, rtol=1e-12, atol=1e-12)


def test_sizes_spanning_several_cache_blocks():
    rng = np.random.default_rng(8)
    a = rng.integers(-4, 5, size=(301, 700)).astype(np.float32)
    b = rng.integers(-4, 5, size=(700, 530)).astype(np.float32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.matmul(a, b)), a @ b)
        np.testing.assert_array_equal(sess.run(tf.matmul(b, a, transpose_a=True,
                                                         transpose_b=True)), (a @ b).T)


def test_empty_matrices():
    with tf.Session() as sess:
        assert sess.run(tf.matmul(np.zeros((0, 3), np.float32),
                                  np.ones((3, 4), np.float32))).shape == (0, 4)
        np.testing.assert_array_equal(
            sess.run(tf.matmul(np.ones((2, 0), np.float32), np.ones((0, 3), np.float32))),
            np.zeros((2, 3)))
        assert sess.run(tf.matmul(np.ones((2, 0, 3)), np.ones((3, 4)))).shape == (2, 0, 4)


def test_shape_error_names_dimensions_and_input_shapes():
    with pytest.raises(ValueError) as info:
        tf.matmul(np.ones((1, 10), np.float32), np.ones((5, 1), np.float32))
    message = str(info.value)
    assert "Dimensions must be equal, but are 10 and 5" in message
    assert "[1,10], [5,1]" in message
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
        tf.matmul(np.ones((2, 3, 3)), np.ones((2, 4, 5)))
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
        tf.matmul(np.ones(3, np.float32), np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="Incompatible shapes"):
        tf.matmul(np.ones((2, 3, 4)), np.ones((5, 4, 6)))


def test_argument_errors():
    a = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a"):
        tf.matmul(a, a, transpose_a=True, adjoint_a=True)
    with pytest.raises(ValueError, match="Only one of transpose_b and adjoint_b"):
        tf.matmul(a, a, transpose_b=True, adjoint_b=True)
    with pytest.raises(TypeError):
        tf.matmul(a, tf.constant(np.ones((2, 2), np.int32)))
    with pytest.raises(TypeError):
        tf.matmul(np.array([[True]]), np.array([[True]]))


def test_run_time_shape_mismatch():
    x = tf.placeholder(tf.float32)
    y = tf.placeholder(tf.float32, [None, None])
    z = tf.placeholder(tf.float32, [2, None])
    batch = tf.matmul(x, y)  # unknown rank: BatchMatMulV2
    plain = tf.matmul(z, y)
    assert batch.op.type == "BatchMatMulV2" and plain.op.type == "MatMul"
    assert plain.shape.as_list() == [2, None]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
            sess.run(batch, {x: np.ones((2, 3)), y: np.ones((4, 5))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
            sess.run(plain, {z: np.ones((2, 3)), y: np.ones((4, 5))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
            sess.run(batch, {x: np.ones(3), y: np.ones((3, 5))})
        np.testing.assert_array_equal(sess.run(batch, {x: np.ones((2, 3)), y: np.ones((3, 5))}),
                                      np.full((2, 5), 3.0))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("a_shape,b_shape", [
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 6)),   # batch dims broadcast: (2, 1) with (5,)
    ((3, 4), (7, 4, 5)),          # a matrix times a stack
    ((6, 3, 4), (4, 2)),
    ((1, 2, 3), (4, 1, 3, 2)),
    ((40, 20, 30), (40, 30, 10)),  # many small products in parallel
    ((2, 130, 70), (70, 90)),      # few larger products
])
def test_batch_matmul_broadcasting(dtype, a_shape, b_shape):
    rng = np.random.default_rng(sum(a_shape) + 10 * sum(b_shape))
    a = _values(a_shape, dtype, rng)
    b = _values(b_shape, dtype, rng)
    expected = np.matmul(a, b)
    out = tf.matmul(a, b)
    assert out.op.type == "BatchMatMulV2"
    assert tuple(out.shape.as_list()) == expected.shape
    swap = lambda x: np.ascontiguousarray(np.swapaxes(x, -1, -2))  # noqa: E731
    adjoint = tf.matmul(swap(a), swap(b), adjoint_a=True, adjoint_b=True)
    transposed = tf.matmul(swap(a), b, transpose_a=True)
    with tf.Session() as sess:
        for got in sess.run([out, adjoint, transposed]):
            _check(got, expected)


def test_batch_static_shapes_with_unknown_dims():
    x = tf.placeholder(tf.float32, [None, 3, 4])
    y = tf.placeholder(tf.float32, [4, None])
    assert tf.matmul(x, y).shape.as_list() == [None, 3, None]
    assert tf.matmul(x, x, transpose_b=True).shape.as_list() == [None, 3, 3]


def test_op_names_follow_tensorflow():
    first = tf.matmul([[1.0]], [[2.0]])
    second = tf.matmul([[1.0]], [[2.0]], name="product")
    third = tf.matmul(np.ones((2, 1, 1)), np.ones((1, 1)))
    assert first.op.name == "MatMul" and first.name == "MatMul:0"
    assert [t.op.name for t in first.op.inputs] == ["MatMul/a", "MatMul/b"]
    assert second.op.name == "product"
    assert third.op.name == "MatMul_1" and third.op.type == "BatchMatMulV2"
