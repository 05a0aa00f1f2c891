"""flowstone.horovod: real multi-process jobs under mpirun (horovod_worker.py is each rank),
and the single-process mode hvd.init() falls back to without a launcher."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import flowstone as tf
import flowstone.horovod as hvd
from flowstone.horovod import runner

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "horovod_worker.py")
MPIRUN = shutil.which("mpirun")


def _mpirun_problem():
    """Why mpirun cannot start a local job here (None when it can): found but unusable, as in a
    container without the rsh agent its launcher insists on."""
    if MPIRUN is None:
        return "mpirun not found: install Open MPI (apt-get install openmpi-bin)"
    cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--bind-to", "none"]
    cmd += (["--allow-run-as-root"] if os.getuid() == 0 else []) + ["true"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "mpirun -np 2 true did not finish in 60 s"
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip("- ")]
        return f"mpirun cannot start a local job: {lines[0] if lines else proc.returncode}"
    return None


MPIRUN_PROBLEM = _mpirun_problem()
needs_mpirun = pytest.mark.skipif(MPIRUN_PROBLEM is not None, reason=str(MPIRUN_PROBLEM))


def mpi_env(**extra):
    env = dict(os.environ)
    # Launchers' variables of an enclosing job would make the ranks join it.
    for name in list(env):
        if name.startswith(("OMPI_", "PMIX_", "PMI_")):
            del env[name]
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_job(np_, case, tmp_path, timeout=240, env=None, expect_ok=True, mpirun_args=()):
    """Runs horovod_worker.py CASE on np_ ranks; returns the CompletedProcess."""
    cmd = [MPIRUN, "-np", str(np_), "--oversubscribe", "--bind-to", "none", *mpirun_args]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [sys.executable, WORKER, case, str(tmp_path)]
    proc = subprocess.run(cmd, env=env or mpi_env(), capture_output=True, text=True,
                          timeout=timeout)
    if expect_ok:
        assert proc.returncode == 0, f"mpirun failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def load_npz(tmp_path, n):
    return [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(n)]


def load_json(tmp_path, n):
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(n)]


@needs_mpirun
@pytest.mark.parametrize("n", [2, 3])
def test_collectives_and_their_gradients(tmp_path, n):
    # The 3-rank job also runs without fusion and with a longer cycle (Horovod's variables).
    env = mpi_env(HOROVOD_FUSION_THRESHOLD=0, HOROVOD_CYCLE_TIME=5) if n == 3 else None
    run_job(n, "collectives", tmp_path, env=env)
    ranks = load_npz(tmp_path, n)
    total = sum(r + 1.0 for r in range(n))
    offsets = np.cumsum([0] + [r + 1 for r in range(n)])
    weights = np.arange(offsets[-1] * 2, dtype=np.float64).reshape(-1, 2)
    for r, got in enumerate(ranks):
        np.testing.assert_allclose(got["sum"], np.full([2, 3], total))
        np.testing.assert_allclose(got["again"], np.full([2, 3], total))
        np.testing.assert_allclose(got["average"], np.full([2, 3], total / n), rtol=1e-6)
        np.testing.assert_allclose(got["average_flag"], np.full([2, 3], total))
        np.testing.assert_array_equal(got["int_sum"], np.arange(4) * total)
        assert got["int_sum"].dtype == np.int64
        np.testing.assert_allclose(got["fp16"], np.full([2, 3], total))
        assert got["fp16"].dtype == np.float32 and str(got["fp16_dtype"]) == "float32"
        np.testing.assert_allclose(got["scaled"], np.full([2, 3], total))
        expected_rows = np.concatenate([np.full([q + 1, 2], float(q)) for q in range(n)])
        np.testing.assert_array_equal(got["gathered"], expected_rows)
        np.testing.assert_array_equal(got["broadcast"], np.full([2, 3], 2.0))
        expected_a2a = np.concatenate([np.full([q + 1, 2], float(q)) for q in range(n)])
        np.testing.assert_array_equal(got["alltoall"], expected_a2a)
        np.testing.assert_array_equal(got["received"], [q + 1 for q in range(n)])
        np.testing.assert_allclose(got["grouped0"], np.full([2, 3], total))
        np.testing.assert_allclose(got["grouped1"], np.full([5], sum(range(n))))
        assert int(got["rank_op"]) == r and int(got["size_op"]) == n
        # d/dvar sum(allgather(var) * w): every rank's weights for this rank's rows, summed.
        np.testing.assert_allclose(got["grad_gather"],
                                   n * weights[offsets[r]:offsets[r + 1]])
        # Only the root's tensor reaches a broadcast's output.
        np.testing.assert_allclose(got["grad_bcast"], np.full([3], 2.0 * n if r == 1 else 0.0))
        # The gradient of a sum-allreduce is the sum-allreduce of the gradient.
        np.testing.assert_allclose(got["grad_allreduce"], np.full([2], 3.0 * n))


@needs_mpirun
@pytest.mark.parametrize("n", [2, 3])
def test_distributed_optimizer_matches_single_process_training(tmp_path, n):
    run_job(n, "training", tmp_path)
    ranks = load_npz(tmp_path, n)
    for name in ("sgd", "adam"):
        # Training moved the weights (so the comparison below means something).
        assert np.abs(ranks[0][f"{name}_dist0"] - ranks[0][f"{name}_initial0"]).max() > 1e-3
        for i in range(6):
            single = ranks[0][f"{name}_single{i}"]
            for r in range(n):
                # Every rank ends with the same weights...
                np.testing.assert_array_equal(ranks[r][f"{name}_dist{i}"],
                                              ranks[0][f"{name}_dist{i}"])
            # ...those of one process training on the whole global batch.
            np.testing.assert_allclose(ranks[0][f"{name}_dist{i}"], single, rtol=1e-4,
                                       atol=1e-5)
    for i in range(6):
        # backward_passes_per_step=2 over halves of each rank's slice, averaged: the same steps.
        for r in range(n):
            np.testing.assert_array_equal(ranks[r][f"accumulated{i}"], ranks[0][f"accumulated{i}"])
        np.testing.assert_allclose(ranks[0][f"accumulated{i}"], ranks[0][f"sgd_single{i}"],
                                   rtol=1e-4, atol=1e-5)


@needs_mpirun
def test_mismatched_shapes_and_dtypes_fail_on_every_rank(tmp_path):
    run_job(2, "mismatch", tmp_path, timeout=120)
    for r, got in enumerate(load_json(tmp_path, 2)):
        assert got["shape"]["class"] == "FailedPreconditionError", got
        assert "Mismatched allreduce tensor shapes" in got["shape"]["message"]
        assert "[2]" in got["shape"]["message"] and "[3]" in got["shape"]["message"]
        assert "mismatch_shape" in got["shape"]["message"]
        assert got["dtype"]["class"] == "FailedPreconditionError", got
        assert "Mismatched data types" in got["dtype"]["message"]
        assert "float32" in got["dtype"]["message"] and "float64" in got["dtype"]["message"]
        assert got["after"] == [2.0]


@needs_mpirun
def test_tensor_submitted_by_some_ranks_fails_with_the_missing_rank_named(tmp_path):
    run_job(2, "stall", tmp_path, timeout=120,
            env=mpi_env(FLOWSTONE_HOROVOD_TIMEOUT_SECONDS=3))
    rank0, rank1 = load_json(tmp_path, 2)
    assert rank0["error"]["class"] == "AbortedError", rank0
    assert "only_rank0" in rank0["error"]["message"]
    assert "not by rank(s) 1" in rank0["error"]["message"]
    assert rank0["seconds"] < 30
    # The job is shut down: rank 1's late collective fails too, with the same reason.
    assert rank1["error"]["class"] == "AbortedError", rank1
    assert "stalled" in rank1["error"]["message"]


@needs_mpirun
def test_a_killed_rank_makes_the_others_fail_in_bounded_time(tmp_path):
    proc = run_job(3, "killed", tmp_path, timeout=120, expect_ok=False,
                   env=mpi_env(FLOWSTONE_HOROVOD_TIMEOUT_SECONDS=5),
                   mpirun_args=("--mca", "orte_enable_recovery", "1"))
    for got in load_json(tmp_path, 2):
        assert got["error"]["class"] in ("UnavailableError", "AbortedError"), (got, proc.stderr)
        assert "rank 2" in got["error"]["message"]
        assert got["seconds"] < 60


@needs_mpirun
def test_a_rank_that_raises_shuts_the_others_down(tmp_path):
    proc = run_job(2, "raises", tmp_path, timeout=120, expect_ok=False,
                   mpirun_args=("--mca", "orte_enable_recovery", "1"))
    assert "rank 1 fails on purpose" in proc.stderr
    got = json.loads((tmp_path / "rank0.json").read_text())
    assert got["error"]["class"] == "AbortedError", got
    assert "rank 1 called hvd.shutdown() or exited" in got["error"]["message"]
    assert got["seconds"] < 30


@needs_mpirun
def test_timeline_is_a_chrome_trace(tmp_path):
    path = tmp_path / "timeline.json"
    run_job(2, "timeline", tmp_path, env=mpi_env(HOROVOD_TIMELINE=path))
    events = json.loads(path.read_text())
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert {"tl_0", "tl_1", "tl_2"} <= names
    phases = [(e["name"], e["ph"]) for e in events if e["ph"] in "BE"]
    for phase in ("NEGOTIATE_ALLREDUCE", "ALLREDUCE"):
        assert (phase, "B") in phases and (phase, "E") in phases
    assert all(e["ts"] >= 0 for e in events if "ts" in e)


@needs_mpirun
def test_distributed_gradient_tape_in_eager_mode(tmp_path):
    run_job(2, "eager", tmp_path)
    for got in load_npz(tmp_path, 2):
        # d/dw (r+1) sum(w^2) = 2 (r+1) w, averaged over ranks 0 and 1: 3 w.
        np.testing.assert_allclose(got["grad"], [3.0, 6.0])
        np.testing.assert_allclose(got["summed"], [1.0])
        np.testing.assert_allclose(got["gathered"], [[0.0], [1.0], [1.0]])


@needs_mpirun
def test_keras_distributed_optimizer_and_callbacks(tmp_path):
    run_job(2, "keras", tmp_path)
    ranks = load_npz(tmp_path, 2)
    for key in ranks[0]:
        # Same weights everywhere, and the metrics of each epoch averaged over the ranks.
        np.testing.assert_allclose(ranks[1][key], ranks[0][key], rtol=1e-6, err_msg=key)
    # Warm-up: from 0.05 / 2 towards 0.05 over 2 epochs, then 0.05.
    np.testing.assert_allclose(ranks[0]["lr"][-1], 0.05, rtol=1e-6)
    assert ranks[0]["lr"][0] < 0.05


@needs_mpirun
def test_topology(tmp_path):
    run_job(2, "topology", tmp_path)
    for r, got in enumerate(load_json(tmp_path, 2)):
        assert got == {"rank": r, "size": 2, "local_rank": r, "local_size": 2, "cross_rank": 0,
                       "cross_size": 1, "threads": got["threads"], "mpi_enabled": True,
                       "initialized": True}


@needs_mpirun
def test_example_trains_with_flowstone_run(tmp_path):
    run = shutil.which("flowstone-run", path=os.path.dirname(sys.executable))
    assert run is not None, "flowstone-run is not installed beside this Python"
    proc = subprocess.run(
        [run, "-np", "2", sys.executable, os.path.join(ROOT, "examples", "horovod_mnist.py"),
         "--steps", "80", "--checkpoint-dir", str(tmp_path / "ckpt")],
        env=mpi_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rank 0/2" in proc.stdout and "rank 1/2" in proc.stdout
    accuracy = float(proc.stdout.split("test accuracy")[1].split()[0])
    assert accuracy > 0.8, proc.stdout
    # Only rank 0 writes checkpoints; a second run restores and broadcasts them.
    assert any(name.startswith("model.ckpt") for name in os.listdir(tmp_path / "ckpt"))
    again = subprocess.run(
        [run, "-np", "2", sys.executable, os.path.join(ROOT, "examples", "horovod_mnist.py"),
         "--steps", "85", "--checkpoint-dir", str(tmp_path / "ckpt")],
        env=mpi_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "restored from step 80" in again.stdout


# Without a launcher: one process of size 1.

@pytest.fixture
def single():
    hvd.init()
    yield
    hvd.shutdown()


def test_init_without_a_launcher_runs_alone(single, capfd):
    assert hvd.is_initialized() and hvd.size() == 1 and hvd.rank() == 0
    assert hvd.local_size() == 1 and hvd.cross_size() == 1 and not hvd.mpi_enabled()
    assert hvd.mpi_built()
    libraries = tf._C.gpu_discovery()["libraries"]
    if not any(lib["name"] == "NCCL" and lib["loaded"] for lib in libraries):
        assert not hvd.nccl_built()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run([hvd.allreduce(x), hvd.allreduce(x, op=hvd.Sum), hvd.allgather(x),
                        hvd.broadcast(x, 0), hvd.alltoall(x)])
    for g in got:
        np.testing.assert_array_equal(g, x)


def test_collectives_before_init_fail_clearly():
    if hvd.is_initialized():
        hvd.shutdown()
    with pytest.raises(ValueError, match="hvd.init"):
        hvd.rank()
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match=r"call hvd.init\(\)"):
            sess.run(hvd.allreduce(tf.constant([1.0]), op=hvd.Sum))


def test_adasum_and_unsupported_options_raise_unimplemented(single):
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.UnimplementedError, match="Adasum"):
            hvd.allreduce(tf.constant([1.0]), op=hvd.Adasum)
        with pytest.raises(ValueError, match="gradient_predivide_factor not supported"):
            hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1), op=hvd.Sum,
                                     gradient_predivide_factor=2.0)
        with pytest.raises(ValueError, match="positive integer, got 0"):
            hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                     backward_passes_per_step=0)
    with pytest.raises(ValueError, match="supersedes"):
        hvd.allreduce(tf.constant([1.0]), op=hvd.Sum, average=True)


def test_alltoall_and_allgather_bad_inputs_are_errors(single):
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="splits sum to 3"):
            sess.run(hvd.alltoall(tf.zeros([4, 2]), splits=[3]))
        with pytest.raises(ValueError, match="rank 1 or more; got a scalar"):
            hvd.allgather(tf.constant(1.0))
        unknown = tf.placeholder(tf.float32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="rank 1 or more"):
            sess.run(hvd.allgather(unknown), {unknown: 1.0})


def test_distributed_optimizer_alone_is_the_wrapped_optimizer(single):
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0])
        loss = tf.reduce_sum(w * w)
        opt = hvd.DistributedOptimizer(tf.train.MomentumOptimizer(0.1, 0.9))
        train = opt.minimize(loss)
        assert opt.get_slot_names() == ["momentum"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(hvd.broadcast_global_variables(0))
            for _ in range(3):
                sess.run(train)
            got = sess.run(w)
    # Momentum by hand: v = 0.9 v + g; w -= 0.1 v.
    w_ref, v = np.array([1.0, 2.0]), np.zeros(2)
    for _ in range(3):
        v = 0.9 * v + 2 * w_ref
        w_ref = w_ref - 0.1 * v
    np.testing.assert_allclose(got, w_ref, rtol=1e-6)


def _accumulating_run(opt, batches, average, global_step=True):
    """Weights after each run of a DistributedOptimizer(backward_passes_per_step=2) minimizing
    sum((x @ w)**2) on each batch in turn, and the final global step."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 10)
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
        step = tf.train.get_or_create_global_step() if global_step else None
        dist = hvd.DistributedOptimizer(opt, backward_passes_per_step=2,
                                        average_aggregated_gradients=average)
        train = dist.minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            weights = []
            for batch in batches:
                sess.run(train, {x: batch})
                weights.append(sess.run(w))
            return weights, (sess.run(step) if global_step else None)


