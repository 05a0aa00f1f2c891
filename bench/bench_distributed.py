"""flowstone.horovod on 2 local processes: allreduce bandwidth from 1 KB to 64 MB against raw
MPI_Allreduce (a C program in the osu_allreduce style, built with mpicc), tensor fusion (100
tensors of 10 KB), and the digits-CNN step time at 1 and 2 processes.

    python bench/bench_distributed.py [--np 2]

It starts itself under mpirun (--worker) and prints one table. On a 2-core machine the step
times show that training runs and overlaps correctly, not that it scales.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

SIZES = [1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
HERE = os.path.dirname(os.path.abspath(__file__))

BASELINE_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* osu_allreduce style: warm up, then time `iters` in-place float sums of each size. */
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 1; i < argc; i += 2) {
    long bytes = atol(argv[i]); int iters = atoi(argv[i + 1]);
    long n = bytes / 4; float* buf = calloc(n, 4);
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int k = 0; k < iters; ++k)
      MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t = (MPI_Wtime() - t) / iters;
    if (rank == 0) printf("%ld %.9f\n", bytes, t);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
"""


def iterations(nbytes):
    return max(5, min(200, (64 << 20) // nbytes // 4))


def mpirun(np_, args, env=None):
    cmd = ["mpirun", "-np", str(np_), "--oversubscribe", "--bind-to", "none"]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    proc = subprocess.run(cmd + args, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"mpirun {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def raw_mpi(np_):
    """{bytes: seconds per allreduce} of MPI_Allreduce itself."""
    folder = tempfile.mkdtemp()
    src, exe = os.path.join(folder, "allreduce.c"), os.path.join(folder, "allreduce")
    with open(src, "w") as f:
        f.write(BASELINE_C)
    subprocess.run(["mpicc", "-O2", "-o", exe, src], check=True)
    args = []
    for nbytes in SIZES:
        args += [str(nbytes), str(iterations(nbytes))]
    out = mpirun(np_, [exe, *args])
    return {int(b): float(t) for b, t in (line.split() for line in out.strip().splitlines())}


def _digits_cnn_step(tf, hvd, steps=30):
    from sklearn.datasets import load_digits
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[..., None]
    labels = digits.target.astype(np.int64)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int64, [None])
    net = tf.layers.conv2d(x, 16, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 32, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.flatten(tf.layers.max_pooling2d(net, 2, 2))
    logits = tf.layers.dense(tf.layers.dense(net, 64, activation=tf.nn.relu), 10)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    train = hvd.DistributedOptimizer(tf.train.AdamOptimizer(0.001)).minimize(loss)
    batch = 64 // hvd.size()  # a global batch of 64 split across the ranks
    feed = {x: images[:batch], y: labels[:batch]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(hvd.broadcast_global_variables(0))
        for _ in range(5):
            sess.run(train, feed)
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            sess.run(train, feed)
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def worker():
    """One rank: times Flowstone's collectives and prints rank 0's figures as JSON."""
    import flowstone as tf
    import flowstone.horovod as hvd
    hvd.init()
    result = {"allreduce": {}, "size": hvd.size()}
    with tf.Graph().as_default(), tf.Session() as sess:
        for nbytes in SIZES:
            op = tf.group(hvd.allreduce(tf.constant(np.zeros(nbytes // 4, np.float32)),
                                        op=hvd.Sum, name=f"bw_{nbytes}"))
            sess.run(op)
            iters = iterations(nbytes)
            start = time.perf_counter()
            for _ in range(iters):
                sess.run(op)
            result["allreduce"][nbytes] = (time.perf_counter() - start) / iters
        tensors = [tf.constant(np.full(2560, i, np.float32)) for i in range(100)]  # 10 KB each
        fused = tf.group(*hvd.grouped_allreduce(tensors, op=hvd.Sum, name="fused"))
        separate = tf.group(*[hvd.allreduce(t, op=hvd.Sum, name=f"sep_{i}")
                              for i, t in enumerate(tensors)])
        for key, op in (("fused_100x10KB", fused), ("unfused_100x10KB", separate)):
            sess.run(op)
            start = time.perf_counter()
            for _ in range(10):
                sess.run(op)
            result[key] = (time.perf_counter() - start) / 10
    with tf.Graph().as_default():
        result["cnn_step"] = _digits_cnn_step(tf, hvd)
    if hvd.rank() == 0:
        print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    if shutil.which("mpirun") is None or shutil.which("mpicc") is None:
        sys.exit("mpirun and mpicc are needed: apt-get install openmpi-bin libopenmpi-dev")
    me = [sys.executable, os.path.abspath(__file__), "--worker"]
    # The machine is shared: raw MPI and Flowstone take turns, and each figure is the median of
    # the trials.
    raws, runs = [], []
    for _ in range(args.trials):
        raws.append(raw_mpi(args.np))
        runs.append(json.loads(mpirun(args.np, me).strip().splitlines()[-1]))
    raw = {b: float(np.median([r[b] for r in raws])) for b in SIZES}
    ours = {"allreduce": {str(b): float(np.median([r["allreduce"][str(b)] for r in runs]))
                          for b in SIZES}}
    for key in ("fused_100x10KB", "unfused_100x10KB", "cnn_step"):
        ours[key] = float(np.median([r[key] for r in runs]))
    one = json.loads(mpirun(1, me).strip().splitlines()[-1])
    print(f"allreduce on {args.np} processes (float32 sum, seconds per call -> GB/s of "
          "payload)")
    print(f"{'size':>10}{'Flowstone ms':>14}{'raw MPI ms':>12}{'Flowstone GB/s':>16}"
          f"{'MPI GB/s':>10}{'ratio':>8}")
    for nbytes in SIZES:
        t_ours, t_raw = ours["allreduce"][str(nbytes)], raw[nbytes]
        label = f"{nbytes >> 20} MB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KB"
        print(f"{label:>10}{t_ours * 1e3:>14.3f}{t_raw * 1e3:>12.3f}{nbytes / t_ours / 1e9:>16.3f}"
              f"{nbytes / t_raw / 1e9:>10.3f}{t_raw / t_ours:>8.2f}")
    fused, unfused = ours["fused_100x10KB"], ours["unfused_100x10KB"]
    print(f"100 tensors of 10 KB: fused (one grouped allreduce) {fused * 1e3:.2f} ms, "
          f"100 separate allreduces {unfused * 1e3:.2f} ms: {unfused / fused:.1f}x")
    print(f"digits CNN step (global batch 64): 1 process {one['cnn_step'] * 1e3:.2f} ms, "
          f"{args.np} processes {ours['cnn_step'] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
