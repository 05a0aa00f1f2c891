"""Eager execution on the fake GPU plugin (tests/fake_gpu): placement, tf.device, copies, and a
backward pass whose integer shape ops fall back to the CPU. One program per case, since GPU
discovery runs once per process."""

import os
import subprocess
import sys
import textwrap

import pytest
from build_tree import find_built

PLUGIN = find_built(os.path.join("tests", "fake_gpu", "libflowstone_fake_gpu.so"),
                    env_override="FLOWSTONE_TEST_FAKE_GPU")
pytestmark = pytest.mark.skipif(PLUGIN is None, reason="the fake GPU plugin is not built")

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def run(code):
    env = dict(os.environ, FLOWSTONE_GPU_PLUGIN=PLUGIN, FLOWSTONE_FAKE_GPU_COUNT="2",
               FLOWSTONE_FAKE_GPU_MEMORY_MB="256")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    program = "import flowstone as tf\ntf.enable_eager_execution()\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_placement_device_scopes_and_copies():
    lines = run("""
        a = tf.constant([1.0, 2.0, 3.0])
        b = a * 2.0
        print(a.device); print(b.device); print(b.numpy().tolist())
        with tf.device("/cpu:0"):
            c = b + 1.0
        print(c.device); print(c.numpy().tolist())
        with tf.device("/gpu:1"):
            d = a + a
        print(d.device)
        g = c.gpu()
        print(g.device); print(g.cpu().device); print((g + g).numpy().tolist())
    """)
    assert lines == [CPU0, GPU0, "[2.0, 4.0, 6.0]", CPU0, "[3.0, 5.0, 7.0]", GPU1, GPU0, CPU0,
                     "[6.0, 10.0, 14.0]"]


def test_gradient_and_variables_on_the_gpu():
    lines = run("""
        x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.matmul(x, x))
        print(tape.gradient(y, x).numpy().tolist())
        v = tf.Variable([1.0, 2.0])
        v.assign_add([1.0, 1.0])
        print(v.numpy().tolist())
    """)
    assert lines == ["[[7.0, 11.0], [9.0, 13.0]]", "[2.0, 3.0]"]


def test_optimizer_steps_and_tf_function_on_a_variable_in_gpu_memory():
    # The fake GPU has no kernel for the optimizer's update: it runs on the CPU, moving the
    # variable to host memory, and the next GPU read moves it back (the fake GPU's kernels fail
    # on an input in the wrong memory). A tf.function body reads the captured variable too.
    lines = run("""
        w = tf.Variable([[1.0], [2.0]])
        x = tf.constant([[1.0, 1.0]])
        optimizer = tf.train.GradientDescentOptimizer(0.5)
        for _ in range(2):
            optimizer.minimize(lambda: tf.reduce_sum(tf.matmul(x, w)), var_list=[w])
            print(w.numpy().tolist(), (w * 2.0).numpy().tolist())

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.matmul(x, w))
            optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

        step()
        print(w.numpy().tolist(), tf.function(lambda: tf.matmul(x, w))().numpy().tolist())
    """)
    assert lines == ["[[0.5], [1.5]] [[1.0], [3.0]]", "[[0.0], [1.0]] [[0.0], [2.0]]",
                     "[[-0.5], [0.5]] [[0.0]]"]


def test_placement_log_names_each_eager_op_and_its_device():
    env = dict(os.environ, FLOWSTONE_GPU_PLUGIN=PLUGIN, FLOWSTONE_FAKE_GPU_COUNT="1",
               FLOWSTONE_FAKE_GPU_MEMORY_MB="256")
    program = textwrap.dedent("""
        import flowstone as tf
        tf.enable_eager_execution()
        assert not tf.debugging.get_log_device_placement()
        tf.debugging.set_log_device_placement(True)
        assert tf.debugging.get_log_device_placement()
        a = tf.constant([1.0, 2.0])
        b = a * a
        with tf.device("/cpu:0"):
            c = b - a
    """)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    log = [line for line in proc.stderr.splitlines() if ": (" in line]
    assert log == [f"Mul: (Mul): {GPU0}", f"Sub: (Sub): {CPU0}"]
