"""tf.while_loop speed for Flowstone and TensorFlow (compat.v1 graph mode) in one run.

    .venv/bin/python bench/bench_control_flow.py [--peer-python /work/.venv-peers/bin/python]

Cases: a 1,000-iteration loop with a scalar body (time per iteration: one sess.run divided by
1,000), and the gradient of a 100-step loop over a 16x16 matrix (time per sess.run of the
gradient). TensorFlow runs in its own virtualenv (never a dependency of Flowstone), through this
same script with --framework tensorflow.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

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


def run_framework(name):
    if name == "flowstone":
        import flowstone as tf
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    sess, calls = build(tf)
    loop_s, grad_s = (measure(call) for call in calls)
    sess.close()
    return {CASES[0]: loop_s / ITERATIONS * 1e6, CASES[1]: grad_s * 1e3}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--framework", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu installed, to compare with")
    args = parser.parse_args()
    if args.framework:
        print(json.dumps(run_framework(args.framework)))
        return
    ours = run_framework("flowstone")
    theirs = None
    if args.peer_python and os.path.exists(args.peer_python):
        proc = subprocess.run([args.peer_python, __file__, "--framework", "tensorflow"],
                              capture_output=True, text=True)
        if proc.returncode == 0:
            theirs = json.loads(proc.stdout.strip().splitlines()[-1])
        else:
            print("TensorFlow run failed:\n" + proc.stderr[-2000:], file=sys.stderr)
    print(f"{'case':<42}{'flowstone':>12}{'tensorflow':>12}{'speedup':>10}")
    for case in CASES:
        tf_value = theirs[case] if theirs else None
        ratio = f"{tf_value / ours[case]:.1f}x" if tf_value else "-"
        tf_text = f"{tf_value:.2f}" if tf_value else "n/a"
        print(f"{case:<42}{ours[case]:>12.2f}{tf_text:>12}{ratio:>10}")


if __name__ == "__main__":
    main()
