"""Training-step time for Flowstone, TensorFlow (compat.v1 graph mode) and PyTorch (CPU), in one
run on the same machine.

    .venv/bin/python bench/bench_training.py [--peer-python .venv-peers/bin/python]

Models: (a) an MLP 784-512-512-10 at batch 128; (b) LeNet-5 on 28x28x1 inputs at batch 64
(conv 5x5x6 same, max pool 2, conv 5x5x16 valid, max pool 2, dense 120, 84, 10), both with
softmax cross entropy and Adam; (c) the tutorial CNN of issue 15 (bench/tutorial_cnn.py: 3x3
convolutions with 32/64/128 filters, SAME, ReLU, 2x2 max pooling and dropout 0.8 after each, dense
625 with dropout 0.5, 10) at batch 128, with RMSProp(0.001, 0.9); and, only when asked for
(`--models keras_cnn`), bench_keras.py's CNN in TF1 ops (conv 3x3x32 valid, max pool 2, conv
3x3x64 valid, max pool 2, dense 128, 10, Adam, batch 128). Each framework runs in its own
process; the figure is the median of the per-step times after warm-up. --rounds N runs the
frameworks N times in turn (interleaved, for a shared machine) and reports the median of the
rounds' medians and their range. --frameworks picks who runs; `flowstone-unfused` is Flowstone
with rewrite_options.remapping OFF (no _FusedConv2D / _FusedMatMul), for before/after numbers of
the fusions in one run.

Beside the step times the bench prints each model's rate in GFLOP/s: the multiply-adds of its
matrix products and convolutions per step (counted from the layer shapes by `step_macs`; the
element-wise ops, the loss and the optimizer are not counted), two FLOPs each, over the step time.
It states them against the machine's float32 peak, measured with one sgemm through oneDNN
(`flowstone._C.sgemm_peak`: a PEAK_N^3 product, large enough for oneDNN's peak, the fastest of
PEAK_REPEATS calls) on one thread and on all the cores the process may use, in each round; the
best of the rounds is the peak. With --clock cpu the rates are per second of the process's CPU
time, against the one-thread peak by CPU time: an efficiency that a loaded machine distorts far
less than the wall clock.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

MODELS = ["mlp", "lenet5", "tutorial_cnn"]
# Not run by default: bench_keras.py's CNN in TF1 ops, for profile_step_ops.py --model keras_cnn.
EXTRA_MODELS = ["keras_cnn"]
BATCH = {"mlp": 128, "lenet5": 64, "tutorial_cnn": 128, "keras_cnn": 128}
WARMUP = 10
STEPS = 40
# oneDNN's sgemm already runs at its peak at this size (512^3: 113 GFLOP/s on one core of the
# Zen 4 this was written on, 2048^3: 110 by CPU time; 226 on both cores), and a call takes about
# 1-2 ms, so that on a loaded machine some of the calls run without losing their core; the
# fastest of them is the peak. (Each 2048^3 call on a loaded machine lost its core and measured
# 22-36 GFLOP/s.)
PEAK_N = 512
PEAK_REPEATS = 30

# Layer shapes: dense layers as (inputs, outputs); convolutions as (output height, width,
# channels, kernel height, width, input channels).
LAYERS = {
    "mlp": {"dense": [(784, 512), (512, 512), (512, 10)]},
    "lenet5": {"conv": [(28, 28, 6, 5, 5, 1), (10, 10, 16, 5, 5, 6)],
               "dense": [(400, 120), (120, 84), (84, 10)]},
    "tutorial_cnn": {"conv": [(28, 28, 32, 3, 3, 1), (14, 14, 64, 3, 3, 32),
                              (7, 7, 128, 3, 3, 64)],
                     "dense": [(2048, 625), (625, 10)]},
}


def step_macs(model):
    """Multiply-adds of one training step's products: each layer's forward product, its weight
    gradient (as many again) and its input gradient (as many again), except the first layer's
    input gradient, which no one needs. For the MLP at batch 128: 85.5 M forward, 85.5 M weight
    gradients, 34.2 M input gradients, 205.4 M in all."""
    per_example = []
    for h, w, c_out, kh, kw, c_in in LAYERS[model].get("conv", []):
        per_example.append(h * w * c_out * kh * kw * c_in)
    for n_in, n_out in LAYERS[model]["dense"]:
        per_example.append(n_in * n_out)
    forward = sum(per_example)
    return BATCH[model] * (2 * forward + forward - per_example[0])


def data(model, seed=0):
    rng = np.random.RandomState(seed)
    if model == "mlp":
        x = rng.rand(BATCH[model], 784).astype(np.float32)
    else:
        x = rng.rand(BATCH[model], 28, 28, 1).astype(np.float32)
    y = rng.randint(0, 10, size=BATCH[model]).astype(np.int64)
    return x, y


# "wall", or "cpu": the process's CPU time per step (all threads), which a machine loaded by
# other work inflates far less than the wall time.
CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCK["wall"]


def time_steps(step):
    for _ in range(WARMUP):
        step()
    times = []
    for _ in range(STEPS):
        start = clock()
        step()
        times.append((clock() - start) * 1e3)
    return statistics.median(times)


def tf1_graph(tf, model, config=None):
    """One training step of the model as a callable."""
    sess, train, feed = tf1_session(tf, model, config)
    return lambda: sess.run(train, feed)


def tf1_session(tf, model, config=None):
    """The model in plain TF1 ops (tf.layers is gone from TensorFlow 2.16's compat.v1): an
    initialized session, the training op and the feed of one step."""
    def dense(h, units, relu=True):
        w = tf.get_variable(f"w{len(tf.trainable_variables())}", [h.shape[-1], units],
                            initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable(f"b{len(tf.trainable_variables())}", [units],
                            initializer=tf.zeros_initializer())
        out = tf.nn.bias_add(tf.matmul(h, w), b)
        return tf.nn.relu(out) if relu else out

    def conv(h, filters, padding, size=5):
        w = tf.get_variable(f"w{len(tf.trainable_variables())}",
                            [size, size, h.shape[-1], filters],
                            initializer=tf.glorot_uniform_initializer())
        b = tf.get_variable(f"b{len(tf.trainable_variables())}", [filters],
                            initializer=tf.zeros_initializer())
        out = tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding=padding)
        return tf.nn.relu(tf.nn.bias_add(out, b))

    def pool(h):
        return tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")

    def tutorial_block(h, filters):
        w = tf.get_variable(f"w{len(tf.trainable_variables())}", [3, 3, h.shape[-1], filters],
                            initializer=tf.random_normal_initializer(stddev=0.01))
        h = tf.nn.relu(tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="SAME"))
        h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        return tf.nn.dropout(h, rate=0.2)

    graph = tf.Graph()
    with graph.as_default():
        if model == "mlp":
            x = tf.placeholder(tf.float32, [None, 784])
            h = dense(dense(x, 512), 512)
        elif model == "tutorial_cnn":
            x = tf.placeholder(tf.float32, [None, 28, 28, 1])
            h = tutorial_block(tutorial_block(tutorial_block(x, 32), 64), 128)
            h = tf.nn.dropout(dense(tf.reshape(h, [-1, 2048]), 625), rate=0.5)
        elif model == "keras_cnn":
            x = tf.placeholder(tf.float32, [None, 28, 28, 1])
            h = pool(conv(x, 32, "VALID", size=3))
            h = pool(conv(h, 64, "VALID", size=3))
            h = dense(tf.reshape(h, [-1, 5 * 5 * 64]), 128)
        else:
            x = tf.placeholder(tf.float32, [None, 28, 28, 1])
            h = pool(conv(x, 6, "SAME"))
            h = pool(conv(h, 16, "VALID"))
            h = tf.reshape(h, [-1, 5 * 5 * 16])
            h = dense(dense(h, 120), 84)
        logits = dense(h, 10, relu=False)
        y = tf.placeholder(tf.int64, [None])
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        if model == "tutorial_cnn":
            train = tf.train.RMSPropOptimizer(0.001, 0.9).minimize(loss)
        else:
            train = tf.train.AdamOptimizer(1e-3).minimize(loss)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph, config=config)
    sess.run(init)
    xv, yv = data(model)
    return sess, train, {x: xv, y: yv}


def run_flowstone(model):
    import flowstone as tf
    return time_steps(tf1_graph(tf, model))


def run_flowstone_unfused(model):
    import flowstone as tf
    from flowstone.protos import RewriterConfig
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    return time_steps(tf1_graph(tf, model, config))


def run_tensorflow(model):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    return time_steps(tf1_graph(tf, model))


def run_torch(model):
    import torch
    from torch import nn
    torch.manual_seed(0)
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                            nn.Linear(512, 10))
    elif model == "tutorial_cnn":
        def block(c_in, c_out):
            return [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.ReLU(),
                    nn.MaxPool2d(2, ceil_mode=True), nn.Dropout(0.2)]
        net = nn.Sequential(*block(1, 32), *block(32, 64), *block(64, 128), nn.Flatten(),
                            nn.Linear(2048, 625), nn.ReLU(), nn.Dropout(0.5), nn.Linear(625, 10))
    else:
        net = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                            nn.Linear(84, 10))
    if model == "tutorial_cnn":
        # TensorFlow's RMSProp puts epsilon inside the square root, PyTorch's outside; the
        # arithmetic per step is the same.
        opt = torch.optim.RMSprop(net.parameters(), lr=1e-3, alpha=0.9, eps=1e-10)
    else:
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    xv, yv = data(model)
    x = torch.from_numpy(xv if model == "mlp" else xv.transpose(0, 3, 1, 2).copy())
    net.train()
    y = torch.from_numpy(yv)

    def step():
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
    return time_steps(step)


def run_peak():
    """oneDNN's sgemm on one thread and on every core this process may use: GFLOP/s by the wall
    clock, and on one thread also per second of its CPU time (which a loaded machine inflates
    far less)."""
    from flowstone import _C
    cores = len(os.sched_getaffinity(0))
    rates = {}
    for threads in sorted({1, cores}):
        r = _C.sgemm_peak(PEAK_N, threads, PEAK_REPEATS)
        rates[str(threads)] = {"wall": r["gflops"]}
        if threads == 1:
            rates["1"]["cpu"] = 2 * PEAK_N ** 3 / r["cpu_seconds"] / 1e9
    return rates


def gflops(model, ms):
    return 2 * step_macs(model) / (ms * 1e-3) / 1e9


RUNNERS = {"flowstone": run_flowstone, "flowstone-unfused": run_flowstone_unfused,
           "tensorflow": run_tensorflow, "pytorch": run_torch}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--framework", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated, from " + ", ".join(MODELS + EXTRA_MODELS))
    parser.add_argument("--frameworks", default="flowstone,tensorflow,pytorch",
                        help="comma-separated, from " + ", ".join(RUNNERS))
    parser.add_argument("--rounds", type=int, default=1, help="interleaved runs per framework")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall",
                        help="time per step: wall clock, or the process's CPU time")
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu and torch installed")
    parser.add_argument("--no-peak", action="store_true",
                        help="skip measuring the float32 GEMM peak")
    args = parser.parse_args()
    models = args.models.split(",")
    global clock
    clock = CLOCK[args.clock]
    if args.framework == "peak":
        print(json.dumps(run_peak()))
        return
    if args.framework:
        print(json.dumps({m: RUNNERS[args.framework](m) for m in models}))
        return
    runs = {}  # framework -> model -> [median of each round]
    peaks = {}  # threads -> [{'wall': GFLOP/s, 'cpu': GFLOP/s} of each round]
    for _ in range(args.rounds):
        if not args.no_peak:
            proc = subprocess.run([sys.executable, __file__, "--framework", "peak"],
                                  capture_output=True, text=True)
            if proc.returncode == 0:
                for threads, rates in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                    peaks.setdefault(threads, []).append(rates)
            else:
                print(f"peak failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        for name in args.frameworks.split(","):
            python = sys.executable if name.startswith("flowstone") else args.peer_python
            if not python or not os.path.exists(python):
                continue
            proc = subprocess.run([python, __file__, "--framework", name, "--models",
                                   args.models, "--clock", args.clock],
                                  capture_output=True, text=True)
            if proc.returncode == 0:
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                for model, ms in result.items():
                    runs.setdefault(name, {}).setdefault(model, []).append(ms)
            else:
                print(f"{name} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
    results = {n: {m: statistics.median(v) for m, v in r.items()} for n, r in runs.items()}
    print(f"{'model':<14}" + "".join(f"{n + ' ms':>16}" for n in results) +
          f"{'vs tf':>8}{'vs torch':>10}")
    for model in models:
        row = f"{model:<14}" + "".join(f"{results[n][model]:>16.2f}" for n in results)
        ours = results.get("flowstone", {}).get(model)
        for peer in ["tensorflow", "pytorch"]:
            theirs = results.get(peer, {}).get(model)
            row += f"{theirs / ours:>8.2f}x" if ours and theirs else f"{'-':>9}"
        print(row)
    if args.rounds > 1:
        for name, per_model in runs.items():
            print(name + ": " + ", ".join(f"{m} {min(v):.2f}-{max(v):.2f}"
                                          for m, v in per_model.items()))
    if not results or not peaks:
        return
    # The peak a step is held to: all cores by the wall clock; with --clock cpu, one core by CPU
    # time (a step's FLOPs per second of CPU time cannot exceed what one core does).
    kind = "cpu" if args.clock == "cpu" else "wall"
    peak = {t: max(r[kind] for r in rates) for t, rates in peaks.items() if kind in rates[0]}
    print(f"float32 peak, oneDNN sgemm {PEAK_N}^3, best of {len(peaks['1'])} round(s), GFLOP/s "
          f"per second of {kind} time: " +
          ", ".join(f"{t} thread(s) {rate:.1f}" for t, rate in
                    sorted(peak.items(), key=lambda kv: int(kv[0]))))
    reference = peak["1"] if kind == "cpu" else peak[max(peak, key=int)]
    print(f"products' GFLOP/s per second of {kind} time, and % of that peak "
          f"({'one thread' if kind == 'cpu' else 'all threads'}):")
    for model in models:
        cells = [f"{name} {gflops(model, results[name][model]):.1f} "
                 f"({100 * gflops(model, results[name][model]) / reference:.0f}%)"
                 for name in results]
        print(f"{model:<14}{2 * step_macs(model) / 1e6:>6.0f} MFLOP  " + ", ".join(cells))


if __name__ == "__main__":
    main()
