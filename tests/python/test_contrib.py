"""tf.contrib: contrib.layers (variable names, outputs against numpy and against tf_slim on real
TensorFlow), contrib.framework (arg_scope, model variables, restoring), regularizers,
initializers, optimize_loss, seq2seq.sequence_loss, contrib.rnn, and the modules it lacks."""

import json

import numpy as np
import pytest

import flowstone as tf
from layers_net_oracle import assert_same_run, run_net
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

layers = tf.contrib.layers
framework = tf.contrib.framework


def _names(collection=tf.GraphKeys.GLOBAL_VARIABLES):
    return [v.op.name for v in tf.get_collection(collection)]


def _session():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess


def _conv2d_same(x, w, stride=1):
    """numpy float64 2-D convolution, NHWC, SAME padding."""
    n, h, width, _ = x.shape
    kh, kw, _, out = w.shape
    oh, ow = -(-h // stride), -(-width // stride)
    pad_h = max((oh - 1) * stride + kh - h, 0)
    pad_w = max((ow - 1) * stride + kw - width, 0)
    xp = np.pad(x, [(0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2),
                    (0, 0)])
    y = np.zeros((n, oh, ow, out))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            y[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return y


# --- contrib.layers: names ---------------------------------------------------------------------

def test_variable_names_are_contribs():
    x = tf.placeholder(tf.float32, [2, 6, 6, 3])
    net = layers.conv2d(x, 4, [3, 3])
    net = layers.conv2d(net, 4, 3, normalizer_fn=layers.batch_norm)
    net = layers.conv2d_transpose(net, 2, 3, stride=2)
    net = layers.fully_connected(layers.flatten(net), 5)
    layers.fully_connected(net, 2, scope="logits", biases_initializer=None)
    assert _names() == [
        "Conv/weights", "Conv/biases", "Conv_1/weights", "Conv_1/BatchNorm/beta",
        "Conv_1/BatchNorm/moving_mean", "Conv_1/BatchNorm/moving_variance",
        "Conv2d_transpose/weights", "Conv2d_transpose/biases", "fully_connected/weights",
        "fully_connected/biases", "logits/weights"]
    assert _names(tf.GraphKeys.MODEL_VARIABLES) == _names()
    assert "Conv_1/BatchNorm/moving_mean" not in _names(tf.GraphKeys.TRAINABLE_VARIABLES)
    assert tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)[6].shape.as_list() == [3, 3, 2, 4]
    assert net.shape.as_list() == [2, 5]


def test_repeat_and_stack_scopes():
    x = tf.placeholder(tf.float32, [1, 4, 4, 2])
    layers.repeat(x, 2, layers.conv2d, 3, [3, 3], scope="conv1")
    layers.stack(tf.placeholder(tf.float32, [1, 3]), layers.fully_connected, [4, 5], scope="fc")
    assert _names() == ["conv1/conv1_1/weights", "conv1/conv1_1/biases", "conv1/conv1_2/weights",
                        "conv1/conv1_2/biases", "fc/fc_1/weights", "fc/fc_1/biases",
                        "fc/fc_2/weights", "fc/fc_2/biases"]


def test_reuse_and_collections():
    x = tf.placeholder(tf.float32, [None, 3])
    first = layers.fully_connected(x, 2, scope="fc", variables_collections=["mine"],
                                   outputs_collections="outputs")
    second = layers.fully_connected(x, 2, scope="fc", reuse=True)
    assert _names() == ["fc/weights", "fc/biases"]
    assert _names("mine") == ["fc/weights", "fc/biases"]
    assert tf.get_collection("outputs") == [first] and first.aliases == ["fc"]
    value = np.ones((1, 3), np.float32)
    with _session() as sess:
        a, b = sess.run([first, second], {x: value})
    np.testing.assert_array_equal(a, b)


# --- contrib.layers: numbers -------------------------------------------------------------------

def test_fully_connected_and_conv2d_against_numpy():
    rng = np.random.RandomState(1)
    x_value = rng.uniform(-1, 1, (2, 5, 5, 3)).astype(np.float32)
    x = tf.constant(x_value)
    conv = layers.conv2d(x, 4, [3, 2], stride=2)
    fc = layers.fully_connected(tf.reshape(x, [2, -1]), 3, activation_fn=tf.tanh)
    with _session() as sess:
        for v in tf.global_variables()[1::2]:
            v.load(rng.uniform(-1, 1, v.shape.as_list()).astype(np.float32), sess)
        w, b, fw, fb = sess.run(tf.global_variables())
        got_conv, got_fc = sess.run([conv, fc])
    x64 = x_value.astype(np.float64)
    np.testing.assert_allclose(got_conv, np.maximum(_conv2d_same(x64, w, 2) + b, 0), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(got_fc, np.tanh(x64.reshape(2, -1) @ fw + fb), rtol=1e-5,
                               atol=1e-5)


def test_pools_flatten_dropout_one_hot():
    x_value = np.arange(2 * 4 * 4 * 1, dtype=np.float32).reshape(2, 4, 4, 1)
    x = tf.constant(x_value)
    maxed = layers.max_pool2d(x, [2, 2])
    averaged = layers.avg_pool2d(x, 2, stride=1, padding="SAME")
    flat = layers.flatten(x)
    kept = layers.dropout(x, keep_prob=0.5, is_training=False)
    dropped = layers.dropout(x, keep_prob=0.5)
    hot = layers.one_hot_encoding(tf.constant([0, 2]), 3)
    assert maxed.op.name.startswith("MaxPool2D/") and flat.op.name.startswith("Flatten/")
    with tf.Session() as sess:
        m, a, f, k, d, h = sess.run([maxed, averaged, flat, kept, dropped, hot])
    np.testing.assert_array_equal(m[..., 0], x_value[:, 1::2, 1::2, 0])
    np.testing.assert_allclose(a[0, 0, 0, 0], x_value[0, :2, :2, 0].mean())
    np.testing.assert_allclose(a[0, 3, 3, 0], x_value[0, 3, 3, 0])
    np.testing.assert_array_equal(f, x_value.reshape(2, 16))
    np.testing.assert_array_equal(k, x_value)
    assert set(np.unique(d[x_value > 0] / x_value[x_value > 0])) <= {0.0, 2.0}
    np.testing.assert_array_equal(h, [[1, 0, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="at least 2 dimensions|a least 2 dimensions"):
        layers.flatten(tf.constant([1.0, 2.0]))


def test_batch_norm_training_updates_and_inference():
    rng = np.random.RandomState(2)
    x_value = rng.normal(3.0, 2.0, (8, 2, 2, 3)).astype(np.float32)
    x = tf.constant(x_value)
    training = tf.placeholder_with_default(True, [])
    y = layers.batch_norm(x, decay=0.5, scale=True, is_training=training)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    mean = x_value.astype(np.float64).mean(axis=(0, 1, 2))
    var = x_value.astype(np.float64).var(axis=(0, 1, 2))
    with _session() as sess:
        got, _ = sess.run([y, updates])
        moving_mean, moving_var = sess.run(tf.global_variables()[2:])
        inferred = sess.run(y, {training: False})
    np.testing.assert_allclose(got, (x_value - mean) / np.sqrt(var + 0.001), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(moving_mean, 0.5 * mean, rtol=1e-5)
    # TensorFlow's fused kernel, which contrib uses here, tracks the unbiased variance.
    n = x_value.size / 3
    np.testing.assert_allclose(moving_var, 0.5 + 0.5 * var * n / (n - 1), rtol=1e-5)
    np.testing.assert_allclose(inferred, (x_value - moving_mean) / np.sqrt(moving_var + 0.001),
                               rtol=1e-4, atol=1e-4)


def test_batch_norm_without_updates_collection_updates_in_place():
    x_value = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)
    y = layers.batch_norm(tf.constant(x_value), decay=0.0, updates_collections=None)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    with _session() as sess:
        sess.run(y)
        moving_mean, moving_var = sess.run(tf.global_variables()[1:])
    np.testing.assert_allclose(moving_mean, [2.0, 4.0])
    np.testing.assert_allclose(moving_var, [2.0, 8.0])  # unbiased: n / (n - 1) = 2


def test_layer_norm_embed_sequence():
    rng = np.random.RandomState(3)
    x_value = rng.normal(size=(2, 3, 4)).astype(np.float32)
    y = layers.layer_norm(tf.constant(x_value), begin_norm_axis=-1)
    ids = tf.constant([[0, 2], [1, 1]])
    embedded = layers.embed_sequence(ids, vocab_size=3, embed_dim=2)
    assert _names() == ["LayerNorm/beta", "LayerNorm/gamma", "EmbedSequence/embeddings"]
    with _session() as sess:
        got, table, rows = sess.run([y] + tf.global_variables()[2:] + [embedded])
    x64 = x_value.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(rows, table[[[0, 2], [1, 1]]])
    with pytest.raises(ValueError, match="vocab size and embedding dimension"):
        layers.embed_sequence(ids)


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_contrib_layers_match_tf_slim_on_tensorflow(tmp_path):
    """The same network, with the same starting values, through Flowstone's tf.contrib.layers
    and through tf_slim on real TensorFlow: names, outputs, losses and moving averages; and
    TensorFlow's checkpoint of it loads into Flowstone's."""
    checkpoint = str(tmp_path / "slim.ckpt")
    theirs = run_net(PEER_PYTHON, "slim", "save", checkpoint)
    ours = run_net(None, "contrib", "restore", checkpoint)
    assert_same_run(ours, theirs)
    np.testing.assert_allclose(ours["restored_logits"], theirs["trained_logits"], rtol=2e-4,
                               atol=2e-5)


# --- arg_scope ----------------------------------------------------------------------------------

def test_arg_scope_sets_defaults_nests_and_reenters():
    @framework.add_arg_scope
    def f(a, b=1, c=2):
        return a, b, c

    with framework.arg_scope([f], b=10) as outer:
        assert f(0) == (0, 10, 2)
        assert f(0, b=5) == (0, 5, 2)
        with framework.arg_scope([f], c=20):
            assert f(0) == (0, 10, 20)
    assert f(0) == (0, 1, 2)
    with framework.arg_scope(outer):
        assert f(0) == (0, 10, 2)
    assert framework.has_arg_scope(f) and framework.arg_scoped_arguments(f) == ["a", "b", "c"]


def test_arg_scope_errors():
    with pytest.raises(ValueError, match="is not decorated with @add_arg_scope"):
        with framework.arg_scope([len], b=1):
            pass
    with pytest.raises(TypeError, match="list/tuple or reused scope"):
        framework.arg_scope(layers.conv2d, b=1)
    with pytest.raises(ValueError, match="kwargs must be empty"):
        framework.arg_scope({}, b=1)


def test_arg_scope_reaches_contrib_layers():
    x = tf.placeholder(tf.float32, [1, 4, 4, 2])
    with framework.arg_scope([layers.conv2d], padding="VALID", activation_fn=None,
                             weights_regularizer=layers.l2_regularizer(0.5)):
        net = layers.conv2d(x, 3, [3, 3])
    assert net.shape.as_list() == [1, 2, 2, 3]
    assert len(tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)) == 1


# --- framework variables ------------------------------------------------------------------------

def test_variables_to_restore_and_assign_from_checkpoint(tmp_path):
    x = tf.placeholder(tf.float32, [None, 2])
    with tf.variable_scope("body"):
        layers.fully_connected(x, 3)
    layers.fully_connected(x, 1, scope="head")
    step = framework.get_or_create_global_step()
    assert [v.op.name for v in framework.get_variables_to_restore(exclude=["head"])] == [
        "body/fully_connected/weights", "body/fully_connected/biases", "global_step"]
    assert [v.op.name for v in framework.get_variables_to_restore(include=["head"])] == [
        "head/weights", "head/biases"]
    assert [v.op.name for v in framework.get_model_variables("body")] == [
        "body/fully_connected/weights", "body/fully_connected/biases"]
    assert framework.get_unique_variable("head/weights").op.name == "head/weights"
    assert framework.get_variables_by_name("biases")[1].op.name == "head/biases"
    with pytest.raises(TypeError, match="include is provided but is not a list"):
        framework.get_variables_to_restore(include="head")
    with pytest.raises(ValueError, match="Couldn't find variable nothing"):
        framework.get_unique_variable("nothing")
    prefix = str(tmp_path / "model.ckpt")
    with _session() as sess:
        saved = sess.run(tf.global_variables())
        tf.train.Saver().save(sess, prefix)
    tf.reset_default_graph()
    with tf.variable_scope("body"):
        layers.fully_connected(tf.placeholder(tf.float32, [None, 2]), 3)
    extra = tf.get_variable("not_in_checkpoint", [1])
    restore = framework.assign_from_checkpoint_fn(prefix, tf.global_variables(),
                                                  ignore_missing_vars=True)
    with tf.Session() as sess:
        sess.run(extra.initializer)
        restore(sess)
        np.testing.assert_array_equal(sess.run(tf.global_variables()[0]), saved[0])
    with pytest.raises(ValueError, match="var_list cannot be empty"):
        framework.assign_from_checkpoint_fn(prefix, [])
    del step


# --- regularizers, initializers -----------------------------------------------------------------

def test_regularizers():
    w_value = np.array([[1.0, -2.0], [3.0, -4.0]], np.float32)
    w = tf.constant(w_value)
    l1 = layers.l1_regularizer(0.5)(w)
    l2 = layers.l2_regularizer(0.25)(w)
    both = layers.l1_l2_regularizer(0.5, 0.25)(w)
    summed = layers.sum_regularizer([layers.l1_regularizer(1.0), None])(w)
    penalty = layers.apply_regularization(layers.l2_regularizer(1.0), [w, w])
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [penalty]
    with tf.Session() as sess:
        got = sess.run([l1, l2, both, summed, penalty])
    np.testing.assert_allclose(got, [5.0, 3.75, 8.75, 10.0, 30.0])
    assert layers.l2_regularizer(0.0)(w) is None
    with pytest.raises(ValueError, match="scale less than 0 on a regularizer: -1"):
        layers.l1_regularizer(-1.0)
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="No weights to regularize"):
        layers.apply_regularization(layers.l2_regularizer(1.0))


def test_initializers_ranges_and_errors():
    uniform = layers.xavier_initializer(seed=1)([30, 50])
    normal = layers.variance_scaling_initializer(seed=2)([3, 3, 8, 16])
    with tf.Session() as sess:
        u, n = sess.run([uniform, normal])
    limit = np.sqrt(3.0 / 40.0)
    assert np.abs(u).max() <= limit and np.abs(u).max() > 0.9 * limit
    stddev = np.sqrt(1.3 * 2.0 / (3 * 3 * 8))
    assert np.abs(n).max() <= 2 * stddev + 1e-6
    with pytest.raises(TypeError, match="non-floating point type"):
        layers.xavier_initializer(dtype=tf.int32)
    with pytest.raises(TypeError, match="Unknown mode FAN_SUM"):
        layers.variance_scaling_initializer(mode="FAN_SUM")


# --- optimize_loss ------------------------------------------------------------------------------

def test_optimize_loss_trains_with_clipping_and_named_optimizer():
    x = tf.constant(np.random.RandomState(4).normal(size=(16, 3)).astype(np.float32))
    target = tf.reduce_sum(x, axis=1, keepdims=True)
    prediction = layers.fully_connected(x, 1, activation_fn=None)
    loss = tf.reduce_mean(tf.square(prediction - target))
    step = tf.train.get_or_create_global_step()
    train = layers.optimize_loss(loss, step, 0.1, "SGD", clip_gradients=5.0)
    assert "OptimizeLoss/learning_rate" in _names()
    with _session() as sess:
        losses = [sess.run(train) for _ in range(30)]
        assert sess.run(step) == 30
    assert losses[-1] < 0.1 * losses[0]


def test_optimize_loss_errors():
    loss = tf.reduce_sum(tf.get_variable("w", [2]))
    step = tf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="Optimizer name should be one of"):
        layers.optimize_loss(loss, step, 0.1, "Nope")
    with pytest.raises(ValueError, match="Learning rate is None"):
        layers.optimize_loss(loss, step, None, "Adam")
    with pytest.raises(ValueError, match="Learning rate should be 0d Tensor or float"):
        layers.optimize_loss(loss, step, "fast", "Adam")
    with pytest.raises(ValueError, match="Unknown type .* for clip_gradients"):
        layers.optimize_loss(loss, step, 0.1, "SGD", clip_gradients="yes")
    tf.reset_default_graph()
    with pytest.raises(ValueError, match="global_step is required"):
        layers.optimize_loss(tf.reduce_sum(tf.get_variable("w", [2])), None, 0.1, "SGD")


# --- seq2seq, rnn, the rest ---------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {}, dict(average_across_timesteps=False), dict(average_across_batch=False),
    dict(average_across_timesteps=False, average_across_batch=False),
    dict(average_across_timesteps=False, average_across_batch=False, sum_over_timesteps=True,
         sum_over_batch=True),
    dict(average_across_timesteps=False, sum_over_timesteps=True)])
