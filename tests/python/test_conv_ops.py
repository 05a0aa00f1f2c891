"""Convolution, pooling and bias ops against float64 numpy references (conv_reference.py: direct
loops and einsum), for both data formats, every padding scheme, strides and dilations; float32 (run
by oneDNN) against the same references; gradients (first and second order) against central
finite differences; static shapes; error paths."""

import io
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from flowstone.ops import conv_ops as nn

from gradient_check import check_gradients
from conv_reference import (conv_backprop_filter_ref, conv_backprop_input_ref, conv_ref,
                            from_nhwc, pool_grad_ref, pool_ref, to_nhwc)

RNG = np.random.default_rng(42)


def rand(*shape, dtype=np.float64):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


# ------------------------------------------------------------------------------------------------
# Running ops.

def run(build, *inputs):
    """Builds build(*placeholders) in a fresh graph and runs it on `inputs`."""
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf.as_dtype(np.asarray(x).dtype), np.shape(x)) for x in inputs]
        out = build(*phs)
    with tf.Session(graph=graph) as sess:
        return sess.run(out, dict(zip(phs, inputs)))


FORMATS = ["NHWC", "NCHW"]

# (input NHWC shape, filter shape, strides, padding, dilations)
CONV_CONFIGS = [
    ((2, 7, 6, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 7, 6, 3), (3, 2, 3, 4), (1, 1), "VALID", (1, 1)),
    ((1, 9, 8, 2), (3, 3, 2, 5), (2, 3), "SAME", (1, 1)),
    ((1, 9, 8, 2), (3, 3, 2, 5), (2, 2), "VALID", (1, 1)),
    ((2, 10, 9, 3), (3, 2, 3, 2), (1, 1), "SAME", (2, 3)),
    ((2, 10, 9, 3), (2, 3, 3, 2), (2, 1), "VALID", (2, 2)),
    ((1, 6, 7, 2), (3, 3, 2, 3), (1, 2), [[1, 2], [0, 3]], (1, 1)),
    ((2, 8, 8, 1), (5, 5, 1, 6), (1, 1), "VALID", (1, 1)),
    ((1, 5, 5, 4), (1, 1, 4, 3), (2, 2), "SAME", (1, 1)),
    # Strided 1x1 filters: oneDNN 3.2's filter backprop for these overruns memory with NHWC
    # inputs (oneDNN issue #6035), so Flowstone must not use it.
    ((1, 6, 9, 4), (1, 1, 4, 4), (3, 1), "SAME", (1, 2)),
    ((2, 6, 9, 3), (1, 1, 3, 5), (1, 3), "VALID", (1, 1)),
]


def explicit_pairs(padding, data_format):
    """Spatial (before, after) pairs as the 4-pair list tf.nn.conv2d takes."""
    if isinstance(padding, str):
        return padding
    return ([[0, 0]] + padding + [[0, 0]] if data_format == "NHWC"
            else [[0, 0], [0, 0]] + padding)


def image(shape_nhwc, data_format, dtype=np.float64):
    return from_nhwc(rand(*shape_nhwc, dtype=dtype), data_format)


def four(values, data_format):
    return [1, *values, 1] if data_format == "NHWC" else [1, 1, *values]


# ------------------------------------------------------------------------------------------------
# Conv2D and its backprops.

