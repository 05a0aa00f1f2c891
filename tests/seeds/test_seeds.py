"""The seed articles' graph-mode snippets, unchanged but for `import flowstone as tf`, run as
user programs (one subprocess each) and behaving as the articles describe."""

import os
import re
import subprocess
import sys

import pytest

SNIPPETS = os.path.join(os.path.dirname(__file__), "snippets")


def run_snippet(name, env=None, unset=()):
    # The articles' expected outputs are those of a machine without a usable GPU: a GPU here is
    # hidden, so that the snippets check the same on any machine.
    full_env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    full_env.pop("TF_FORCE_GPU_ALLOW_GROWTH", None)  # the articles use TF's default GPU options
    full_env.update(env or {})
    for variable in unset:
        full_env.pop(variable, None)
    proc = subprocess.run([sys.executable, os.path.join(SNIPPETS, name)], capture_output=True,
                          text=True, timeout=300, env=full_env)
    return proc


def _always_overcommits():
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


@pytest.mark.skipif(_always_overcommits(), reason="vm.overcommit_memory=1: numpy's 931 GiB "
                    "allocation succeeds and filling it would exhaust the machine")
def test_huge_numpy_variable_fails_in_numpy_first():
    # np.random.rand(5000, 5000, 5000) needs ~931 GiB before Flowstone sees it (docs/COMPAT.md).
    proc = run_snippet("s000_ex1_gpu_memory.py")
    assert proc.returncode == 0, proc.stderr
    assert "An unexpected error occurred:" in proc.stdout
    assert "Session created successfully" not in proc.stdout


def test_huge_variable_is_resource_exhausted():
    proc = run_snippet("s000_ex1_variant_random_normal.py")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "GPU memory exhaustion error: OOM when allocating tensor with shape[5000,5000,5000] " \
           "and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu" in out
    assert "Requested 500000000000 bytes" in out
    assert "limit" in out


