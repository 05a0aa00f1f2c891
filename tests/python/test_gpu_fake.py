"""GPU devices tested without a GPU: the fake GPU plugin (tests/fake_gpu) is loaded through the
same discovery, plugin interface, placement, transfers and BFC allocator as the CUDA backend. Its
kernels check that each input is in the memory they read it from, so a missing host<->device
transfer fails. Discovery is once per process, so each case runs as its own program."""

import os
import subprocess
import sys
import textwrap

import pytest
from build_tree import find_built

PLUGIN = find_built(os.path.join("tests", "fake_gpu", "libflowstone_fake_gpu.so"),
                    env_override="FLOWSTONE_TEST_FAKE_GPU")
pytestmark = pytest.mark.skipif(
    PLUGIN is None, reason="the fake GPU plugin is not built (configure with "
    "-DFLOWSTONE_BUILD_TESTS=ON, as `make test` does)")


def run(code, gpus=1, memory_mb=256, env=None):
    full_env = dict(os.environ)
    full_env.update({"FLOWSTONE_GPU_PLUGIN": PLUGIN, "FLOWSTONE_FAKE_GPU_COUNT": str(gpus),
                     "FLOWSTONE_FAKE_GPU_MEMORY_MB": str(memory_mb)})
    full_env.pop("CUDA_VISIBLE_DEVICES", None)
    full_env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    full_env.pop("TF_FORCE_GPU_ALLOW_GROWTH", None)  # the scenarios set their own memory options
    full_env.update(env or {})
    program = "import numpy as np\nimport flowstone as tf\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=full_env)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def placements(stderr):
    """{op name: device} from a log_device_placement log."""
    out = {}
    for line in stderr.splitlines():
        if ": (" in line and "): /job:" in line:
            name, rest = line.split(": (", 1)
            out[name] = rest.split("): ", 1)[1]
    return out


GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def test_discovery_logs_and_tf_config_report_the_gpu():
    proc = run("""
        print(tf.config.list_physical_devices("GPU"))
        print(tf.test.is_gpu_available(), tf.test.gpu_device_name())
        print([d.name for d in tf.config.list_logical_devices()])
        with tf.Session() as sess:
            print([d.name for d in sess.list_devices()])
    """, gpus=2)
    assert "PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU'), " \
           "PhysicalDevice(name='/physical_device:GPU:1', device_type='GPU')" in proc.stdout
    assert "True /device:GPU:0" in proc.stdout
    assert f"'{CPU0}', '{GPU0}', '{GPU1}'" in proc.stdout
    assert "Found device 0 with properties: \npciBusID: 0000:00:00.0 name: Flowstone fake GPU " \
           "computeCapability: 0.0" in proc.stderr
    assert "Adding visible gpu devices: 0, 1" in proc.stderr
    assert f"Created device {GPU0} with 256 MB memory -> physical GPU (device: 0" in proc.stderr
    assert "Could not load dynamic library" not in proc.stderr


def test_unpinned_ops_prefer_the_gpu_and_data_moves_between_memories():
    proc = run("""
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        y = tf.matmul(x, w, name="y")            # GPU kernel: x and w are copied to the GPU
        z = tf.nn.softmax(y, name="z")           # no GPU kernel: y is copied back to the host
        k = tf.constant([1, 2]) + tf.constant([3, 4])  # int32: no GPU kernel, stays on the CPU
        r = tf.nn.relu(z - 0.25, name="r")       # back to the GPU
        config = tf.ConfigProto(log_device_placement=True)
        with tf.Session(config=config) as sess:
            xv = np.array([[1, -2, 3], [0.5, 1, -1]], np.float32)
            yv, zv, kv, rv = sess.run([y, z, k, r], {x: xv})
            ref_y = xv @ np.arange(6, dtype=np.float32).reshape(3, 2)
            ref_z = np.exp(ref_y - ref_y.max(1, keepdims=True))
            ref_z /= ref_z.sum(1, keepdims=True)
            np.testing.assert_allclose(yv, ref_y, rtol=1e-6)
            np.testing.assert_allclose(zv, ref_z, rtol=1e-5)
            np.testing.assert_allclose(rv, np.maximum(ref_z - 0.25, 0), rtol=1e-5, atol=1e-7)
            assert kv.tolist() == [4, 6]
            # A second run reuses the plan, its constant already on the GPU.
            np.testing.assert_allclose(sess.run(y, {x: xv}), ref_y, rtol=1e-6)
        print("ok")
    """)
    assert "ok" in proc.stdout
    placed = placements(proc.stderr)
    assert placed["y"] == GPU0
    assert placed["z"] == CPU0
    assert placed["add"] == CPU0
    assert placed["r"] == GPU0
    assert proc.stderr.count("Device mapping:") == 1
    assert f"{GPU0} -> device: 0, name: Flowstone fake GPU" in proc.stderr