@pytest.mark.parametrize("average", [False, True])
def test_backward_passes_per_step_applies_every_second_run(single, average):
    rng = np.random.RandomState(0)
    batches = [rng.randn(4, 3).astype(np.float32) for _ in range(4)]
    weights, step = _accumulating_run(tf.train.GradientDescentOptimizer(0.1), batches, average)

    def grad(w, batch):
        batch = batch.astype(np.float64)
        return 2 * batch.T @ (batch @ w)

    w0 = np.arange(6, dtype=np.float64).reshape(3, 2) / 10
    scale = 0.5 if average else 1.0
    w1 = w0 - 0.1 * scale * (grad(w0, batches[0]) + grad(w0, batches[1]))
    w2 = w1 - 0.1 * scale * (grad(w1, batches[2]) + grad(w1, batches[3]))
    # The first run of each pair only accumulates; the second applies both gradients.
    np.testing.assert_array_equal(weights[0], w0.astype(np.float32))
    np.testing.assert_allclose(weights[1], w1, rtol=1e-5)
    np.testing.assert_array_equal(weights[2], weights[1])
    np.testing.assert_allclose(weights[3], w2, rtol=1e-5)
    assert step == 4  # the global step counts backward passes, as in Horovod


def test_backward_passes_per_step_with_adam_and_no_global_step(single):
    batches = [np.full([2, 3], v, np.float32) for v in (1.0, -0.5, 2.0, 0.25)]
    weights, _ = _accumulating_run(tf.train.AdamOptimizer(0.01), batches, True,
                                   global_step=False)
    # Adam (slots made once, outside the conditional update) applied twice, to the mean of
    # each pair's gradients.
    w = np.arange(6, dtype=np.float64).reshape(3, 2) / 10
    m, v = np.zeros_like(w), np.zeros_like(w)
    expected = []
    for t, (a, b) in enumerate([(0, 1), (2, 3)], start=1):
        g = sum(2 * batches[i].T.astype(np.float64) @ (batches[i] @ w) for i in (a, b)) / 2
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        w = w - 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
        expected.append(w)
    np.testing.assert_array_equal(weights[0], np.arange(6, dtype=np.float32).reshape(3, 2) / 10)
    np.testing.assert_allclose(weights[1], expected[0], rtol=1e-5)
    np.testing.assert_array_equal(weights[2], weights[1])
    np.testing.assert_allclose(weights[3], expected[1], rtol=1e-5)


