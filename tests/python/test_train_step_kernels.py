"""Kernels of the CNN training step sped up for issue 15 (branch cnntrain): the RMSProp update
as a vectorized block, against its formula in float64, on sizes with a vector body and a tail,
and bit-identical at any thread count; RandomUniform's float32 generator, 8 Philox blocks side by
side, against Philox4x32-10 written out in numpy, word for word."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework import ops as ops_lib

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
from flowstone.framework import ops as ops_lib
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


def _philox_uniform_float32(seed, seed2, first_block, n):
    """Philox4x32-10 (Salmon et al., SC'11) on counters (block lo, block hi, seed2 lo, seed2 hi)
    with key (seed lo, seed hi); each block gives 4 floats (w >> 8) * 2^-24."""
    blocks = (n + 3) // 4
    index = np.arange(first_block, first_block + blocks, dtype=np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    c = [index & mask, index >> np.uint64(32), np.full(blocks, seed2 & 0xFFFFFFFF, np.uint64),
         np.full(blocks, seed2 >> 32, np.uint64)]
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for round_ in range(10):
        if round_ > 0:
            k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & mask,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & mask]
    words = np.stack(c, axis=1).reshape(-1)[:n]
    return (words >> np.uint64(8)).astype(np.float32) * np.float32(2.0**-24)


@pytest.mark.parametrize("n", [1, 3, 31, 32, 33, 100, 1000, 4099])
def test_random_uniform_float32_is_philox_word_for_word(n):
    # Sizes below, at and above one group of 8 blocks (32 floats), with partial blocks; each run
    # continues the stream where the previous one stopped.
    seed, seed2 = 7, (5 << 32) | 11
    shape = tf.constant(np.asarray([n], np.int32))
    out = ops_lib.apply_op("RandomUniform", [shape], {"dtype": tf.float32, "seed": seed,
                                                      "seed2": seed2}).outputs[0]
    with tf.Session() as sess:
        runs = [sess.run(out) for _ in range(3)]
    first = 0
    for got in runs:
        np.testing.assert_array_equal(got, _philox_uniform_float32(seed, seed2, first, n))
        first += (n + 3) // 4


def test_random_uniform_float32_with_64_bit_seeds():
    # Both halves of seed (the key) and of seed2 (the counter's upper words) reach the lanes.
    seed, seed2 = (123 << 32) | 456, (3 << 60) | 9
    shape = tf.constant(np.asarray([64], np.int32))
    out = ops_lib.apply_op("RandomUniform", [shape], {"dtype": tf.float32, "seed": seed,
                                                      "seed2": seed2}).outputs[0]
    with tf.Session() as sess:
        got = sess.run(out)
    np.testing.assert_array_equal(got, _philox_uniform_float32(seed, seed2, 0, 64))
    assert len(np.unique(got)) == 64
