"""The input gradient of a convolution whose input has fewer than 16 channels (LeNet-5's second
convolution: 6 channels, 5x5 filter, VALID) runs oneDNN's direct kernel in blocked layouts rather
than its forward-based one in the tensors' layouts (conv_ops.cc, PickConvImplementation): results
match a float64 reference and are bit-identical at 1, 2 and 4 threads."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

CPU_ONLY = dict(os.environ, CUDA_VISIBLE_DEVICES="")


def input_grad_reference(dy, w, in_shape, padding):
    """dx[n, i, j, c] = sum over the outputs (p, q) that read input (i, j) of
    dy[n, p, q, o] * w[i - p + pad, j - q + pad, c, o], in float64."""
    n, h, width, c = in_shape
    kh, kw, _, _ = w.shape
    pad_h = (kh - 1) // 2 if padding == "SAME" else 0
    pad_w = (kw - 1) // 2 if padding == "SAME" else 0
    dx = np.zeros((n, h + kh, width + kw, c))
    for p in range(dy.shape[1]):
        for q in range(dy.shape[2]):
            # Output (p, q) reads padded input rows p..p+kh and columns q..q+kw.
            dx[:, p:p + kh, q:q + kw, :] += np.einsum("no,abco->nabc", dy[:, p, q, :], w)
    return dx[:, pad_h:pad_h + h, pad_w:pad_w + width, :]


# (input shape, filter shape, padding): LeNet-5's second convolution at its batch, an odd batch
# and size, and SAME padding with 3 channels.
CASES = [((64, 14, 14, 6), (5, 5, 6, 16), "VALID"), ((5, 11, 9, 6), (5, 5, 6, 16), "VALID"),
         ((4, 12, 12, 3), (5, 5, 3, 32), "SAME")]


@pytest.mark.parametrize("in_shape,filter_shape,padding", CASES,
                         ids=[f"{'x'.join(map(str, s))}-{p}" for s, _, p in CASES])
def test_few_channel_input_gradient_matches_float64(in_shape, filter_shape, padding):
    rng = np.random.RandomState(sum(in_shape))
    w = (rng.rand(*filter_shape) - 0.5).astype(np.float32)
    x = tf.placeholder(tf.float32, in_shape)
    y = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding=padding)
    dy = (rng.rand(*y.shape.as_list()) - 0.5).astype(np.float32)
    (dx,) = tf.gradients(y, [x], grad_ys=dy)
    with tf.Session() as sess:
        got = sess.run(dx, {x: np.zeros(in_shape, np.float32)})
    want = input_grad_reference(dy.astype(np.float64), w.astype(np.float64), in_shape, padding)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


PROGRAM = """
import hashlib, sys
import numpy as np
import flowstone as tf

threads = int(sys.argv[1])
rng = np.random.RandomState(0)
w = (rng.rand(5, 5, 6, 16) - 0.5).astype(np.float32)
x = tf.placeholder(tf.float32, [64, 14, 14, 6])
y = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="VALID")
dy = (rng.rand(64, 10, 10, 16) - 0.5).astype(np.float32)
(dx,) = tf.gradients(y, [x], grad_ys=dy)
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
with tf.Session(config=config) as sess:
    print(hashlib.sha1(sess.run(dx, {x: np.zeros([64, 14, 14, 6], np.float32)}).tobytes())
          .hexdigest())
"""


def test_few_channel_input_gradient_is_bit_identical_across_thread_counts():
    hashes = []
    for threads in (1, 2, 4):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), str(threads)],
                              capture_output=True, text=True, env=CPU_ONLY, timeout=300)
        assert proc.returncode == 0, proc.stderr
        hashes.append(proc.stdout.split()[-1])
    assert hashes[1] == hashes[0], "2 threads"
    assert hashes[2] == hashes[0], "4 threads"
