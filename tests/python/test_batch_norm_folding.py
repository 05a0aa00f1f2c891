"""Batch norm folding (graph optimizer, with remapping and arithmetic_optimization on): a Conv2D
whose filter is a constant, then optionally a BiasAdd of a constant, then an inference
FusedBatchNorm of constants, then optionally an activation, runs as one _FusedConv2D with the
batch norm folded into its filter and bias. The result is the chain's up to rounding (checked
against float64 numpy); arithmetic_optimization OFF keeps the batch norm (as the convolution's
epilogue, or as its own node after a BiasAdd)."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.protos import RewriterConfig

from test_graph_optimizer import config, traced

RNG = np.random.default_rng(11)
FOLD = config()
NO_FOLD = config(arithmetic_optimization=RewriterConfig.OFF)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def conv_reference(x, w, nchw):
    """NHWC (or NCHW) 'SAME' 3x3 stride-1 convolution in float64."""
    x = np.asarray(x, np.float64)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    n, h, wd, _ = x.shape
    out = np.zeros((n, h, wd, w.shape[3]))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,cf->nhwf", padded[:, i:i + h, j:j + wd], w[i, j])
    return out.transpose(0, 3, 1, 2) if nchw else out


def build_chain(data_format, bias, activation, dtype=np.float32, filter_value=None):
    """x -> Conv2D -> [BiasAdd] -> FusedBatchNorm(inference) -> [activation]; returns the output,
    the placeholder and the float64 reference function."""
    nchw = data_format == "NCHW"
    x = tf.placeholder(dtype, [None, 4, 6, 6] if nchw else [None, 6, 6, 4])
    w = rand(3, 3, 4, 5, dtype=dtype) * 0.4
    b, scale, offset, mean = (rand(5, dtype=dtype) for _ in range(4))
    var = np.abs(rand(5, dtype=dtype)) + 0.2
    h = tf.nn.conv2d(x, filter_value if filter_value is not None else tf.constant(w),
                     [1, 1, 1, 1], "SAME", data_format=data_format)
    if bias:
        h = tf.nn.bias_add(h, tf.constant(b), data_format=data_format)
    y, _, _ = tf.nn.fused_batch_norm(h, tf.constant(scale), tf.constant(offset),
                                     mean=tf.constant(mean), variance=tf.constant(var),
                                     epsilon=0.001, is_training=False, data_format=data_format)
    if activation is not None:
        y = getattr(tf.nn, activation)(y)

    def reference(feed):
        shape = (1, 5, 1, 1) if nchw else (5,)
        r = conv_reference(feed, w.astype(np.float64), nchw) + (b.reshape(shape) if bias else 0)
        epsilon = float(np.float32(0.001))  # the attr is a float32
        r = ((r - mean.reshape(shape)) / np.sqrt(var.reshape(shape).astype(np.float64) + epsilon)
             * scale.reshape(shape) + offset.reshape(shape))
        if activation == "relu":
            r = np.maximum(r, 0)
        elif activation == "relu6":
            r = np.clip(r, 0, 6)
        return r

    return y, x, reference


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("activation", ["relu", "relu6", None])
def test_constant_batch_norm_folds_into_the_filter(data_format, bias, activation):
    graph = tf.Graph()
    with graph.as_default():
        y, x, reference = build_chain(data_format, bias, activation)
    feed = rand(3, *[int(d) for d in x.shape[1:]])
    folded, ran = traced(graph, y, {x: feed}, FOLD)
    plain, ran_plain = traced(graph, y, {x: feed}, NO_FOLD)
    types = list(ran.values())
    assert types.count("_FusedConv2D") == 1
    assert not {"Conv2D", "BiasAdd", "FusedBatchNormV3", "Relu", "Relu6"} & set(types)
    expected = reference(feed)
    np.testing.assert_allclose(folded, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(plain, expected, rtol=1e-5, atol=1e-5)
    # Without folding, the batch norm after a BiasAdd runs as its own node.
    assert ("FusedBatchNormV3" in ran_plain.values()) == bias


def test_float64_folds_with_float64_precision():
    graph = tf.Graph()
    with graph.as_default():
        y, x, reference = build_chain("NHWC", True, "relu", dtype=np.float64)
    feed = rand(2, 6, 6, 4, dtype=np.float64)
    folded, ran = traced(graph, y, {x: feed}, FOLD)
    assert list(ran.values()).count("_FusedConv2D") == 1
    np.testing.assert_allclose(folded, reference(feed), rtol=1e-12, atol=1e-12)


def test_variable_filter_is_not_folded_and_stays_bit_identical():
    """A filter that can change between runs (a variable) keeps the batch norm in the epilogue,
    which gives the unfused plan's bits."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(rand(3, 3, 4, 5) * 0.4)
        y, x, _ = build_chain("NHWC", False, "relu", filter_value=w)
        init = tf.global_variables_initializer()
    feed = rand(2, 6, 6, 4)
    results = []
    for cfg in (FOLD, config(remapping=RewriterConfig.OFF)):
        with tf.Session(graph=graph, config=cfg) as sess:
            sess.run(init)
            results.append(sess.run(y, {x: feed}))
    np.testing.assert_array_equal(results[0], results[1])


