"""One epoch of `fit` for Flowstone's tf.keras, tf-keras on TensorFlow, and PyTorch (a plain
training loop), in one run on the same machine.

    .venv/bin/python bench/bench_keras.py [--peer-python .venv-peers/bin/python] [--samples N]

Models, on MNIST-shaped random data (60,000 samples by default, batch 128, Adam, sparse
softmax cross entropy): (a) an MLP 784-512-512-10; (b) a small CNN on 28x28x1 (conv 3x3x32 relu,
max pool 2, conv 3x3x64 relu, max pool 2, dense 128 relu, dense 10). Each framework runs in its
own process; the figure is the wall time of one `fit(epochs=1, verbose=0)` after a warm-up fit
on a few batches (which builds the graph / traces the step), the best of --repeats.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

MODELS = ["mlp", "cnn"]
BATCH = 128


def data(model, samples, seed=0):
    rng = np.random.RandomState(seed)
    shape = (samples, 784) if model == "mlp" else (samples, 28, 28, 1)
    return rng.rand(*shape).astype(np.float32), rng.randint(0, 10, samples).astype(np.int64)


def keras_model(keras, model):
    layers = keras.layers
    if model == "mlp":
        stack = [layers.Dense(512, activation="relu", input_shape=(784,)),
                 layers.Dense(512, activation="relu"), layers.Dense(10)]
    else:
        stack = [layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
                 layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"),
                 layers.MaxPooling2D(), layers.Flatten(), layers.Dense(128, activation="relu"),
                 layers.Dense(10)]
    net = keras.Sequential(stack)
    net.compile(keras.optimizers.Adam(1e-3),
                keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return net


def run_keras(keras, samples, repeats):
    results = {}
    for model in MODELS:
        x, y = data(model, samples)
        net = keras_model(keras, model)
        net.fit(x[:4 * BATCH], y[:4 * BATCH], batch_size=BATCH, epochs=1, verbose=0)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            net.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
            times.append(time.perf_counter() - start)
        results[model] = min(times)
    return results


def run_torch(samples, repeats):
    import torch
    from torch import nn
    torch.set_num_threads(os.cpu_count())
    results = {}
    for model in MODELS:
        x, y = data(model, samples)
        if model == "mlp":
            net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                nn.Linear(512, 10))
        else:
            x = x.transpose(0, 3, 1, 2).copy()
            net = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                nn.Linear(64 * 5 * 5, 128), nn.ReLU(), nn.Linear(128, 10))
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)

        def epoch(count):
            order = torch.randperm(count)
            for start in range(0, count, BATCH):
                index = order[start:start + BATCH]
                optimizer.zero_grad()
                loss = loss_fn(net(xt[index]), yt[index])
                loss.backward()
                optimizer.step()

        epoch(4 * BATCH)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            epoch(samples)
            times.append(time.perf_counter() - start)
        results[model] = min(times)
    return results


def run_framework(name, samples, repeats):
    if name == "flowstone":
        import flowstone as tf
        return run_keras(tf.keras, samples, repeats)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if name == "tf_keras":
        import tf_keras
        return run_keras(tf_keras, samples, repeats)
    return run_torch(samples, repeats)


def peer(peer_python, name, samples, repeats):
    proc = subprocess.run([peer_python, os.path.abspath(__file__), "--framework", name,
                           "--samples", str(samples), "--repeats", str(repeats)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{name} run failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu, tf-keras and torch installed")
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    if args.framework:
        print(json.dumps(run_framework(args.framework, args.samples, args.repeats)))
        return
    columns = {"flowstone": run_framework("flowstone", args.samples, args.repeats)}
    for name in ("tf_keras", "torch"):
        columns[name] = None
        if args.peer_python and os.path.exists(args.peer_python):
            columns[name] = peer(args.peer_python, name, args.samples, args.repeats)
    print(f"one epoch of fit, {args.samples} samples, batch {BATCH} (seconds)")
    print(f"{'model':<8}{'Flowstone':>12}{'tf-keras':>12}{'PyTorch':>12}{'vs tf-keras':>14}")
    for model in MODELS:
        ours = columns["flowstone"][model]
        cells = [f"{c[model]:.2f}" if c else "n/a" for c in (columns["tf_keras"],
                                                            columns["torch"])]
        ratio = f"{columns['tf_keras'][model] / ours:.2f}x" if columns["tf_keras"] else "-"
        print(f"{model:<8}{ours:>12.2f}{cells[0]:>12}{cells[1]:>12}{ratio:>14}")


if __name__ == "__main__":
    main()
