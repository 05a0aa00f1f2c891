"""Microseconds per sess.run for Flowstone and TensorFlow (compat.v1) in one run.

    .venv/bin/python bench/bench_session.py [--peer-python .venv-peers/bin/python]

Cases: fetching a constant; feeding a scalar placeholder into an add; a 100-op elementwise chain
on a 100-element vector. TensorFlow runs in its own virtualenv (it is never a dependency of
Flowstone), through this same script with --framework tensorflow.
"""

import statistics
import time

import numpy as np

from harness import compare_main

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


def run_framework(tf):
    sess, calls = build_cases(tf)
    results = {case: measure(call) for case, call in zip(CASES, calls)}
    sess.close()
    return results


if __name__ == "__main__":
    compare_main(__doc__, __file__, run_framework, CASES,
                 ("flowstone us", "tensorflow us"),
                 (28, 14, 15))
