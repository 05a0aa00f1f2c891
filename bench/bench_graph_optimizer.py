"""Microseconds per sess.run of an inference graph with constant preprocessing, with the graph
optimizer (rewrite_options) on and off, for Flowstone and TensorFlow (compat.v1) in one run.

    .venv/bin/python bench/bench_graph_optimizer.py [--peer-python .venv-peers/bin/python]

The graph is what freezing a TF1 model often leaves: an MLP 256-512-512-10 whose batch norms are
still ops on constants (gamma / sqrt(var + eps) per layer), weights stored transposed, and input
statistics computed from a constant sample of the data. With constant folding all of that is
computed once, when the plan is built; without it, every run recomputes it. "off" sets
disable_meta_optimizer (and, for TensorFlow, its classic optimizer's opt_level L0).
"""

import statistics
import time

import numpy as np

from harness import compare_main

CASES = ["batch 1, optimizer on", "batch 1, optimizer off",
         "batch 32, optimizer on", "batch 32, optimizer off"]


def build_graph(tf):
    rng = np.random.RandomState(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 256], name="x")
        sample = tf.constant(rng.rand(2048, 256).astype(np.float32))
        mean = tf.reduce_mean(sample, axis=0)
        std = tf.sqrt(tf.reduce_mean(tf.square(sample - mean), axis=0) + 1e-6)
        h = (x - mean) / std
        for i, (n_in, n_out) in enumerate([(256, 512), (512, 512), (512, 10)]):
            w_t = tf.constant(rng.randn(n_out, n_in).astype(np.float32) * 0.05)
            gamma = tf.constant(rng.rand(n_out).astype(np.float32) + 0.5)
            beta = tf.constant(rng.randn(n_out).astype(np.float32))
            moving_mean = tf.constant(rng.randn(n_out).astype(np.float32))
            moving_var = tf.constant(rng.rand(n_out).astype(np.float32) + 0.5)
            scale = gamma * tf.rsqrt(moving_var + 1e-3)
            w = tf.transpose(w_t) * scale
            b = beta - moving_mean * scale
            h = tf.matmul(h, w) + b
            if i < 2:
                h = tf.nn.relu(h)
        y = tf.nn.softmax(h)
    return graph, x, y


def config(tf, optimize):
    cfg = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    if not optimize:
        cfg.graph_options.rewrite_options.disable_meta_optimizer = True
        cfg.graph_options.optimizer_options.opt_level = -1  # TensorFlow's classic L0
    return cfg


def measure(fn, runs=200):
    """The median of single runs in µs: on this shared machine a mean over a batch of runs is
    dominated by the few that lose their core."""
    for _ in range(20):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def run_framework(tf):
    results = {}
    outputs = {}
    for batch in (1, 32):
        data = np.random.RandomState(batch).rand(batch, 256).astype(np.float32)
        for optimize in (True, False):
            graph, x, y = build_graph(tf)
            with tf.Session(graph=graph, config=config(tf, optimize)) as sess:
                outputs[optimize] = sess.run(y, {x: data})
                case = f"batch {batch}, optimizer {'on' if optimize else 'off'}"
                results[case] = measure(lambda: sess.run(y, {x: data}))
        assert np.allclose(outputs[True], outputs[False], rtol=1e-5, atol=1e-6)
    return results


if __name__ == "__main__":
    compare_main(__doc__, __file__, run_framework, CASES,
                 ("flowstone us", "tensorflow us"), (26, 14, 15))