@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("config", CONV_CONFIGS, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conv2d_forward_and_backprops(config, data_format, dtype):
    in_shape, f_shape, strides, padding, dilations = config
    x = image(in_shape, data_format, dtype)
    f = rand(*f_shape, dtype=dtype)
    pad = explicit_pairs(padding, data_format)
    kw = dict(strides=four(strides, data_format), padding=pad, data_format=data_format,
              dilations=four(dilations, data_format))
    expected = conv_ref(x, f, strides, padding, dilations, data_format)
    dy = rand(*expected.shape, dtype=dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)

    y, dx, df = run(lambda x_, f_, dy_: [
        nn.conv2d(x_, f_, **kw),
        nn.conv2d_backprop_input(np.array(x.shape, np.int32), f_, dy_, **kw),
        nn.conv2d_backprop_filter(x_, np.array(f.shape, np.int32), dy_, **kw),
    ], x, f, dy)
    assert y.dtype == dtype and y.shape == expected.shape
    np.testing.assert_allclose(y, expected, **tol)
    np.testing.assert_allclose(
        dx, conv_backprop_input_ref(x.shape, f, dy, strides, padding, dilations, data_format),
        **tol)
    np.testing.assert_allclose(
        df, conv_backprop_filter_ref(x, f.shape, dy, strides, padding, dilations, data_format),
        **tol)


def test_conv2d_lenet_sized_float32_matches_float64():
    x = rand(16, 28, 28, 1)
    f = rand(5, 5, 1, 6)
    got = run(lambda a, b: nn.conv2d(a, b, 1, "VALID"), x.astype(np.float32),
              f.astype(np.float32))
    np.testing.assert_allclose(got, conv_ref(x, f), rtol=1e-4, atol=1e-5)


# Big enough that oneDNN runs the batch in chunks, with the filter gradient summed over the
# chunks: 11 images as 2 + 2 + 2 + 2 + 2 + 1 forward and backward to the input (at least 8 chunks
# where each keeps 2^19 multiply-adds), 3 + 3 + 3 + 2 for the filter gradient; 21 images of 64
# channels, two per chunk forward and backward to the input, but 11 + 10 for the filter gradient
# (a larger filter needs larger chunks), whose partial sums stay in oneDNN's blocked filter layout
# until the end.
@pytest.mark.parametrize("x_shape,f_shape", [((11, 16, 16, 16), (3, 3, 16, 16)),
                                             ((21, 8, 8, 64), (3, 3, 64, 128))], ids=str)
@pytest.mark.parametrize("data_format", FORMATS)
def test_conv2d_batch_split_into_chunks(data_format, x_shape, f_shape):
    x = image(x_shape, data_format, np.float32)
    f = rand(*f_shape, dtype=np.float32)
    dy = image(x_shape[:3] + f_shape[3:], data_format, np.float32)
    kw = dict(strides=1, padding="SAME", data_format=data_format)
    y, dx, df = run(lambda x_, f_, dy_: [
        nn.conv2d(x_, f_, **kw),
        nn.conv2d_backprop_input(np.array(x.shape, np.int32), f_, dy_, **kw),
        nn.conv2d_backprop_filter(x_, np.array(f.shape, np.int32), dy_, **kw),
    ], x, f, dy)
    x64, f64, dy64 = (v.astype(np.float64) for v in (x, f, dy))
    ref_kw = dict(padding="SAME", data_format=data_format)
    # In NHWC, the forward and input-gradient passes of the second shape run Winograd
    # (test_winograd_conv.py), whose rounding error scales with the sum of |terms| (docs/COMPAT.md).
    fwd_tol = dict(rtol=1e-4, atol=1e-3 if data_format == "NHWC" else 1e-4)
    np.testing.assert_allclose(y, conv_ref(x64, f64, **ref_kw), **fwd_tol)
    np.testing.assert_allclose(dx, conv_backprop_input_ref(x.shape, f64, dy64, **ref_kw),
                               **fwd_tol)
    np.testing.assert_allclose(df, conv_backprop_filter_ref(x64, f.shape, dy64, **ref_kw),
                               rtol=1e-4, atol=1e-3)


def test_conv2d_argument_forms():
    x, f = rand(1, 6, 6, 2), rand(3, 3, 2, 2)
    expected = conv_ref(x, f, (2, 2), "SAME")
    for strides in (2, [2], [2, 2], [1, 2, 2, 1]):
        np.testing.assert_allclose(run(lambda a, b: nn.conv2d(a, b, strides, "SAME"), x, f),
                                   expected, rtol=1e-12)
    np.testing.assert_allclose(run(lambda a, b: nn.conv2d(a, filters=b, strides=2,
                                                          padding="SAME"), x, f),
                               expected, rtol=1e-12)
    np.testing.assert_allclose(run(lambda a: nn.conv2d(a, f, 1, "VALID", dilations=2), x),
                               conv_ref(x, f, dilations=(2, 2)), rtol=1e-12)
    with pytest.raises(ValueError, match="Cannot specify both 'filters' and 'filter'"):
        nn.conv2d(tf.constant(x), f, filters=f, strides=1, padding="SAME")
    with pytest.raises(ValueError, match="strides should be of length 1, 2 or 4"):
        nn.conv2d(tf.constant(x), f, strides=[1, 1, 1], padding="SAME")
    with pytest.raises(ValueError, match="must be a list"):
        nn.conv2d(tf.constant(x), f, strides=1, padding="EXPLICIT")
    with pytest.raises(ValueError, match="must be of size 4"):
        nn.conv2d(tf.constant(x), f, strides=1, padding=[[1, 1], [1, 1]])


def test_conv2d_transpose():
    value = rand(2, 4, 3, 5)
    f = rand(3, 3, 2, 5)  # [rows, cols, output channels, input channels]
    out_shape = [2, 8, 6, 2]
    got = run(lambda v, w: nn.conv2d_transpose(v, w, out_shape, [1, 2, 2, 1], "SAME"), value, f)
    np.testing.assert_allclose(
        got, conv_backprop_input_ref(out_shape, f, value, (2, 2), "SAME"), rtol=1e-10)
    got = run(lambda v, w: nn.conv2d_transpose(v, w, out_shape[:1] + [9, 7, 2], 2, "VALID"),
              value, f)
    np.testing.assert_allclose(
        got, conv_backprop_input_ref([2, 9, 7, 2], f, value, (2, 2), "VALID"), rtol=1e-10)
    with tf.Graph().as_default():
        y = nn.conv2d_transpose(tf.constant(value), f, out_shape, 2)
        assert y.op.name == "conv2d_transpose" and y.shape.as_list() == out_shape
        with pytest.raises(ValueError, match="filter and out_backprop must have the same "
                                             "out_depth"):
            nn.conv2d_transpose(tf.constant(value), rand(3, 3, 2, 4), out_shape, 2)


def test_conv2d_backprop_input_with_spatial_sizes_only():
    f, dy = rand(3, 3, 2, 4), rand(2, 3, 3, 4)
    got = run(lambda a, b: apply_op("Conv2DBackpropInput", [np.array([5, 5], np.int32), a, b],
                                    {"strides": [1, 2, 2, 1], "padding": "SAME"}).outputs[0],
              f, dy)
    np.testing.assert_allclose(got, conv_backprop_input_ref((2, 5, 5, 2), f, dy, (2, 2), "SAME"),
                               rtol=1e-10)


def test_conv2d_float32_without_onednn_matches_onednn():
    """FLOWSTONE_ONEDNN=0 makes float32 run the reference loops: both paths must agree."""
    script = """
import numpy as np, sys
import flowstone as tf
from flowstone.ops import conv_ops as nn
rng = np.random.default_rng(3)
x = rng.uniform(-1, 1, (2, 9, 8, 3)).astype(np.float32)
f = rng.uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32)
for fmt in ("NHWC", "NCHW"):
    xi = x if fmt == "NHWC" else x.transpose(0, 3, 1, 2)
    strides = [1, 2, 1, 1] if fmt == "NHWC" else [1, 1, 2, 1]
    with tf.Graph().as_default():
        xt, ft = tf.constant(xi), tf.constant(f)
        y = nn.conv2d(xt, ft, strides, "SAME", data_format=fmt)
        p = nn.max_pool(y, 2, 2, "SAME", data_format=fmt)
        a = nn.avg_pool(y, 3, 2, "SAME", data_format=fmt)
        ones = [tf.constant(np.ones(t.shape.as_list(), np.float32)) for t in (p, a)]
        grads = tf.gradients([p, a], [xt, ft], grad_ys=ones)
        with tf.Session() as sess:
            for v in sess.run([y, p, a] + grads):
                np.save(sys.stdout.buffer, v)
"""

    def outputs(env_value):
        env = dict(os.environ, FLOWSTONE_ONEDNN=env_value)
        raw = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                             capture_output=True).stdout
        buf = io.BytesIO(raw)
        return [np.load(buf) for _ in range(10)]

    for reference, onednn in zip(outputs("0"), outputs("1")):
        assert reference.dtype == np.float32
        np.testing.assert_allclose(onednn, reference, rtol=1e-4, atol=1e-5)


