"""Where a model zoo inference run's time goes, op type by op type, in Flowstone and in
TensorFlow, on the same frozen graph (bench/model_zoo.py), each traced with FULL_TRACE in its own
process:

    .venv/bin/python bench/profile_zoo_ops.py --peer-python .venv-peers/bin/python \\
        [--model bert_encoder] [--batch 32] [--threads 1] [--runs 10]

As in profile_step_ops.py: with --threads 1 nodes run one at a time, so each op type's share of
the traced kernel time is proportional to its CPU time even on a loaded machine, and the table
scales the shares to each framework's untraced CPU time per run ("cpu ms"). TensorFlow's oneDNN
rewrites (_MklMatMul, ...) are listed under the standard op name.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import model_zoo  # noqa: E402
import op_profile  # noqa: E402


def profile(framework, model, batch, threads, runs):
    tf = harness.import_framework(framework)
    data, meta, _, _ = model_zoo.load(model)
    graph = tf.Graph()
    with graph.as_default():
        graph_def = tf.GraphDef()
        graph_def.ParseFromString(data)
        tf.import_graph_def(graph_def, name="")
    config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                            inter_op_parallelism_threads=threads)
    sess = tf.Session(graph=graph, config=config)
    feed = {meta["input"]: model_zoo.batch_input(meta, batch)}
    for _ in range(3):
        sess.run(meta["output"], feed)
    return op_profile.profile_runs(tf, sess, meta["output"], feed, runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default="bert_encoder", choices=model_zoo.MODELS)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--top", type=int, default=16)
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu installed")
    args = parser.parse_args()
    if args.framework:
        print(json.dumps(profile(args.framework, args.model, args.batch, args.threads,
                                 args.runs)))
        return
    results = op_profile.run_both(__file__, args.peer_python,
                                  ["--model", args.model, "--batch", str(args.batch),
                                   "--threads", str(args.threads), "--runs", str(args.runs)])
    op_profile.print_table(f"{args.model} batch {args.batch}, {args.threads} thread(s); cpu ms "
                           "per run: ", results, args.top, width=28, node_counts=True)

if __name__ == "__main__":
    main()