def test_pins_soft_placement_and_device_count_zero():
    proc = run("""
        with tf.device("/gpu:1"):
            a = tf.constant([1.0, 2.0], name="a") * 2.0
        try:
            with tf.Session() as sess:
                sess.run(a)
        except tf.errors.InvalidArgumentError as e:
            print("ERROR", e.message)
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            print("soft", sess.run(a).tolist())
        with tf.device("/cpu:0"):
            b = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), name="b")
        cfg = tf.ConfigProto(log_device_placement=True, device_count={"GPU": 0})
        with tf.Session(config=cfg) as sess:
            print("nogpu", sess.run(b).tolist(), [d.name for d in sess.list_devices()])
    """)
    assert "ERROR Cannot assign a device for operation a: {{node a}} was explicitly assigned " \
           "to /device:GPU:1" in proc.stdout
    assert f"available devices are [ {CPU0}, {GPU0} ]" in proc.stdout
    assert "soft [2.0, 4.0]" in proc.stdout
    assert f"nogpu [[2.0, 2.0], [2.0, 2.0]] ['{CPU0}']" in proc.stdout
    assert placements(proc.stderr)["b"] == CPU0


def test_visible_device_list_maps_and_validates():
    proc = run("""
        a = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), name="a")
        cfg = tf.ConfigProto(log_device_placement=True)
        cfg.gpu_options.visible_device_list = "1"
        with tf.Session(config=cfg) as sess:
            print([d.name for d in sess.list_devices()], sess.run(a).sum())
        bad = tf.ConfigProto()
        bad.gpu_options.visible_device_list = "0,7"
        try:
            tf.Session(config=bad)
        except tf.errors.InvalidArgumentError as e:
            print("ERROR", e.message)
    """, gpus=2)
    assert f"['{CPU0}', '{GPU0}'] 8.0" in proc.stdout
    assert "device: 1, name: Flowstone fake GPU" in proc.stderr  # GPU:0 is physical GPU 1
    assert "ERROR 'visible_device_list' listed an invalid GPU id '7' but the visible device " \
           "count is 2" in proc.stdout


def test_variables_live_on_the_gpu_and_train_there():
    proc = run("""
        v = tf.Variable(np.ones([3], np.float32), name="v")
        step = v.assign_add(tf.constant([1.0, 2.0, 3.0]))
        cfg = tf.ConfigProto(log_device_placement=True)
        with tf.Session(config=cfg) as sess:
            sess.run(v.initializer)
            for _ in range(3):
                sess.run(step)
            print("value", sess.run(v).tolist())
            print("memory", tf.config.experimental.get_memory_info("GPU:0")["current"] > 0)
    """)
    assert "value [4.0, 7.0, 10.0]" in proc.stdout
    assert "memory True" in proc.stdout
    placed = placements(proc.stderr)
    assert placed["v"] == GPU0
    assert placed["AssignAddVariableOp"] == GPU0