def test_sequence_loss_against_numpy(kwargs):
    rng = np.random.RandomState(5)
    logits = rng.normal(size=(2, 3, 4))
    targets = rng.randint(0, 4, (2, 3))
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 0.5, 0.0]])
    got = tf.Session().run(tf.contrib.seq2seq.sequence_loss(
        tf.constant(logits, tf.float32), tf.constant(targets, tf.int32),
        tf.constant(weights, tf.float32), **kwargs))
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    xent = -np.take_along_axis(log_softmax, targets[..., None], -1)[..., 0] * weights
    avg_t = kwargs.get("average_across_timesteps", True)
    avg_b = kwargs.get("average_across_batch", True)
    sum_t, sum_b = kwargs.get("sum_over_timesteps"), kwargs.get("sum_over_batch")
    def div_no_nan(x, y):
        return np.where(y == 0, 0.0, x / np.where(y == 0, 1.0, y))

    if avg_t and avg_b:
        want = xent.sum() / weights.sum()
    elif sum_t and sum_b:
        want = xent.sum() / np.count_nonzero(weights)
    elif avg_t or avg_b:
        axis = 0 if avg_b else 1
        want = div_no_nan(xent.sum(axis), weights.sum(axis))
    elif sum_t or sum_b:
        axis = 0 if sum_b else 1
        want = div_no_nan(xent.sum(axis), np.count_nonzero(weights, axis))
    else:
        want = xent
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_sequence_loss_errors():
    with pytest.raises(ValueError, match=r"Logits must be a \[batch_size x sequence_length x "):
        tf.contrib.seq2seq.sequence_loss(tf.zeros([2, 3]), tf.zeros([2, 3], tf.int32),
                                         tf.zeros([2, 3]))
    with pytest.raises(ValueError, match="cannot be set to True at same time"):
        tf.contrib.seq2seq.sequence_loss(tf.zeros([2, 3, 4]), tf.zeros([2, 3], tf.int32),
                                         tf.zeros([2, 3]), sum_over_batch=True)


