"""CPU time per step with and without fusion (rewrite_options.remapping), in one process: the
same graph in two sessions whose steps alternate, so that both see the same load.

    .venv/bin/python bench/bench_fusion.py [--models mlp,lenet5,tutorial_cnn,frozen_cnn] [--steps 100]

mlp, lenet5 and tutorial_cnn are bench_training.py's training steps. frozen_cnn is inference
(batch 32) of a frozen conv net: four 3x3 convolutions (32, 64, 64, 128 filters, 32x32x3
inputs) each followed by an inference FusedBatchNorm and ReLU, max pooling after the second and
fourth, then a dense 8192-256 layer with bias and ReLU and a dense 256-10 one, all weights
constants. CPU time (time.process_time, all threads) rather than wall
time: on a shared machine the wall time mostly measures the scheduler. Each session runs with
one intra-op and one inter-op thread, so the CPU time is the work itself, not idle spinning.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_training  # noqa: E402
import flowstone as tf  # noqa: E402
import numpy as np  # noqa: E402
from flowstone.protos import RewriterConfig  # noqa: E402


def config(fused):
    cfg = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    if not fused:
        cfg.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    return cfg


def frozen_cnn(cfg):
    rng = np.random.default_rng(0)

    def const(*shape, low=-0.2, high=0.2):
        return tf.constant(rng.uniform(low, high, shape).astype(np.float32))

    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 32, 32, 3])
        h = x
        for i, filters in enumerate([32, 64, 64, 128]):
            h = tf.nn.conv2d(h, const(3, 3, int(h.shape[-1]), filters), [1, 1, 1, 1], "SAME")
            h, _, _ = tf.nn.fused_batch_norm(
                h, const(filters, low=0.5, high=1.5), const(filters), mean=const(filters),
                variance=const(filters, low=0.5, high=1.5), is_training=False)
            h = tf.nn.relu(h)
            if i % 2:
                h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        h = tf.reshape(h, [-1, 8 * 8 * 128])
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(h, const(8192, 256, low=-0.02, high=0.02)),
                                      const(256)))
        y = tf.matmul(h, const(256, 10)) + const(10)
    sess = tf.Session(graph=graph, config=cfg)
    data = rng.uniform(0, 1, (32, 32, 32, 3)).astype(np.float32)
    return lambda: sess.run(y, {x: data})


def build(model, fused):
    if model == "frozen_cnn":
        return frozen_cnn(config(fused))
    return bench_training.tf1_graph(tf, model, config(fused))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", default=",".join(bench_training.MODELS + ["frozen_cnn"]))
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    print(f"{'model':<14}{'fused ms':>10}{'unfused ms':>12}{'change':>9}   (median CPU time per "
          f"step, {args.steps} alternating steps each)")
    for model in args.models.split(","):
        steps = {fused: build(model, fused) for fused in (True, False)}
        times = {True: [], False: []}
        for i in range(args.steps + 10):
            for fused in (True, False) if i % 2 else (False, True):
                start = time.process_time()
                steps[fused]()
                if i >= 10:  # warm-up
                    times[fused].append((time.process_time() - start) * 1e3)
        fused, unfused = (statistics.median(times[f]) for f in (True, False))
        print(f"{model:<14}{fused:>10.2f}{unfused:>12.2f}{(fused / unfused - 1) * 100:>8.1f}%")


if __name__ == "__main__":
    main()
