"""Runs a program at several intra-op thread counts, each in a process of its own: a process
keeps the thread pools of its first session, so thread counts can only be compared across
processes."""

import os
import subprocess
import sys
import textwrap

CPU_ONLY = dict(os.environ, CUDA_VISIBLE_DEVICES="")

# Prepended to each program: `config` is a ConfigProto with sys.argv[1] intra-op threads, and
# `digest(arrays)` prints a hash of their bytes.
PRELUDE = """
import hashlib, sys
import numpy as np
import flowstone as tf
config = tf.ConfigProto(device_count={"GPU": 0}, intra_op_parallelism_threads=int(sys.argv[1]),
                        inter_op_parallelism_threads=1)
def digest(arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    print(h.hexdigest())
"""


def digests(program, thread_counts=(1, 2, 4)):
    """The lines `program` printed, per thread count."""
    out = []
    for threads in thread_counts:
        proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(program),
                               str(threads)], capture_output=True, text=True, timeout=300,
                              env=CPU_ONLY)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out.append(proc.stdout.split())
    return out

