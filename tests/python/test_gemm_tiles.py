"""float32 matrix products run as single-threaded oneDNN calls over tiles of C. A product too
small for 8 tiles of the usual size (a transformer layer at batch 1) is cut into smaller tiles,
by its shape alone: results must match float64 numpy and be bit-identical at any thread count."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

CPU_ONLY = dict(os.environ, CUDA_VISIBLE_DEVICES="")

# (m, k, n): the encoder's products at batch 1, a classifier's dense layer at batch 1, and
# edges that are not multiples of the 16-element tile alignment.
SHAPES = [(128, 256, 256), (128, 1024, 256), (128, 256, 1024), (1, 1280, 1000), (100, 300, 70),
          (37, 2048, 33)]


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
def test_finer_tiles_match_numpy(shape, transpose_a, transpose_b):
    m, k, n = shape
    rng = np.random.RandomState(3)
    a = rng.rand(m, k).astype(np.float32) - 0.5
    b = rng.rand(k, n).astype(np.float32) - 0.5
    a_in = tf.placeholder(tf.float32)
    b_in = tf.placeholder(tf.float32)
    y = tf.matmul(a_in, b_in, transpose_a=transpose_a, transpose_b=transpose_b)
    with tf.Session() as sess:
        got = sess.run(y, {a_in: a.T if transpose_a else a, b_in: b.T if transpose_b else b})
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


PRODUCTS = """
import hashlib, sys
import numpy as np
import flowstone as tf

threads = int(sys.argv[1])
rng = np.random.RandomState(0)
fetches = []
for m, k, n in SHAPES:
    a = tf.placeholder(tf.float32, [m, k])
    b = tf.constant(rng.rand(k, n).astype(np.float32) - 0.5)
    fetches.append((a, tf.matmul(a, b), rng.rand(m, k).astype(np.float32)))
x = tf.placeholder(tf.float32, [4, 128, 64])
attention = tf.matmul(x, x, transpose_b=True)
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
with tf.Session(config=config) as sess:
    values = [sess.run(y, {a: v}) for a, y, v in fetches]
    values.append(sess.run(attention, {x: rng.rand(4, 128, 64).astype(np.float32)}))
    print(" ".join(hashlib.sha1(v.tobytes()).hexdigest() for v in values))
"""


def test_finer_tiles_are_bit_identical_across_thread_counts():
    script = f"SHAPES = {SHAPES!r}\n" + textwrap.dedent(PRODUCTS)
    outputs = []
    for threads in (1, 2, 3):
        proc = subprocess.run([sys.executable, "-c", script, str(threads)], capture_output=True,
                              text=True, env=CPU_ONLY, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout.split())
    assert len(outputs[0]) == len(SHAPES) + 1
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
