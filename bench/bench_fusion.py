"""CPU time per step with and without fusion (rewrite_options.remapping), in one process: the
same graph in two sessions whose steps alternate, so that both see the same load.

    .venv/bin/python bench/bench_fusion.py [--models mlp,lenet5,tutorial_cnn,frozen_cnn] [--steps 100]
        [--peer-python .venv-peers/bin/python] [--passes]

mlp, lenet5 and tutorial_cnn are bench_training.py's training steps. frozen_cnn is inference
(batch 32) of a frozen conv net: four 3x3 convolutions (32, 64, 64, 128 filters, 32x32x3
inputs) each followed by an inference FusedBatchNorm and ReLU, max pooling after the second and
fourth, then a dense 8192-256 layer with bias and ReLU and a dense 256-10 one, all weights
constants; with --peer-python, TensorFlow runs it too (in its own process, Grappler on, which
fuses it the same way), for scale. --passes times single layers instead (the forward chains of
the tutorial CNN and LeNet-5, a conv + batch norm + ReLU, the MLP's first dense layer). CPU time (time.process_time, all threads) rather than wall
time: on a shared machine the wall time mostly measures the scheduler. Each session runs with
one intra-op and one inter-op thread, so the CPU time is the work itself, not idle spinning.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

if __name__ == "__main__" and "--tensorflow" in sys.argv:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    RewriterConfig = None
else:
    import bench_training
    import flowstone as tf
    from flowstone.protos import RewriterConfig


def config(fused):
    cfg = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    if not fused:
        cfg.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    return cfg


def time_frozen_cnn_in_tensorflow(steps):
    """Median CPU time per run of frozen_cnn in TensorFlow (this process), one thread."""
    run = frozen_cnn(tf.ConfigProto(intra_op_parallelism_threads=1,
                                    inter_op_parallelism_threads=1))
    times = []
    for i in range(steps + 10):
        start = time.process_time()
        run()
        if i >= 10:
            times.append((time.process_time() - start) * 1e3)
    return statistics.median(times)


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


def layer_passes(steps):
    """Fused against unfused CPU time of single layers, run as targets (nothing fetched)."""
    rng = np.random.default_rng(0)

    def const(*shape):
        return tf.constant(rng.uniform(-0.5, 0.5, shape).astype(np.float32))

    def conv(c_in, c_out, bias=False, norm=False):
        def build(x):
            h = tf.nn.conv2d(x, const(3, 3, c_in, c_out), [1, 1, 1, 1], "SAME")
            if bias:
                h = tf.nn.bias_add(h, const(c_out))
            if norm:
                h, _, _ = tf.nn.fused_batch_norm(h, const(c_out), const(c_out), mean=const(c_out),
                                                 variance=const(c_out) + 1.0, is_training=False)
            return tf.nn.relu(h)
        return build

    def dense(x):
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(x, const(784, 512)), const(512)))

    cases = [("conv 28x28x1->32 + relu, batch 128", conv(1, 32), (128, 28, 28, 1)),
             ("conv 14x14x32->64 + relu, batch 128", conv(32, 64), (128, 14, 14, 32)),
             ("conv 28x28x1->32 + bias + relu, batch 128", conv(1, 32, bias=True),
              (128, 28, 28, 1)),
             ("conv 16x16x32->64 + batch norm + relu, batch 32", conv(32, 64, norm=True),
              (32, 16, 16, 32)),
             ("matmul 784->512 + bias + relu, batch 128", dense, (128, 784))]
    print(f"{'layer':<50}{'fused ms':>10}{'unfused ms':>12}{'change':>9}")
    for name, make, shape in cases:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, shape)
            target = make(x).op
        data = rng.uniform(-1, 1, shape).astype(np.float32)
        sessions = {f: tf.Session(graph=graph, config=config(f)) for f in (True, False)}
        times = {True: [], False: []}
        for i in range(steps + 5):
            for fused in (True, False):
                start = time.process_time()
                sessions[fused].run(target, {x: data})
                if i >= 5:
                    times[fused].append((time.process_time() - start) * 1e3)
        fused, unfused = (statistics.median(times[f]) for f in (True, False))
        print(f"{name:<50}{fused:>10.3f}{unfused:>12.3f}{(fused / unfused - 1) * 100:>8.1f}%")


def build(model, fused):
    if model == "frozen_cnn":
        return frozen_cnn(config(fused))
    return bench_training.tf1_graph(tf, model, config(fused))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", default="mlp,lenet5,tutorial_cnn,frozen_cnn")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--peer-python", default=None, help="a Python with tensorflow-cpu")
    parser.add_argument("--tensorflow", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--passes", action="store_true", help="time single layers instead")
    args = parser.parse_args()
    if args.tensorflow:
        print(time_frozen_cnn_in_tensorflow(args.steps))
        return
    if args.passes:
        layer_passes(args.steps)
        return
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
        row = f"{model:<14}{fused:>10.2f}{unfused:>12.2f}{(fused / unfused - 1) * 100:>8.1f}%"
        if model == "frozen_cnn" and args.peer_python:
            proc = subprocess.run([args.peer_python, __file__, "--tensorflow", "--steps",
                                   str(args.steps)], capture_output=True, text=True)
            if proc.returncode == 0:
                row += f"   TensorFlow {float(proc.stdout.split()[-1]):.2f} ms"
            else:
                row += "   TensorFlow failed: " + proc.stderr[-300:]
        print(row)


if __name__ == "__main__":
    main()
