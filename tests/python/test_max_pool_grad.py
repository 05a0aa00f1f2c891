"""MaxPoolGrad, bit for bit: each window's gradient goes where TensorFlow's CPU kernel sends it
(the window's first element, replaced by each later element that is strictly greater, so ties go
to the first maximum, a NaN first element keeps the gradient and a later NaN never takes it), and
overlapping windows add up in output order. Checked against a float64/float32 numpy reference of
that rule, against real TensorFlow when the peer is installed, and across thread counts.

In training graphs the remapper runs MaxPool and its MaxPoolGrad as _MaxPoolWithWorkspace and
_MaxPoolGradWithWorkspace (float32, NHWC); those plans must give the same bits as with
rewrite_options.remapping OFF."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op
from flowstone.ops import conv_ops as nn

from conv_reference import from_nhwc, geometry, to_nhwc
from flowstone.protos import RewriterConfig
from peers import requires_tensorflow, run_tensorflow
from test_graph_optimizer import bits, config, traced

RNG = np.random.default_rng(11)


def max_pool_grad_ref(x, dy, ksize, strides, padding):
    """TensorFlow's rule on NHWC arrays, computed in dy's dtype with additions in output order."""
    n, h, w, c = x.shape
    (oh, pt, _), (ow, pl, _) = geometry((h, w), ksize, strides, (1, 1), padding)
    dx = np.zeros(x.shape, dy.dtype)
    for oy in range(oh):
        y0 = oy * strides[0] - pt
        rows = range(max(y0, 0), min(y0 + ksize[0], h))
        for ox in range(ow):
            x0 = ox * strides[1] - pl
            cols = range(max(x0, 0), min(x0 + ksize[1], w))
            taps = [(iy, ix) for iy in rows for ix in cols]
            best = x[:, taps[0][0], taps[0][1], :].copy()
            arg = np.zeros((n, c), np.int64)
            for k, (iy, ix) in enumerate(taps[1:], 1):
                v = x[:, iy, ix, :]
                greater = v > best
                best = np.where(greater, v, best)
                arg = np.where(greater, k, arg)
            for k, (iy, ix) in enumerate(taps):
                dx[:, iy, ix, :] += np.where(arg == k, dy[:, oy, ox, :], dy.dtype.type(0))
    return dx


def pooled_shape(x_shape, ksize, strides, padding):
    n, h, w, c = x_shape
    (oh, _, _), (ow, _, _) = geometry((h, w), ksize, strides, (1, 1), padding)
    return n, oh, ow, c


def max_pool_grad(x, dy, ksize, strides, padding, data_format="NHWC", orig_output=None,
                  threads=None):
    """Runs the MaxPoolGrad op itself (orig_output defaults to dy, which has the pooled shape)."""
    config = None
    if threads:
        config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                                inter_op_parallelism_threads=1)
    attrs = {"ksize": [1, *ksize, 1], "strides": [1, *strides, 1], "data_format": data_format}
    if data_format == "NCHW":
        attrs["ksize"] = [1, 1, *ksize]
        attrs["strides"] = [1, 1, *strides]
    if isinstance(padding, str):
        attrs["padding"] = padding
    else:
        attrs["padding"] = "EXPLICIT"
        pads = [[0, 0], *padding, [0, 0]] if data_format == "NHWC" else [[0, 0], [0, 0], *padding]
        attrs["explicit_paddings"] = [p for pair in pads for p in pair]
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.as_dtype(x.dtype), x.shape)
        dyp = tf.placeholder(tf.as_dtype(dy.dtype), dy.shape)
        yp = tf.placeholder(tf.as_dtype(dy.dtype), dy.shape)
        dx = apply_op("MaxPoolGrad", [xp, yp, dyp], attrs).outputs[0]
    with tf.Session(graph=graph, config=config) as sess:
        return sess.run(dx, {xp: x, dyp: dy, yp: dy if orig_output is None else orig_output})


# (input shape NHWC, ksize, strides, padding): the Keras and tutorial CNNs' poolings, overlapping
# windows, strides past the window (inputs no window reads), odd sizes, one channel, channels
# past one block of 256, explicit padding, and LeNet's first pooling (6 channels: fewer than the
# workspace pooling's flat-row threshold of 16, as are several others).
CONFIGS = [
    ((3, 26, 26, 32), (2, 2), (2, 2), "VALID"),
    ((3, 11, 11, 64), (2, 2), (2, 2), "VALID"),
    ((2, 7, 7, 128), (2, 2), (2, 2), "SAME"),
    ((2, 9, 8, 5), (3, 3), (2, 2), "SAME"),
    ((2, 9, 8, 5), (3, 3), (1, 1), "VALID"),
    ((2, 6, 7, 3), (3, 2), (1, 2), "SAME"),
    ((2, 10, 9, 4), (2, 2), (3, 4), "VALID"),
    ((2, 10, 9, 4), (2, 1), (3, 3), "SAME"),
    ((2, 5, 5, 1), (2, 2), (2, 2), "SAME"),
    ((1, 5, 4, 300), (2, 2), (1, 2), "SAME"),
    ((2, 5, 6, 2), (3, 3), (2, 2), [[1, 2], [2, 1]]),
    ((1, 4, 4, 3), (4, 4), (1, 1), "VALID"),
    ((3, 28, 28, 6), (2, 2), (2, 2), "VALID"),
    ((2, 12, 13, 7), (3, 3), (1, 1), "SAME"),
]


def values(shape, dtype, kind):
    if kind == "random":
        return RNG.standard_normal(shape).astype(dtype)
    if kind == "ties":  # few distinct values, many zeros as after a ReLU
        return np.maximum(RNG.integers(-2, 3, size=shape), 0).astype(dtype)
    x = RNG.standard_normal(shape).astype(dtype)  # NaNs and infinities sprinkled in
    special = RNG.choice([np.nan, np.inf, -np.inf], size=shape)
    return np.where(RNG.random(shape) < 0.15, special, x).astype(dtype)


@pytest.mark.parametrize("kind", ["random", "ties", "nan"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_nhwc_matches_tensorflow_rule_exactly(config, dtype, kind):
    shape, ksize, strides, padding = config
    x = values(shape, dtype, kind)
    dy = RNG.standard_normal(pooled_shape(shape, ksize, strides, padding)).astype(dtype)
    got = max_pool_grad(x, dy, ksize, strides, padding)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, max_pool_grad_ref(x, dy, ksize, strides, padding))


@pytest.mark.parametrize("config", CONFIGS[:9], ids=str)
def test_nchw_float64_gives_the_same_gradient(config):
    shape, ksize, strides, padding = config
    x = values(shape, np.float64, "nan")
    dy = RNG.standard_normal(pooled_shape(shape, ksize, strides, padding))
    got = max_pool_grad(from_nhwc(x, "NCHW"), from_nhwc(dy, "NCHW"), ksize, strides, padding,
                        data_format="NCHW")
    np.testing.assert_array_equal(to_nhwc(got, "NCHW"),
                                  max_pool_grad_ref(x, dy, ksize, strides, padding))


def test_nan_and_ties_as_tensorflow_sends_them():
    # Expected values from TensorFlow 2.21 (tf.nn.max_pool2d under GradientTape, float32).
    x = np.array([[np.nan, 1, 2, 3], [0, 5, np.nan, np.nan], [1, 1, np.nan, 1],
                  [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32).reshape(1, 4, 4, 1)
    dy = np.arange(1, 5, dtype=np.float32).reshape(1, 2, 2, 1)
    expected = np.array([[1, 0, 0, 2], [0, 0, 0, 0], [3, 0, 4, 0], [0, 0, 0, 0]], np.float32)
    for dtype in (np.float32, np.float64):
        got = max_pool_grad(x.astype(dtype), dy.astype(dtype), (2, 2), (2, 2), "VALID")
        np.testing.assert_array_equal(got[0, :, :, 0], expected)
        graph = tf.Graph()
        with graph.as_default():  # the same through MaxPool's registered gradient
            xp = tf.placeholder(tf.as_dtype(dtype), x.shape)
            grad = tf.gradients(nn.max_pool(xp, 2, 2, "VALID"), xp,
                                grad_ys=tf.constant(dy.astype(dtype)))[0]
        with tf.Session(graph=graph) as sess:
            np.testing.assert_array_equal(sess.run(grad, {xp: x.astype(dtype)})[0, :, :, 0],
                                          expected)


def test_orig_output_only_gives_the_shape():
    # As in TensorFlow's CPU kernel, the maxima are found again in orig_input.
    x = values((2, 8, 8, 16), np.float32, "ties")
    dy = RNG.standard_normal((2, 4, 4, 16)).astype(np.float32)
    garbage = np.full(dy.shape, 7.0, np.float32)
    np.testing.assert_array_equal(max_pool_grad(x, dy, (2, 2), (2, 2), "SAME", orig_output=garbage),
                                  max_pool_grad(x, dy, (2, 2), (2, 2), "SAME"))


@pytest.mark.parametrize("config", [CONFIGS[0], CONFIGS[4], CONFIGS[9]], ids=str)
def test_bit_identical_at_any_thread_count(config):
    shape, ksize, strides, padding = config
    shape = (9,) + shape[1:]
    x = values(shape, np.float32, "ties")
    dy = RNG.standard_normal(pooled_shape(shape, ksize, strides, padding)).astype(np.float32)
    first = max_pool_grad(x, dy, ksize, strides, padding, threads=1)
    for threads in (2, 3, 4):
        np.testing.assert_array_equal(
            max_pool_grad(x, dy, ksize, strides, padding, threads=threads), first)


def test_empty_inputs():
    x = np.zeros((0, 4, 4, 3), np.float32)
    assert max_pool_grad(x, np.zeros((0, 2, 2, 3), np.float32), (2, 2), (2, 2),
                         "VALID").shape == (0, 4, 4, 3)
    x = np.ones((2, 4, 4, 0), np.float32)
    assert max_pool_grad(x, np.zeros((2, 2, 2, 0), np.float32), (2, 2), (2, 2),
                         "VALID").shape == (2, 4, 4, 0)


@requires_tensorflow
def test_against_tensorflow(tmp_path):
    cases = [(CONFIGS[i], kind) for i in (0, 3, 4, 6, 9) for kind in ("ties", "nan")]
    arrays = {}
    for i, ((shape, ksize, strides, padding), kind) in enumerate(cases):
        arrays[f"x{i}"] = values(shape, np.float32, kind)
        arrays[f"dy{i}"] = RNG.standard_normal(
            pooled_shape(shape, ksize, strides, padding)).astype(np.float32)
    np.savez(tmp_path / "in.npz", **arrays)
    specs = [(ksize, strides, padding) for (_, ksize, strides, padding), _ in cases]
    run_tensorflow(f"""
        import numpy as np, tensorflow as tf
        a = np.load("in.npz")
        out = {{}}
        for i, (ksize, strides, padding) in enumerate({specs!r}):
            x = tf.constant(a[f"x{{i}}"])
            y = tf.nn.max_pool2d(x, ksize, strides, padding)
            out[f"dx{{i}}"] = tf.raw_ops.MaxPoolGrad(
                orig_input=x, orig_output=y, grad=tf.constant(a[f"dy{{i}}"]),
                ksize=[1, *ksize, 1], strides=[1, *strides, 1], padding=padding).numpy()
        np.savez("out.npz", **out)
    """, workdir=tmp_path)
    expected = np.load(tmp_path / "out.npz")
    for i, ((_, ksize, strides, padding), _) in enumerate(cases):
        got = max_pool_grad(arrays[f"x{i}"], arrays[f"dy{i}"], ksize, strides, padding)
        np.testing.assert_array_equal(got, expected[f"dx{i}"], err_msg=str(cases[i]))


# ------------------------------------------------------------------------------------------------
# The workspace pair in training graphs.

PAIRED = {"_MaxPoolWithWorkspace": "MaxPool", "_MaxPoolGradWithWorkspace": "MaxPoolGrad"}


def values_with_edges(shape, kind):
    """values(), with some windows of only -inf, only NaN, or +0 and -0 (the forward pass keeps the
    first of equal values and counts up from the lowest float)."""
    x = values(shape, np.float32, kind)
    if kind == "nan":
        x[0, :2, :2, 0] = -np.inf
        x[0, :2, :2, 1 % shape[3]] = np.nan
        x[-1, :2, :2, 0] = np.array([[0.0, -0.0], [-0.0, 0.0]], np.float32)
    return x


def pooled_and_grads(pool_args, x, dys, cfg):
    """MaxPool of x and its gradient for each of dys (one MaxPool, several MaxPoolGrads), as run
    under cfg, with the op types the run recorded."""
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.float32, [None, *x.shape[1:]])
        y = nn.max_pool(xp, *pool_args)
        grads = [tf.gradients(y, xp, grad_ys=tf.constant(dy))[0] for dy in dys]
    return traced(graph, [y, *grads], {xp: x}, cfg)


@pytest.mark.parametrize("kind", ["random", "ties", "nan"])
@pytest.mark.parametrize("config_", [c for c in CONFIGS if c[3] != [[1, 2], [2, 1]]], ids=str)
def test_training_pair_is_bit_identical(config_, kind):
    shape, ksize, strides, padding = config_
    x = values_with_edges(shape, kind)
    dy = RNG.standard_normal(pooled_shape(shape, ksize, strides, padding)).astype(np.float32)
    args = (list(ksize), list(strides), padding)
    paired, ran = pooled_and_grads(args, x, [dy], config())
    plain, ran_plain = pooled_and_grads(args, x, [dy], config(remapping=RewriterConfig.OFF))
    assert sorted(t for t in ran.values() if "MaxPool" in t) == sorted(PAIRED)
    assert sorted(t for t in ran_plain.values() if "MaxPool" in t) == ["MaxPool", "MaxPoolGrad"]
    assert bits(paired) == bits(plain)
    np.testing.assert_array_equal(paired[1], max_pool_grad_ref(x, dy, ksize, strides, padding))


def test_gradients_of_one_pool_share_its_workspace():
    x = values_with_edges((4, 9, 9, 6), "ties")
    dys = [RNG.standard_normal((4, 4, 4, 6)).astype(np.float32) for _ in range(2)]
    args = ([1, 3, 3, 1], [1, 2, 2, 1], "VALID")
    paired, ran = pooled_and_grads(args, x, dys, config())
    plain, _ = pooled_and_grads(args, x, dys, config(remapping=RewriterConfig.OFF))
    types = sorted(t for t in ran.values() if "MaxPool" in t)
    assert types == ["_MaxPoolGradWithWorkspace"] * 2 + ["_MaxPoolWithWorkspace"], types
    assert bits(paired) == bits(plain)


def test_no_pair_for_another_input_or_float64():
    """A MaxPoolGrad of another input than its MaxPool's, and a float64 pool, run as written."""
    x = values((2, 6, 6, 4), np.float32, "random")
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float32, x.shape)
        b = tf.placeholder(tf.float32, x.shape)
        attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
        y = nn.max_pool(a, 2, 2, "VALID")
        other = apply_op("MaxPoolGrad", [b, y, y], attrs).outputs[0]
        d64 = tf.placeholder(tf.float64, x.shape)
        g64 = tf.gradients(nn.max_pool(d64, 2, 2, "VALID"), d64)[0]
    feeds = {a: x, b: x[::-1].copy(), d64: x.astype(np.float64)}
    out, ran = traced(graph, [other, g64], feeds, config())
    assert not set(PAIRED) & set(ran.values())
    n, h, w, c = x.shape
    pooled = x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))
    np.testing.assert_array_equal(
        out[0], max_pool_grad_ref(feeds[b], pooled, (2, 2), (2, 2), "VALID"))


def test_pair_bit_identical_at_any_thread_count():
    x = values_with_edges((9, 26, 26, 32), "ties")
    dy = RNG.standard_normal((9, 13, 13, 32)).astype(np.float32)
    results = []
    for threads in (1, 2, 4):
        cfg = config()
        cfg.intra_op_parallelism_threads = threads
        results.append(bits(pooled_and_grads(([1, 2, 2, 1], [1, 2, 2, 1], "VALID"), x, [dy],
                                             cfg)[0]))
    assert results[1] == results[0] and results[2] == results[0]