def test_read_intermediate_keeps_the_chain():
    """A fetched BiasAdd output must still be computed: nothing is folded or fused past it."""
    graph = tf.Graph()
    with graph.as_default():
        y, x, reference = build_chain("NHWC", True, "relu")
        bias_out = graph.get_operation_by_name("BiasAdd").outputs[0]
    feed = rand(2, 6, 6, 4)
    (out, _), ran = traced(graph, [y, bias_out], {x: feed}, FOLD)
    assert "FusedBatchNormV3" in ran.values()
    np.testing.assert_allclose(out, reference(feed), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_batch_norm_relu6_fuses_and_folds(stride):
    """MobileNet's block: DepthwiseConv2dNative -> inference FusedBatchNorm -> Relu6 runs as one
    _FusedDepthwiseConv2dNative: with the batch norm folded into the filter by default, as an
    epilogue (bit-identical to the unfused plan) with arithmetic_optimization off."""
    w = rand(3, 3, 4, 2) * 0.4
    scale, offset, mean = (rand(8) for _ in range(3))
    var = np.abs(rand(8)) + 0.2
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 7, 7, 4])
        h = tf.nn.depthwise_conv2d_native(x, tf.constant(w), [1, stride, stride, 1], "SAME")
        y, _, _ = tf.nn.fused_batch_norm(h, tf.constant(scale), tf.constant(offset),
                                         mean=tf.constant(mean), variance=tf.constant(var),
                                         epsilon=0.001, is_training=False)
        y = tf.nn.relu6(y)
    feed = rand(2, 7, 7, 4)
    folded, ran = traced(graph, y, {x: feed}, FOLD)
    epilogue, ran_epilogue = traced(graph, y, {x: feed}, NO_FOLD)
    unfused, ran_unfused = traced(graph, y, {x: feed}, config(remapping=RewriterConfig.OFF))
    for r in (ran, ran_epilogue):
        assert list(r.values()).count("_FusedDepthwiseConv2dNative") == 1
        assert not {"DepthwiseConv2dNative", "FusedBatchNormV3", "Relu6"} & set(r.values())
    assert "FusedBatchNormV3" in ran_unfused.values()
    np.testing.assert_array_equal(epilogue, unfused)
    # The reference, in float64: each channel i convolved with its filters w[:, :, i, m].
    padded = np.pad(feed.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)])
    conv = np.zeros((2, 7, 7, 4, 2))
    for i in range(3):
        for j in range(3):
            conv += padded[:, i:i + 7, j:j + 7, :, None] * w[i, j]
    conv = conv.reshape(2, 7, 7, 8)[:, ::stride, ::stride]
    epsilon = float(np.float32(0.001))
    expected = np.clip((conv - mean) / np.sqrt(var + epsilon) * scale + offset, 0, 6)
    np.testing.assert_allclose(folded, expected, rtol=1e-5, atol=1e-5)
