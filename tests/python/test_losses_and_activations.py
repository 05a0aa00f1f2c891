"""tf.nn losses, activations, dropout and normalization against float64 numpy references."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from flowstone.ops import nn_impl as nn

FLOATS = [np.float32, np.float64]
RTOL = {np.float32: 1e-5, np.float64: 1e-12}


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _log_softmax(x):
    x = x.astype(np.float64)
    if x.shape[-1] == 0:
        return x
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _rng(seed=0):
    return np.random.default_rng(seed)


# --- sparse softmax cross entropy ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("batch,classes", [(1, 1), (4, 5), (3, 1000), (0, 3)])
def test_sparse_xent_matches_numpy(dtype, label_dtype, batch, classes):
    rng = _rng(batch + classes)
    logits = (rng.standard_normal((batch, classes)) * 4).astype(dtype)
    labels = rng.integers(0, classes, size=batch).astype(label_dtype)
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.dtype == tf.as_dtype(dtype) and loss.shape.as_list() == [batch]
    got, backprop = _run([loss, loss.op.outputs[1]])
    log_p = _log_softmax(logits)
    expected = -log_p[np.arange(batch), labels]
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=RTOL[dtype], atol=1e-6)
    onehot = np.eye(classes)[labels]
    np.testing.assert_allclose(backprop, np.exp(log_p) - onehot, rtol=RTOL[dtype], atol=1e-6)


def test_sparse_xent_is_stable_for_huge_logits():
    logits = np.array([[1e4, 0.0, -1e4], [-1e30, 1e30, 0.0]], np.float32)
    got = _run(nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 1], logits=logits))
    np.testing.assert_allclose(got, [1e4, 0.0], rtol=1e-6)


def test_sparse_xent_higher_rank_logits_keep_the_label_shape():
    rng = _rng(1)
    logits = rng.standard_normal((2, 3, 4))
    labels = rng.integers(0, 4, size=(2, 3))
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.shape.as_list() == [2, 3]
    expected = -np.take_along_axis(_log_softmax(logits), labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(_run(loss), expected, rtol=1e-12)


@pytest.mark.parametrize("labels,bad", [([0, 5, 1], 5), ([0, 1, -1], -1)])
def test_sparse_xent_out_of_range_label_names_value_and_range(labels, bad):
    label_ph = tf.placeholder(tf.int64, [None])
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=label_ph,
                                                       logits=np.zeros((3, 3), np.float32))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(loss, {label_ph: labels})
        message = str(info.value)
        assert f"Received a label value of {bad} which is outside the valid range of [0, 3)" \
            in message
        assert "Label values: " + " ".join(map(str, labels)) in message
        # The session stays usable.
        np.testing.assert_allclose(sess.run(loss, {label_ph: [0, 1, 2]}), [np.log(3)] * 3,
                                   rtol=1e-6)


def test_sparse_xent_run_time_shape_mismatch():
    logits = tf.placeholder(tf.float32, [None, 3])
    labels = tf.placeholder(tf.int32, [None])
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match="same first dimension"):
        _run(loss, {logits: np.zeros((3, 3)), labels: [0, 1]})


def test_sparse_xent_graph_errors():
    with pytest.raises(ValueError, match="rank"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=[[0]], logits=np.zeros((1, 3)))
    with pytest.raises(ValueError, match="except for the last dimension"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 2], logits=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="cannot be a scalar"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=0, logits=1.0)
    with pytest.raises(TypeError, match="Tlabels"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=[0.0], logits=np.zeros((1, 3)))
    with pytest.raises(ValueError, match="labels=... and logits="):
        nn.sparse_softmax_cross_entropy_with_logits(logits=np.zeros((1, 3)))


def test_sparse_xent_needs_a_class():
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 0],
                                                       logits=np.zeros((2, 0), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="at least one class"):
        _run(loss)


def test_sparse_xent_gradient_is_softmax_minus_onehot():
    rng = _rng(2)
    logits_value = rng.standard_normal((3, 4))
    upstream = rng.uniform(0.5, 2.0, size=3)
    logits = tf.constant(logits_value)
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=[3, 0, 1], logits=logits)
    (grad,) = tf.gradients(loss, [logits], grad_ys=[tf.constant(upstream)])
    expected = (np.exp(_log_softmax(logits_value)) - np.eye(4)[[3, 0, 1]]) * upstream[:, None]
    np.testing.assert_allclose(_run(grad), expected, rtol=1e-12)


# --- dense softmax cross entropy -----------------------------------------------------------------

def _distributions(rng, shape, axis=-1):
    p = rng.uniform(0.0, 1.0, size=shape)
    return p / p.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (0, 4), (2, 0)])
def test_dense_xent_matches_numpy(dtype, shape):
    rng = _rng(sum(shape))
    logits = (rng.standard_normal(shape) * 3).astype(dtype)
    labels = _distributions(rng, shape).astype(dtype) if shape[-1] else np.zeros(shape, dtype)
    loss = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    got, backprop = _run([loss, loss.op.outputs[1]])
    assert got.dtype == dtype and got.shape == shape[:1]
    expected = -(labels.astype(np.float64) * _log_softmax(logits)).sum(axis=-1)
    np.testing.assert_allclose(got, expected, rtol=RTOL[dtype], atol=1e-6)
    np.testing.assert_allclose(backprop, np.exp(_log_softmax(logits)) - labels,
                               rtol=RTOL[dtype], atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -3])
def test_dense_xent_along_another_axis(axis):
    rng = _rng(3)
    logits = rng.standard_normal((3, 4, 5))
    labels = _distributions(rng, logits.shape, axis)
    loss = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=axis)
    moved_logits = np.moveaxis(logits, axis, -1)
    expected = -(np.moveaxis(labels, axis, -1) * _log_softmax(moved_logits)).sum(-1)
    assert loss.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(_run(loss), expected, rtol=1e-12)
    old = nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits, dim=axis)
    np.testing.assert_allclose(_run(old), expected, rtol=1e-12)


def test_dense_xent_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
        nn.softmax_cross_entropy_with_logits_v2(labels=np.zeros((2, 4)), logits=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):
        nn.softmax_cross_entropy_with_logits_v2(np.zeros((2, 3)), np.zeros((2, 3)), axis=1,
                                                dim=1)
    with pytest.raises(ValueError, match="out of range"):
        nn.softmax_cross_entropy_with_logits_v2(np.zeros((2, 3)), np.zeros((2, 3)), axis=2)
    logits = tf.placeholder(tf.float64, [None, None])
    labels = tf.placeholder(tf.float64, [None, None])
    loss = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"logits_size=\[2,3\] "
                                                             r"labels_size=\[2,4\]"):
        _run(loss, {logits: np.zeros((2, 3)), labels: np.zeros((2, 4))})


def test_dense_xent_gradients_flow_into_labels_only_for_v2():
    rng = _rng(4)
    logits_value = rng.standard_normal((2, 3))
    labels_value = _distributions(rng, (2, 3))
    upstream = np.array([1.5, -0.5])
    logits, labels = tf.constant(logits_value), tf.constant(labels_value)
    v2 = nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    d_logits, d_labels = tf.gradients(v2, [logits, labels], grad_ys=[tf.constant(upstream)])
    log_p = _log_softmax(logits_value)
    got_logits, got_labels = _run([d_logits, d_labels])
    np.testing.assert_allclose(got_logits, (np.exp(log_p) - labels_value) * upstream[:, None],
                               rtol=1e-12)
    np.testing.assert_allclose(got_labels, -log_p * upstream[:, None], rtol=1e-12)
    v1 = nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert tf.gradients(v1, [labels]) == [None]


# --- sigmoid cross entropy and l2_loss -----------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_sigmoid_xent_matches_numpy_without_overflow(dtype):
    logits = np.array([-1000.0, -3.0, -0.5, 0.0, 0.5, 3.0, 1000.0], dtype)
    labels = np.array([0.0, 1.0, 0.3, 0.5, 1.0, 0.0, 1.0], dtype)
    got = _run(nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    x, z = logits.astype(np.float64), labels.astype(np.float64)
    expected = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    assert got.dtype == dtype and np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=RTOL[dtype])
    with pytest.raises(ValueError, match="same shape"):
        nn.sigmoid_cross_entropy_with_logits(labels=np.zeros(3), logits=np.zeros(2))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4, 5)])
def test_l2_loss(dtype, shape):
    x = _rng(len(shape)).standard_normal(shape).astype(dtype)
    loss = nn.l2_loss(x)
    assert loss.shape.as_list() == [] and loss.dtype == tf.as_dtype(dtype)
    got = _run(loss)
    np.testing.assert_allclose(got, (x.astype(np.float64) ** 2).sum() / 2, rtol=RTOL[dtype])
    t = tf.constant(x)
    (grad,) = tf.gradients(nn.l2_loss(t), [t], grad_ys=[tf.constant(3.0, dtype=t.dtype)])
    np.testing.assert_allclose(_run(grad), 3 * x, rtol=RTOL[dtype])


def test_l2_loss_rejects_integers():
    with pytest.raises(TypeError, match="L2Loss"):
        nn.l2_loss(np.array([1, 2], np.int32))


# --- activations ---------------------------------------------------------------------------------

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

# (function, numpy forward, numpy derivative)
ACTIVATIONS = {
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6),
              lambda x: ((x > 0) & (x < 6)).astype(float)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
            lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0)))),
    "selu": (nn.selu,
             lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
             lambda x: SELU_SCALE * np.where(x > 0, 1.0, SELU_ALPHA * np.exp(np.minimum(x, 0)))),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x),
                   lambda x: np.where(x > 0, 1.0, 0.2)),
}
POINTS = np.array([-30.0, -6.0, -1.5, -1e-3, 0.0, 1e-3, 0.5, 5.999, 6.0, 6.5, 100.0])


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", FLOATS)
def test_activation_and_its_gradient(name, dtype):
    fn, forward, derivative = ACTIVATIONS[name]
    x_value = POINTS.astype(dtype)
    upstream = np.linspace(0.5, 1.5, POINTS.size).astype(dtype)
    x = tf.constant(x_value)
    y = fn(x)
    assert y.dtype == tf.as_dtype(dtype) and y.shape.as_list() == [POINTS.size]
    (grad,) = tf.gradients(y, [x], grad_ys=[tf.constant(upstream)])
    got_y, got_grad = _run([y, grad])
    assert got_y.dtype == dtype
    np.testing.assert_allclose(got_y, forward(POINTS), rtol=RTOL[dtype], atol=1e-7)
    np.testing.assert_allclose(got_grad, upstream * derivative(POINTS), rtol=RTOL[dtype],
                               atol=1e-7)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_of_empty_and_scalar(name):
    fn, forward, _ = ACTIVATIONS[name]
    empty, scalar = _run([fn(np.zeros((0, 3))), fn(-2.0)])
    assert empty.shape == (0, 3)
    np.testing.assert_allclose(scalar, forward(np.array(-2.0)), rtol=1e-6)


def test_activations_keep_names_and_attrs():
    y = nn.leaky_relu(np.array([-2.0, 3.0], np.float32), alpha=0.1, name="lrelu")
    assert y.op.name == "lrelu" and y.op.type == "LeakyRelu"
    np.testing.assert_allclose(_run(y), [-0.2, 3.0], rtol=1e-6)
    assert nn.elu(1.0).op.type == "Elu" and nn.relu6(1.0, name="r6").op.name == "r6"


def test_leaky_relu_casts_integers_to_float32():
    y = nn.leaky_relu(np.array([-5, 5], np.int32))
    assert y.dtype == tf.float32
    np.testing.assert_allclose(_run(y), [-1.0, 5.0])


def test_activation_rejects_integers():
    with pytest.raises(TypeError, match="Relu6"):
        nn.relu6(np.array([1, 2], np.int32))


@pytest.mark.parametrize("op_type,second,derivative", [
    ("ReluGrad", np.array([-1.0, 0.0, 2.0]), [0.0, 0.0, 1.0]),
    ("Relu6Grad", np.array([-1.0, 3.0, 6.0]), [0.0, 1.0, 0.0]),
    ("EluGrad", np.array([-0.5, 0.0, 2.0]), [0.5, 1.0, 1.0]),
    ("SeluGrad", np.array([-0.5, 0.0, 2.0]),
     [-0.5 + SELU_SCALE * SELU_ALPHA, SELU_SCALE * SELU_ALPHA, SELU_SCALE]),
    ("LeakyReluGrad", np.array([-1.0, 0.0, 2.0]), [0.2, 0.2, 1.0]),
])
def test_gradient_ops(op_type, second, derivative):
    grads = np.array([2.0, 3.0, 4.0])
    op = apply_op(op_type, [tf.constant(grads), tf.constant(second)])
    np.testing.assert_allclose(_run(op.outputs[0]), grads * np.array(derivative), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_matches_tensorflow_formula_bit_for_bit(dtype):
    """gradients * (features > 0) over random signs, with NaN and infinite gradients (NaN and
    inf * 0 give NaN, as in TensorFlow) and zero and NaN features (no gradient)."""
    rng = np.random.default_rng(5)
    g = rng.standard_normal(4099).astype(dtype)
    x = rng.standard_normal(4099).astype(dtype)
    g[:6] = [np.nan, np.nan, np.inf, -np.inf, 1.5, 2.5]
    x[:6] = [1.0, -1.0, -2.0, 3.0, 0.0, np.nan]
    op = apply_op("ReluGrad", [tf.constant(g), tf.constant(x)])
    with np.errstate(invalid="ignore"):
        expected = g * (x > 0).astype(dtype)
    got = _run(op.outputs[0])
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    assert np.isnan(got[:3]).all() and got[3] == -np.inf and got[4] == 0 and got[5] == 0


def test_gradient_op_shape_errors():
    with pytest.raises(ValueError, match="does not match"):
        apply_op("ReluGrad", [tf.constant(np.zeros(3)), tf.constant(np.zeros(4))])
    g = tf.placeholder(tf.float64, None)
    v = tf.placeholder(tf.float64, None)
    op = apply_op("EluGrad", [g, v])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[3\] does not match .*\[2\]"):
        _run(op.outputs[0], {g: np.zeros(3), v: np.zeros(2)})


# --- dropout -------------------------------------------------------------------------------------

N = 200_000


def _dropped_fraction_and_kept_values(y):
    dropped = y == 0
    return dropped.mean(), y[~dropped]


@pytest.mark.parametrize("kwargs,rate", [({"rate": 0.3}, 0.3), ({"keep_prob": 0.75}, 0.25),
                                         ({"rate": 0.9}, 0.9)])
def test_dropout_statistics(kwargs, rate):
    y = nn.dropout(np.ones(N, np.float32), seed=1, **kwargs)
    assert y.shape.as_list() == [N]
    first = _run(y)
    fraction, kept = _dropped_fraction_and_kept_values(first)
    # The dropped count is Binomial(N, rate): 6 standard deviations.
    assert abs(fraction - rate) < 6 * np.sqrt(rate * (1 - rate) / N)
    np.testing.assert_allclose(kept, 1 / (1 - rate), rtol=1e-6)
    assert abs(first.mean() - 1.0) < 6 * np.sqrt(rate / (1 - rate) / N)


def test_dropout_differs_between_runs():
    y = nn.dropout(np.ones(1000), rate=0.5)
    with tf.Session() as sess:
        assert not np.array_equal(sess.run(y), sess.run(y))


def test_dropout_rate_zero_and_keep_prob_one_return_the_input():
    x = tf.constant(np.arange(4.0))
    assert nn.dropout(x, rate=0.0) is x
    assert nn.dropout(x, keep_prob=1.0) is x


def test_dropout_rate_as_a_tensor():
    rate = tf.placeholder(tf.float32, [])
    y = nn.dropout(np.ones(N, np.float64), rate=rate)
    assert y.dtype == tf.float64
    with tf.Session() as sess:
        fraction, kept = _dropped_fraction_and_kept_values(sess.run(y, {rate: 0.5}))
        assert abs(fraction - 0.5) < 0.01
        np.testing.assert_allclose(kept, 2.0)
        np.testing.assert_allclose(sess.run(y, {rate: 0.0}), 1.0)
    keep = tf.placeholder(tf.float64, [])
    y = nn.dropout(np.ones(N), keep_prob=keep)
    fraction, kept = _dropped_fraction_and_kept_values(_run(y, {keep: 0.8}))
    assert abs(fraction - 0.2) < 0.01
    np.testing.assert_allclose(kept, 1.25)


def test_dropout_noise_shape_shares_decisions():
    y = nn.dropout(np.ones((400, 50)), rate=0.5, noise_shape=[400, 1])
    got = _run(y)
    rows_dropped = (got == 0).all(axis=1)
    rows_kept = (got == 2).all(axis=1)
    assert (rows_dropped | rows_kept).all() and rows_dropped.any() and rows_kept.any()
    x = tf.placeholder(tf.float64, [None, 6])
    y = nn.dropout(x, rate=0.5, noise_shape=[1, None])
    got = _run(y, {x: np.ones((30, 6))})
    assert (got == got[:1]).all()


@pytest.mark.parametrize("kwargs,match", [
    ({}, "`rate` must be provided"),
    ({"rate": 0.5, "keep_prob": 0.5}, "Cannot specify both 'keep_prob' and 'rate'"),
    ({"rate": 1.0}, r"in the range \[0, 1\)"),
    ({"rate": -0.1}, r"in the range \[0, 1\)"),
    ({"keep_prob": 0.0}, r"in the range \[0, 1\)"),
])
def test_dropout_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nn.dropout(np.ones(3), **kwargs)


def test_dropout_needs_floats_and_a_scalar_rate():
    with pytest.raises(ValueError, match="floating point"):
        nn.dropout(np.ones(3, np.int32), rate=0.5)
    with pytest.raises(ValueError, match="scalar"):
        nn.dropout(np.ones(3), rate=tf.constant([0.5, 0.5]))


# --- moments, batch_normalization, l2_normalize --------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axes", [[0], [0, 1], [1, 2], [-1], [0, 1, 2]])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_moments(dtype, axes, keep_dims):
    x = (_rng(5).standard_normal((3, 4, 5)) * 3 + 2).astype(dtype)
    mean, variance = nn.moments(x, axes, keep_dims=keep_dims)
    got_mean, got_var = _run([mean, variance])
    x64 = x.astype(np.float64)
    expected_mean = x64.mean(axis=tuple(axes), keepdims=keep_dims)
    expected_var = x64.var(axis=tuple(axes), keepdims=keep_dims)
    assert got_mean.shape == expected_mean.shape and got_var.shape == expected_var.shape
    assert mean.shape.as_list() == list(expected_mean.shape)
    np.testing.assert_allclose(got_mean, expected_mean, rtol=RTOL[dtype] * 10, atol=1e-6)
    np.testing.assert_allclose(got_var, expected_var, rtol=RTOL[dtype] * 10, atol=1e-6)


def test_moments_keepdims_spellings():
    x = np.ones((2, 3))
    assert nn.moments(x, [1], keepdims=True)[0].shape.as_list() == [2, 1]
    with pytest.raises(ValueError, match="Cannot specify both"):
        nn.moments(x, [1], keepdims=True, keep_dims=True)


@pytest.mark.parametrize("with_offset,with_scale", [(True, True), (False, True), (True, False),
                                                    (False, False)])
def test_batch_normalization(with_offset, with_scale):
    rng = _rng(6)
    x = rng.standard_normal((4, 3))
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)
    offset, scale = rng.standard_normal(3), rng.standard_normal(3)
    y = nn.batch_normalization(x, mean, var, offset if with_offset else None,
                               scale if with_scale else None, 1e-3)
    expected = (x - mean) / np.sqrt(var + 1e-3)
    if with_scale:
        expected = expected * scale
    if with_offset:
        expected = expected + offset
    np.testing.assert_allclose(_run(y), expected, rtol=1e-12)


def test_batch_normalization_with_moments_normalizes():
    x = _rng(7).standard_normal((1000, 2)) * [3.0, 0.5] + [1.0, -2.0]
    mean, var = nn.moments(x, [0])
    y = _run(nn.batch_normalization(x, mean, var, None, None, 0.0))
    np.testing.assert_allclose(y.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.std(0), 1.0, rtol=1e-12)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [None, 0, 1, [0, 1]])
def test_l2_normalize(dtype, axis):
    x = np.array([[3.0, 0.0, -1.0], [4.0, 0.0, 2.0]], dtype)
    got = _run(nn.l2_normalize(x, axis=axis))
    ax = tuple(axis) if isinstance(axis, list) else axis
    norm = np.sqrt(np.maximum((x.astype(np.float64) ** 2).sum(axis=ax, keepdims=True), 1e-12))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, x / norm, rtol=RTOL[dtype])


def test_l2_normalize_zero_vector_and_dim_alias():
    got = _run(nn.l2_normalize(np.zeros((2, 3)), dim=1))
    np.testing.assert_array_equal(got, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="Cannot specify both"):
        nn.l2_normalize(np.ones(3), axis=0, dim=0)


# --- embedding_lookup ----------------------------------------------------------------------------

def test_embedding_lookup_matches_indexing():
    params = _rng(8).standard_normal((10, 4)).astype(np.float32)
    ids = np.array([[0, 9, 3], [3, 3, 1]])
    out = nn.embedding_lookup(params, ids)
    assert out.shape.as_list() == [2, 3, 4]
    np.testing.assert_array_equal(_run(out), params[ids])
    np.testing.assert_array_equal(_run(nn.embedding_lookup([params], [7])), params[[7]])


def test_embedding_lookup_from_a_variable():
    params = _rng(9).standard_normal((5, 2))
    table = tf.Variable(params)
    out = nn.embedding_lookup(table, tf.constant([4, 0]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(out), params[[4, 0]])


def test_embedding_lookup_max_norm_clips_long_rows():
    params = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    got = _run(nn.embedding_lookup(params, [0, 1, 2], max_norm=1.0))
    np.testing.assert_allclose(got, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]], rtol=1e-12)


def test_embedding_lookup_errors():
    ids = tf.placeholder(tf.int32, [None])
    out = nn.embedding_lookup(np.zeros((3, 2)), ids)
    with pytest.raises(tf.errors.InvalidArgumentError, match="3"):
        _run(out, {ids: [0, 3]})
    with pytest.raises(ValueError, match="Need at least one param"):
        nn.embedding_lookup([], [0])
    with pytest.raises(ValueError, match="partition strategy"):
        nn.embedding_lookup(np.zeros((3, 2)), [0], partition_strategy="rows")


# --- gradients of the composite functions --------------------------------------------------------

def _check_gradient(build, x_value, eps=1e-6):
    """d sum(w * build(x)) / dx against central differences (float64)."""
    x = tf.placeholder(tf.float64, x_value.shape)
    out = build(x)
    outs = out if isinstance(out, tuple) else (out,)
    rng = _rng(11)
    loss = tf.add_n([tf.reduce_sum(o * rng.uniform(0.5, 1.5, size=o.shape.as_list()))
                     for o in outs])
    (grad,) = tf.gradients(loss, [x])
    with tf.Session() as sess:
        symbolic = sess.run(grad, {x: x_value})
        numeric = np.zeros_like(x_value)
        for idx in np.ndindex(x_value.shape):
            up, down = x_value.copy(), x_value.copy()
            up[idx] += eps
            down[idx] -= eps
            numeric[idx] = (sess.run(loss, {x: up}) - sess.run(loss, {x: down})) / (2 * eps)
    np.testing.assert_allclose(symbolic, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("build", [
    lambda x: nn.moments(x, [0]),
    lambda x: nn.moments(x, [0, 1], keep_dims=True),
    lambda x: nn.l2_normalize(x, axis=1),
    lambda x: nn.batch_normalization(x, *nn.moments(x, [0]), np.array([0.5, -1.0, 2.0]),
                                     np.array([2.0, 1.0, 0.5]), 1e-3),
    lambda x: nn.embedding_lookup(x, [2, 0, 2], max_norm=1.0),
    lambda x: nn.sigmoid_cross_entropy_with_logits(labels=np.full((4, 3), 0.25), logits=x),
    lambda x: nn.sparse_softmax_cross_entropy_with_logits(labels=[[0, 2], [1, 1]],
                                                          logits=tf.reshape(x, [2, 2, 3])),
    # (The op's gradient assumes the labels sum to 1 along the class axis, as TensorFlow's.)
    lambda x: nn.softmax_cross_entropy_with_logits_v2(labels=np.full((4, 3), 1 / 4), logits=x,
                                                      axis=0),
], ids=["moments", "moments_all", "l2_normalize", "batch_normalization", "embedding_max_norm",
        "sigmoid_xent", "sparse_xent_rank3", "xent_axis0"])
def test_composite_gradients(build):
    _check_gradient(build, _rng(10).standard_normal((4, 3)))


def test_float_attrs_are_32_bit_as_in_tensorflow():
    # TensorFlow's AttrValue holds a float: alpha=0.3 is 0.30000001192092896 even for float64
    # inputs, in the graph and after a GraphDef round trip.
    x = tf.constant([-1.0, 2.0], tf.float64)
    y = tf.nn.leaky_relu(x, alpha=0.3)
    assert y.op.get_attr("alpha") == float(np.float32(0.3))
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [-float(np.float32(0.3)), 2.0])
