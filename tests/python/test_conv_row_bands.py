"""A small batch's forward convolutions are cut into bands of output rows (one oneDNN call per
band, with the padding that falls inside it), so that one image uses every core. The bands
depend on the shapes alone: results must match float64 numpy at every padding scheme, stride,
dilation and fused tail, and be bit-identical at any thread count."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

CPU_ONLY = dict(os.environ, CUDA_VISIBLE_DEVICES="")


def reference_conv(x, f, strides, pads, dilations, depthwise=False):
    """float64 convolution of NHWC `x` with an HWIO (or HWC-multiplier) filter; pads are
    ((top, bottom), (left, right))."""
    x = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    f = f.astype(np.float64)
    kh, kw = f.shape[:2]
    (sh, sw), (dh, dw) = strides, dilations
    oh = (x.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (x.shape[2] - (kw - 1) * dw - 1) // sw + 1
    out_c = f.shape[2] * f.shape[3] if depthwise else f.shape[3]
    y = np.zeros((x.shape[0], oh, ow, out_c))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
            if depthwise:
                y += (patch[..., :, None] * f[i, j]).reshape(y.shape)
            else:
                y += patch @ f[i, j]
    return y


def same_pads(size, k, stride, dilation):
    eff = (k - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return (total // 2, total - total // 2)


# (batch, size, channels, kernel, filters, stride, dilation, padding): each forward pass has an
# image of several bands' work (a band is at least 2**22 multiply-adds).
CASES = [
    (1, 56, 32, 3, 32, 1, 1, "SAME"),
    (1, 57, 64, 3, 64, 2, 1, "SAME"),
    (2, 40, 32, 5, 48, 1, 1, "VALID"),
    (1, 48, 32, 3, 32, 1, 2, "SAME"),
    (1, 64, 3, 7, 64, 2, 1, "SAME"),  # ResNet50's first layer, at a quarter of its size
    (1, 30, 64, 3, 64, 1, 1, [[0, 0], [2, 1], [1, 0], [0, 0]]),
    # The last output rows read only the explicit padding: those bands have no input rows, so the
    # pass runs as one call instead.
    (1, 30, 64, 3, 64, 1, 1, [[0, 0], [0, 6], [0, 0], [0, 0]]),
]


def _pads(size, k, stride, dilation, padding):
    if padding == "SAME":
        p = same_pads(size, k, stride, dilation)
        return (p, p)
    if padding == "VALID":
        return ((0, 0), (0, 0))
    return (tuple(padding[1]), tuple(padding[2]))


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_banded_convolution_matches_numpy(case):
    n, size, c, k, filters, stride, dilation, padding = case
    rng = np.random.RandomState(1)
    x = rng.rand(n, size, size, c).astype(np.float32) - 0.5
    f = (rng.rand(k, k, c, filters).astype(np.float32) - 0.5) / np.sqrt(k * k * c)
    y = tf.nn.conv2d(tf.constant(x), f, [1, stride, stride, 1], padding,
                     dilations=[1, dilation, dilation, 1])
    with tf.Session() as sess:
        got = sess.run(y)
    want = reference_conv(x, f, (stride, stride), _pads(size, k, stride, dilation, padding),
                          (dilation, dilation))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_banded_depthwise_and_fused_convolutions_match_numpy():
    rng = np.random.RandomState(2)
    x_value = rng.rand(1, 112, 112, 128).astype(np.float32) - 0.5
    dw = rng.rand(3, 3, 128, 2).astype(np.float32) - 0.5
    f = (rng.rand(3, 3, 256, 32).astype(np.float32) - 0.5) / 24
    bias = rng.rand(32).astype(np.float32) - 0.5
    x = tf.placeholder(tf.float32, [None, 112, 112, 128])
    h = tf.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "SAME")
    # Conv2D + BiasAdd + Relu6 run as one _FusedConv2D, its tail applied band by band.
    y = tf.nn.relu6(tf.nn.bias_add(tf.nn.conv2d(h, f, [1, 2, 2, 1], "SAME"), bias))
    with tf.Session() as sess:
        got_h, got_y = sess.run([h, y], {x: x_value})
    want_h = reference_conv(x_value, dw, (1, 1), ((1, 1), (1, 1)), (1, 1), depthwise=True)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-4, atol=1e-5)
    pads = same_pads(112, 3, 2, 1)
    want_y = np.clip(reference_conv(got_h, f, (2, 2), (pads, pads), (1, 1)) + bias, 0, 6)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-4, atol=1e-5)


BANDED = """
import hashlib, sys
import numpy as np
import flowstone as tf

threads = int(sys.argv[1])
rng = np.random.RandomState(0)
fetches = []
for n, size, c, k, filters, stride in [(1, 56, 32, 3, 32, 1), (3, 57, 64, 3, 64, 2),
                                       (1, 64, 3, 7, 64, 2)]:
    x = tf.constant(rng.rand(n, size, size, c).astype(np.float32))
    f = tf.constant(rng.rand(k, k, c, filters).astype(np.float32) - 0.5)
    b = tf.constant(rng.rand(filters).astype(np.float32) - 0.5)
    y = tf.nn.conv2d(x, f, [1, stride, stride, 1], "SAME")
    fetches += [y, tf.nn.relu(tf.nn.bias_add(y, b))]
x = tf.constant(rng.rand(1, 112, 112, 64).astype(np.float32))
fetches.append(tf.nn.depthwise_conv2d(x, rng.rand(3, 3, 64, 4).astype(np.float32),
                                      [1, 1, 1, 1], "SAME"))
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
with tf.Session(config=config) as sess:
    print(" ".join(hashlib.sha1(v.tobytes()).hexdigest() for v in sess.run(fetches)))
"""


def test_banded_convolutions_are_bit_identical_across_thread_counts():
    outputs = []
    for threads in (1, 2, 3):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(BANDED), str(threads)],
                              capture_output=True, text=True, env=CPU_ONLY, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout.split())
    assert len(outputs[0]) == 7
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
