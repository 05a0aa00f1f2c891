"""Kernels of the CNN training step sped up for issue 15 (branch cnntrain): the RMSProp update
as a vectorized block, against its formula in float64, on sizes with a vector body and a tail,
and bit-identical at any thread count."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

RNG = np.random.default_rng(15)


def _rmsprop_steps(shape, dtype, grads, lr=0.01, decay=0.9, momentum=0.5, epsilon=1e-10):
    w0 = RNG.standard_normal(shape)
    with tf.Graph().as_default():
        w = tf.Variable(w0.astype(dtype), name="w")
        g = tf.placeholder(dtype, shape)
        opt = tf.train.RMSPropOptimizer(lr, decay=decay, momentum=momentum, epsilon=epsilon)
        train = opt.apply_gradients([(g, w)])
        got = []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w0 = sess.run(w).astype(np.float64)
            for grad in grads:
                sess.run(train, {g: grad.astype(dtype)})
                got.append(sess.run(w))
    want, ms, mom = [], np.ones(shape), np.zeros(shape)
    w_ref = w0
    for grad in grads:
        grad = grad.astype(dtype).astype(np.float64)
        ms = ms + (grad * grad - ms) * (1 - decay)
        mom = mom * momentum + lr * grad / np.sqrt(ms + epsilon)
        w_ref = w_ref - mom
        want.append(w_ref)
    return got, want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (1037,), (300, 257)], ids=str)
def test_rmsprop_matches_formula(shape, dtype):
    # 1037 and 300 * 257 are not multiples of any vector width: body and tail both run, and the
    # large one is split into blocks over the intra-op pool.
    grads = [RNG.standard_normal(shape) * s for s in (1.0, 0.01, 100.0)]
    got, want = _rmsprop_steps(shape, dtype, grads)
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, **tol)


def test_rmsprop_zero_gradient_and_large_epsilon():
    # A zero gradient leaves the weights moving only by momentum; epsilon dominates small ms.
    shape = (33,)
    grads = [np.zeros(shape), RNG.standard_normal(shape)]
    got, want = _rmsprop_steps(shape, np.float64, grads, epsilon=1.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


RMSPROP_THREADS = """
import sys, hashlib
import numpy as np
import flowstone as tf
threads = int(sys.argv[1])
rng = np.random.default_rng(0)
w = tf.Variable(rng.standard_normal((513, 1001)).astype(np.float32))
g = tf.constant(rng.standard_normal((513, 1001)).astype(np.float32))
train = tf.train.RMSPropOptimizer(0.001, 0.9, momentum=0.9).apply_gradients([(g, w)])
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(3):
        sess.run(train)
    print(hashlib.sha256(sess.run(w).tobytes()).hexdigest())
"""


def test_rmsprop_bit_identical_across_thread_counts():
    hashes = []
    for threads in (1, 2, 4):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(RMSPROP_THREADS),
                               str(threads)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        hashes.append(proc.stdout.strip().splitlines()[-1])
    assert hashes[1:] == hashes[:1] * 2
