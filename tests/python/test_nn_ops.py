"""Softmax and log-softmax against numpy."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.ops import nn_ops


def _requires_ops(*names):
    missing = [n for n in names if n not in tf._C.op_names()]
    return pytest.mark.skipif(bool(missing), reason=f"ops not registered yet: {missing}")


def _np_log_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _np_softmax(x, axis=-1):
    return np.exp(_np_log_softmax(x.astype(np.float64), axis)).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (5,), (3, 7), (2, 3, 4), (4, 1000)])
def test_matches_numpy(dtype, shape):
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 5).astype(dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    s, ls = nn_ops.softmax(x), nn_ops.log_softmax(x)
    assert s.shape.as_list() == list(shape) and s.dtype == ls.dtype == tf.as_dtype(dtype)
    with tf.Session() as sess:
        got_s, got_ls = sess.run([s, ls])
    assert got_s.dtype == dtype
    np.testing.assert_allclose(got_s, _np_softmax(x), rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(got_ls, _np_log_softmax(x.astype(np.float64)), rtol=rtol,
                               atol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(got_s.sum(axis=-1), 1.0, rtol=1e-5)


def test_large_logits_do_not_overflow():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1e30]], np.float32)
    with tf.Session() as sess:
        s, ls = sess.run([nn_ops.softmax(x), nn_ops.log_softmax(x)])
    assert np.isfinite(s).all() and np.isfinite(ls).all()
    np.testing.assert_allclose(s[0], _np_softmax(np.array([0.0, 1.0, 2.0], np.float32)),
                               rtol=1e-6)
    np.testing.assert_allclose(s[1], [0.5, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(ls[0], [-2.407606, -1.407606, -0.407606], rtol=1e-6)


def test_empty_and_explicit_last_axis():
    empty = np.zeros((0, 4), np.float32)
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    with tf.Session() as sess:
        assert sess.run(nn_ops.softmax(empty)).shape == (0, 4)
        assert sess.run(nn_ops.log_softmax(np.zeros((3, 0)))).shape == (3, 0)
        np.testing.assert_allclose(sess.run(nn_ops.softmax(x, axis=1)), _np_softmax(x),
                                   rtol=1e-12)
        np.testing.assert_allclose(sess.run(nn_ops.softmax(x, dim=-1)), _np_softmax(x),
                                   rtol=1e-12)


def test_names_and_ops():
    out = nn_ops.softmax(np.ones((2, 2), np.float32), name="probs")
    assert out.op.type == "Softmax" and out.op.name == "probs"
    assert nn_ops.log_softmax(np.ones((2, 2), np.float32)).op.type == "LogSoftmax"


def test_errors():
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        nn_ops.softmax(np.float32(1.0))
    with pytest.raises(TypeError):
        nn_ops.softmax(np.ones((2, 2), np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Dimension \(2\) must be in the "
                                                             r"range \[-2, 2\)"):
        nn_ops.softmax(np.ones((2, 2), np.float32), axis=2)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        nn_ops.softmax(np.ones((2, 2), np.float32), axis=0, dim=0)
    with pytest.raises(ValueError, match="rank of the logits to be known"):
        nn_ops.softmax(tf.placeholder(tf.float32), axis=0)
    x = tf.placeholder(tf.float32)
    out = nn_ops.softmax(x)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="at least one dimension"):
            sess.run(out, {x: 3.0})


@_requires_ops("Transpose")
def test_other_axes():
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    outs = [nn_ops.softmax(x, axis=0), nn_ops.softmax(x, axis=1), nn_ops.log_softmax(x, axis=-2)]
    assert all(o.shape.as_list() == [2, 3, 4] for o in outs)
    with tf.Session() as sess:
        s0, s1, ls = sess.run(outs)
    np.testing.assert_allclose(s0, _np_softmax(x, 0), rtol=1e-5)
    np.testing.assert_allclose(s1, _np_softmax(x, 1), rtol=1e-5)
    np.testing.assert_allclose(ls, _np_log_softmax(x.astype(np.float64), 1), rtol=1e-5,
                               atol=1e-6)
