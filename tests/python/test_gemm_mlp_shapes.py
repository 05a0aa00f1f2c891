"""The MLP benchmark's products (784-512-512-10 at batch 128: the forward products, the weight
gradients op(A) = A^T and the input gradients op(B) = B^T) through the float32 GEMM's tiles, which
cut columns no narrower than 128 before cutting rows and keep a transposed B that fits one row tile
unsplit by rows; the MLP's training step bit-identical at 1, 2 and 4 threads; the sgemm peak
binding that bench/bench_training.py states the MLP's GFLOP/s against, and its FLOP count."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone import errors

BENCH = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "bench")
CPU_ONLY = dict(os.environ, CUDA_VISIBLE_DEVICES="")

# (m, k, n, transpose_a, transpose_b) as the MLP's step multiplies them.
PRODUCTS = [
    (128, 784, 512, False, False),  # first layer forward
    (128, 512, 512, False, False),  # second layer forward
    (784, 128, 512, True, False),   # first layer's weight gradient, x^T dz
    (512, 128, 512, True, False),   # second layer's weight gradient
    (128, 512, 512, False, True),   # second layer's input gradient, dz W^T
    (128, 512, 784, False, True),   # the same for a 784-wide layer (one row tile, 7 column tiles)
    (100, 300, 520, False, True),   # edges off the 16-column alignment
]


@pytest.mark.parametrize("m,k,n,transpose_a,transpose_b", PRODUCTS,
                         ids=[f"{m}x{k}x{n}{'-ta' * ta}{'-tb' * tb}"
                              for m, k, n, ta, tb in PRODUCTS])
def test_mlp_products_match_float64(m, k, n, transpose_a, transpose_b):
    rng = np.random.RandomState(m + k + n)
    a = rng.rand(m, k).astype(np.float32) - 0.5
    b = rng.rand(k, n).astype(np.float32) - 0.5
    y = tf.matmul(a.T.copy() if transpose_a else a, b.T.copy() if transpose_b else b,
                  transpose_a=transpose_a, transpose_b=transpose_b)
    with tf.Session() as sess:
        got = sess.run(y)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("m,k,n,transpose_a,transpose_b", PRODUCTS[:5])
def test_mlp_products_are_exact_on_integers(m, k, n, transpose_a, transpose_b):
    # Small integers: every partial sum is exact in float32, so any tiling must give a @ b.
    rng = np.random.default_rng(m * n + k)
    a = rng.integers(-4, 5, size=(m, k)).astype(np.float32)
    b = rng.integers(-4, 5, size=(k, n)).astype(np.float32)
    y = tf.matmul(a.T.copy() if transpose_a else a, b.T.copy() if transpose_b else b,
                  transpose_a=transpose_a, transpose_b=transpose_b)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), a @ b)


MLP_TRAIN = """
import hashlib, sys
import numpy as np
sys.path.insert(0, BENCH)
import bench_training
import flowstone as tf

threads = int(sys.argv[1])
config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                        inter_op_parallelism_threads=threads)
sess, train, feed = bench_training.tf1_session(tf, "mlp", config)
# The bench initializes without a seed; start every process from the same weights.
rng = np.random.RandomState(1)
with sess.graph.as_default():
    variables = tf.trainable_variables()
    for v in variables:
        shape = v.shape.as_list()
        sess.run(v.assign((rng.rand(*shape).astype(np.float32) - 0.5) * 0.1))
for _ in range(5):
    sess.run(train, feed)
print(" ".join(hashlib.sha1(v.tobytes()).hexdigest() for v in sess.run(variables)))
"""


def test_mlp_training_is_bit_identical_across_thread_counts():
    script = f"BENCH = {os.path.abspath(BENCH)!r}\n" + textwrap.dedent(MLP_TRAIN)
    outputs = []
    for threads in (1, 2, 4):
        proc = subprocess.run([sys.executable, "-c", script, str(threads)], capture_output=True,
                              text=True, env=CPU_ONLY, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout.split())
    assert len(outputs[0]) == 6  # three kernels and three biases
    assert outputs[1] == outputs[0], "2 threads"
    assert outputs[2] == outputs[0], "4 threads"


def test_sgemm_peak_reports_a_rate():
    for threads in (1, 2):
        rate = _C.sgemm_peak(256, threads, 3)
        assert rate["n"] == 256 and rate["threads"] == threads
        assert rate["seconds"] > 0 and rate["cpu_seconds"] >= 0
        assert rate["gflops"] == pytest.approx(2 * 256**3 / rate["seconds"] / 1e9)


@pytest.mark.parametrize("n,threads,repeats", [(0, 1, 1), (20000, 1, 1), (64, 0, 1), (64, 1, 0)])
def test_sgemm_peak_rejects_bad_arguments(n, threads, repeats):
    with pytest.raises(_C.StatusError) as info:
        _C.sgemm_peak(n, threads, repeats)
    error = errors.from_status_error(info.value)
    assert isinstance(error, errors.InvalidArgumentError)
    assert "sgemm peak" in error.message and f"n={n}" in error.message


def test_bench_counts_the_mlp_step_flops():
    sys.path.insert(0, BENCH)
    try:
        import bench_training
    finally:
        sys.path.pop(0)
    # Forward 128 * (784*512 + 512*512 + 512*10), as much again for the weight gradients, and
    # the input gradients of the second and third layers.
    forward = 128 * (784 * 512 + 512 * 512 + 512 * 10)
    assert bench_training.step_macs("mlp") == 2 * forward + 128 * (512 * 512 + 512 * 10)
    assert bench_training.step_macs("mlp") == 205_389_824