def test_cuda_visible_devices_minus_one_runs_on_cpu():
    proc = run_snippet("s000_ex2_cuda_visible_devices.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["1.0", "Session created successfully (CPU ONLY)"]


def test_pin_to_missing_gpu_is_invalid_argument():
    proc = run_snippet("s000_ex3_missing_gpu.py")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("Device placement error: Cannot assign a device for operation Const")
    assert "was explicitly assigned to /device:GPU:2" in out
    assert "available devices are [ /job:localhost/replica:0/task:0/device:CPU:0 ]" in out
    assert "The requested device appears to be a GPU, but no GPU is available" in out
    assert "allow_soft_placement=True" in out
    assert "Session created successfully" not in out
    assert "1.0" not in out.splitlines()


def test_cnn_with_wrong_feed_shape():
    proc = run_snippet("s001_ex1_cnn_wrong_feed.py")
    assert proc.returncode == 0, proc.stderr
    assert ("Error during sess.run(): Cannot feed value of shape (32, 224, 224) for Tensor "
            "'Placeholder:0', which has shape '(?, 224, 224, 3)'") in proc.stdout


def test_uninitialized_variable_is_failed_precondition():
    proc = run_snippet("s001_ex2_uninitialized.py")
    assert proc.returncode == 0, proc.stderr
    assert "Error during sess.run(): Attempting to use uninitialized value Weights" in proc.stdout


def test_gpu_check_falls_back_to_cpu_matmul():
    proc = run_snippet("s001_ex3_gpu_check.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "No GPU Available"


def test_version_and_gpu_listing():
    proc = run_snippet("s002_ex1_versions.py", env={"CUDA_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("TensorFlow version: 0.")
    assert lines[1] == "CUDA enabled: []"


def test_selecting_a_gpu_without_gpus():
    proc = run_snippet("s002_ex3_select_gpu.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "No GPUs found. Running on CPU."


@pytest.mark.parametrize("name", ["s003_ex1_ex2_log_placement.py", "s003_ex3_cpu_pin.py"])
def test_log_device_placement(name):
    import flowstone as tf

    proc = run_snippet(name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Result: [5. 7. 9.]"
    lines = proc.stderr.splitlines()
    assert lines.count("Device mapping:") == 1
    start = lines.index("Device mapping:")
    cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert f"{cpu0} -> device: 0, name: CPU" in lines[start + 1:]
    placed = {}
    for line in lines[start + 1:]:
        m = re.fullmatch(r"(\S+): \((\w+)\): (\S+)", line)
        if m:
            placed[m.group(1)] = (m.group(2), m.group(3))
    assert {op: kind for op, (kind, _) in placed.items()} == {
        "Const": "Const", "Const_1": "Const", "add": "AddV2"}
    # Unpinned ops may go to a GPU when there is one; pinned ones stay on the CPU.
    if name == "s003_ex3_cpu_pin.py" or not tf.config.list_physical_devices("GPU"):
        assert {device for _, device in placed.values()} == {cpu0}


def test_run_after_close_raises():
    proc = run_snippet("s004_ex1_closed_session.py")
    assert proc.returncode == 1
    assert "RuntimeError: Attempted to use a closed Session." in proc.stderr


def test_eager_tensor_printed_after_its_inputs_are_deleted():
    # What TensorFlow prints for the fifth seed's second example, with the GC forced in between.
    proc = run_snippet("s004_ex2_eager_del.py", env={"PYTHONDEVMODE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "tf.Tensor([5 7 9], shape=(3,), dtype=int32)\n"


def test_gradient_tape_on_unwatched_constants_gives_none():
    proc = run_snippet("s004_ex3_gradient_tape.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "tf.Tensor([3. 8.], shape=(2,), dtype=float32)\n[None, None]\n"


def test_cnn_with_the_right_feed_learns():
    """The second seed's CNN, fed correctly shaped data: the loss falls over a few steps. The
    learning rate is lower than the seed's 0.001: with 1.6 million inputs to the dense layer, one
    Adam step of 0.001 per weight moves the logits by hundreds, in TensorFlow as here."""
    import numpy as np

    import flowstone as tf

    X = tf.placeholder(tf.float32, shape=[None, 224, 224, 3])
    Y = tf.placeholder(tf.int32, shape=[None])
    conv1 = tf.layers.conv2d(inputs=X, filters=32, kernel_size=3, padding="same",
                             activation=tf.nn.relu)
    flat = tf.layers.flatten(conv1)
    logits = tf.layers.dense(inputs=flat, units=10)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=Y, logits=logits))
    optimizer = tf.train.AdamOptimizer(learning_rate=1e-5).minimize(loss)
    rng = np.random.RandomState(0)
    images = rng.rand(8, 224, 224, 3).astype(np.float32)
    labels = rng.randint(0, 10, size=8)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = []
        for _ in range(5):
            losses.append(sess.run(loss, {X: images, Y: labels}))
            sess.run(optimizer, {X: images, Y: labels})
    assert all(b < a for a, b in zip(losses, losses[1:])), losses


def test_keras_example_unchanged_stops_at_the_missing_data():
    """The third seed's Keras example exactly as written: x_train is never defined, so, as in
    TensorFlow, the NameError lands in its `except Exception` branch after the model compiled."""
    proc = run_snippet("s002_ex2_keras_oom.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "An error occurred: name 'x_train' is not defined"


def test_keras_example_with_data_trains():
    proc = run_snippet("s002_ex2_keras_with_data.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Epoch 1/10"
    finals = [line for line in lines if line.startswith("4/4 [==============================]")]
    assert len(finals) == 10, proc.stdout
    losses = [float(re.search(r"loss: ([0-9.]+)", line).group(1)) for line in finals]
    assert losses[-1] < losses[0]
    assert "error" not in proc.stdout.lower()


# The CPU memory limit of the OOM test: the seed's model (a 784x1024 kernel of 3 MiB and its
# gradient) cannot fit, and what it leaves allocated (the kernel, about 3.5 MiB in all) leaves
# room for the smaller model. At 4 MiB that room was barely more than the smaller model's step
# needs, and the step failed in about 1 run of 6, as parallel steps allocate in varying order.
# (On the fake GPU, 4 MiB holds: 14 of 14 runs; at 5 MiB the seed's model fits there.)
OOM_LIMIT_MB = 5


def test_keras_example_out_of_memory_is_caught_and_a_smaller_model_trains():
    proc = run_snippet("s002_ex2_keras_with_data.py",
                       env={"KERAS_SEED_MEMORY_LIMIT_MB": str(OOM_LIMIT_MB)})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert ("CUDA out of memory error: OOM when allocating tensor with shape[784,1024] and type "
            "float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu") in out
    assert f"limit {OOM_LIMIT_MB << 20} bytes ({OOM_LIMIT_MB}.00 MiB)" in out
    assert "Try reducing batch size or model complexity." in out
    assert "smaller model trained, final loss" in out
    assert re.search(r"^16/16 - \d+s - loss: [0-9.]+ - \d+m?s/epoch - \d+[mu]?s/step$", out,
                     re.M), out


def test_keras_example_out_of_memory_on_the_fake_gpu():
    """The same path on a GPU (the fake GPU plugin, 4 MiB): the OOM names the GPU's allocator,
    and the smaller model trains afterwards."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "python"))
    from build_tree import find_built

    plugin = find_built(os.path.join("tests", "fake_gpu", "libflowstone_fake_gpu.so"),
                        env_override="FLOWSTONE_TEST_FAKE_GPU")
    if plugin is None:
        pytest.skip("the fake GPU plugin is not built (configure with "
                    "-DFLOWSTONE_BUILD_TESTS=ON, as `make test` does)")
    proc = run_snippet("s002_ex2_keras_with_data.py", env={
        "FLOWSTONE_GPU_PLUGIN": plugin, "FLOWSTONE_FAKE_GPU_COUNT": "1",
        "FLOWSTONE_FAKE_GPU_MEMORY_MB": "4"}, unset=["CUDA_VISIBLE_DEVICES"])
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"CUDA out of memory error: OOM when allocating tensor with shape\[\d+,"
                     r"\d+\] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
                     r"allocator GPU_0_bfc", out), out[:2000]
    assert "limit 4194304 bytes (4.00 MiB)" in out
    assert "smaller model trained, final loss" in out