def test_contrib_rnn_and_eager_are_the_core_names():
    assert tf.contrib.rnn.LSTMCell is tf.nn.rnn_cell.LSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    assert tf.contrib.eager.GradientTape is tf.GradientTape
    assert tf.contrib.framework.nest.flatten([1, (2, 3)]) == [1, 2, 3]


def test_unprovided_contrib_modules_name_their_replacement():
    with pytest.raises(AttributeError, match="tf.contrib.slim is not provided by Flowstone; "
                                             "use the tf_slim package"):
        tf.contrib.slim
    with pytest.raises(AttributeError, match="tf.contrib.learn is not provided .* tf.estimator"):
        tf.contrib.learn
    with pytest.raises(AttributeError, match="tf.contrib.lite is not provided by Flowstone$"):
        tf.contrib.lite
    with pytest.raises(AttributeError, match="no module 'nonsense' .* provides layers"):
        tf.contrib.nonsense


# --- tf.layers classes (what tf_slim builds its layers with) -----------------------------------

def test_tf_layers_classes_share_their_variables():
    x = tf.placeholder(tf.float32, [None, 4, 4, 2])
    conv = tf.layers.Conv2D(3, 2, padding="same", name="c")
    first, second = conv(x), conv.apply(x)
    dense = tf.layers.Dense(2)
    out = dense(tf.layers.Flatten()(first))
    norm = tf.layers.BatchNormalization()
    normed = norm(out, training=True)
    assert _names() == ["c/kernel", "c/bias", "dense/kernel", "dense/bias",
                        "batch_normalization/gamma", "batch_normalization/beta",
                        "batch_normalization/moving_mean", "batch_normalization/moving_variance"]
    assert conv.kernel.op.name == "c/kernel" and dense.bias.op.name == "dense/bias"
    assert [v.op.name for v in norm.trainable_weights] == ["batch_normalization/gamma",
                                                           "batch_normalization/beta"]
    assert len(norm.updates) == 2
    pooled = tf.layers.MaxPooling2D(2, 2)(x)
    assert pooled.shape.as_list() == [None, 2, 2, 2]
    value = np.random.RandomState(6).normal(size=(3, 4, 4, 2)).astype(np.float32)
    with _session() as sess:
        a, b = sess.run([first, second], {x: value})
        sess.run(normed, {x: value})
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="Keyword argument not understood: colour"):
        tf.layers.Dense(2, colour="red")


