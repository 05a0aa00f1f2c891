"""Element-wise float32 math (the ops of src/ops/math/vector_math.h) for Flowstone and TensorFlow
(compat.v1 graph mode, in the peer Python), in one run on the same machine.

    .venv/bin/python bench/bench_elementwise_math.py [--peer-python .venv-peers/bin/python]

Each case runs one op on a float32 variable of 8,192 or 1,048,576 elements (Softmax and
LogSoftmax: rows of 1,024) as a run target, so nothing is fetched. Each figure is the median of 7
rounds of the mean of a round's runs, in microseconds per run, including the run's fixed cost
(the "Identity" rows show that floor): "wall" is the latency, "cpu" the CPU time of the process
(all its threads), which on a shared, loaded machine says more about the work than the wall time.
"""

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare_main  # noqa: E402

OPS = ["Identity", "Exp", "Expm1", "Log", "Log1p", "Sigmoid", "Tanh", "Erf", "Erfc", "Softplus",
       "Elu", "Selu", "Softmax", "LogSoftmax"]
SIZES = {"8K": 8192, "1M": 1 << 20}
ROUNDS = 7
CASES = [f"{op} {size} {clock}" for op in OPS for size in SIZES for clock in ("wall", "cpu")]


def build(tf, op, n):
    rng = np.random.default_rng(0)
    # Positive values for the logarithms; a spread that exercises every branch elsewhere.
    values = (rng.uniform(0.01, 10.0, n) if op in ("Log", "Log1p")
              else rng.uniform(-8.0, 8.0, n)).astype(np.float32)
    shape = [n // 1024, 1024] if op in ("Softmax", "LogSoftmax") else [n]
    x = tf.Variable(values.reshape(shape))
    fn = {"Identity": tf.identity, "Exp": tf.exp, "Expm1": tf.math.expm1, "Log": tf.math.log,
          "Log1p": tf.math.log1p, "Sigmoid": tf.sigmoid, "Tanh": tf.tanh, "Erf": tf.math.erf,
          "Erfc": tf.math.erfc,
          "Softplus": tf.nn.softplus, "Elu": tf.nn.elu, "Selu": tf.nn.selu,
          "Softmax": tf.nn.softmax, "LogSoftmax": tf.nn.log_softmax}[op]
    return x, fn(x).op


def run_framework(tf):
    results = {}
    with tf.Graph().as_default():
        targets = {case: build(tf, *_split(case)) for case in CASES if case.endswith("wall")}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for case, (_, target) in targets.items():
                n = SIZES[case.split()[1]]
                runs = max(5, min(2000, (1 << 23) // n))
                for _ in range(3):
                    sess.run(target)
                wall, cpu = [], []
                for _ in range(ROUNDS):
                    start, start_cpu = time.perf_counter(), time.process_time()
                    for _ in range(runs):
                        sess.run(target)
                    wall.append((time.perf_counter() - start) / runs * 1e6)
                    cpu.append((time.process_time() - start_cpu) / runs * 1e6)
                results[case] = statistics.median(wall)
                results[case.replace("wall", "cpu")] = statistics.median(cpu)
    return results


def _split(case):
    op, size, _ = case.split()
    return op, SIZES[size]


if __name__ == "__main__":
    compare_main(__doc__, __file__, run_framework, CASES, ("flowstone us", "tensorflow us"),
                 (22, 14, 15))