def test_backward_passes_per_step_needs_the_local_variables_initialized(single):
    with tf.Graph().as_default():
        w = tf.Variable([1.0, 2.0])
        train = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         backward_passes_per_step=3).minimize(tf.reduce_sum(w * w))
        assert len(tf.local_variables()) == 2  # the counter and one accumulator
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.FailedPreconditionError, match="aggregation"):
                sess.run(train)


class _SparseGradientOptimizer(tf.train.GradientDescentOptimizer):
    """Returns the gradient of a lookup as IndexedSlices, as TensorFlow's gather gradient is."""

    def compute_gradients(self, loss, var_list=None, **kwargs):
        table = var_list[0]
        return [(tf.IndexedSlices(tf.ones([2, 2]), tf.constant([0, 3]), tf.constant([5, 2])),
                 table)]


def test_sparse_gradients_are_allgathered_or_made_dense(single):
    with tf.Graph().as_default():
        table = tf.Variable(np.ones([5, 2], np.float32))
        expected = np.zeros([5, 2], np.float32)
        expected[[0, 3]] = 1
        for sparse_as_dense in (False, True):
            opt = hvd.DistributedOptimizer(_SparseGradientOptimizer(1.0),
                                           sparse_as_dense=sparse_as_dense)
            (grad, _), = opt.compute_gradients(None, [table])
            assert isinstance(grad, tf.IndexedSlices) != sparse_as_dense
            with tf.Session() as sess:
                got = sess.run(grad)
            if not sparse_as_dense:
                dense = np.zeros([5, 2], np.float32)
                np.add.at(dense, got.indices, got.values)
                got = dense
            np.testing.assert_array_equal(got, expected)


