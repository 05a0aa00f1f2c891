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
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo  # noqa: E402


def profile(framework, model, batch, threads, runs):
    if framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import flowstone as tf
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
    cpu = []
    for _ in range(runs):
        start = time.process_time()
        sess.run(meta["output"], feed)
        cpu.append((time.process_time() - start) * 1e3)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    by_op, count = collections.Counter(), collections.Counter()
    for _ in range(runs):
        metadata = tf.RunMetadata()
        sess.run(meta["output"], feed, options=options, run_metadata=metadata)
        for device in metadata.step_stats.dev_stats:
            for node in device.node_stats:
                label = node.timeline_label
                op = label.split(" = ", 1)[1].split("(", 1)[0] if " = " in label else "?"
                op = re.sub(r"^_Mkl(Native)?", "", op)
                by_op[op] += node.op_end_rel_micros / 1e3 / runs
                count[op] += 1
    return {"cpu_ms": statistics.median(cpu), "ops_ms": dict(by_op),
            "nodes": {op: n // runs for op, n in count.items()}}


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
    results = {}
    for name, python in [("flowstone", sys.executable), ("tensorflow", args.peer_python)]:
        if not python or not os.path.exists(python):
            continue
        proc = subprocess.run([python, __file__, "--framework", name, "--model", args.model,
                               "--batch", str(args.batch), "--threads", str(args.threads),
                               "--runs", str(args.runs)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
            continue
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    # Each op's share of the traced kernel time, scaled to the untraced CPU time per run.
    scaled = {}
    for name, r in results.items():
        total = sum(r["ops_ms"].values()) or 1.0
        scaled[name] = {op: ms / total * r["cpu_ms"] for op, ms in r["ops_ms"].items()}
    ops = sorted({op for s in scaled.values() for op in s},
                 key=lambda op: -max(s.get(op, 0.0) for s in scaled.values()))
    print(f"{args.model} batch {args.batch}, {args.threads} thread(s); cpu ms per run: "
          + ", ".join(f"{n} {r['cpu_ms']:.1f}" for n, r in results.items()))
    print(f"{'op type':<28}" + "".join(f"{n + ' cpu ms (nodes)':>28}" for n in scaled))
    for op in ops[:args.top]:
        cells = [f"{s.get(op, 0.0):.2f} ({results[n]['nodes'].get(op, 0)})"
                 for n, s in scaled.items()]
        print(f"{op:<28}" + "".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
