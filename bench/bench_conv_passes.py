"""Milliseconds per convolution pass (forward, input gradient, filter gradient) for the
convolutions of the tutorial CNN (issue 15) and of bench_keras.py's CNN, Flowstone against
TensorFlow, each op alone on constant inputs (float32, NHWC, batch 128):

    .venv/bin/python bench/bench_conv_passes.py --peer-python .venv-peers/bin/python

Each figure is the median of timed batches of `sess.run(op)`; the inputs are variables, so
neither framework can fold the op away. The "cpu" rows give the process's CPU time per run
(all threads), which a machine loaded by other work inflates far less than the wall time: it
compares the kernels' efficiency where the wall clock cannot.
"""

import statistics
import time

import numpy as np

from harness import compare_main

# (name, input shape, filter shape, padding)
CONVS = [
    ("tut1 28x28x1>32 SAME", (128, 28, 28, 1), (3, 3, 1, 32), "SAME"),
    ("tut2 14x14x32>64 SAME", (128, 14, 14, 32), (3, 3, 32, 64), "SAME"),
    ("tut3 7x7x64>128 SAME", (128, 7, 7, 64), (3, 3, 64, 128), "SAME"),
    ("keras1 28x28x1>32 VALID", (128, 28, 28, 1), (3, 3, 1, 32), "VALID"),
    ("keras2 13x13x32>64 VALID", (128, 13, 13, 32), (3, 3, 32, 64), "VALID"),
]
PASSES = ["fwd", "dx", "df"]
CASES = [f"{name} {p}{clock}" for name, *_ in CONVS for p in PASSES for clock in ("", " cpu")]


def measure(fn, repeats=7, min_time=0.2):
    """Median (wall, CPU) milliseconds per call over `repeats` timed batches of calls."""
    fn()
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < 0.05:
        fn()
        calls += 1
    per_batch = max(1, int(calls * min_time / 0.05))
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(per_batch):
            fn()
        wall.append((time.perf_counter() - start) * 1e3 / per_batch)
        cpu.append((time.process_time() - start_cpu) * 1e3 / per_batch)
    return statistics.median(wall), statistics.median(cpu)


def run_framework(tf):
    rng = np.random.default_rng(0)
    results = {}
    strides = [1, 1, 1, 1]
    for name, xs, fs, padding in CONVS:
        graph = tf.Graph()
        with graph.as_default():
            # Variables, not constants: TensorFlow would fold an op of constants away.
            x = tf.Variable(rng.standard_normal(xs).astype(np.float32))
            f = tf.Variable(rng.standard_normal(fs).astype(np.float32))
            y = tf.nn.conv2d(x, f, strides, padding)
            dy = tf.Variable(rng.standard_normal(y.shape.as_list()).astype(np.float32))
            init = tf.global_variables_initializer()
            ops = {
                "fwd": y.op,
                "dx": tf.nn.conv2d_backprop_input(list(xs), f, dy, strides, padding).op,
                "df": tf.nn.conv2d_backprop_filter(x, list(fs), dy, strides, padding).op,
            }
        with tf.Session(graph=graph) as sess:
            sess.run(init)
            for p in PASSES:
                wall, cpu = measure(lambda op=ops[p]: sess.run(op))
                results[f"{name} {p}"] = wall
                results[f"{name} {p} cpu"] = cpu
    return results


if __name__ == "__main__":
    compare_main(__doc__, __file__, run_framework, CASES, ("Flowstone ms", "TF ms"),
                 (30, 14, 10))