def test_gpu_oom_is_resource_exhausted_with_a_report_and_the_session_recovers():
    proc = run("""
        x = tf.placeholder(tf.float32, [None, 1024], name="x")
        y = tf.matmul(x, tf.ones([1024, 1024]), name="big")
        with tf.Session() as sess:
            try:
                sess.run(y, {x: np.ones([4096, 1024], np.float32)},
                         options=tf.RunOptions(report_tensor_allocations_upon_oom=True))
            except tf.errors.ResourceExhaustedError as e:
                print("OOM", e.message)
            print("after", sess.run(y, {x: np.ones([2, 1024], np.float32)})[0, 0])
    """, memory_mb=24)
    out = proc.stdout
    assert "OOM when allocating tensor with shape[4096,1024] and type float on " \
           f"{GPU0} by allocator GPU_0_bfc" in out
    assert "Tensors alive in this step when the OOM happened" in out
    assert "after 1024.0" in out


def test_memory_options_from_config_and_tf_config():
    proc = run("""
        gpu = tf.config.list_physical_devices("GPU")[0]
        tf.config.set_logical_device_configuration(
            gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=64)])
        with tf.Session() as sess:
            print("limit", [d.memory_limit_bytes >> 20 for d in sess.list_devices()
                            if d.device_type == "GPU"])
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError as e:
            print("ERROR", e)
    """)
    assert "limit [64]" in proc.stdout
    assert "ERROR" in proc.stdout and "initialized" in proc.stdout
    assert f"Created device {GPU0} with 64 MB memory" in proc.stderr


def test_cuda_visible_devices_minus_one_hides_the_gpus():
    proc = run("""
        print(tf.config.list_physical_devices("GPU"))
        with tf.device("/gpu:0"):
            a = tf.constant(1.0) + 1.0
        try:
            tf.Session().run(a)
        except tf.errors.InvalidArgumentError as e:
            print("ERROR", e.message)
    """, env={"CUDA_VISIBLE_DEVICES": "-1"})
    assert "[]" in proc.stdout
    assert 'no GPU is available: CUDA_VISIBLE_DEVICES="-1" hides every GPU' in proc.stdout
    assert "Found device" not in proc.stderr


def test_a_variable_goes_where_every_op_using_it_has_a_kernel():
    proc = run("""
        # The fake GPU has no kernel for the optimizer's update, so the variable stays on the CPU.
        w = tf.Variable(np.ones([2], np.float32), name="w")
        loss = tf.reduce_sum(tf.square(w))
        train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
        # This one is only read and added to: it goes to the GPU.
        c = tf.Variable(np.zeros([2], np.float32), name="c")
        bump = c.assign_add(tf.ones([2]))
        cfg = tf.ConfigProto(log_device_placement=True)
        with tf.Session(config=cfg) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([train, bump])
            print("w", sess.run(w).tolist(), "c", sess.run(c).tolist())
        # Pinned to the GPU, the update cannot run next to it: a clear error.
        tf.reset_default_graph()
        with tf.device("/gpu:0"):
            p = tf.Variable(np.ones([2], np.float32), name="p")
        step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(p))
        try:
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(step)
        except tf.errors.InvalidArgumentError as e:
            print("ERROR", e.message)
    """)
    placed = placements(proc.stderr)
    assert placed["w"] == CPU0
    assert placed["c"] == GPU0
    assert "w [0.5, 0.5] c [1.0, 1.0]" in proc.stdout
    assert "it uses the variable p, which lives in the memory of " + GPU0 in proc.stdout
    assert "has no GPU kernel" in proc.stdout


def test_an_op_added_later_without_a_gpu_kernel_moves_the_variable_to_the_cpu_and_back():
    proc = run("""
        c = tf.Variable(np.ones([2], np.float32), name="c")  # read and added to: on the GPU
        read = c.read_value()
        cfg = tf.ConfigProto(log_device_placement=True)
        with tf.Session(config=cfg) as sess:
            sess.run(c.initializer)
            print("before", sess.run(read).tolist())
            # Built after the variable was placed; the fake GPU has no kernel for the update.
            step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(c), name="step")
            sess.run(step)
            print("after step", sess.run(read).tolist())
            sess.run(c.assign_add(tf.ones([2])))
            sess.run(step)
            print("after add and step", sess.run(c).tolist())
    """)
    placed = placements(proc.stderr)
    assert placed["c"] == GPU0
    assert placed["step/update_c/ResourceApply"] == CPU0
    assert "before [1.0, 1.0]" in proc.stdout
    assert "after step [0.5, 0.5]" in proc.stdout
    assert "after add and step [1.0, 1.0]" in proc.stdout


