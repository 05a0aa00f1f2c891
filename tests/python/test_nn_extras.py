"""tf.nn's composite losses, activations, moments and normalization (weighted cross entropy,
log Poisson loss, crelu, swish, gelu, sufficient statistics, weighted moments, lrn, fused_batch_norm),
embedding_lookup over partitioned params, and the tf.layers built on the new ops, against numpy
references and finite differences."""

import numpy as np
import pytest

import flowstone as tf

import gradient_check
from conv3d_reference import conv3d_ref, pool3d_ref
from conv_reference import conv_backprop_input_ref, conv_ref
from norm_reference import batch_norm_ref, lrn_ref

RNG = np.random.default_rng(1618)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape)


def evaluate(tensors, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(tensors, feed)


def check_gradients(build, inputs, rtol=1e-5, atol=1e-7):
    """tf.gradients with respect to every input, against central finite differences in float64."""
    gradient_check.check_gradients(build, [np.asarray(x, np.float64) for x in inputs],
                                   range(len(inputs)), rtol=rtol, atol=atol)


# ------------------------------------------------------------------------------------------------
# Losses

def test_weighted_cross_entropy_with_logits():
    logits = np.array([[-50.0, -2.0, 0.0, 3.0, 80.0]])
    labels = np.array([[0.0, 1.0, 0.5, 0.2, 1.0]])
    q = 3.0
    # The definition, labels * -log(sigmoid(x)) * q + (1 - labels) * -log(1 - sigmoid(x)),
    # with -log(sigmoid(x)) = log(1 + exp(-x)).
    definition = (labels * np.logaddexp(0, -logits) * q +
                  (1 - labels) * np.logaddexp(0, logits))
    out = tf.nn.weighted_cross_entropy_with_logits(labels=labels, logits=logits, pos_weight=q)
    assert out.op.name == "logistic_loss"
    got = evaluate(out)
    assert np.isfinite(got).all()  # no overflow at the extremes
    np.testing.assert_allclose(got, definition, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        evaluate(tf.nn.weighted_cross_entropy_with_logits(targets=labels, logits=logits,
                                                          pos_weight=1.0)),
        evaluate(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)),
        rtol=1e-12, atol=1e-12)
    check_gradients(lambda z, x: tf.nn.weighted_cross_entropy_with_logits(
        labels=z, logits=x, pos_weight=2.5), [rand(2, 3, low=0, high=1), rand(2, 3) * 4])
    with pytest.raises(ValueError, match="must have the same shape"):
        tf.nn.weighted_cross_entropy_with_logits(labels=np.zeros(3), logits=np.zeros(4),
                                                 pos_weight=1.0)


def test_log_poisson_loss():
    targets = np.array([0.0, 0.5, 1.0, 2.0, 7.0])
    log_input = np.array([0.3, -1.0, 2.0, 0.7, 1.9])
    plain = np.exp(log_input) - log_input * targets
    stirling = np.where(targets > 1, targets * np.log(np.where(targets > 0, targets, 1)) -
                        targets + 0.5 * np.log(2 * np.pi * np.where(targets > 0, targets, 1)), 0)
    out = tf.nn.log_poisson_loss(targets, log_input)
    full = tf.nn.log_poisson_loss(targets, log_input, compute_full_loss=True)
    got, got_full = evaluate([out, full])
    np.testing.assert_allclose(got, plain, rtol=1e-12)
    np.testing.assert_allclose(got_full, plain + stirling, rtol=1e-12)
    assert out.op.name.startswith("log_poisson_loss")
    check_gradients(lambda t, x: tf.nn.log_poisson_loss(t, x, compute_full_loss=True),
                    [np.array([1.5, 2.0, 4.0]), np.array([0.1, -0.4, 1.2])])


# ------------------------------------------------------------------------------------------------
# Activations

