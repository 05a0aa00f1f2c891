"""Milliseconds per max pooling pass for the poolings of bench_keras.py's CNN and of the tutorial
CNN (issue 15), Flowstone against TensorFlow, on one intra-op and one inter-op thread (float32,
NHWC, batch 128, 2x2 windows, stride 2):

    .venv/bin/python bench/bench_pool_passes.py --peer-python .venv-peers/bin/python

"fwd" runs MaxPool alone; "fwd+grad" runs MaxPool and the MaxPoolGrad of a training graph
(TensorFlow's oneDNN rewrite pairs the two through a workspace of argmaxes; Flowstone finds the
maxima again), so "fwd+grad" minus "fwd" is the gradient's cost. For Flowstone, "argmax" runs the
same pair as MaxPoolWithArgmax + MaxPoolGradWithArgmax (the workspace design with the existing
ops). The "cpu" rows give the process's CPU time per run, which a loaded machine inflates far
less than the wall time.
"""

import numpy as np

from bench_conv_passes import measure
from harness import compare_main

# (name, input shape, padding)
POOLS = [
    ("keras1 26x26x32 VALID", (128, 26, 26, 32), "VALID"),
    ("keras2 11x11x64 VALID", (128, 11, 11, 64), "VALID"),
    ("tut1 28x28x32 SAME", (128, 28, 28, 32), "SAME"),
    ("tut2 14x14x64 SAME", (128, 14, 14, 64), "SAME"),
]
PASSES = ["fwd", "fwd+grad", "argmax"]
CASES = [f"{name} {p}{clock}" for name, *_ in POOLS for p in PASSES for clock in ("", " cpu")]


def run_framework(tf):
    rng = np.random.default_rng(0)
    config = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    results = {}
    window = [1, 2, 2, 1]
    for name, xs, padding in POOLS:
        graph = tf.Graph()
        with graph.as_default():
            # Variables, not constants: TensorFlow would fold an op of constants away. A ReLU's
            # output, as in the models: about half the inputs are zero, so windows have ties.
            x = tf.Variable(np.maximum(rng.standard_normal(xs), 0).astype(np.float32))
            y = tf.nn.max_pool(x, window, window, padding)
            dy = tf.Variable(rng.standard_normal(y.shape.as_list()).astype(np.float32))
            ops = {"fwd": y.op, "fwd+grad": tf.gradients(y, x, grad_ys=dy)[0].op}
            if tf.__name__.startswith("flowstone"):
                from flowstone.framework.ops import apply_op
                attrs = {"ksize": window, "strides": window, "padding": padding}
                pooled, argmax = apply_op("MaxPoolWithArgmax", [x], attrs).outputs
                ops["argmax"] = apply_op("MaxPoolGradWithArgmax", [x, dy, argmax], attrs)
            init = tf.global_variables_initializer()
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(init)
            for p in PASSES:
                if p not in ops:
                    results[f"{name} {p}"] = results[f"{name} {p} cpu"] = None
                    continue
                wall, cpu = measure(lambda op=ops[p]: sess.run(op))
                results[f"{name} {p}"] = wall
                results[f"{name} {p} cpu"] = cpu
    return results


if __name__ == "__main__":
    compare_main(__doc__, __file__, run_framework, CASES, ("Flowstone ms", "TF ms"),
                 (32, 14, 10))
