"""Eager execution: Flowstone vs TensorFlow eager vs PyTorch, in one run.

Each framework runs in its own process (TensorFlow and PyTorch in the peer Python given with
--peer-python, as bench/harness.py does) and reports microseconds per call, best of a few
repeats: a 3-element add, a 256x256 matmul, a tiny forward and backward (reduce_sum(x*x) with
its gradient to x), and a 3-layer MLP training step on a batch of 64 (SGD) written eagerly,
under tf.function, and (Flowstone and TensorFlow) as a graph run by Session.run.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

CASES = ["add (3 elements)", "matmul 256x256", "tiny forward+backward", "MLP step, eager",
         "MLP step, tf.function", "MLP step, Session.run"]
LAYERS = [(100, 256), (256, 256), (256, 10)]


def best_us(fn, iterations, repeats=5):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter() - start) / iterations)
    return best * 1e6


def mlp_data():
    rng = np.random.RandomState(0)
    weights = [rng.randn(i, o).astype(np.float32) * 0.05 for i, o in LAYERS]
    return (weights, rng.randn(64, LAYERS[0][0]).astype(np.float32),
            rng.randn(64, LAYERS[-1][1]).astype(np.float32))


def run_tf(tf, flowstone, quick=False):
    """Flowstone or TensorFlow (compat.v1 API, eager). `quick`: only the add and the forward and
    backward (the dispatch cases)."""
    out = {}
    a, b = tf.constant([1.0, 2.0, 3.0]), tf.constant([4.0, 5.0, 6.0])
    out[CASES[0]] = best_us(lambda: a + b, 20000)
    if not quick:
        m = tf.constant(np.random.RandomState(1).rand(256, 256).astype(np.float32))
        out[CASES[1]] = best_us(lambda: tf.matmul(m, m), 500)
    x = tf.constant([1.0, 2.0, 3.0])

    def fwd_bwd():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x * x)
        return tape.gradient(y, x)

    out[CASES[2]] = best_us(fwd_bwd, 2000)
    if quick:
        return out

    weights0, inputs, targets = mlp_data()
    variables = [tf.Variable(w) for w in weights0]
    xs, ys = tf.constant(inputs), tf.constant(targets)
    opt = tf.train.GradientDescentOptimizer(0.01)

    def step():
        with tf.GradientTape() as tape:
            h = xs
            for i, w in enumerate(variables):
                h = tf.matmul(h, w)
                if i < len(variables) - 1:
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean((h - ys) ** 2)
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    out[CASES[3]] = best_us(step, 200)
    traced = tf.function(step)
    out[CASES[4]] = best_us(traced, 200)
    out[CASES[5]] = session_step_us(tf, flowstone)
    return out


def session_step_us(tf, flowstone):
    """The same MLP step as a graph run by Session.run (TF1 style)."""
    weights0, inputs, targets = mlp_data()
    if flowstone:
        tf.disable_eager_execution()
    graph = tf.Graph()
    with graph.as_default():
        variables = [tf.Variable(w) for w in weights0]
        h = tf.constant(inputs)
        for i, w in enumerate(variables):
            h = tf.matmul(h, w)
            if i < len(variables) - 1:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean((h - tf.constant(targets)) ** 2)
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            return best_us(lambda: sess.run(train), 200)


def run_torch(quick=False):
    import torch
    torch.set_num_threads(os.cpu_count() or 1)
    out = {}
    a, b = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 5.0, 6.0])
    out[CASES[0]] = best_us(lambda: a + b, 20000)
    if not quick:
        m = torch.tensor(np.random.RandomState(1).rand(256, 256).astype(np.float32))
        out[CASES[1]] = best_us(lambda: m @ m, 500)

    def fwd_bwd():
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().backward()
        return x.grad

    out[CASES[2]] = best_us(fwd_bwd, 2000)
    if quick:
        return out
    weights0, inputs, targets = mlp_data()
    params = [torch.tensor(w, requires_grad=True) for w in weights0]
    xs, ys = torch.tensor(inputs), torch.tensor(targets)

    def step():
        h = xs
        for i, w in enumerate(params):
            h = h @ w
            if i < len(params) - 1:
                h = torch.relu(h)
        loss = ((h - ys) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for w in params:
                w -= 0.01 * w.grad
                w.grad = None
        return loss

    out[CASES[3]] = best_us(step, 200)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--framework", default=None,
                        help="run one framework (flowstone, tensorflow, torch) and print its "
                        "JSON, as bench/eager_rounds.py does")
    parser.add_argument("--quick", action="store_true",
                        help="with --framework: only the add and forward+backward cases")
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu and torch installed")
    args = parser.parse_args()
    if args.framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.enable_eager_execution()
        print(json.dumps(run_tf(tf, flowstone=False, quick=args.quick)))
        return
    if args.framework == "torch":
        print(json.dumps(run_torch(quick=args.quick)))
        return
    if args.framework == "flowstone":
        import flowstone as tf
        tf.enable_eager_execution()
        print(json.dumps(run_tf(tf, flowstone=True, quick=args.quick)))
        return
    import flowstone as tf
    tf.enable_eager_execution()
    results = {"Flowstone": run_tf(tf, flowstone=True)}
    for name in ("tensorflow", "torch"):
        results[name] = None
        if args.peer_python and os.path.exists(args.peer_python):
            proc = subprocess.run([args.peer_python, __file__, "--framework", name],
                                  capture_output=True, text=True)
            if proc.returncode == 0:
                results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
            else:
                print(f"{name} run failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
    print(f"{'case (us per call)':<26}{'Flowstone':>11}{'TF eager':>11}{'PyTorch':>11}")
    for case in CASES:
        row = [results["Flowstone"].get(case)]
        row += [r.get(case) if r else None for r in (results["tensorflow"], results["torch"])]
        cells = "".join(f"{v:>11.2f}" if v is not None else f"{'n/a':>11}" for v in row)
        print(f"{case:<26}{cells}")


if __name__ == "__main__":
    main()