def test_cluster_spec_and_server_point_to_horovod():
    with pytest.raises(tf.errors.UnimplementedError, match="flowstone.horovod"):
        tf.train.ClusterSpec({"worker": ["localhost:2222"]})
    with pytest.raises(tf.errors.UnimplementedError, match="flowstone-run"):
        tf.train.Server(None)


def test_flowstone_run_builds_an_mpirun_command():
    args = runner._parser().parse_args(["-np", "4", "-H", "a:2,b:2", "python", "train.py",
                                        "--lr", "0.1"])
    cmd = runner.mpirun_command(args, "mpirun", environ={"HOROVOD_TIMELINE": "t.json",
                                                          "PATH": "/bin", "HOME": "/root"})
    assert cmd[:3] == ["mpirun", "-np", "4"]
    assert cmd[cmd.index("-H") + 1] == "a:2,b:2"
    assert "--oversubscribe" not in cmd
    assert ["-x", "HOROVOD_TIMELINE"] == cmd[cmd.index("HOROVOD_TIMELINE") - 1:][:2]
    assert "HOME" not in cmd
    assert cmd[-4:] == ["python", "train.py", "--lr", "0.1"]
    # By default mpirun ends the job when a rank dies, and its exit status says so.
    assert "orte_enable_recovery" not in cmd
    args = runner._parser().parse_args(["-np", "2", "--keep-survivors", "python", "t.py"])
    cmd = runner.mpirun_command(args, "mpirun", environ={})
    assert cmd[cmd.index("orte_enable_recovery") - 1:][:3] == ["--mca", "orte_enable_recovery",
                                                               "1"]
    assert "--oversubscribe" in cmd and cmd[-2:] == ["python", "t.py"]