def test_conv2d_gradients_finite_differences():
    for data_format in FORMATS:
        x = image((1, 5, 4, 2), data_format)
        f = rand(3, 2, 2, 3)
        check_gradients(lambda a, b: nn.conv2d(a, b, four((2, 1), data_format), "SAME",
                                               data_format=data_format), [x, f], [0, 1])
    check_gradients(lambda a, b: nn.conv2d(a, b, 1, [[0, 0], [2, 0], [1, 1], [0, 0]],
                                           dilations=2), [rand(1, 5, 5, 2), rand(2, 2, 2, 2)],
                    [0, 1])


def test_conv2d_backprop_ops_gradients():
    """The backprops' own gradients (what second derivatives need)."""
    kw = dict(strides=[1, 2, 1, 1], padding="SAME")
    f, dy, x = rand(3, 3, 2, 3), rand(1, 3, 4, 3), rand(1, 5, 4, 2)
    sizes = np.array(x.shape, np.int32)
    check_gradients(lambda f_, dy_: nn.conv2d_backprop_input(sizes, f_, dy_, **kw), [f, dy],
                    [0, 1])
    check_gradients(
        lambda x_, dy_: nn.conv2d_backprop_filter(x_, np.array(f.shape, np.int32), dy_, **kw),
        [x, dy], [0, 1])


def test_conv2d_second_derivative():
    """d/df of (d sum(w * conv(x, f)) / dx), against finite differences of the first
    derivative."""
    x, f = rand(1, 4, 4, 2), rand(2, 2, 2, 2)
    w = rand(1, 3, 3, 2)

    def first_grad(x_, f_):
        y = nn.conv2d(x_, f_, 1, "VALID")
        return tf.gradients(y, x_, grad_ys=tf.constant(w))[0]

    check_gradients(first_grad, [x, f], [1])


# ------------------------------------------------------------------------------------------------
# Depthwise convolution.

