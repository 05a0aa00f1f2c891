"""Milliseconds per LeNet-5-sized training step (forward and backward) on the CPU: the float32
oneDNN path against the reference loops (float32 with FLOWSTONE_ONEDNN=0, and float64).

    PYTHONPATH=python .venv/bin/python bench/bench_conv.py [--ops] [--threads N]

The network: batch 64 of 28x28x1 images; conv 5x5x6 (SAME) + bias, 2x2 max pool; conv 5x5x16
(VALID) + bias, 2x2 max pool. One step fetches the gradients of the filters and biases (which
runs the forward pass too). Each configuration runs in its own process because
FLOWSTONE_ONEDNN is read once per process. --ops also times each op of the step alone.
--threads N sizes Flowstone's thread pools (oneDNN calls are single-threaded; the intra-op pool
runs chunks of the batch in parallel); N=1 gives the steadiest timings on a machine shared with
other work.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def measure(fn, repeats=7, min_time=0.3):
    """Median milliseconds per call over `repeats` timed batches of calls."""
    fn()
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < 0.1:
        fn()
        calls += 1
    per_batch = max(1, int(calls * min_time / 0.1))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(per_batch):
            fn()
        samples.append((time.perf_counter() - start) * 1e3 / per_batch)
    return statistics.median(samples)


def lenet_step(dtype, with_ops, threads):
    import flowstone as tf
    from flowstone.framework.ops import apply_op
    from flowstone.ops import conv_ops as nn

    rng = np.random.default_rng(0)
    np_dtype = np.dtype(dtype)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.uniform(-1, 1, (64, 28, 28, 1)).astype(np_dtype))
        f1 = tf.constant(rng.uniform(-0.2, 0.2, (5, 5, 1, 6)).astype(np_dtype))
        b1 = tf.constant(np.zeros(6, np_dtype))
        f2 = tf.constant(rng.uniform(-0.2, 0.2, (5, 5, 6, 16)).astype(np_dtype))
        b2 = tf.constant(np.zeros(16, np_dtype))
        h1 = nn.bias_add(nn.conv2d(x, f1, 1, "SAME"), b1)
        p1 = nn.max_pool(h1, 2, 2, "VALID")
        h2 = nn.bias_add(nn.conv2d(p1, f2, 1, "VALID"), b2)
        p2 = nn.max_pool(h2, 2, 2, "VALID")
        seed = tf.constant(np.ones(p2.shape.as_list(), np_dtype))
        grads = tf.gradients(p2, [f1, b1, f2, b2], grad_ys=seed)
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    sess = tf.Session(graph=graph, config=config)
    pieces = {}
    if with_ops:
        # Each op of the step alone, on constant inputs of the step's values.
        values = dict(zip(["x", "h1", "p1", "h2"], sess.run([x, h1, p1, h2])))
        with graph.as_default():
            c = {k: tf.constant(v) for k, v in values.items()}
            pool_attrs = {"ksize": [1, 2, 2, 1], "strides": [1, 2, 2, 1], "padding": "VALID"}
            pieces = {
                "conv1 forward": nn.conv2d(c["x"], f1, 1, "SAME"),
                "bias1 forward": nn.bias_add(c["h1"], b1),
                "bias1 grad": apply_op("BiasAddGrad", [c["h1"]]).outputs[0],
                "conv1 filter grad": nn.conv2d_backprop_filter(c["x"], [5, 5, 1, 6], c["h1"], 1,
                                                               "SAME"),
                "pool1 forward": nn.max_pool(c["h1"], 2, 2, "VALID"),
                "pool1 grad": apply_op("MaxPoolGrad", [c["h1"], c["p1"], c["p1"]],
                                       pool_attrs).outputs[0],
                "conv2 forward": nn.conv2d(c["p1"], f2, 1, "VALID"),
                "conv2 input grad": nn.conv2d_backprop_input([64, 14, 14, 6], f2, c["h2"], 1,
                                                             "VALID"),
                "conv2 filter grad": nn.conv2d_backprop_filter(c["p1"], [5, 5, 6, 16], c["h2"],
                                                               1, "VALID"),
            }
    results = {"step": measure(lambda: sess.run(grads))}
    for name, tensor in pieces.items():
        results[name] = measure(lambda t=tensor: sess.run(t.op))
    sess.close()
    return results


CONFIGS = [
    ("float32, oneDNN", "float32", "1"),
    ("float32, reference loops", "float32", "0"),
    ("float64, reference loops", "float64", "1"),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", action="store_true", help="also time each op alone")
    parser.add_argument("--threads", type=int, default=0, help="threads (0: all cores)")
    parser.add_argument("--child", nargs=2, metavar=("DTYPE", "OPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(lenet_step(args.child[0], args.child[1] == "1", args.threads)))
        return
    for label, dtype, onednn in CONFIGS:
        env = dict(os.environ, FLOWSTONE_ONEDNN=onednn)
        out = subprocess.run([sys.executable, __file__, "--child", dtype, "1" if args.ops else "0",
                              "--threads", str(args.threads)],
                             env=env, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{label} failed:\n{out.stderr}")
        results = json.loads(out.stdout)
        print(f"{label:26s} step {results.pop('step'):8.2f} ms")
        for name, ms in results.items():
            print(f"    {name:22s} {ms:8.3f} ms")


if __name__ == "__main__":
    main()
