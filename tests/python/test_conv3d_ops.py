"""3-D convolutions and pooling, MaxPoolWithArgmax, and the convolutions built on the 2-D ops
(conv1d, atrous_conv2d, separable_conv2d) against float64 numpy references; float32 (oneDNN, one
call per image) against the same references; gradients against central finite differences;
static shapes, TensorFlow's op names, and error paths."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op

from conv3d_reference import (conv3d_backprop_filter_ref, conv3d_backprop_input_ref, conv3d_ref,
                              from_ndhwc, pool3d_grad_ref, pool3d_ref)
from gradient_check import check_gradients
from conv_reference import conv_ref

RNG = np.random.default_rng(314)


def rand(*shape, dtype=np.float64):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


def run(build, *inputs):
    """Builds build(*placeholders) in a fresh graph and runs it on `inputs`."""
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf.as_dtype(np.asarray(x).dtype), np.shape(x)) for x in inputs]
        out = build(*phs)
    with tf.Session(graph=graph) as sess:
        return sess.run(out, dict(zip(phs, inputs)))


# ------------------------------------------------------------------------------------------------
# Conv3D

CONV3D_CONFIGS = [
    # (input NDHWC shape, filter shape, strides, padding, dilations)
    ((2, 5, 4, 6, 3), (2, 3, 2, 3, 4), (1, 1, 1), "VALID", (1, 1, 1)),
    ((1, 6, 5, 4, 2), (3, 2, 2, 2, 3), (2, 2, 1), "SAME", (1, 1, 1)),
    ((2, 7, 5, 5, 2), (2, 2, 2, 2, 2), (1, 2, 1), "SAME", (2, 1, 2)),
    ((1, 4, 4, 4, 1), (4, 1, 3, 1, 2), (3, 1, 2), "VALID", (1, 2, 1)),
]


@pytest.mark.parametrize("data_format", ["NDHWC", "NCDHW"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape,fshape,strides,padding,dilations", CONV3D_CONFIGS)
def test_conv3d_and_its_backprops_match_the_reference(shape, fshape, strides, padding, dilations,
                                                      dtype, data_format):
    x = from_ndhwc(rand(*shape), data_format)
    f = rand(*fshape)
    expected = conv3d_ref(x, f, strides, padding, dilations, data_format)
    dy = rand(*expected.shape)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    strides5 = [1] + list(strides) + [1] if data_format == "NDHWC" else [1, 1] + list(strides)
    dil5 = [1] + list(dilations) + [1] if data_format == "NDHWC" else [1, 1] + list(dilations)

    got = run(lambda a, b: tf.nn.conv3d(a, b, strides5, padding, data_format=data_format,
                                        dilations=dil5), x.astype(dtype), f.astype(dtype))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, **tol)

    attrs = {"strides": strides5, "padding": padding, "data_format": data_format,
             "dilations": dil5}
    dx = run(lambda b, g: apply_op("Conv3DBackpropInputV2", [np.array(x.shape, np.int32), b, g],
                                   attrs).outputs[0], f.astype(dtype), dy.astype(dtype))
    np.testing.assert_allclose(dx, conv3d_backprop_input_ref(x.shape, f, dy, strides, padding,
                                                             dilations, data_format), **tol)
    df = run(lambda a, g: tf.nn.conv3d_backprop_filter_v2(a, fshape, g, strides5, padding,
                                                          data_format, dil5),
             x.astype(dtype), dy.astype(dtype))
    np.testing.assert_allclose(df, conv3d_backprop_filter_ref(x, fshape, dy, strides, padding,
                                                              dilations, data_format), **tol)


def test_conv3d_float32_batches_match_float64_image_by_image():
    # oneDNN runs one call per image, spread over the intra-op pool; the filter gradient sums
    # the per-image partial filters in order.
    x, f = rand(5, 4, 6, 5, 3), rand(2, 3, 3, 3, 4)
    dy = rand(5, 4, 6, 5, 4)
    attrs = {"strides": [1, 1, 1, 1, 1], "padding": "SAME"}
    got = run(lambda a, b, g: [
        tf.nn.conv3d(a, b, [1, 1, 1, 1, 1], "SAME"),
        apply_op("Conv3DBackpropFilterV2", [a, np.array(f.shape, np.int32), g], attrs).outputs[0],
    ], x.astype(np.float32), f.astype(np.float32), dy.astype(np.float32))
    np.testing.assert_allclose(got[0], conv3d_ref(x, f, padding="SAME"), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], conv3d_backprop_filter_ref(x, f.shape, dy, padding="SAME"),
                               rtol=1e-4, atol=1e-4)


def test_conv3d_gradients_match_finite_differences_to_second_order():
    x, f = rand(1, 3, 4, 3, 2), rand(2, 2, 2, 2, 2)
    strides = [1, 2, 1, 1, 1]
    check_gradients(lambda a, b: tf.nn.conv3d(a, b, strides, "SAME"), [x, f], [0, 1])
    # The gradient of the input gradient, through Conv3DBackpropInputV2's own gradient.
    def input_grad(a, b):
        y = tf.nn.conv3d(a, b, strides, "SAME")
        return tf.gradients(tf.reduce_sum(y * y), a)[0]
    check_gradients(input_grad, [x, f], [0, 1], rtol=1e-5, atol=1e-7)


def test_conv3d_transpose_is_the_input_gradient():
    f, dy = rand(2, 2, 3, 3, 4), rand(2, 3, 2, 3, 4)
    out_shape = [2, 5, 4, 6, 3]
    graph = tf.Graph()
    with graph.as_default():
        y = tf.nn.conv3d_transpose(tf.constant(dy), tf.constant(f), out_shape, [1, 2, 2, 2, 1],
                                   "SAME")
        assert y.op.name == "conv3d_transpose"
        assert y.shape.as_list() == out_shape
    with tf.Session(graph=graph) as sess:
        got = sess.run(y)
    np.testing.assert_allclose(
        got, conv3d_backprop_input_ref(out_shape, f, dy, (2, 2, 2), "SAME"), rtol=1e-10)


def test_conv3d_static_shapes_and_names():
    x = tf.placeholder(tf.float32, [None, 8, 7, 6, 3])
    y = tf.nn.conv3d(x, tf.zeros([3, 3, 3, 3, 5]), [1, 2, 2, 1, 1], "SAME")
    assert y.op.name == "Conv3D"
    assert y.shape.as_list() == [None, 4, 4, 6, 5]
    z = tf.nn.conv3d(x, tf.zeros([3, 2, 1, 3, 5]), [1, 1, 1, 1, 1], "VALID",
                     dilations=[1, 2, 1, 1, 1], name="c")
    assert z.op.name == "c"
    assert z.shape.as_list() == [None, 4, 6, 6, 5]


@pytest.mark.parametrize("build,message", [
    (lambda: tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 2]), tf.zeros([2, 2, 2, 3, 1]),
                          [1, 1, 1, 1, 1], "SAME"), "in_depth: 2 vs 3"),
    (lambda: tf.nn.conv3d(tf.zeros([1, 4, 4, 4]), tf.zeros([2, 2, 2, 4, 1]),
                          [1, 1, 1, 1, 1], "SAME"), "rank 5"),
    (lambda: tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 2]), tf.zeros([2, 2, 2, 2, 1]),
                          [2, 1, 1, 1, 1], "SAME"), "batch and depth dimensions"),
    (lambda: tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 2]), tf.zeros([2, 2, 2, 2, 1]),
                          [1, 1, 1, 1], "SAME"), "must specify 5 dimensions"),
    (lambda: tf.nn.conv3d(tf.zeros([1, 4, 4, 4, 2]), tf.zeros([2, 2, 2, 2, 1]),
                          [1, 1, 1, 1, 1], "FULL"), "'padding'"),
    (lambda: tf.nn.conv3d(tf.zeros([1, 2, 4, 4, 2]), tf.zeros([4, 2, 2, 2, 1]),
                          [1, 1, 1, 1, 1], "VALID"), "output size"),
])
def test_conv3d_rejects_bad_arguments_while_building(build, message):
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match=message):
        build()


def test_conv3d_run_time_errors_keep_the_session_usable():
    x = tf.placeholder(tf.float32, None)
    y = tf.nn.conv3d(x, tf.zeros([2, 2, 2, 2, 1]), [1, 1, 1, 1, 1], "SAME")
    sizes = tf.placeholder(tf.int32, [5])
    dx = tf.nn.conv3d_transpose(tf.zeros([1, 2, 2, 2, 1]), tf.zeros([2, 2, 2, 2, 1]), sizes,
                                [1, 1, 1, 1, 1], "SAME")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="in_depth: 3 vs 2"):
            sess.run(y, {x: np.zeros([1, 3, 3, 3, 3], np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be 5-dimensional"):
            sess.run(y, {x: np.zeros([3, 3, 3, 2], np.float32)})
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative sizes"):
            sess.run(dx, {sizes: [1, -2, 2, 2, 2]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="out_backprop must have"):
            sess.run(dx, {sizes: [1, 5, 2, 2, 2]})
        assert sess.run(y, {x: np.ones([1, 3, 3, 3, 2], np.float32)}).shape == (1, 3, 3, 3, 1)


# ------------------------------------------------------------------------------------------------
# 3-D pooling

POOL_CONFIGS = [
    ((2, 5, 4, 6, 3), (2, 2, 2), (2, 2, 2), "VALID"),
    ((1, 5, 5, 4, 2), (3, 2, 3), (2, 1, 2), "SAME"),
    ((1, 3, 4, 2, 2), (1, 3, 2), (1, 2, 1), "SAME"),
]


@pytest.mark.parametrize("data_format", ["NDHWC", "NCDHW"])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("shape,ksize,strides,padding", POOL_CONFIGS)
def test_pool3d_and_gradients_match_the_reference(shape, ksize, strides, padding, kind,
                                                  data_format):
    # Distinct values: no window has a tie, so the max gradient has one answer.
    x = from_ndhwc(RNG.permutation(np.prod(shape)).reshape(shape) / 7.0, data_format)
    pool = tf.nn.max_pool3d if kind == "max" else tf.nn.avg_pool3d
    expected = pool3d_ref(x, ksize, strides, padding, kind, data_format)
    dy = rand(*expected.shape)

    def build(a, g):
        y = pool(a, ksize, strides, padding, data_format=data_format)
        return [y, tf.gradients(y, a, grad_ys=g)[0]]

    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        y, dx = run(build, x.astype(dtype), dy.astype(dtype))
        np.testing.assert_allclose(y, expected, rtol=tol, atol=tol)
        np.testing.assert_allclose(
            dx, pool3d_grad_ref(x, dy, ksize, strides, padding, kind, data_format), rtol=tol,
            atol=tol)


def test_pool3d_names_shapes_and_errors():
    x = tf.placeholder(tf.float32, [None, 6, 5, 4, 3])
    y = tf.nn.max_pool3d(x, 2, 2, "SAME")
    assert y.op.name == "MaxPool3D" and y.shape.as_list() == [None, 3, 3, 2, 3]
    z = tf.nn.avg_pool3d(x, [1, 3, 1, 1, 1], [1, 1, 1, 1, 1], "VALID", name="avg")
    assert z.op.name == "avg" and z.shape.as_list() == [None, 4, 5, 4, 3]
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="batch and depth"):
        tf.nn.max_pool3d(x, [2, 1, 1, 1, 1], 1, "SAME")
    with pytest.raises(ValueError, match="should be of length 1, 3 or 5"):
        tf.nn.avg_pool3d(x, [2, 2], 1, "SAME")


# ------------------------------------------------------------------------------------------------
# MaxPoolWithArgmax

def test_max_pool_with_argmax_indexes_and_gradient():
    x = RNG.permutation(2 * 5 * 4 * 3).reshape(2, 5, 4, 3) / 10.0
    for include_batch in (False, True):
        def build(a):
            y, arg = tf.nn.max_pool_with_argmax(a, [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                                include_batch_in_index=include_batch)
            return [y, arg, tf.gradients(tf.reduce_sum(y * y), a)[0]]
        y, arg, dx = run(build, x)
        assert arg.dtype == np.int64
        flat = x.reshape(-1) if include_batch else x.reshape(2, -1)
        gathered = (flat[arg] if include_batch else
                    np.stack([flat[b][arg[b]] for b in range(2)]))
        np.testing.assert_array_equal(gathered, y)
        np.testing.assert_array_equal(y, np.maximum.reduceat(np.maximum.reduceat(
            np.pad(x, ((0, 0), (0, 1), (0, 0), (0, 0)), constant_values=-1), [0, 2, 4], axis=1),
            [0, 2], axis=2))
        expected = np.zeros_like(x)
        for b, i, j, c in np.ndindex(y.shape):
            index = arg[b, i, j, c] if include_batch else b * x[0].size + arg[b, i, j, c]
            expected.reshape(-1)[index] += 2 * y[b, i, j, c]
        np.testing.assert_allclose(dx, expected)


def test_max_pool_grad_with_argmax_rejects_indices_outside_the_input():
    x = tf.zeros([1, 2, 2, 1])
    arg = tf.placeholder(tf.int64, [1, 1, 1, 1])
    g = apply_op("MaxPoolGradWithArgmax", [x, tf.ones([1, 1, 1, 1]), arg],
                 {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}).outputs[0]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"argmax index 9 .* \[0, 4\)"):
            sess.run(g, {arg: [[[[9]]]]})
        np.testing.assert_array_equal(sess.run(g, {arg: [[[[3]]]]}).ravel(), [0, 0, 0, 1])


def test_max_pool_with_argmax_only_takes_nhwc_and_int_argmax_types():
    with pytest.raises(ValueError, match="Data formats other than 'NHWC'"):
        tf.nn.max_pool_with_argmax(tf.zeros([1, 2, 2, 1]), 2, 2, "SAME", data_format="NCHW")
    _, arg = tf.nn.max_pool_with_argmax(tf.zeros([1, 4, 4, 1]), 2, 2, "SAME",
                                        output_dtype=tf.int32)
    assert arg.dtype == tf.int32 and arg.shape.as_list() == [1, 2, 2, 1]


# ------------------------------------------------------------------------------------------------
# Convolutions built on the 2-D ops

@pytest.mark.parametrize("data_format", ["NWC", "NCW"])
def test_conv1d_matches_a_one_row_conv2d(data_format):
    x, f = rand(2, 9, 3), rand(3, 3, 4)
    xin = x if data_format == "NWC" else x.transpose(0, 2, 1)
    expected = conv_ref(x[:, None], f[None], (1, 2), "SAME", (1, 1))[:, 0]
    if data_format == "NCW":
        expected = expected.transpose(0, 2, 1)
    got = run(lambda a, b: tf.nn.conv1d(a, b, 2, "SAME", data_format=data_format), xin, f)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    check_gradients(lambda a, b: tf.nn.conv1d(a, b, 1, "VALID", dilations=2,
                                              data_format=data_format), [xin, f], [0, 1])


def test_conv1d_names_like_tensorflow():
    y = tf.nn.conv1d(tf.zeros([2, 5, 4]), tf.zeros([3, 4, 2]), 1, "SAME")
    assert y.name == "conv1d/Squeeze:0"
    assert y.op.inputs[0].op.name == "conv1d"
    with pytest.raises(ValueError, match="`data_format` must be 'NWC' or 'NCW'"):
        tf.nn.conv1d(tf.zeros([2, 5, 4]), tf.zeros([3, 4, 2]), 1, "SAME", data_format="NHWC4")


def test_atrous_conv2d_is_a_dilated_convolution():
    x, f = rand(1, 7, 6, 2), rand(3, 2, 2, 3)
    got = run(lambda a, b: tf.nn.atrous_conv2d(a, b, 2, "SAME"), x, f)
    np.testing.assert_allclose(got, conv_ref(x, f, (1, 1), "SAME", (2, 2)), rtol=1e-12)
    assert tf.nn.atrous_conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([2, 2, 1, 1]), 2,
                               "VALID").op.name == "convolution"
    with pytest.raises(ValueError, match="dilation_rate must be positive"):
        tf.nn.atrous_conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([2, 2, 1, 1]), 0, "VALID")


def test_separable_conv2d_is_depthwise_then_pointwise():
    x, dw, pw = rand(2, 6, 5, 3), rand(3, 2, 3, 2), rand(1, 1, 6, 4)
    got = run(lambda a, b, c: tf.nn.separable_conv2d(a, b, c, [1, 1, 1, 1], "SAME", rate=[2, 1]),
              x, dw, pw)
    depthwise = conv_ref(x, dw, (1, 1), "SAME", (2, 1), depthwise=True)
    np.testing.assert_allclose(got, np.einsum("nhwc,co->nhwo", depthwise, pw[0, 0]), rtol=1e-12)
    check_gradients(lambda a, b, c: tf.nn.separable_conv2d(a, b, c, [1, 2, 2, 1], "VALID"),
                    [x[:1], dw, pw], [0, 1, 2])
    y = tf.nn.separable_conv2d(tf.zeros([1, 4, 4, 3]), tf.zeros([2, 2, 3, 2]),
                               tf.zeros([1, 1, 6, 4]), [1, 1, 1, 1], "SAME")
    assert y.op.name == "separable_conv2d"
    assert y.op.inputs[0].op.name == "separable_conv2d/depthwise"
    with pytest.raises(ValueError, match="not compatible"):
        tf.nn.separable_conv2d(tf.zeros([1, 4, 4, 3]), tf.zeros([2, 2, 3, 2]),
                               tf.zeros([2, 1, 6, 4]), [1, 1, 1, 1], "SAME")


@pytest.mark.parametrize("pooling_type", ["MAX", "AVG"])
def test_pool_in_one_two_and_three_dimensions(pooling_type):
    kind = pooling_type.lower()
    x3 = rand(2, 4, 5, 3, 2)
    got = run(lambda a: tf.nn.pool(a, [2, 3, 1], pooling_type, "SAME", strides=[1, 2, 1]), x3)
    np.testing.assert_allclose(got, pool3d_ref(x3, (2, 3, 1), (1, 2, 1), "SAME", kind),
                               rtol=1e-12)
    x2 = rand(2, 5, 4, 3)
    got = run(lambda a: tf.nn.pool(a, [2, 2], pooling_type, "VALID", strides=[2, 1],
                                   data_format="NCHW"), x2.transpose(0, 3, 1, 2))
    expected = pool3d_ref(x2[:, :, :, None, :], (2, 2, 1), (2, 1, 1), "VALID", kind)[:, :, :, 0]
    np.testing.assert_allclose(got, expected.transpose(0, 3, 1, 2), rtol=1e-12)
    x1 = rand(2, 7, 3)
    got = run(lambda a: tf.nn.pool(a, [3], pooling_type, "SAME", strides=[2]), x1)
    expected = pool3d_ref(x1[:, :, None, None, :], (3, 1, 1), (2, 1, 1), "SAME", kind)
    np.testing.assert_allclose(got, expected[:, :, 0, 0], rtol=1e-12)


def test_pool_argument_errors():
    x = tf.zeros([1, 4, 4, 1])
    with pytest.raises(ValueError, match="must be 1, 2, or 3"):
        tf.nn.pool(x, [1, 1, 1, 1], "MAX", "SAME")
    with pytest.raises(ValueError, match="`strides` > `window_shape`"):
        tf.nn.pool(x, [2, 2], "MAX", "SAME", strides=[3, 1])
    with pytest.raises(ValueError, match="'SAME' padding is not implemented"):
        tf.nn.pool(x, [2, 2], "AVG", "SAME", dilation_rate=[2, 2])
    with pytest.raises(ValueError, match="2-D MIN pooling is not supported"):
        tf.nn.pool(x, [2, 2], "MIN", "SAME")
    with pytest.raises(tf.errors.UnimplementedError, match="dilation_rate=\\[2, 1\\]"):
        tf.nn.pool(x, [2, 2], "MAX", "VALID", dilation_rate=[2, 1])


# ------------------------------------------------------------------------------------------------
# Rank-generic entry points

def test_convolution_dispatches_on_the_filter_rank():
    x1, f1 = rand(2, 9, 3), rand(3, 3, 2)
    x2, f2 = rand(1, 6, 7, 2), rand(3, 2, 2, 3)
    x3, f3 = rand(1, 4, 5, 3, 2), rand(2, 2, 2, 2, 3)
    got = run(lambda a, b, c, d, e, f: [
        tf.nn.convolution(a, b, "SAME", strides=[2]),
        tf.nn.convolution(c, d, "VALID", dilation_rate=[2, 1]),
        tf.nn.convolution(e, f, "SAME", strides=[1, 2, 1]),
    ], x1, f1, x2, f2, x3, f3)
    np.testing.assert_allclose(got[0], conv_ref(x1[:, None], f1[None], (1, 2), "SAME")[:, 0],
                               rtol=1e-12)
    np.testing.assert_allclose(got[1], conv_ref(x2, f2, (1, 1), "VALID", (2, 1)), rtol=1e-12)
    np.testing.assert_allclose(got[2], conv3d_ref(x3, f3, (1, 2, 1), "SAME"), rtol=1e-12)
    assert tf.nn.convolution(tf.zeros([1, 4, 4, 1]), tf.zeros([2, 2, 1, 1]),
                             "SAME").op.name == "convolution"
    with pytest.raises(ValueError, match="rank 3, 4 or 5"):
        tf.nn.convolution(tf.zeros([1, 4]), tf.zeros([2, 2]), "SAME")


def test_transposed_convolutions_are_the_input_gradients():
    from conv_reference import conv_backprop_input_ref
    dy1, f1 = rand(2, 5, 3), rand(3, 4, 3)
    dy2, f2 = rand(1, 4, 3, 2), rand(3, 3, 5, 2)
    got = run(lambda a, b, c, d: [
        tf.nn.conv1d_transpose(a, b, [2, 10, 4], 2),
        tf.nn.conv_transpose(c, d, [1, 8, 6, 5], [1, 2, 2, 1], "SAME"),
        tf.nn.atrous_conv2d_transpose(c, d, [1, 8, 7, 5], 2, "VALID"),
    ], dy1, f1, dy2, f2)
    np.testing.assert_allclose(
        got[0], conv_backprop_input_ref((2, 1, 10, 4), f1[None], dy1[:, None], (1, 2),
                                        "SAME")[:, 0], rtol=1e-12)
    np.testing.assert_allclose(got[1], conv_backprop_input_ref((1, 8, 6, 5), f2, dy2, (2, 2),
                                                               "SAME"), rtol=1e-12)
    np.testing.assert_allclose(got[2], conv_backprop_input_ref((1, 8, 7, 5), f2, dy2, (1, 1),
                                                               "VALID", (2, 2)), rtol=1e-12)
    with pytest.raises(ValueError, match="`rate` cannot be less than one"):
        tf.nn.atrous_conv2d_transpose(tf.zeros([1, 2, 2, 1]), tf.zeros([2, 2, 1, 1]),
                                      [1, 3, 3, 1], 0, "VALID")


def test_rank_generic_and_1d_pooling():
    x1, x2, x3 = rand(2, 7, 3), rand(2, 5, 4, 3), rand(1, 4, 4, 4, 2)
    got = run(lambda a, b, c: [
        tf.nn.max_pool1d(a, 3, 2, "SAME"), tf.nn.avg_pool1d(a, 2, 1, "VALID"),
        tf.nn.max_pool_v2(b, 2, [2, 1], "VALID"), tf.nn.avg_pool_v2(c, 2, 2, "SAME"),
        tf.nn.max_pool_v2(a, [2], [2], "VALID", data_format="NWC"),
    ], x1, x2, x3)
    as3d = x1[:, :, None, None, :]
    np.testing.assert_allclose(got[0], pool3d_ref(as3d, (3, 1, 1), (2, 1, 1), "SAME")[:, :, 0, 0])
    np.testing.assert_allclose(got[1], pool3d_ref(as3d, (2, 1, 1), (1, 1, 1), "VALID",
                                                  "avg")[:, :, 0, 0], rtol=1e-12)
    np.testing.assert_allclose(got[2], pool3d_ref(x2[:, :, :, None], (2, 2, 1), (2, 1, 1),
                                                  "VALID")[:, :, :, 0])
    np.testing.assert_allclose(got[3], pool3d_ref(x3, (2, 2, 2), (2, 2, 2), "SAME", "avg"),
                               rtol=1e-12)
    np.testing.assert_allclose(got[4], pool3d_ref(as3d, (2, 1, 1), (2, 1, 1), "VALID")[:, :, 0, 0])
    with pytest.raises(ValueError, match="'NWC' or 'NCW'"):
        tf.nn.max_pool1d(tf.zeros([1, 4, 1]), 2, 2, "SAME", data_format="NHWC")


def test_depthwise_backprop_names_are_the_native_ops():
    assert tf.nn.depthwise_conv2d_backprop_input is tf.nn.depthwise_conv2d_native_backprop_input
    assert tf.nn.depthwise_conv2d_backprop_filter is tf.nn.depthwise_conv2d_native_backprop_filter