def test_separable_conv2d_class_names():
    x = tf.placeholder(tf.float32, [None, 5, 5, 3])
    layer = tf.layers.SeparableConv2D(4, 3, depth_multiplier=2)
    y = layer(x)
    layers.separable_conv2d(x, None, [3, 3], depth_multiplier=2)
    assert _names() == ["separable_conv2d/depthwise_kernel", "separable_conv2d/pointwise_kernel",
                        "separable_conv2d/bias", "SeparableConv2d/depthwise_weights",
                        "SeparableConv2d/biases"]
    assert layer.pointwise_kernel.shape.as_list() == [1, 1, 6, 4]
    assert y.shape.as_list() == [None, 3, 3, 4]


# --- contrib.training ---------------------------------------------------------------------------

def test_evaluate_once_restores_and_stops_after_n_evals(tmp_path):
    weight = tf.get_variable("w", [], initializer=tf.constant_initializer(3.0))
    with _session() as sess:
        prefix = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    tf.reset_default_graph()
    weight = tf.get_variable("w", [], initializer=tf.constant_initializer(0.0))
    total = tf.get_variable("total", [], initializer=tf.zeros_initializer(),
                            collections=[tf.GraphKeys.LOCAL_VARIABLES])
    update = total.assign_add(weight)
    final = tf.contrib.training.evaluate_once(
        prefix, eval_ops=update, final_ops={"total": total.read_value()},
        hooks=[tf.contrib.training.StopAfterNEvalsHook(4)])
    assert final == {"total": 12.0}
    assert tf.get_collection(tf.GraphKeys.EVAL_STEP) == [
        tf.contrib.training.get_or_create_eval_step()]


