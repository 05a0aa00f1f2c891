"""Microseconds per sess.run for Flowstone and TensorFlow (compat.v1) in one run.

    .venv/bin/python bench/bench_session.py [--peer-python .venv-peers/bin/python]

Cases: fetching a constant; feeding a scalar placeholder into an add; a 100-op elementwise chain
on a 100-element vector. TensorFlow runs in its own virtualenv (it is never a dependency of
Flowstone), through this same script with --framework tensorflow.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = ["fetch constant", "feed scalar + add", "100-op elementwise chain"]


def build_cases(tf):
    graph = tf.Graph()
    with graph.as_default():
        const = tf.constant(1.0)
        x = tf.placeholder(tf.float32, [])
        added = x + 1.0
        v = tf.placeholder(tf.float32, [100])
        y = v
        for i in range(100):
            y = y * 1.0001 if i % 2 else y + 0.5
    vector = np.ones(100, np.float32)
    sess = tf.Session(graph=graph)
    calls = [lambda: sess.run(const), lambda: sess.run(added, {x: 1.0}),
             lambda: sess.run(y, {v: vector})]
    return sess, calls


def measure(fn, repeats=7, min_time=0.2):
    for _ in range(200):
        fn()
    n = 100
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start >= min_time / repeats:
            break
        n *= 2
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def run_framework(name):
    if name == "flowstone":
        import flowstone as tf
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    sess, calls = build_cases(tf)
    results = {case: measure(call) for case, call in zip(CASES, calls)}
    sess.close()
    return results


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
    print(f"{'case':<28}{'flowstone us':>14}{'tensorflow us':>15}{'speedup':>10}")
    for case in CASES:
        tf_time = theirs[case] if theirs else None
        ratio = f"{tf_time / ours[case]:.1f}x" if tf_time else "-"
        tf_text = f"{tf_time:.2f}" if tf_time else "n/a"
        print(f"{case:<28}{ours[case]:>14.2f}{tf_text:>15}{ratio:>10}")


if __name__ == "__main__":
    main()
