"""tf.while_loop speed for Flowstone and TensorFlow (compat.v1 graph mode) in one run.

    .venv/bin/python bench/bench_control_flow.py [--peer-python .venv-peers/bin/python]

Cases: a 1,000-iteration loop with a scalar body (time per iteration: one sess.run divided by
1,000), and the gradient of a 100-step loop over a 16x16 matrix (time per sess.run of the
gradient). TensorFlow runs in its own virtualenv (never a dependency of Flowstone), through this
same script with --framework tensorflow.
"""

import statistics
import time

import numpy as np

from harness import compare_main

ITERATIONS = 1000
GRAD_STEPS = 100
CASES = ["scalar loop, us per iteration", "grad of 100-step 16x16 loop, ms per run"]


def build(tf):
    graph = tf.Graph()
    with graph.as_default():
        n = tf.placeholder(tf.int32, [])
        _, total = tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 0.999 + 1.0),
                                 [0, tf.constant(0.0)])
        x = tf.placeholder(tf.float32, [16, 16])
        w = tf.constant(np.random.default_rng(0).normal(0, 0.2, (16, 16)).astype(np.float32))
        h = tf.while_loop(lambda i, h: i < GRAD_STEPS,
                          lambda i, h: (i + 1, tf.tanh(tf.matmul(w, h))), [0, x])[1]
        (grad,) = tf.gradients(tf.reduce_sum(h), [x])
    sess = tf.Session(graph=graph)
    xv = np.ones((16, 16), np.float32)
    # Both results are checked once, so a broken loop cannot look fast.
    expected = sum(0.999 ** k for k in range(ITERATIONS))
    got = sess.run(total, {n: ITERATIONS})
    assert abs(got - expected) < 1e-2 * expected, (got, expected)
    assert np.all(np.isfinite(sess.run(grad, {x: xv})))
    return sess, [lambda: sess.run(total, {n: ITERATIONS}), lambda: sess.run(grad, {x: xv})]


def measure(fn, repeats=7):
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run_framework(tf):
    sess, calls = build(tf)
    loop_s, grad_s = (measure(call) for call in calls)
    sess.close()
    return {CASES[0]: loop_s / ITERATIONS * 1e6, CASES[1]: grad_s * 1e3}


if __name__ == "__main__":
    compare_main(__doc__, __file__, run_framework, CASES,
                 ("flowstone", "tensorflow"),
                 (42, 12, 12))
