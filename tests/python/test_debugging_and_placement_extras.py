"""tf.debugging.enable_check_numerics / disable_check_numerics (eager and graph), the traceback
filtering switch, and tf.config.set_soft_device_placement / get_soft_device_placement for eager
ops. Eager cases run in a program of their own (eager mode is per process)."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf


def run_eager(code):
    program = "import flowstone as tf\ntf.enable_eager_execution()\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_check_numerics_names_the_eager_op():
    out = run_eager("""
        tf.debugging.enable_check_numerics()
        print(tf.math.log(tf.constant([1.0, 2.0])).numpy().tolist())
        try:
            tf.math.log(tf.constant([1.0, 0.0]))
        except tf.errors.InvalidArgumentError as e:
            print("caught", str(e))
        big = tf.constant([3e38])
        try:
            big + big  # the operators' fast path is off while checking
        except tf.errors.InvalidArgumentError as e:
            print("caught", str(e).splitlines()[2])
        tf.debugging.disable_check_numerics()
        print((big + big).numpy().tolist())
        print(tf.math.log(tf.constant([0.0])).numpy().tolist())
    """)
    assert out.startswith("[0.0, 0.6931471824645996]\ncaught")
    assert 'Detected Infinity or NaN in output 0 of eagerly-executing op "Log"' in out
    assert "Tensor had -Inf values" in out
    assert 'caught !!! Detected Infinity or NaN in output 0 of eagerly-executing op "AddV2"' in out
    assert out.rstrip().endswith("[inf]\n[-inf]")


def test_check_numerics_in_a_graph():
    x = tf.placeholder(tf.float32, [2])
    before = tf.sqrt(x) * 2.0  # made before checking is on: never checked
    tf.debugging.enable_check_numerics()
    try:
        y = tf.math.log(x)
        z = y * 2.0
        nan = tf.sqrt(x) + 1.0
    finally:
        tf.debugging.disable_check_numerics()
    after = tf.math.log(x) * 2.0
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(z, {x: [1.0, np.e]}), [0.0, 2.0], rtol=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r'(?s)output 0 of graph op "Log".*op name: Log.*'
                                 r"Tensor had -Inf values"):
            sess.run(z, {x: [1.0, 0.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="Tensor had NaN values"):
            sess.run(nan, {x: [-1.0, 1.0]})
        assert np.isnan(sess.run(before, {x: [-1.0, 1.0]})[0])
        assert sess.run(after, {x: [0.0, 1.0]})[0] == -np.inf


def test_check_numerics_keeps_gradients():
    x = tf.constant([1.0, 4.0])
    tf.debugging.enable_check_numerics()
    try:
        y = tf.reduce_sum(tf.sqrt(x) * 3.0)
        (grad,) = tf.gradients(y, [x])
    finally:
        tf.debugging.disable_check_numerics()
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(grad), [1.5, 0.75])


def test_traceback_filtering_switch():
    assert tf.debugging.is_traceback_filtering_enabled()
    tf.debugging.disable_traceback_filtering()
    assert not tf.debugging.is_traceback_filtering_enabled()
    tf.debugging.enable_traceback_filtering()
    assert tf.debugging.is_traceback_filtering_enabled()


def test_soft_device_placement_for_eager_ops():
    out = run_eager("""
        print(tf.config.get_soft_device_placement())
        with tf.device("/GPU:0"):
            print(tf.add(1, 2).device)
        tf.config.set_soft_device_placement(False)
        print(tf.config.get_soft_device_placement())
        try:
            with tf.device("/GPU:0"):
                tf.add(1, 2)
        except tf.errors.InvalidArgumentError as e:
            print("caught", str(e).splitlines()[0])
        with tf.device("/CPU:0"):
            print(tf.add(1, 2).numpy())
        tf.config.set_soft_device_placement(True)
        with tf.device("/GPU:0"):
            print(tf.add(1, 2).numpy())
    """)
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert out.splitlines() == [
        "True", cpu, "False",
        "caught Could not satisfy device specification "
        "'/job:localhost/replica:0/task:0/device:GPU:0'. enable_soft_placement=0. Supported "
        f"device types [CPU]. All available devices [{cpu}]. Turn soft placement on with "
        "tf.config.set_soft_device_placement(True). [Op:AddV2] name: ", "3", "3"]