def test_gradient_allreduces_start_during_the_backward_pass(single):
    """Each gradient's allreduce is submitted as soon as the gradient exists: the last layer's
    starts before the first layer's gradient is computed, so the reductions overlap with the rest
    of the backward pass (run order of a sequential plan, the same in every process)."""
    rng = np.random.RandomState(0)
    with tf.Graph().as_default() as graph:
        x = tf.constant(rng.randn(8, 6).astype(np.float32))
        weights = [tf.Variable(rng.randn(6, 5).astype(np.float32)),
                   tf.Variable(rng.randn(5, 4).astype(np.float32)),
                   tf.Variable(rng.randn(4, 1).astype(np.float32))]
        h = x
        for w in weights:
            h = tf.nn.tanh(tf.matmul(h, w))
        loss = tf.reduce_sum(h * h)
        opt = hvd.DistributedOptimizer(tf.train.GradientDescentOptimizer(0.1))
        train = opt.minimize(loss)
        plain = tf.gradients(loss, weights)
        # In variable order: starts[0] reduces the first layer's kernel gradient.
        starts = [op for op in graph.get_operations() if op.type == "HorovodAllreduceStart"]
        assert len(starts) == 3
        first_layer_grad = starts[0].inputs[0].op.name
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        meta = tf.RunMetadata()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(weights)
            grads = sess.run(plain)
            sess.run(train, options=options, run_metadata=meta)
            after = sess.run(weights)
    for b, g, a in zip(before, grads, after):
        np.testing.assert_allclose(a, b - 0.1 * g, rtol=1e-5, atol=1e-6)  # size 1: the average is g
    order = [ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats]
    assert order.index(starts[2].name) < order.index(first_layer_grad), order
    assert order.index(starts[1].name) < order.index(first_layer_grad), order