def test_crelu_and_swish():
    x = rand(2, 3)
    c = tf.nn.crelu(x)
    c0 = tf.nn.crelu(x, axis=0)
    s = tf.nn.swish(x)
    s2 = tf.nn.silu(x, beta=2.0)
    got = evaluate([c, c0, s, s2])
    np.testing.assert_allclose(got[0], np.maximum(np.concatenate([x, -x], -1), 0))
    np.testing.assert_allclose(got[1], np.maximum(np.concatenate([x, -x], 0), 0))
    np.testing.assert_allclose(got[2], x / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(got[3], x / (1 + np.exp(-2 * x)), rtol=1e-12)
    assert c.op.name == "CRelu/Relu"
    check_gradients(lambda a: tf.nn.swish(a, beta=1.5), [x])
    check_gradients(tf.nn.crelu, [x])


def test_gelu_exact_and_approximate():
    from math import erf
    x = rand(2, 3, low=-4.0, high=4.0)
    exact = 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    got = evaluate([tf.nn.gelu(x), tf.nn.gelu(x, approximate=True),
                    tf.keras.activations.get("gelu")(x)])
    np.testing.assert_allclose(got[0], exact, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[1], tanh_form, rtol=1e-12)
    np.testing.assert_allclose(got[2], exact, rtol=1e-12, atol=1e-15)
    check_gradients(tf.nn.gelu, [x])
    check_gradients(lambda a: tf.nn.gelu(a, approximate=True), [x])


# ------------------------------------------------------------------------------------------------
# Moments

def test_sufficient_statistics_and_normalize_moments():
    x = rand(3, 4, 2)
    counts, m_ss, v_ss, shift = tf.nn.sufficient_statistics(x, [0, 1])
    assert shift is None and counts.op.type == "Const"
    mean, var = tf.nn.normalize_moments(counts, m_ss, v_ss, None)
    shifted = tf.nn.sufficient_statistics(x, [0, 1], shift=np.float64(0.25), keepdims=True)
    smean, svar = tf.nn.normalize_moments(*shifted)
    got = evaluate([counts, m_ss, v_ss, mean, var, smean, svar])
    assert got[0] == 12
    np.testing.assert_allclose(got[1], x.sum(axis=(0, 1)))
    np.testing.assert_allclose(got[2], (x ** 2).sum(axis=(0, 1)))
    np.testing.assert_allclose(got[3], x.mean(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(got[4], x.var(axis=(0, 1)), rtol=1e-10)
    np.testing.assert_allclose(got[5], x.mean(axis=(0, 1), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(got[6], x.var(axis=(0, 1), keepdims=True), rtol=1e-10)
    assert mean.name == "normalize/mean:0" and var.name == "normalize/variance:0"
    # Unknown sizes: the count comes from tf.shape(x).
    ph = tf.placeholder(tf.float64, [None, 2])
    count = tf.nn.sufficient_statistics(ph, [0])[0]
    assert evaluate(count, {ph: np.zeros((5, 2))}) == 5


def test_weighted_moments():
    x = rand(4, 3)
    w = np.array([[1.0], [0.0], [2.0], [3.0]])
    mean, var = tf.nn.weighted_moments(x, [0], w)
    zero_mean, zero_var = tf.nn.weighted_moments(x, [0], np.zeros((4, 1)), keepdims=True)
    got = evaluate([mean, var, zero_mean, zero_var])
    expected_mean = (w * x).sum(0) / w.sum()
    np.testing.assert_allclose(got[0], expected_mean, rtol=1e-12)
    np.testing.assert_allclose(got[1], (w * (x - expected_mean) ** 2).sum(0) / w.sum(),
                               rtol=1e-12)
    np.testing.assert_array_equal(got[2], np.zeros((1, 3)))  # zero total weight: 0, not NaN
    np.testing.assert_array_equal(got[3], np.zeros((1, 3)))
    check_gradients(lambda a: tf.add_n(list(tf.nn.weighted_moments(a, [0], w))), [x])


# ------------------------------------------------------------------------------------------------
# Normalization

def _f32(value):
    """A float attr's value: TensorFlow keeps float attrs in 32 bits."""
    return float(np.float32(value))


def test_lrn():
    x = rand(2, 3, 2, 7)
    out = tf.nn.lrn(x, depth_radius=2, bias=2.0, alpha=0.5, beta=0.6)
    assert out.op.name == "LRN"
    # Float attrs are 32-bit, as in TensorFlow: beta=0.6 is float32(0.6).
    np.testing.assert_allclose(evaluate(out), lrn_ref(x, 2, 2.0, 0.5, _f32(0.6)), rtol=1e-12)
    assert tf.nn.local_response_normalization is tf.nn.lrn
    with pytest.raises(ValueError, match="rank 4"):
        tf.nn.lrn(rand(3, 7))


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm_training_and_inference(data_format):
    x = rand(3, 4, 2, 5) if data_format == "NHWC" else rand(3, 5, 4, 2)
    scale, offset = rand(5, low=0.5, high=2), rand(5)
    mean, var = rand(5), rand(5, low=0.5, high=2)
    y, m, v = tf.nn.fused_batch_norm(x, scale, offset, data_format=data_format)
    yi, mi, vi = tf.nn.fused_batch_norm(x, scale, offset, mean, var, epsilon=0.01,
                                        data_format=data_format, is_training=False)
    got = evaluate([y, m, v, yi, mi, vi])
    ref = batch_norm_ref(x, scale, offset, None, None, _f32(1e-3), True, data_format)
    for g, e in zip(got[:3], ref[:3]):
        np.testing.assert_allclose(g, e, rtol=1e-10)
    ref = batch_norm_ref(x, scale, offset, mean, var, _f32(0.01), False, data_format)
    for g, e in zip(got[3:], ref[:3]):
        np.testing.assert_allclose(g, e, rtol=1e-10)
    assert y.op.type == "FusedBatchNormV3" and y.op.name == "FusedBatchNormV3"
    check_gradients(lambda a, s, o: tf.nn.fused_batch_norm(a, s, o, data_format=data_format)[0],
                    [x[:2], scale, offset])


def test_fused_batch_norm_running_averages_and_errors():
    x = rand(4, 2, 2, 3).astype(np.float32)
    mean, var = np.ones(3, np.float32), np.full(3, 2.0, np.float32)
    _, m, v = tf.nn.fused_batch_norm(x, np.ones(3, np.float32), np.zeros(3, np.float32), mean,
                                     var, exponential_avg_factor=0.1)
    got_m, got_v = evaluate([m, v])
    flat = x.reshape(-1, 3).astype(np.float64)
    np.testing.assert_allclose(got_m, 0.9 * mean + 0.1 * flat.mean(0), rtol=1e-5)
    np.testing.assert_allclose(got_v, 0.9 * var + 0.1 * flat.var(0, ddof=1), rtol=1e-5)
    with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D tensor"):
        tf.nn.fused_batch_norm(x, np.ones(3, np.float32), np.zeros(3, np.float32),
                               is_training=False)
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.nn.fused_batch_norm(x, np.ones(4, np.float32), np.zeros(3, np.float32))
    scale = tf.placeholder(tf.float32, None)
    y = tf.nn.fused_batch_norm(x, scale, np.zeros(3, np.float32))[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="scale must have the same number of elements as the channels "
                                 "of x, got 2 and 3"):
            sess.run(y, {scale: [1.0, 2.0]})
        assert sess.run(y, {scale: [1.0, 2.0, 3.0]}).shape == x.shape


def test_batch_norm_with_global_normalization():
    x, m, v, beta, gamma = rand(2, 3), rand(3), rand(3, low=0.5, high=1), rand(3), rand(3)
    a = tf.nn.batch_norm_with_global_normalization(x, m, v, beta, gamma, 0.01, True)
    b = tf.nn.batch_norm_with_global_normalization(input=x, mean=m, variance=v, beta=beta,
                                                   gamma=gamma, variance_epsilon=0.01,
                                                   scale_after_normalization=False)
    got = evaluate([a, b])
    np.testing.assert_allclose(got[0], (x - m) / np.sqrt(v + 0.01) * gamma + beta, rtol=1e-12)
    np.testing.assert_allclose(got[1], (x - m) / np.sqrt(v + 0.01) + beta, rtol=1e-12)


# ------------------------------------------------------------------------------------------------
# Embeddings over partitioned params

TABLE = np.arange(11 * 2, dtype=np.float64).reshape(11, 2) / 10.0


def split_table(strategy, n):
    if strategy == "mod":
        return [TABLE[p::n] for p in range(n)]
    return np.array_split(TABLE, n)


@pytest.mark.parametrize("strategy", ["mod", "div"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_embedding_lookup_over_partitioned_params(strategy, n):
    ids = np.array([[0, 10, 3], [7, 7, 5]])
    params = [tf.constant(s) for s in split_table(strategy, n)]
    out = tf.nn.embedding_lookup(params, ids, partition_strategy=strategy)
    clipped = tf.nn.embedding_lookup(params, ids, partition_strategy=strategy, max_norm=1.0)
    got, got_clipped = evaluate([out, clipped])
    np.testing.assert_array_equal(got, TABLE[ids])
    norms = np.linalg.norm(TABLE[ids], axis=-1, keepdims=True)
    np.testing.assert_allclose(got_clipped, TABLE[ids] / np.maximum(norms, 1.0), rtol=1e-12)


def test_embedding_lookup_gradients_reach_each_shard():
    shards = split_table("div", 3)
    ids = np.array([0, 10, 3, 3, 5])

    def build(*params):
        return tf.nn.embedding_lookup(list(params), ids, partition_strategy="div") * np.arange(2.0)
    check_gradients(build, shards)


def test_embedding_lookup_over_variables_and_out_of_range_ids():
    shards = [tf.Variable(s) for s in split_table("mod", 3)]
    ids = tf.placeholder(tf.int32, [None])
    out = tf.nn.embedding_lookup(shards, ids)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(out, {ids: [9, 1]}), TABLE[[9, 1]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="not in"):
            sess.run(out, {ids: [11]})
        np.testing.assert_array_equal(sess.run(out, {ids: [2]}), TABLE[[2]])
    div = tf.nn.embedding_lookup([tf.constant(s) for s in split_table("div", 3)], ids,
                                 partition_strategy="div")
    with tf.Session() as sess:
        for bad in (11, 40, -1):
            with pytest.raises(tf.errors.InvalidArgumentError, match=f"{bad} is not in"):
                sess.run(div, {ids: [3, bad]})
        np.testing.assert_array_equal(sess.run(div, {ids: [10, 0]}), TABLE[[10, 0]])
    with pytest.raises(ValueError, match="Unrecognized partition strategy"):
        tf.nn.embedding_lookup(shards, [0], partition_strategy="range")


# ------------------------------------------------------------------------------------------------
# tf.layers

def test_conv1d_conv3d_and_separable_conv2d_layers():
    x1, x3, x2 = rand(2, 7, 3), rand(1, 4, 5, 3, 2), rand(2, 5, 6, 3)
    y1 = tf.layers.conv1d(x1, 4, 3, strides=2, padding="same", use_bias=False)
    y3 = tf.layers.conv3d(x3, 2, (2, 2, 1), use_bias=False, name="vol")
    y2 = tf.layers.separable_conv2d(x2, 5, 3, depth_multiplier=2, padding="same",
                                    activation=tf.nn.relu)
    names = sorted(v.name for v in tf.global_variables())
    assert names == ["conv1d/kernel:0", "separable_conv2d/bias:0",
                     "separable_conv2d/depthwise_kernel:0",
                     "separable_conv2d/pointwise_kernel:0", "vol/kernel:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        (got1, got3, got2), variables = sess.run([[y1, y3, y2], {
            v.name: v for v in tf.global_variables()}])
    k1 = variables["conv1d/kernel:0"]
    np.testing.assert_allclose(got1, conv_ref(x1[:, None], k1[None], (1, 2), "SAME")[:, 0],
                               rtol=1e-10)
    np.testing.assert_allclose(got3, conv3d_ref(x3, variables["vol/kernel:0"]), rtol=1e-10)
    depthwise = conv_ref(x2, variables["separable_conv2d/depthwise_kernel:0"], padding="SAME",
                         depthwise=True)
    pointwise = variables["separable_conv2d/pointwise_kernel:0"][0, 0]
    np.testing.assert_allclose(
        got2, np.maximum(depthwise @ pointwise + variables["separable_conv2d/bias:0"], 0),
        rtol=1e-10)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_conv2d_transpose_layer(padding):
    x = rand(2, 3, 4, 3)
    y = tf.layers.conv2d_transpose(x, 2, (3, 2), strides=(2, 2), padding=padding,
                                   use_bias=False)
    out_h, out_w = (7, 8) if padding == "valid" else (6, 8)
    assert y.shape.as_list() == [2, out_h, out_w, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got, kernel = sess.run([y, tf.global_variables()[0]])
    assert tf.global_variables()[0].name == "conv2d_transpose/kernel:0"
    np.testing.assert_allclose(
        got, conv_backprop_input_ref((2, out_h, out_w, 2), kernel, x, (2, 2), padding.upper()),
        rtol=1e-10)


def test_pooling_layers_1d_and_3d():
    x3, x1 = rand(2, 4, 5, 3, 2), rand(2, 7, 3)
    p3 = tf.layers.max_pooling3d(x3, 2, 2, padding="same")
    a3 = tf.layers.average_pooling3d(x3, (2, 1, 3), 1)
    p1 = tf.layers.max_pooling1d(x1, 3, 2)
    a1 = tf.layers.average_pooling1d(x1, 2, 2, padding="same")
    got = evaluate([p3, a3, p1, a1])
    np.testing.assert_allclose(got[0], pool3d_ref(x3, (2, 2, 2), (2, 2, 2), "SAME"))
    np.testing.assert_allclose(got[1], pool3d_ref(x3, (2, 1, 3), (1, 1, 1), "VALID", "avg"),
                               rtol=1e-12)
    np.testing.assert_allclose(got[2], np.stack([x1[:, i:i + 3].max(1) for i in (0, 2, 4)], 1))
    np.testing.assert_allclose(got[3], np.stack([x1[:, i:i + 2].mean(1) for i in (0, 2, 4, 6)],
                                                1), rtol=1e-12)


def test_batch_normalization_layer_runs_the_fused_kernel_like_tensorflow():
    x = rand(4, 3, 2, 5).astype(np.float32)
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, training=training, momentum=0.5)
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert "FusedBatchNormV3" in ops
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    flat = x.reshape(-1, 5).astype(np.float64)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        train_out, _ = sess.run([y, updates], {training: True})
        moving = {v.name: sess.run(v) for v in tf.global_variables() if "moving" in v.name}
        infer_out = sess.run(y, {training: False})
    np.testing.assert_allclose(train_out, (x - flat.mean(0)) / np.sqrt(flat.var(0) + 1e-3),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(moving["batch_normalization/moving_mean:0"], 0.5 * flat.mean(0),
                               rtol=1e-5)
    np.testing.assert_allclose(moving["batch_normalization/moving_variance:0"],
                               0.5 + 0.5 * flat.var(0, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(
        infer_out, (x - moving["batch_normalization/moving_mean:0"]) /
        np.sqrt(moving["batch_normalization/moving_variance:0"] + 1e-3), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# Small helpers

def test_xw_plus_b_and_relu_layer():
    x, w, b = rand(3, 4), rand(4, 2), rand(2)
    a = tf.nn.xw_plus_b(x, w, b)
    r = tf.nn.relu_layer(x, w, b, name="layer")
    got = evaluate([a, r])
    np.testing.assert_allclose(got[0], x @ w + b, rtol=1e-12)
    np.testing.assert_allclose(got[1], np.maximum(x @ w + b, 0), rtol=1e-12)
    assert a.op.name == "xw_plus_b" and r.op.name == "layer"


def test_compute_average_loss_and_scale_regularization_loss():
    losses = np.array([1.0, 2.0, 3.0, 6.0])
    plain = tf.nn.compute_average_loss(losses)
    weighted = tf.nn.compute_average_loss(losses, sample_weight=[1.0, 0.0, 2.0, 0.5],
                                          global_batch_size=8)
    regularized = tf.nn.compute_average_loss(losses, regularization_losses=[
        tf.constant(0.5, tf.float64), tf.constant(0.25, tf.float64)])
    empty = tf.nn.compute_average_loss(np.zeros(0))
    got = evaluate([plain, weighted, regularized, empty,
                    tf.nn.scale_regularization_loss([tf.constant([1.0, 2.0])])])
    np.testing.assert_allclose(got, [3.0, 10.0 / 8, 3.75, 0.0, 3.0])
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(3.0)


# ------------------------------------------------------------------------------------------------
# Morphology

def test_dilation2d_and_erosion2d():
    x = RNG.permutation(2 * 6 * 5 * 3).reshape(2, 6, 5, 3) / 9.0
    k = RNG.permutation(2 * 3 * 3).reshape(2, 3, 3) / 13.0
    d = tf.nn.dilation2d(x, k, [1, 1, 2, 1], [1, 2, 1, 1], "VALID")
    e = tf.nn.erosion2d(x, k, [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    assert d.op.name == "Dilation2D" and d.shape.as_list() == [2, 4, 2, 3]
    got_d, got_e = evaluate([d, e])
    expected_d = np.zeros((2, 4, 2, 3))
    for b, i, j, c in np.ndindex(expected_d.shape):
        expected_d[b, i, j, c] = max(x[b, i + 2 * di, 2 * j + dj, c] + k[di, dj, c]
                                     for di in range(2) for dj in range(3))
    np.testing.assert_allclose(got_d, expected_d, rtol=1e-12)
    # Erosion: min over the window of x - kernel (mirrored), SAME padding never winning.
    padded = np.pad(x, ((0, 0), (0, 1), (1, 1), (0, 0)), constant_values=np.inf)
    expected_e = np.full(x.shape, np.inf)
    for di, dj in np.ndindex(2, 3):
        expected_e = np.minimum(expected_e, padded[:, di:di + 6, dj:dj + 5] - k[1 - di, 2 - dj])
    np.testing.assert_allclose(got_e, expected_e, rtol=1e-12)
    check_gradients(lambda a, b: tf.nn.dilation2d(a, b, [1, 1, 1, 1], [1, 1, 1, 1], "SAME"),
                    [x[:1, :4, :4], k])
    with pytest.raises(ValueError, match="same depth|must be equal"):
        tf.nn.dilation2d(x, k[:, :, :2], [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