def test_allow_growth_and_memory_fraction_decide_what_is_reserved():
    code = """
        a = tf.matmul(tf.ones([4, 4]), tf.ones([4, 4]))
        with tf.Session(config=config) as sess:
            sess.run(a)
        gpu = tf._C.gpu_discovery(read_free_memory=True)["devices"][0]
        print("reserved", (gpu["total_memory"] - gpu["free_memory"]) >> 20)
    """
    greedy = run("config = tf.ConfigProto()\n" + textwrap.dedent(code), memory_mb=100)
    assert "reserved 100" in greedy.stdout
    growth = run("config = tf.ConfigProto()\nconfig.gpu_options.allow_growth = True\n" +
                 textwrap.dedent(code), memory_mb=100)
    assert "reserved 2" in growth.stdout
    fraction = run("config = tf.ConfigProto()\n"
                   "config.gpu_options.per_process_gpu_memory_fraction = 0.25\n" +
                   textwrap.dedent(code), memory_mb=100)
    assert "reserved 25" in fraction.stdout
    forced = run("config = tf.ConfigProto()\n" + textwrap.dedent(code), memory_mb=100,
                 env={"TF_FORCE_GPU_ALLOW_GROWTH": "true"})
    assert "reserved 2" in forced.stdout


def test_graph_optimizer_leaves_gpu_nodes_to_their_kernels():
    """Constant folding rewrites host nodes only: a GPU node of constants runs on the GPU (its
    kernel's numerics), while the same node on the CPU is folded."""
    proc = run("""
        c = tf.constant(np.arange(16, dtype=np.float32).reshape(4, 4))
        with tf.device("/gpu:0"):
            on_gpu = tf.square(c, name="on_gpu")
        with tf.device("/cpu:0"):
            on_cpu = tf.square(c, name="on_cpu")
        meta = tf.RunMetadata()
        with tf.Session() as sess:
            a, b = sess.run([on_gpu, on_cpu], options=tf.RunOptions(trace_level=3),
                            run_metadata=meta)
        assert (a == b).all()
        ran = {ns.node_name: (dev.device[-5:], ns.timeline_label.split(" = ")[1].split("(")[0])
               for dev in meta.step_stats.dev_stats for ns in dev.node_stats}
        print(ran["on_gpu"], ran["on_cpu"])
    """)
    assert "('GPU:0', 'Square') ('CPU:0', 'Const')" in proc.stdout, proc.stdout


def test_empty_cuda_visible_devices_hides_the_gpus_too():
    proc = run("""
        print(tf.config.list_physical_devices("GPU"), tf.test.is_gpu_available())
    """, env={"CUDA_VISIBLE_DEVICES": ""})
    assert "[] False" in proc.stdout


def test_checkpoints_of_gpu_variables_save_and_restore_through_the_host(tmp_path):
    proc = run(f"""
        v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
        bump = v.assign_add(tf.constant([10.0, 20.0]))
        doubled = v * 2.0
        saver = tf.train.Saver()
        path = {str(tmp_path / "model")!r}
        cfg = tf.ConfigProto(log_device_placement=True)
        with tf.Session(config=cfg) as sess:
            sess.run(v.initializer)
            sess.run(bump)
            saver.save(sess, path)
        with tf.Session() as sess:
            saver.restore(sess, path)       # before any run: the variable is not placed yet
            print("restored", sess.run(doubled).tolist())
            sess.run(bump)
            saver.restore(sess, path)       # now it lives on the GPU
            print("again", sess.run(doubled).tolist())
    """)
    assert placements(proc.stderr)["v"] == GPU0
    assert "restored [22.0, 44.0]" in proc.stdout
    assert "again [22.0, 44.0]" in proc.stdout


