"""What the op-by-op profilers share (profile_step_ops.py, profile_zoo_ops.py): time a run
untraced for its CPU time, trace it for each op type's kernel time, run both frameworks in their
own processes, and print the op types by time, scaled to the untraced CPU time."""

import collections
import json
import os
import re
import statistics
import subprocess
import sys
import time


def profile_runs(tf, sess, fetch, feed, runs, untraced_runs=None):
    """Median CPU ms of `untraced_runs` (default `runs`) untraced runs, and per op type the
    kernel ms per run and the number of nodes over `runs` traced runs."""
    cpu = []
    for _ in range(untraced_runs or runs):
        start = time.process_time()
        sess.run(fetch, feed)
        cpu.append((time.process_time() - start) * 1e3)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    by_op, count = collections.Counter(), collections.Counter()
    for _ in range(runs):
        metadata = tf.RunMetadata()
        sess.run(fetch, feed, options=options, run_metadata=metadata)
        for device in metadata.step_stats.dev_stats:
            for node in device.node_stats:
                label = node.timeline_label
                op = label.split(" = ", 1)[1].split("(", 1)[0] if " = " in label else "?"
                op = re.sub(r"^_Mkl(Native)?", "", op)
                by_op[op] += node.op_end_rel_micros / 1e3 / runs
                count[op] += 1
    return {"cpu_ms": statistics.median(cpu), "ops_ms": dict(by_op),
            "nodes": {op: n // runs for op, n in count.items()}}


def run_both(script, peer_python, args):
    """{framework: profile} from `script --framework NAME args` under this Python (Flowstone)
    and `peer_python` (TensorFlow), each in its own process."""
    results = {}
    for name, python in [("flowstone", sys.executable), ("tensorflow", peer_python)]:
        if not python or not os.path.exists(python):
            continue
        proc = subprocess.run([python, script, "--framework", name] + args,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
            continue
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


def print_table(title, results, top, width, node_counts):
    """The `top` op types by CPU ms (each op's share of the traced kernel time, scaled to the
    untraced CPU time per run), one column per framework, with node counts if asked."""
    scaled = {}
    for name, r in results.items():
        total = sum(r["ops_ms"].values()) or 1.0
        scaled[name] = {op: ms / total * r["cpu_ms"] for op, ms in r["ops_ms"].items()}
    ops = sorted({op for s in scaled.values() for op in s},
                 key=lambda op: -max(s.get(op, 0.0) for s in scaled.values()))
    print(title + ", ".join(f"{n} {r['cpu_ms']:.1f}" for n, r in results.items()))
    column = " cpu ms (nodes)" if node_counts else " cpu ms"
    cell_width = 28 if node_counts else 18
    print(f"{'op type':<{width}}" + "".join(f"{n + column:>{cell_width}}" for n in scaled))
    for op in ops[:top]:
        cells = [f"{s.get(op, 0.0):.2f}" + (f" ({results[n]['nodes'].get(op, 0)})"
                                            if node_counts else "")
                 for n, s in scaled.items()]
        print(f"{op:<{width}}" + "".join(f"{c:>{cell_width}}" for c in cells))