def test_hparams_types_parse_and_json():
    hparams = tf.contrib.training.HParams(learning_rate=0.1, layers=[64, 32], name="net",
                                          use_bn=False, steps=10)
    assert hparams.learning_rate == 0.1 and "layers" in hparams and "other" not in hparams
    hparams.parse("learning_rate=3,layers=[8, 4, 2],name=wide,use_bn=true")
    assert hparams.values() == {"learning_rate": 3.0, "layers": [8, 4, 2], "name": "wide",
                                "use_bn": True, "steps": 10}
    assert isinstance(hparams.learning_rate, float)
    hparams.override_from_dict({"steps": 20}).parse_json('{"name": "deep"}')
    assert (hparams.steps, hparams.name) == (20, "deep")
    again = tf.contrib.training.HParams(**json.loads(hparams.to_json()))
    assert again.values() == hparams.values()
    assert hparams.get("missing", 5) == 5 and hparams.get("steps", 1) == 20
    assert str(tf.contrib.training.HParams(b=1, a=2)) == "[('a', 2), ('b', 1)]"


def test_hparams_errors():
    hparams = tf.contrib.training.HParams(steps=10, layers=[1], rate=0.5)
    with pytest.raises(ValueError, match="Could not cast hparam 'steps'"):
        hparams.set_hparam("steps", 1.5)
    with pytest.raises(ValueError, match="Must pass a list for multi-valued parameter: layers"):
        hparams.set_hparam("layers", 3)
    with pytest.raises(ValueError, match="Must not pass a list for single-valued parameter"):
        hparams.parse("rate=[1.0]")
    with pytest.raises(ValueError, match="Unknown hyperparameter type for depth"):
        hparams.parse("depth=3")
    with pytest.raises(ValueError, match="Could not parse hparam 'steps' of type 'int'"):
        hparams.parse("steps=many")
    with pytest.raises(ValueError, match="Hyperparameter name is reserved: values"):
        hparams.add_hparam("values", 1)
    with pytest.raises(ValueError, match="Multi-valued hyperparameters cannot be empty: x"):
        hparams.add_hparam("x", [])
