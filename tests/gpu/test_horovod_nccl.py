"""Horovod's collectives on GPU tensors through NCCL: the ops pinned to a GPU against the
expected sums, in one process (a communicator of one rank) and, with two GPUs, in a 2-process
mpirun job. Skipped, with the reason, without a usable GPU, without NCCL or without mpirun."""

import os
import shutil
import subprocess
import sys

import pytest

import flowstone as tf
import flowstone.horovod as hvd


def _skip_reason():
    if not tf.config.list_physical_devices("GPU"):
        return "no usable GPU: " + tf._C.gpu_discovery()["reason"]
    if not hvd.nccl_built():
        return "NCCL (libnccl.so.2) was not found: pip install nvidia-nccl-cu13"
    return None


_reason = _skip_reason()
if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)

WORKER = r"""
import sys
import numpy as np
import flowstone as tf
import flowstone.horovod as hvd
hvd.init()
r, n = hvd.rank(), hvd.size()
with tf.device(f"/gpu:{hvd.local_rank()}"):
    x = tf.constant(np.full([3, 2], r + 1.0, np.float32))
    rows = tf.constant(np.full([r + 1, 2], float(r), np.float32))
    fetch = [hvd.allreduce(x, op=hvd.Sum), hvd.allreduce(x),
             *hvd.grouped_allreduce([x, x * 2.0], op=hvd.Sum), hvd.allgather(rows),
             hvd.broadcast(x, root_rank=n - 1)]
config = tf.ConfigProto(allow_soft_placement=False)
with tf.Session(config=config) as sess:
    got = sess.run(fetch)
total = sum(q + 1.0 for q in range(n))
np.testing.assert_allclose(got[0], np.full([3, 2], total))
np.testing.assert_allclose(got[1], np.full([3, 2], total / n))
np.testing.assert_allclose(got[2], np.full([3, 2], total))
np.testing.assert_allclose(got[3], np.full([3, 2], 2 * total))
np.testing.assert_array_equal(got[4], np.concatenate([np.full([q + 1, 2], float(q))
                                                      for q in range(n)]))
np.testing.assert_allclose(got[5], np.full([3, 2], float(n)))
print("ok", r)
"""


def _run(cmd, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    proc = subprocess.run(cmd + [sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_nccl_collectives_in_one_process(tmp_path):
    assert "ok 0" in _run([], tmp_path)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not found")
@pytest.mark.skipif(len(tf.config.list_physical_devices("GPU")) < 2,
                    reason="NCCL needs one GPU per rank: fewer than 2 GPUs")
def test_nccl_collectives_on_two_ranks(tmp_path):
    cmd = ["mpirun", "-np", "2", "--oversubscribe", "--bind-to", "none"]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    out = _run(cmd, tmp_path)
    assert "ok 0" in out and "ok 1" in out
