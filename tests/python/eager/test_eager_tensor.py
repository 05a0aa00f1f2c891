"""Eager execution: EagerTensor's Python face, dispatch through the C++ cache, errors, lifetime."""

import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf


def test_executing_eagerly_and_graph_scopes():
    assert tf.executing_eagerly() and tf.contrib.eager.executing_eagerly()
    assert tf.contrib.eager.num_gpus() == len(tf.config.list_physical_devices("GPU"))
    with tf.Graph().as_default():
        assert not tf.executing_eagerly()
        assert tf.executing_eagerly_outside_functions()
        assert isinstance(tf.constant(1.0), tf.Tensor)
    with tf.name_scope("scope"):
        assert tf.executing_eagerly()


def test_enabling_after_graph_ops_is_a_value_error():
    script = textwrap.dedent("""
        import flowstone as tf
        tf.constant(1.0)
        try:
            tf.compat.v1.enable_eager_execution()
        except ValueError as e:
            print("ValueError:", e)
        print(tf.executing_eagerly())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "ValueError: tf.enable_eager_execution must be called at program startup.", "False"]


def test_repr_and_str_are_tensorflows():
    c = tf.constant([1, 2, 3]) + tf.constant([4, 5, 6])
    assert str(c) == "tf.Tensor([5 7 9], shape=(3,), dtype=int32)"
    assert repr(c) == "<tf.Tensor: shape=(3,), dtype=int32, numpy=array([5, 7, 9], dtype=int32)>"
    m = tf.constant([[1.5, 2.0], [3.0, 4.0]])
    assert repr(m) == ("<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
                       "array([[1.5, 2. ],\n       [3. , 4. ]], dtype=float32)>")
    assert str(m) == "tf.Tensor(\n[[1.5 2. ]\n [3.  4. ]], shape=(2, 2), dtype=float32)"
    s = tf.constant(3.0)
    assert repr(s) == "<tf.Tensor: shape=(), dtype=float32, numpy=3.0>"
    assert str(s) == "tf.Tensor(3.0, shape=(), dtype=float32)"
    # numpy summarises large tensors
    assert "..." in repr(tf.range(2000)) and "1999" in repr(tf.range(2000))
    assert repr(tf.constant([True, False])) == (
        "<tf.Tensor: shape=(2,), dtype=bool, numpy=array([ True, False])>")


def test_numpy_shares_the_tensors_memory_and_outlives_it():
    with tf.device("/cpu:0"):  # a GPU tensor's numpy() is a copy in host memory, as in TF
        t = tf.constant([1.0, 2.0, 3.0]) * 2.0
    a, b = t.numpy(), t.numpy()
    assert np.shares_memory(a, b)
    np.testing.assert_array_equal(np.asarray(t), [2.0, 4.0, 6.0])
    del t
    gc.collect()
    np.testing.assert_array_equal(a, [2.0, 4.0, 6.0])
    assert isinstance(tf.constant(2.5).numpy(), np.float32)


def test_value_outlives_its_inputs_with_gc_forced():
    for _ in range(50):
        a = tf.constant(np.arange(1000, dtype=np.float32))
        b = tf.constant(np.ones(1000, dtype=np.float32))
        c = a + b
        del a, b
        gc.collect()
        np.testing.assert_array_equal(c.numpy(), np.arange(1, 1001, dtype=np.float32))


def test_python_protocol():
    c = tf.constant([5, 7, 9])
    assert c.shape == tf.TensorShape([3]) and c.dtype == tf.int32 and c.ndim == 1
    assert c.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert int(tf.constant(3)) == 3 and float(tf.constant(2.5)) == 2.5
    assert bool(tf.constant(True)) and not bool(tf.constant(0))
    assert [int(x) for x in c] == [5, 7, 9] and len(c) == 3
    assert str(c[1]) == "tf.Tensor(7, shape=(), dtype=int32)"
    assert str(c[-1]) == "tf.Tensor(9, shape=(), dtype=int32)"
    assert str(c[1:]) == "tf.Tensor([7 9], shape=(2,), dtype=int32)"
    assert [1, 2, 3, 4][tf.constant(2)] == 3  # __index__
    with pytest.raises(TypeError, match="Tensor is unhashable. Instead, use tensor.ref"):
        hash(c)
    assert {c.ref(): 1}[c.ref()] == 1
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        bool(c)
    with pytest.raises(TypeError, match="only 0-dimensional arrays can be converted"):
        int(c)
    with pytest.raises(TypeError, match="Scalar tensor has no `len"):
        len(tf.constant(1))
    for attr in ("name", "op", "graph"):
        with pytest.raises(AttributeError,
                           match=f"Tensor.{attr} is undefined when eager execution is enabled."):
            getattr(c, attr)
    np.testing.assert_array_equal((c == tf.constant([5, 0, 9])).numpy(), [True, False, True])


def test_operators_match_numpy():
    x = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    y = np.array([[0.5, 2.0], [-1.0, 3.0]], np.float32)
    tx, ty = tf.constant(x), tf.constant(y)
    for got, want in [(tx + ty, x + y), (tx - ty, x - y), (tx * ty, x * y), (tx / ty, x / y),
                      (-tx, -x), (tx @ ty, x @ y), (tx ** 2, x ** 2), (2.0 * tx, 2 * x),
                      (tx > ty, x > y), (abs(tx), abs(x))]:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_shape_error_is_invalid_argument_with_op_and_line():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.constant([1, 2, 3]) + tf.constant([1, 2])
    message = str(info.value)
    assert message.startswith("Incompatible shapes: [3] vs. [2] [Op:AddV2] name: ")
    assert "test_eager_tensor.py" in message and "Raised by the op run at" in message


def test_dtype_mismatch_has_tensorflows_eager_message():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"cannot compute AddV2 as input #1\(zero-based\) was expected to be "
                             r"a int32 tensor but is a float tensor \[Op:AddV2\]"):
        tf.constant(1) + tf.constant(1.0)


def test_kernel_error_leaves_the_context_usable():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Op:MatMul\]"):
        tf.matmul(tf.ones([2, 3]), tf.ones([2, 3]))
    np.testing.assert_array_equal(tf.matmul(tf.ones([2, 3]), tf.ones([3, 1])).numpy(),
                                  [[3.0], [3.0]])


def test_dispatch_is_cached_per_signature():
    # A fresh process, so that the count is this test's own.
    script = textwrap.dedent("""
        import flowstone as tf
        from flowstone import _C
        tf.enable_eager_execution()
        a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
        a + b
        first = _C.eager_cache_size()
        for _ in range(20):
            a + b
        tf.constant([1.0]) + tf.constant([2.0])  # other shapes, same dtypes: same entry
        same = _C.eager_cache_size()
        tf.constant([1, 2]) + tf.constant([3, 4])  # other dtypes: a new entry
        print(first, same, _C.eager_cache_size())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    first, same, after = map(int, out.stdout.split())
    assert first == same == 1 and after == 2


def test_ops_across_families_match_numpy():
    np.testing.assert_array_equal(tf.reshape(tf.range(6), [2, 3]).numpy(),
                                  np.arange(6).reshape(2, 3))
    np.testing.assert_allclose(tf.nn.softmax(tf.constant([1.0, 2.0])).numpy(),
                               np.exp([1, 2]) / np.exp([1, 2]).sum(), rtol=1e-6)
    np.testing.assert_array_equal(tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), axis=1).numpy(),
                                  [3, 7])
    np.testing.assert_array_equal(tf.gather(tf.constant([5, 6, 7]), [2, 0]).numpy(), [7, 5])
    assert tf.cast(tf.constant(1.7), tf.int32).numpy() == 1
    parts = tf.split(tf.range(4), 2)
    np.testing.assert_array_equal(parts[1].numpy(), [2, 3])


def test_cond_and_while_loop_run_eagerly():
    x = tf.constant(3.0)
    assert float(tf.cond(x > 0, lambda: x * 2.0, lambda: -x)) == 6.0
    assert int(tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)])) == 10
    assert int(tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)],
                             maximum_iterations=4)) == 4


def test_device_scope_and_copies():
    with tf.device("/cpu:0"):
        y = tf.constant(1.0) + 1.0
    assert y.device.endswith("device:CPU:0")
    assert float(y.cpu()) == 2.0
