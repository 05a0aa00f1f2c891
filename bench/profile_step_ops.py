"""Where a training step's time goes, op type by op type, in Flowstone and in TensorFlow, on the
same graph (bench_training.py's models), each traced with FULL_TRACE in its own process.

    .venv/bin/python bench/profile_step_ops.py --peer-python .venv-peers/bin/python \\
        [--model tutorial_cnn] [--threads 1] [--steps 10]

With --threads 1 (one inter-op and one intra-op thread) nodes run one at a time, so each op
type's kernel time is proportional to its CPU time even on a loaded machine; the table also
scales each framework's shares to its measured CPU time per step ("cpu ms"), which is the
comparable figure there. TensorFlow's oneDNN rewrites (_MklNativeConv2D, _MklMatMul, ...) are
listed under the standard op name; Flowstone's fused nodes (_FusedConv2D, _FusedMatMul) keep
theirs.
"""

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_training  # noqa: E402


def profile(framework, model, threads, steps):
    if framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import flowstone as tf
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    sess, train, feed = bench_training.tf1_session(tf, model, config)
    for _ in range(bench_training.WARMUP):
        sess.run(train, feed)
    cpu = []
    for _ in range(steps * 2):
        start = time.process_time()
        sess.run(train, feed)
        cpu.append((time.process_time() - start) * 1e3)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    by_op = collections.Counter()
    for _ in range(steps):
        metadata = tf.RunMetadata()
        sess.run(train, feed, options=options, run_metadata=metadata)
        for device in metadata.step_stats.dev_stats:
            for node in device.node_stats:
                label = node.timeline_label
                op = label.split(" = ", 1)[1].split("(", 1)[0] if " = " in label else "?"
                op = re.sub(r"^_Mkl(Native)?", "", op)
                by_op[op] += node.op_end_rel_micros / 1e3 / steps
    return {"cpu_ms": statistics.median(cpu), "ops_ms": dict(by_op)}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default="tutorial_cnn", choices=bench_training.MODELS + bench_training.EXTRA_MODELS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--top", type=int, default=16)
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu installed")
    args = parser.parse_args()
    if args.framework:
        print(json.dumps(profile(args.framework, args.model, args.threads, args.steps)))
        return
    results = {}
    for name, python in [("flowstone", sys.executable), ("tensorflow", args.peer_python)]:
        if not python or not os.path.exists(python):
            continue
        proc = subprocess.run([python, __file__, "--framework", name, "--model", args.model,
                               "--threads", str(args.threads), "--steps", str(args.steps)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
            continue
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    # Each op's share of the traced kernel time, scaled to the untraced CPU time per step.
    scaled = {}
    for name, r in results.items():
        total = sum(r["ops_ms"].values()) or 1.0
        scaled[name] = {op: ms / total * r["cpu_ms"] for op, ms in r["ops_ms"].items()}
    ops = sorted({op for s in scaled.values() for op in s},
                 key=lambda op: -max(s.get(op, 0.0) for s in scaled.values()))
    print(f"{args.model}, {args.threads} thread(s); cpu ms per step: " +
          ", ".join(f"{n} {r['cpu_ms']:.1f}" for n, r in results.items()))
    print(f"{'op type':<36}" + "".join(f"{n + ' cpu ms':>18}" for n in scaled))
    for op in ops[:args.top]:
        print(f"{op:<36}" + "".join(f"{s.get(op, 0.0):>18.2f}" for s in scaled.values()))


if __name__ == "__main__":
    main()
