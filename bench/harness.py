"""What the comparison benchmarks share: each script times its cases under Flowstone in this
process and under TensorFlow (compat.v1 graph mode) by running itself again in the peer Python
with --framework tensorflow (TensorFlow is never a dependency of Flowstone), then prints one
table. A script supplies run_framework(tf) -> {case: number}.
"""

import argparse
import json
import os
import subprocess
import sys


def import_framework(name):
    """The `tf` module of a framework: flowstone, or TensorFlow's compat.v1 in graph mode."""
    if name == "flowstone":
        import flowstone as tf
        return tf
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # tf.compat.v1.layers needs tf-keras (Keras 2) under TensorFlow 2.16+.
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    return tf


def _peer_results(peer_python, script):
    proc = subprocess.run([peer_python, script, "--framework", "tensorflow"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print("TensorFlow run failed:\n" + proc.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compare_main(description, script, run_framework, cases, headers, widths):
    """The command line of a benchmark script.

    run_framework(tf) returns {case: number} for the framework module tf. headers names the two
    value columns (Flowstone's, TensorFlow's); widths are those of the case column and the two
    value columns.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--framework", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--peer-python", default=None,
                        help="a Python with tensorflow-cpu installed, to compare with")
    args = parser.parse_args()
    if args.framework:
        print(json.dumps(run_framework(import_framework(args.framework))))
        return
    ours = run_framework(import_framework("flowstone"))
    theirs = None
    if args.peer_python and os.path.exists(args.peer_python):
        theirs = _peer_results(args.peer_python, script)
    case_w, ours_w, theirs_w = widths
    print(f"{'case':<{case_w}}{headers[0]:>{ours_w}}{headers[1]:>{theirs_w}}{'speedup':>10}")
    for case in cases:
        tf_value = theirs[case] if theirs else None
        ratio = f"{tf_value / ours[case]:.1f}x" if tf_value else "-"
        tf_text = f"{tf_value:.2f}" if tf_value else "n/a"
        print(f"{case:<{case_w}}{ours[case]:>{ours_w}.2f}{tf_text:>{theirs_w}}{ratio:>10}")