def test_colocation_with_a_gpu_op_that_has_no_gpu_kernel():
    proc = run("""
        # Unpinned: the op without a GPU kernel is placed on its own.
        a = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), name="a")
        with tf.colocate_with(a):
            s = tf.nn.softmax(a, name="s")
        cfg = tf.ConfigProto(log_device_placement=True)
        with tf.Session(config=cfg) as sess:
            print("unpinned", sess.run(s).tolist())
        # Pinned to the GPU: the colocation cannot hold, and says why.
        with tf.device("/gpu:0"):
            b = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), name="b")
        with tf.colocate_with(b):
            t = tf.nn.softmax(b, name="t")
        try:
            tf.Session().run(t)
        except tf.errors.InvalidArgumentError as e:
            print("ERROR", e.message)
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            print("soft", sess.run(t).tolist())
    """)
    assert "unpinned [[0.5, 0.5], [0.5, 0.5]]" in proc.stdout
    placed = placements(proc.stderr)
    assert placed["a"] == GPU0 and placed["s"] == CPU0
    assert "ERROR Cannot colocate nodes {{colocation_node t}} and {{colocation_node b}}" \
        in proc.stdout
    assert f"b is on {GPU0}, which has no kernel for op Softmax" in proc.stdout
    assert "soft [[0.5, 0.5], [0.5, 0.5]]" in proc.stdout


def test_training_split_across_gpu_and_cpu_matches_the_cpu_alone():
    # The fake GPU runs a few of the ops (MatMul, Relu, AddV2...), the CPU the rest, so a step
    # moves tensors both ways many times; the fake kernels are the CPU's, so the losses must be
    # identical to a CPU-only run.
    code = """
        rng = np.random.RandomState(0)
        x_data = rng.randn(64, 8).astype(np.float32)
        y_data = (x_data.sum(1) > 0).astype(np.int64)
        x = tf.placeholder(tf.float32, [None, 8])
        y = tf.placeholder(tf.int64, [None])
        w1 = tf.Variable(rng.randn(8, 16).astype(np.float32) * 0.3)
        w2 = tf.Variable(rng.randn(16, 2).astype(np.float32) * 0.3)
        hidden = tf.nn.relu(tf.matmul(x, w1))
        logits = tf.matmul(hidden, w2)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session(config=tf.ConfigProto(device_count={"GPU": GPUS})) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss], {x: x_data, y: y_data})[1] for _ in range(20)]
        print(repr([float(v) for v in losses]))
    """
    on_gpu = run("GPUS = 1\n" + textwrap.dedent(code))
    on_cpu = run("GPUS = 0\n" + textwrap.dedent(code))
    gpu_losses, cpu_losses = eval(on_gpu.stdout), eval(on_cpu.stdout)
    assert gpu_losses == cpu_losses
    assert gpu_losses[-1] < gpu_losses[0] * 0.5


def test_host_memory_outputs_feed_host_memory_inputs_without_copies():
    # Shape runs on the GPU but writes its result in host memory, where the GPU Reshape reads
    # its `shape` argument; the fake kernels fail if either lands in the other memory.
    proc = run("""
        a = tf.matmul(tf.ones([2, 3]), tf.ones([3, 4]), name="a")
        b = tf.matmul(tf.ones([4, 1]), tf.ones([1, 2]), name="b")
        r = tf.reshape(a, tf.shape(b, name="shape_of_b"), name="r")
        with tf.Session(config=tf.ConfigProto(log_device_placement=True)) as sess:
            print(sess.run(r).tolist())
    """)
    assert "[[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]]" in proc.stdout
    placed = placements(proc.stderr)
    assert placed["shape_of_b"] == GPU0 and placed["r"] == GPU0