DEPTHWISE_CONFIGS = [
    ((2, 7, 6, 3), (3, 3, 3, 2), (1, 1), "SAME", (1, 1)),
    ((1, 9, 8, 2), (3, 2, 2, 3), (2, 3), "VALID", (1, 1)),
    ((2, 9, 9, 2), (3, 3, 2, 1), (1, 1), "SAME", (2, 2)),
    ((1, 6, 7, 4), (2, 3, 4, 2), (2, 1), [[1, 0], [2, 1]], (1, 1)),
]


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("config", DEPTHWISE_CONFIGS, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_depthwise_forward_and_backprops(config, data_format, dtype):
    in_shape, f_shape, strides, padding, dilations = config
    x = image(in_shape, data_format, dtype)
    f = rand(*f_shape, dtype=dtype)
    kw = dict(strides=four(strides, data_format), padding=explicit_pairs(padding, data_format),
              data_format=data_format, dilations=four(dilations, data_format))
    ref_kw = dict(strides=strides, padding=padding, dilations=dilations, data_format=data_format,
                  depthwise=True)
    expected = conv_ref(x, f, **ref_kw)
    dy = rand(*expected.shape, dtype=dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    y, dx, df = run(lambda x_, f_, dy_: [
        nn.depthwise_conv2d_native(x_, f_, **kw),
        nn.depthwise_conv2d_native_backprop_input(np.array(x.shape, np.int32), f_, dy_, **kw),
        nn.depthwise_conv2d_native_backprop_filter(x_, np.array(f.shape, np.int32), dy_, **kw),
    ], x, f, dy)
    np.testing.assert_allclose(y, expected, **tol)
    np.testing.assert_allclose(dx, conv_backprop_input_ref(x.shape, f, dy, **ref_kw), **tol)
    np.testing.assert_allclose(df, conv_backprop_filter_ref(x, f.shape, dy, **ref_kw), **tol)


def test_depthwise_conv2d_wrapper_and_gradients():
    x, f = rand(1, 6, 5, 2), rand(3, 3, 2, 2)
    got = run(lambda a, b: nn.depthwise_conv2d(a, b, [1, 1, 1, 1], "SAME", rate=[2, 2]), x, f)
    np.testing.assert_allclose(
        got, conv_ref(x, f, padding="SAME", dilations=(2, 2), depthwise=True), rtol=1e-10)
    with tf.Graph().as_default():
        y = nn.depthwise_conv2d(tf.constant(x), f, [1, 2, 2, 1], "VALID")
        assert y.op.name == "depthwise" and y.shape.as_list() == [1, 2, 2, 4]
    check_gradients(lambda a, b: nn.depthwise_conv2d(a, b, [1, 2, 1, 1], "SAME"),
                    [rand(1, 5, 4, 2), rand(2, 3, 2, 2)], [0, 1])
    kw = dict(strides=[1, 1, 2, 1], padding="VALID")
    check_gradients(lambda f_, dy_: nn.depthwise_conv2d_native_backprop_input(
        np.array([1, 4, 5, 2], np.int32), f_, dy_, **kw), [rand(2, 2, 2, 2), rand(1, 3, 2, 4)],
        [0, 1])
    check_gradients(lambda x_, dy_: nn.depthwise_conv2d_native_backprop_filter(
        x_, np.array([2, 2, 2, 2], np.int32), dy_, **kw), [rand(1, 4, 5, 2), rand(1, 3, 2, 4)],
        [0, 1])


# ------------------------------------------------------------------------------------------------
# Pooling.

POOL_CONFIGS = [
    ((2, 7, 6, 3), (2, 2), (2, 2), "VALID"),
    ((2, 7, 6, 3), (3, 3), (2, 2), "SAME"),
    ((1, 9, 8, 2), (3, 2), (1, 3), "SAME"),
    ((1, 9, 8, 2), (3, 3), (3, 2), "VALID"),
    ((1, 5, 6, 4), (1, 1), (2, 2), "SAME"),
    ((2, 5, 5, 1), (5, 5), (1, 1), "VALID"),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("config", POOL_CONFIGS, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pool_forward_and_gradient(kind, config, data_format, dtype):
    in_shape, ksize, strides, padding = config
    x = image(in_shape, data_format, dtype)
    expected = pool_ref(x, ksize, strides, padding, data_format, kind)
    dy = rand(*expected.shape, dtype=dtype)
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    pool = nn.max_pool if kind == "max" else nn.avg_pool

    def build(x_, dy_):
        y = pool(x_, list(ksize), list(strides), padding, data_format=data_format)
        return [y, tf.gradients(y, x_, grad_ys=dy_)[0]]

    y, dx = run(build, x, dy)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, expected, **tol)
    np.testing.assert_allclose(dx, pool_grad_ref(x, dy, ksize, strides, padding, data_format,
                                                 kind), **tol)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("data_format", FORMATS)
def test_pool_batch_split_into_chunks(kind, data_format):
    """Big enough that oneDNN pools the batch in chunks (9 images: 2 + 2 + 2 + 2 + 1)."""
    x = from_nhwc(RNG.permutation(9 * 48 * 48 * 4).reshape(9, 48, 48, 4).astype(np.float32),
                  data_format)
    dy = image((9, 48, 48, 4), data_format, np.float32)
    pool = nn.max_pool if kind == "max" else nn.avg_pool
    kw = dict(ksize=5, strides=1, padding="SAME", data_format=data_format)
    y, dx = run(lambda x_, dy_: [pool(x_, **kw), tf.gradients(pool(x_, **kw), x_,
                                                              grad_ys=dy_)[0]], x, dy)
    np.testing.assert_allclose(y, pool_ref(x, (5, 5), (1, 1), "SAME", data_format, kind),
                               rtol=1e-5)
    np.testing.assert_allclose(
        dx, pool_grad_ref(x, dy.astype(np.float64), (5, 5), (1, 1), "SAME", data_format, kind),
        rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("data_format", FORMATS)
def test_max_pool_gradient_goes_to_first_maximum(dtype, data_format):
    # After a ReLU, whole windows are often zero: TensorFlow sends the gradient to the first.
    x = np.zeros((1, 4, 4, 2), dtype)
    x[0, 2, 3, 1] = 1.0
    x = from_nhwc(x, data_format)
    dy = from_nhwc(np.arange(1, 9, dtype=dtype).reshape(1, 2, 2, 2), data_format)
    got = run(lambda x_, dy_: tf.gradients(nn.max_pool(x_, 2, 2, "VALID",
                                                       data_format=data_format),
                                           x_, grad_ys=dy_)[0], x, dy)
    np.testing.assert_array_equal(
        got, pool_grad_ref(x, dy, (2, 2), (2, 2), "VALID", data_format, "max"))
    expected = np.zeros((1, 4, 4, 2))
    expected[0, 0, 0] = [1, 2]
    expected[0, 0, 2] = [3, 4]
    expected[0, 2, 0] = [5, 6]
    expected[0, 2, 2, 0] = 7
    expected[0, 2, 3, 1] = 8
    np.testing.assert_array_equal(to_nhwc(got, data_format), expected)


def test_max_pool_explicit_padding_and_integer_types():
    for dtype in (np.float64, np.float32):
        x = -np.abs(rand(1, 5, 6, 2, dtype=dtype))  # all negative: padding must not win
        dy = rand(1, 3, 4, 2, dtype=dtype)
        pad = [[0, 0], [1, 2], [2, 1], [0, 0]]
        y, dx = run(lambda a, g: [nn.max_pool(a, 3, 2, pad),
                                  tf.gradients(nn.max_pool(a, 3, 2, pad), a, grad_ys=g)[0]],
                    x, dy)
        np.testing.assert_allclose(y, pool_ref(x, (3, 3), (2, 2), [(1, 2), (2, 1)]), rtol=1e-6)
        np.testing.assert_allclose(dx, pool_grad_ref(x, dy, (3, 3), (2, 2), [(1, 2), (2, 1)]),
                                   rtol=1e-6)
    for dtype in (np.int32, np.int64, np.uint8):
        xi = RNG.integers(0, 100, size=(2, 5, 5, 3)).astype(dtype)
        got = run(lambda a: nn.max_pool2d(a, 2, 2, "SAME"), xi)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, pool_ref(xi, (2, 2), (2, 2), "SAME"))


def test_pool_gradients_finite_differences():
    x = RNG.permutation(60).reshape(1, 5, 4, 3).astype(np.float64) / 10  # no ties
    check_gradients(lambda a: nn.max_pool(a, [2, 3], [2, 1], "SAME"), [x], [0])
    check_gradients(lambda a: nn.avg_pool(a, [3, 2], [2, 2], "SAME", data_format="NCHW"),
                    [rand(1, 2, 5, 4)], [0])
    check_gradients(lambda dy: apply_op("AvgPoolGrad", [np.array([1, 5, 4, 2], np.int32), dy],
                                        {"ksize": [1, 3, 2, 1], "strides": [1, 2, 2, 1],
                                         "padding": "SAME"}).outputs[0],
                    [rand(1, 3, 2, 2)], [0])


# ------------------------------------------------------------------------------------------------
# BiasAdd.

@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_bias_add_and_grad(dtype):
    for shape, fmt, axis in [((3, 4), None, 1), ((2, 3, 4, 5), "NHWC", 3),
                             ((2, 3, 4, 5), "NCHW", 1), ((2, 3, 4), "NCW", 1),
                             ((2, 3, 4, 5, 6), "NDHWC", 4), ((0, 3), None, 1)]:
        x = (rand(*shape) * 10).astype(dtype)
        b = (rand(shape[axis]) * 10).astype(dtype)
        bshape = [1] * len(shape)
        bshape[axis] = shape[axis]
        attrs = {} if fmt is None else {"data_format": "NCHW" if fmt.startswith("NC") else "NHWC"}
        y, g = run(lambda x_, b_: [nn.bias_add(x_, b_, data_format=fmt),
                                   apply_op("BiasAddGrad", [x_], attrs).outputs[0]], x, b)
        assert y.dtype == dtype and g.dtype == dtype
        np.testing.assert_array_equal(y, x + b.reshape(bshape))
        axes = tuple(i for i in range(len(shape)) if i != axis)
        # float32 sums of mixed signs can cancel: bound the error by the magnitudes summed.
        np.testing.assert_allclose(g, x.sum(axis=axes), rtol=1e-6,
                                   atol=1e-6 * np.abs(x).sum(axis=axes).max(initial=0))


def test_bias_add_gradients():
    check_gradients(lambda x, b: nn.bias_add(x, b, data_format="NCHW"),
                    [rand(2, 3, 2, 2), rand(3)], [0, 1])
    check_gradients(lambda x, b: nn.bias_add(x, b), [rand(2, 2, 3), rand(3)], [0, 1])


def test_bias_add_grad_gradient():
    check_gradients(lambda g: apply_op("BiasAddGrad", [g], {"data_format": "NCHW"}).outputs[0],
                    [rand(2, 3, 2, 2)], [0])


def test_bias_add_large_sum_is_accurate():
    x = np.full((100000, 3), 0.1, np.float32)
    g = run(lambda a: apply_op("BiasAddGrad", [a]).outputs[0], x)
    np.testing.assert_allclose(g, [10000.0] * 3, rtol=1e-5)


# ------------------------------------------------------------------------------------------------
# Static shapes.

def shape_of(build, *shapes, dtype=tf.float32):
    with tf.Graph().as_default():
        return build(*[tf.placeholder(dtype, s) for s in shapes]).shape.as_list()


def test_static_shapes():
    conv = nn.conv2d
    assert shape_of(lambda x, f: conv(x, f, 1, "SAME"), [2, 7, 6, 3], [3, 3, 3, 4]) == \
        [2, 7, 6, 4]
    assert shape_of(lambda x, f: conv(x, f, [2, 3], "SAME"), [2, 7, 8, 3], [3, 3, 3, 4]) == \
        [2, 4, 3, 4]
    assert shape_of(lambda x, f: conv(x, f, 2, "VALID"), [2, 7, 8, 3], [3, 3, 3, 4]) == \
        [2, 3, 3, 4]
    assert shape_of(lambda x, f: conv(x, f, 1, "VALID", dilations=2), [1, 7, 8, 3],
                    [3, 3, 3, 4]) == [1, 3, 4, 4]
    assert shape_of(lambda x, f: conv(x, f, 1, [[0, 0], [1, 2], [0, 0], [0, 0]]), [1, 7, 8, 3],
                    [3, 3, 3, 4]) == [1, 8, 6, 4]
    assert shape_of(lambda x, f: conv(x, f, 2, "SAME", data_format="NCHW"), [1, 3, 7, 8],
                    [3, 3, 3, 4]) == [1, 4, 4, 4]
    assert shape_of(lambda x, f: conv(x, f, 1, "SAME"), [None, 5, None, 3], [3, 3, 3, 4]) == \
        [None, 5, None, 4]
    assert shape_of(lambda x, f: conv(x, f, 1, "SAME"), None, [3, 3, None, 4]) == \
        [None, None, None, 4]
    # An input one short of a VALID window gives an empty output, as in TensorFlow.
    assert shape_of(lambda x, f: conv(x, f, 1, "VALID"), [1, 2, 3, 1], [3, 3, 1, 1]) == \
        [1, 0, 1, 1]
    assert shape_of(lambda x, f: nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME"), [2, 5, 5, 3],
                    [3, 3, 3, 2]) == [2, 5, 5, 6]
    assert shape_of(lambda x: nn.max_pool(x, 2, 2, "SAME"), [2, 7, 6, 3]) == [2, 4, 3, 3]
    assert shape_of(lambda x: nn.avg_pool(x, 3, [1, 2], "VALID", data_format="NCHW"),
                    [2, 3, 7, 6]) == [2, 3, 5, 2]
    assert shape_of(lambda x, b: nn.bias_add(x, b), [None, 4], [None]) == [None, 4]
    assert shape_of(lambda x, b: nn.bias_add(x, b, data_format="NCHW"), [2, None, 3],
                    [5]) == [2, 5, 3]
    assert shape_of(lambda f, dy: nn.conv2d_backprop_input([2, 9, 8, 3], f, dy, 2, "SAME"),
                    [3, 3, 3, 4], [2, 5, 4, 4]) == [2, 9, 8, 3]
    assert shape_of(lambda x, dy: nn.conv2d_backprop_filter(x, [3, 3, 3, 4], dy, 2, "SAME"),
                    [2, 9, 8, 3], [2, 5, 4, 4]) == [3, 3, 3, 4]
    with tf.Graph().as_default():
        sizes = tf.placeholder(tf.int32, [4])
        f = tf.placeholder(tf.float32, [3, 3, 3, 4])
        assert nn.conv2d_backprop_input(sizes, f, tf.placeholder(tf.float32, [2, 5, 4, 4]), 2,
                                        "SAME").shape.as_list() == [2, None, None, None]


# ------------------------------------------------------------------------------------------------
# Errors.

def build_error(build, *shapes, dtype=tf.float32):
    with tf.Graph().as_default():
        build(*[tf.placeholder(dtype, s) for s in shapes])


@pytest.mark.parametrize("build,shapes,message", [
    (lambda x, f: nn.conv2d(x, f, 1, "SAME"), ([1, 5, 5, 3], [3, 3, 4, 2]),
     r"Depth of input \(3\) is not a multiple of input depth of filter \(4\) for 'Conv2D' "
     r"\(op: Conv2D\) with input shapes: \[1,5,5,3\], \[3,3,4,2\]"),
    (lambda x, f: nn.conv2d(x, f, 1, "VALID"), ([1, 3, 5, 1], [5, 3, 1, 2]),
     r"Computed output size would be negative: -1 \[input_size: 3, effective_filter_size: 5, "
     r"stride: 1\]"),
    (lambda x, f: nn.conv2d(x, f, 1, "VALID", dilations=3), ([1, 5, 5, 1], [3, 3, 1, 1]),
     r"effective_filter_size: 7"),
    (lambda x, f: nn.conv2d(x, f, 1, "SAME"), ([5, 5, 3], [3, 3, 3, 2]),
     "Shape must be rank 4 but is rank 3"),
    (lambda x, f: nn.conv2d(x, f, [1, 0, 1, 1], "SAME"), ([1, 5, 5, 1], [3, 3, 1, 1]),
     "strides should be larger than 0"),
    (lambda x, f: nn.conv2d(x, f, [2, 1, 1, 1], "SAME"), ([1, 5, 5, 1], [3, 3, 1, 1]),
     "does not yet support strides in the batch and depth dimensions"),
    (lambda x, f: nn.conv2d(x, f, 1, "SAME", dilations=[1, 1, 1, 2]),
     ([1, 5, 5, 1], [3, 3, 1, 1]), "does not yet support dilations in the batch and depth"),
    (lambda x, f: nn.conv2d(x, f, 1, "SAME", dilations=0), ([1, 5, 5, 1], [3, 3, 1, 1]),
     "Dilated rates should be larger than 0"),
    (lambda x, f: nn.conv2d(x, f, 1, "FULL"), ([1, 5, 5, 1], [3, 3, 1, 1]),
     r"Value for attr 'padding' of \"FULL\" is not in the list of allowed values"),
    (lambda x, f: nn.conv2d(x, f, 1, "SAME", data_format="NCWH"), ([1, 5, 5, 1], [3, 3, 1, 1]),
     r"Value for attr 'data_format' of \"NCWH\""),
    (lambda x, f: nn.conv2d(x, f, 1, [[1, 0], [0, 0], [0, 0], [0, 0]]),
     ([1, 5, 5, 1], [3, 3, 1, 1]), "Nonzero explicit padding in the batch or depth"),
    (lambda x, f: nn.conv2d(x, f, 1, [[0, 0], [-1, 0], [0, 0], [0, 0]]),
     ([1, 5, 5, 1], [3, 3, 1, 1]), "must be nonnegative"),
    (lambda x, f: nn.conv2d(x, f, 1, "SAME"), ([1, 5, 5, 1], [0, 3, 1, 1]),
     "Filter rows and columns must be positive"),
    (lambda x, f: nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME"),
     ([1, 5, 5, 3], [3, 3, 4, 2]), "input and filter must have the same depth: 3 vs 4"),
    (lambda f, dy: nn.conv2d_backprop_input([1, 7, 7, 2], f, dy, 2, "VALID"),
     ([3, 3, 2, 4], [1, 4, 3, 4]),
     r"Conv2DBackpropInput: Size of out_backprop doesn't match computed: actual = 4, "
     r"computed = 3 spatial_dim: 1 input: 7 filter: 3 output: 4 stride: 2 dilation: 1"),
    (lambda f, dy: nn.conv2d_backprop_input([1, 7, 7, 2], f, dy, 2, "VALID"),
     ([3, 3, 2, 4], [2, 3, 3, 4]), "input and out_backprop must have the same batch size"),
    (lambda f, dy: nn.conv2d_backprop_input([1, 7, 7], f, dy, 2, "VALID"),
     ([3, 3, 2, 4], [1, 3, 3, 4]), "input_sizes must be a vector of 4 or 2 sizes"),
    (lambda x, dy: nn.conv2d_backprop_filter(x, [3, 3, 2, 5], dy, 2, "VALID"),
     ([1, 7, 7, 2], [1, 3, 3, 4]), "filter and out_backprop must have the same out_depth"),
    (lambda x: nn.max_pool(x, [1, 2, 2, 2], 1, "SAME"), ([1, 5, 5, 4],),
     "Pooling is not yet supported on the batch or depth dimension"),
    (lambda x: nn.max_pool(x, 0, 1, "SAME"), ([1, 5, 5, 4],),
     "Sliding window ksize must be positive"),
    (lambda x: nn.max_pool(x, 2, [1, 1, 1], "SAME"), ([1, 5, 5, 4],),
     "strides should be of length 1, 2 or 4"),
    (lambda x: nn.max_pool(x, 7, 1, "VALID"), ([1, 5, 5, 4],),
     "Computed output size would be negative"),
    (lambda x: nn.max_pool(x, 2, 1, [[0, 0], [2, 0], [0, 0], [0, 0]]), ([1, 5, 5, 4],),
     r"explicit padding \(2\) must be smaller than the window size \(2\)"),
    (lambda x: nn.avg_pool(x, 2, 1, [[0, 0], [1, 0], [0, 0], [0, 0]]), ([1, 5, 5, 4],),
     r"Value for attr 'padding' of \"EXPLICIT\""),
    (lambda x, b: nn.bias_add(x, b), ([2, 4], [3]),
     "Dimensions must be equal, but are 4 and 3 for 'BiasAdd'"),
    (lambda x, b: nn.bias_add(x, b), ([4], [4]), "Shape must be at least rank 2 but is rank 1"),
    (lambda x, b: nn.bias_add(x, b), ([2, 4], [1, 4]), "Shape must be rank 1 but is rank 2"),
])
def test_graph_build_errors(build, shapes, message):
    with pytest.raises(ValueError, match=message):
        build_error(build, *shapes)


def test_bias_add_bad_data_format():
    with pytest.raises(ValueError, match=r"data_format must be of the form `N...C` or `NC...`"):
        build_error(lambda x, b: nn.bias_add(x, b, data_format="CHWN"), [2, 4], [4])


def run_error(build, *inputs):
    """Builds with fully unknown shapes so that the check happens in the kernel."""
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf.as_dtype(np.asarray(x).dtype), None) for x in inputs]
        out = build(*phs)
    with tf.Session(graph=graph) as sess:
        sess.run(out, dict(zip(phs, inputs)))


@pytest.mark.parametrize("build,inputs,message", [
    (lambda x, f: nn.conv2d(x, f, 1, "SAME"), (rand(1, 5, 5, 3), rand(3, 3, 4, 2)),
     r"Depth of input \(3\) is not a multiple of input depth of filter \(4\) \(input shape "
     r"\[1,5,5,3\], filter shape \[3,3,4,2\]\)"),
    (lambda x, f: nn.conv2d(x, f, 1, "VALID"), (rand(1, 3, 5, 1), rand(5, 3, 1, 2)),
     r"Computed output size would be negative: -1 \[input_size: 3, effective_filter_size: 5"),
    (lambda x, f: nn.conv2d(x, f, 1, "SAME"), (rand(5, 5, 3), rand(3, 3, 3, 2)),
     r"Conv2D: input must be 4-dimensional, but got shape \[5,5,3\]"),
    (lambda s, f, dy: nn.conv2d_backprop_input(s, f, dy, 1, "VALID"),
     (np.array([1, -7, 7, 2], np.int32), rand(3, 3, 2, 4), rand(1, 5, 5, 4)),
     "input_sizes must hold non-negative sizes"),
    (lambda s, f, dy: nn.conv2d_backprop_input(s, f, dy, 1, "VALID"),
     (np.array([1, 7, 7], np.int32), rand(3, 3, 2, 4), rand(1, 5, 5, 4)),
     r"input_sizes must be a vector of 4 or 2 sizes, but has shape \[3\]"),
    (lambda s, f, dy: nn.conv2d_backprop_input(s, f, dy, 1, "VALID"),
     (np.array([1, 7, 7, 2], np.int32), rand(3, 3, 2, 4), rand(1, 5, 6, 4)),
     r"Size of out_backprop doesn't match computed: actual = 6, computed = 5 spatial_dim: 2"),
    (lambda x, s, dy: nn.conv2d_backprop_filter(x, s, dy, 1, "VALID"),
     (rand(1, 7, 7, 2), np.array([3, 3, 2, 4], np.int32), rand(2, 5, 5, 4)),
     "input and out_backprop must have the same batch size, but are 1 and 2"),
    (lambda x, dy: apply_op("MaxPoolGrad", [x, dy, dy], {"ksize": [1, 2, 2, 1],
                                                          "strides": [1, 2, 2, 1],
                                                          "padding": "VALID"}).outputs[0],
     (rand(1, 4, 4, 1), rand(1, 3, 2, 1)),
     r"MaxPoolGrad: orig_output must have the shape of the pooled input, \[1,2,2,1\], but has "
     r"shape \[1,3,2,1\]"),
    (lambda x: nn.max_pool(x, 7, 1, "VALID"), (rand(1, 5, 5, 1),),
     r"Computed output size would be negative.*\(input shape \[1,5,5,1\]\)"),
    (lambda x, b: nn.bias_add(x, b), (rand(2, 4), rand(3)),
     r"Must provide as many biases as the last dimension of the input tensor: \[3\] vs. \[2,4\]"),
    (lambda x, b: nn.bias_add(x, b), (rand(4), rand(4)), r"Input tensor must be at least 2D: \[4\]"),
])
def test_run_time_errors(build, inputs, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        run_error(build, *inputs)


def test_grouped_convolution_is_unimplemented_on_cpu():
    with pytest.raises(tf.errors.UnimplementedError, match="does not support grouped"):
        run_error(lambda x, f: nn.conv2d(x, f, 1, "SAME"), rand(1, 5, 5, 4), rand(3, 3, 2, 2))


# ------------------------------------------------------------------------------------------------
# Edge cases and concurrency.

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_tensors(dtype):
    f = rand(3, 3, 2, 4, dtype=dtype)
    y = run(lambda x, w: nn.conv2d(x, w, 1, "SAME"), np.zeros((0, 5, 5, 2), dtype), f)
    assert y.shape == (0, 5, 5, 4)
    y = run(lambda x, w: nn.conv2d(x, w, 1, "VALID"), rand(1, 2, 5, 2, dtype=dtype), f)
    assert y.shape == (1, 0, 3, 4)
    y = run(lambda x, w: nn.conv2d(x, w, 1, "SAME"), np.zeros((1, 4, 4, 0), dtype),
            np.zeros((3, 3, 0, 2), dtype))
    np.testing.assert_array_equal(y, np.zeros((1, 4, 4, 2)))
    df = run(lambda x, dy: nn.conv2d_backprop_filter(x, [3, 3, 2, 4], dy, 1, "SAME"),
             np.zeros((0, 5, 5, 2), dtype), np.zeros((0, 5, 5, 4), dtype))
    np.testing.assert_array_equal(df, np.zeros((3, 3, 2, 4)))
    y = run(lambda x: nn.max_pool(x, 2, 2, "SAME"), np.zeros((0, 5, 5, 2), dtype))
    assert y.shape == (0, 3, 3, 2)


def test_changing_shapes_and_concurrent_runs():
    """One kernel sees many input shapes (more than its primitive cache holds) and runs from
    several threads at once."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, None, None, 3])
        sizes = tf.placeholder(tf.int32, [4])
        dp = tf.placeholder(tf.float32, [None, None, None, 4])
        f = tf.constant(rand(3, 3, 3, 4, dtype=np.float32))
        y = nn.conv2d(x, f, 1, "SAME")
        p = nn.max_pool(y, 2, 2, "SAME")
        pool_attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "SAME"}
        dy = apply_op("MaxPoolGrad", [y, p, dp], pool_attrs).outputs[0]
        gx = nn.conv2d_backprop_input(sizes, f, dy, 1, "SAME")
        gf = nn.conv2d_backprop_filter(x, [3, 3, 3, 4], dy, 1, "SAME")
    inputs = [rand(b, 5 + b, 4 + b % 3, 3, dtype=np.float32) for b in range(1, 13)]
    with tf.Session(graph=graph) as sess:
        f64 = sess.run(f).astype(np.float64)
        results = {}

        def work(k):
            b, h, w, _ = inputs[k].shape
            feed = {x: inputs[k], sizes: inputs[k].shape,
                    dp: np.ones((b, -(-h // 2), -(-w // 2), 4), np.float32)}
            for _ in range(3):
                results[k] = sess.run([y, p, gx, gf], feed)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k, xv in enumerate(inputs):
        yv, pv, gxv, gfv = results[k]
        np.testing.assert_allclose(yv, conv_ref(xv, f64, padding="SAME"), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(pv, pool_ref(yv, (2, 2), (2, 2), "SAME"), rtol=1e-6)
        dyv = pool_grad_ref(yv, np.ones(pv.shape), (2, 2), (2, 2), "SAME")
        np.testing.assert_allclose(
            gxv, conv_backprop_input_ref(xv.shape, f64, dyv, padding="SAME"), rtol=1e-4,
            atol=1e-5)
        np.testing.assert_allclose(
            gfv, conv_backprop_filter_ref(xv, f64.shape, dyv, padding="SAME"), rtol=1e-4,
            atol=1e-4)


def test_gradient_with_unknown_shapes_uses_shape_op():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, None)
        f = tf.placeholder(tf.float64, None)
        y = nn.avg_pool(nn.conv2d(x, f, 1, "SAME"), 2, 2, "SAME")
        grads = tf.gradients(y, [x, f], grad_ys=tf.ones_like(y))
    xv, fv = rand(1, 5, 4, 2), rand(3, 3, 2, 2)
    with tf.Session(graph=graph) as sess:
        gx, gf = sess.run(grads, {x: xv, f: fv})
    yv = conv_ref(xv, fv, padding="SAME")
    dy = pool_grad_ref(yv, np.ones((1, 3, 2, 2)), (2, 2), (2, 2), "SAME", kind="avg")
    np.testing.assert_allclose(gx, conv_backprop_input_ref(xv.shape, fv, dy, padding="SAME"),
                               rtol=1e-10)
    np.testing.assert_allclose(gf, conv_backprop_filter_ref(xv, fv.shape, dy, padding="SAME"),
                               rtol=1e-10)
