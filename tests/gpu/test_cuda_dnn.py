"""The CUDA plugin's convolution, pooling, bias, random, optimizer and softmax kernels against
the CPU kernels of the same ops.

Each case builds the same graph twice, with the op under test pinned to /gpu:0 and to /cpu:0
(without soft placement, so a missing GPU kernel fails the test), with its inputs as constants on
the CPU, and compares the results. Runs only where a GPU is usable; elsewhere the module is
skipped with the reason GPU discovery gives.
"""

import re

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework import ops as tf_ops


def _no_gpu_reason():
    if tf.config.list_physical_devices("GPU"):
        return None
    discovery = getattr(tf._C, "gpu_discovery", None)
    return "no usable GPU: " + (discovery()["reason"] if discovery else "none was found")


_reason = _no_gpu_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

rng = np.random.default_rng(1234)


def _run(device, build, inputs, runs=1):
    """Builds build(*input_tensors) with the inputs on the CPU and the ops under `device`, and
    returns the fetched results of `runs` runs in one session."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/cpu:0"):
            tensors = [tf.constant(value) for value in inputs]
        with tf.device(device):
            fetches = build(*tensors)
        with tf.Session(graph=graph) as sess:
            return [sess.run(fetches) for _ in range(runs)]


def _as_list(fetched):
    return fetched if isinstance(fetched, list) else [fetched]


def _compare(build, inputs, rtol, atol, runs=1):
    """Checks the GPU's results against the CPU's; returns both, one entry per run."""
    gpu = _run("/gpu:0", build, inputs, runs)
    cpu = _run("/cpu:0", build, inputs, runs)
    for got_run, want_run in zip(gpu, cpu):
        for got, want in zip(_as_list(got_run), _as_list(want_run)):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return gpu, cpu


def _op(op_type, inputs, attrs, output=0):
    return tf_ops.apply_op(op_type, inputs, attrs).outputs[output]


def _float32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Convolutions (cuDNN).

# (input NHWC, filter HWIO, strides, padding, dilations): the SAME cases with an odd total
# padding need the extra row/column the plugin adds around cuDNN's symmetric padding.
CONV_CASES = [
    ((2, 7, 7, 3), (3, 3, 3, 4), [1, 1, 1, 1], "SAME", [1, 1, 1, 1]),
    ((2, 8, 8, 3), (3, 3, 3, 4), [1, 2, 2, 1], "SAME", [1, 1, 1, 1]),
    ((1, 9, 6, 2), (2, 4, 2, 5), [1, 2, 1, 1], "SAME", [1, 1, 1, 1]),
    ((2, 7, 9, 3), (3, 2, 3, 2), [1, 1, 2, 1], "VALID", [1, 1, 1, 1]),
    ((1, 10, 10, 2), (3, 3, 2, 3), [1, 1, 1, 1], "SAME", [1, 2, 2, 1]),
    ((1, 6, 7, 2), (3, 3, 2, 3), [1, 1, 1, 1], [[0, 0], [2, 0], [1, 3], [0, 0]], [1, 1, 1, 1]),
]


def _conv_attrs(strides, padding, dilations):
    attrs = {"strides": strides, "dilations": dilations, "data_format": "NHWC"}
    if isinstance(padding, str):
        attrs["padding"] = padding
    else:
        attrs["padding"] = "EXPLICIT"
        attrs["explicit_paddings"] = [p for pair in padding for p in pair]
    return attrs


def _conv_output_shape(x_shape, f_shape, strides, padding, dilations):
    graph = tf.Graph()
    with graph.as_default():
        y = _op("Conv2D", [tf.zeros(x_shape), tf.zeros(f_shape)],
                _conv_attrs(strides, padding, dilations))
        return [int(d) for d in y.shape]


@pytest.mark.parametrize("x_shape,f_shape,strides,padding,dilations", CONV_CASES)
def test_conv2d_and_backprops_match_cpu(x_shape, f_shape, strides, padding, dilations):
    attrs = _conv_attrs(strides, padding, dilations)
    x, f = _float32(*x_shape), _float32(*f_shape)
    dy = _float32(*_conv_output_shape(x_shape, f_shape, strides, padding, dilations))
    _compare(lambda x, f: _op("Conv2D", [x, f], attrs), [x, f], rtol=1e-4, atol=1e-4)
    _compare(lambda sizes, f, dy: _op("Conv2DBackpropInput", [sizes, f, dy], attrs),
             [np.array(x_shape, np.int32), f, dy], rtol=1e-4, atol=1e-4)
    _compare(lambda x, sizes, dy: _op("Conv2DBackpropFilter", [x, sizes, dy], attrs),
             [x, np.array(f_shape, np.int32), dy], rtol=1e-4, atol=1e-4)


def test_conv2d_nchw_matches_cpu():
    attrs = _conv_attrs([1, 1, 2, 2], "SAME", [1, 1, 1, 1])
    attrs["data_format"] = "NCHW"
    x, f = _float32(2, 3, 7, 8), _float32(3, 3, 3, 4)
    (y,), _ = _compare(lambda x, f: _op("Conv2D", [x, f], attrs), [x, f], rtol=1e-4, atol=1e-4)
    dy = _float32(*y.shape)
    _compare(lambda sizes, f, dy: _op("Conv2DBackpropInput", [sizes, f, dy], attrs),
             [np.array(x.shape, np.int32), f, dy], rtol=1e-4, atol=1e-4)
    _compare(lambda x, sizes, dy: _op("Conv2DBackpropFilter", [x, sizes, dy], attrs),
             [x, np.array(f.shape, np.int32), dy], rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# Pooling.

POOL_CASES = [
    ((2, 7, 7, 3), [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
    ((2, 8, 6, 2), [1, 2, 3, 1], [1, 2, 1, 1], "SAME"),
    ((1, 9, 9, 4), [1, 3, 2, 1], [1, 3, 2, 1], "VALID"),
]


@pytest.mark.parametrize("x_shape,ksize,strides,padding", POOL_CASES)
@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_pooling_and_gradients_match_cpu(kind, x_shape, ksize, strides, padding):
    attrs = {"ksize": ksize, "strides": strides, "padding": padding, "data_format": "NHWC"}
    x = _float32(*x_shape)
    _, cpu = _compare(lambda x: _op(kind + "Pool", [x], attrs), [x], rtol=1e-6, atol=1e-6)
    y = cpu[0]
    dy = _float32(*y.shape)
    if kind == "Max":
        _compare(lambda x, y, dy: _op("MaxPoolGrad", [x, y, dy], attrs), [x, y, dy],
                 rtol=1e-6, atol=1e-6)
    else:
        _compare(lambda sizes, dy: _op("AvgPoolGrad", [sizes, dy], attrs),
                 [np.array(x_shape, np.int32), dy], rtol=1e-6, atol=1e-6)


def test_max_pool_explicit_padding_matches_cpu():
    attrs = {"ksize": [1, 3, 3, 1], "strides": [1, 2, 2, 1], "padding": "EXPLICIT",
             "explicit_paddings": [0, 0, 2, 0, 0, 1, 0, 0], "data_format": "NHWC"}
    _compare(lambda x: _op("MaxPool", [x], attrs), [_float32(1, 6, 7, 2)], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# Bias.

@pytest.mark.parametrize("data_format,shape", [("NHWC", (4, 5, 6, 3)), ("NHWC", (7, 5)),
                                               ("NCHW", (2, 3, 4, 5))])
def test_bias_add_and_grad_match_cpu(data_format, shape):
    attrs = {"data_format": data_format}
    channels = shape[1] if data_format == "NCHW" else shape[-1]
    x, b = _float32(*shape), _float32(channels)
    _compare(lambda x, b: _op("BiasAdd", [x, b], attrs), [x, b], rtol=0, atol=0)
    _compare(lambda g: _op("BiasAddGrad", [g], attrs), [x], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Random numbers: the same Philox stream on both devices (see src/cuda/random_kernels.cu).

@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("op_type", ["RandomUniform", "RandomStandardNormal", "TruncatedNormal"])
def test_random_ops_replay_the_cpu_sequence(op_type, dtype):
    attrs = {"dtype": dtype, "seed": 87654321, "seed2": 42}
    shape = np.array([3, 1001], np.int32)  # not a multiple of the values per Philox block
    gpu, cpu = _compare(lambda s: _op(op_type, [s], attrs), [shape], rtol=0, atol=2e-6, runs=3)
    for got, want in zip(gpu, cpu):
        if op_type == "RandomUniform":
            np.testing.assert_array_equal(got, want)  # exact conversions: bit for bit
        if op_type == "TruncatedNormal":
            assert np.abs(got).max() < 2
    # Successive runs continue the stream rather than repeating it.
    assert not np.array_equal(gpu[0], gpu[1])


# ---------------------------------------------------------------------------------------------
# Optimizer updates on GPU variables.

W0 = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]], np.float32)
G = np.array([[0.5, -1.5, 2.0], [1.0, -0.1, 0.3]], np.float32)

# op type, slot initial values, hyper-parameters (in input order, before or after the gradient)
OPTIMIZERS = [
    ("ResourceApplyGradientDescent", [], [0.1], [], {}),
    ("ResourceApplyMomentum", [0.0], [0.1], [0.9], {"use_nesterov": False}),
    ("ResourceApplyMomentum", [0.0], [0.1], [0.9], {"use_nesterov": True}),
    ("ResourceApplyAdam", [0.0, 0.0], [0.9, 0.999, 0.01, 0.9, 0.999, 1e-8], [],
     {"use_nesterov": False}),
    ("ResourceApplyRMSProp", [1.0, 0.0], [0.01, 0.9, 0.5, 1e-10], [], {}),
    ("ResourceApplyCenteredRMSProp", [0.0, 1.0, 0.0], [0.01, 0.9, 0.5, 1e-10], [], {}),
    ("ResourceApplyAdagrad", [0.1], [0.1], [], {"update_slots": True}),
]


def _train(device, op_type, slots, before, after, attrs, steps=3):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/cpu:0"):
            grad = tf.constant(G)
            initial = [tf.constant(W0)] + [tf.constant(np.full_like(W0, s)) for s in slots]
            scalars_before = [tf.constant(np.float32(v)) for v in before]
            scalars_after = [tf.constant(np.float32(v)) for v in after]
        with tf.device(device):
            variables = [tf.Variable(value, name=f"var{k}") for k, value in enumerate(initial)]
            update = tf_ops.apply_op(
                op_type, [v.handle for v in variables] + scalars_before + [grad] + scalars_after,
                attrs)
        config = tf.ConfigProto(log_device_placement=True)
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(tf.global_variables_initializer())
            values = []
            for _ in range(steps):
                sess.run(update)
                values.append(sess.run([v.value() for v in variables]))
            return values


@pytest.mark.parametrize("op_type,slots,before,after,attrs", OPTIMIZERS)
def test_optimizer_updates_match_cpu(capfd, op_type, slots, before, after, attrs):
    gpu = _train("/gpu:0", op_type, slots, before, after, attrs)
    placement = capfd.readouterr().err
    assert re.search(rf"\({op_type}\): \S*device:GPU:0", placement), placement
    cpu = _train("/cpu:0", op_type, slots, before, after, attrs)
    for got_step, want_step in zip(gpu, cpu):
        for got, want in zip(got_step, want_step):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# Softmax and the cross-entropy losses.

@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape", [(5, 10), (3, 2, 700), (4, 1)])
def test_softmax_matches_cpu(op_type, shape):
    logits = _float32(*shape) * 10
    _compare(lambda x: _op(op_type, [x], {}), [logits], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("classes", [1, 10, 1000])
def test_cross_entropy_losses_match_cpu(classes):
    logits = _float32(6, classes) * 5
    labels = rng.integers(0, classes, size=6).astype(np.int64)
    dense = rng.random((6, classes)).astype(np.float32)
    dense /= dense.sum(axis=1, keepdims=True)
    _compare(lambda x, y: [_op("SparseSoftmaxCrossEntropyWithLogits", [x, y], {}, output=k)
                           for k in (0, 1)], [logits, labels], rtol=1e-5, atol=1e-6)
    _compare(lambda x, y: [_op("SoftmaxCrossEntropyWithLogits", [x, y], {}, output=k)
                           for k in (0, 1)], [logits, dense], rtol=1e-5, atol=1e-6)


def test_sparse_cross_entropy_rejects_out_of_range_labels_on_gpu():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"label value of 7 .*\[0, 5\)"):
        _run("/gpu:0", lambda x, y: _op("SparseSoftmaxCrossEntropyWithLogits", [x, y], {}),
             [_float32(2, 5), np.array([1, 7], np.int64)])
