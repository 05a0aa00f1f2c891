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
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_training  # noqa: E402
import harness  # noqa: E402
import op_profile  # noqa: E402


def profile(framework, model, threads, steps):
    tf = harness.import_framework(framework)
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    sess, train, feed = bench_training.tf1_session(tf, model, config)
    for _ in range(bench_training.WARMUP):
        sess.run(train, feed)
    return op_profile.profile_runs(tf, sess, train, feed, steps, untraced_runs=2 * steps)


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
    results = op_profile.run_both(__file__, args.peer_python,
                                  ["--model", args.model, "--threads", str(args.threads),
                                   "--steps", str(args.steps)])
    op_profile.print_table(f"{args.model}, {args.threads} thread(s); cpu ms per step: ",
                           results, args.top, width=36, node_counts=False)

if __name__ == "__main__":
    main()
