"""tf.test: TestCase (sessions, evaluate, TensorFlow's assertions and their messages), the
gradient checker against analytic Jacobians, assert_equal_graph_def, and a TF1 test file that
runs unchanged under Flowstone and real TensorFlow."""

import os
import subprocess
import sys
import unittest

import numpy as np
import pytest

import flowstone as tf
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

HERE = os.path.dirname(os.path.abspath(__file__))
TF1_TEST_FILE = os.path.join(HERE, "data", "tf1_style_test_module.py")


def run_case(test_class, name):
    """Runs one test method of a TestCase subclass; returns the unittest result."""
    result = unittest.TestResult()
    test_class(name).run(result)
    return result


def failure_text(result):
    return "\n".join(text for _, text in result.failures + result.errors)


class _Cases(tf.test.TestCase):
    __test__ = False  # run one method at a time by the tests below, not collected by pytest
    def test_all_close_mismatch(self):
        self.assertAllClose([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])

    def test_shape_mismatch(self):
        self.assertAllEqual([[1, 2]], [1, 2])

    def test_all_equal_mismatch(self):
        self.assertAllEqual(np.array([1, 2, 3]), tf.constant([1, 5, 3]))

    def test_range(self):
        self.assertAllInRange([0.0, 1.0, 3.0], 0.0, 1.0, open_lower_bound=True)

    def test_op_error_not_raised(self):
        with self.assertRaisesOpError("anything"):
            pass

    def test_wrong_error_message(self):
        with self.assertRaisesOpError("something else"):
            with self.session() as sess:
                sess.run(tf.placeholder(tf.float32))

    def test_dict_keys(self):
        self.assertAllClose({"a": 1.0}, {"b": 1.0})

    def test_cached_session_is_reused(self):
        with self.cached_session() as first:
            pass
        with self.cached_session() as second:
            assert first is second and tf.get_default_session() is second
        with self.session() as other:
            assert other is not first

    def test_use_gpu_false_pins_to_the_cpu(self):
        with self.session(use_gpu=False):
            c = tf.constant(1.0)
        assert c.device == "/device:CPU:0"

    def test_checked_thread_reports_its_failure(self):
        def fails():
            raise ValueError("from the thread")
        thread = self.checkedThread(fails)
        thread.start()
        thread.join()


@pytest.mark.parametrize("name, expected", [
    ("test_all_close_mismatch", ["not close where = (array([1])", "not close lhs = [2.]",
                                 "not close rhs = [2.5]"]),
    ("test_shape_mismatch", ["Shape mismatch: expected (1, 2), got (2,)"]),
    ("test_all_equal_mismatch", ["not equal where = (array([1])", "not equal lhs = array([2])",
                                 "not equal rhs = array([5]"]),
    ("test_range", ["2 of the 3 element(s) are outside the range (0.0, 1.0]",
                    "(0,): 0.0", "(2,): 3.0"]),
    ("test_op_error_not_raised", ["OpError not raised"]),
    ("test_wrong_error_message", ["Exception of type", "InvalidArgumentError",
                                  "must feed a value"]),
    ("test_dict_keys", ["mismatched keys: ['a'] vs ['b']"]),
    ("test_checked_thread_reports_its_failure", ["Error in checkedThread: from the thread"]),
])
def test_assertions_fail_with_tensorflows_messages(name, expected):
    result = run_case(_Cases, name)
    assert len(result.failures) == 1 and not result.errors, failure_text(result)
    for text in expected:
        assert text in failure_text(result)


@pytest.mark.parametrize("name", ["test_cached_session_is_reused",
                                  "test_use_gpu_false_pins_to_the_cpu"])
def test_sessions(name):
    result = run_case(_Cases, name)
    assert result.wasSuccessful(), failure_text(result)


def test_test_session_collected_as_a_test_is_skipped_as_in_tensorflow():
    # unittest collects the inherited test_session method as a test; TensorFlow skips it.
    result = run_case(_Cases, "test_session")
    assert result.wasSuccessful() and [why for _, why in result.skipped] == ["Not a test."]


def test_tf1_test_file_runs_under_flowstone():
    proc = subprocess.run([sys.executable, TF1_TEST_FILE], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_MODULE": "flowstone"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Ran 8 tests" in proc.stderr and "OK (skipped=1)" in proc.stderr


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_the_same_file_passes_under_tensorflow():
    proc = subprocess.run([PEER_PYTHON, TF1_TEST_FILE], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_MODULE": "tensorflow"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Ran 8 tests" in proc.stderr and "OK (skipped=1)" in proc.stderr


def test_compute_gradient_matches_the_analytic_jacobian():
    x = tf.placeholder(tf.float64, [2, 3])
    w = tf.placeholder(tf.float64, [3])
    y = tf.reduce_sum(tf.square(x) * w, axis=1)  # y_i = sum_j x_ij^2 w_j
    x0 = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    w0 = np.array([1.0, -2.0, 0.5])
    with tf.Session():
        (jx_t, jx_n), (jw_t, jw_n) = tf.test.compute_gradient([x, w], [[2, 3], [3]], y, [2],
                                                              x_init_value=[x0, w0])
    expected_x = np.zeros([6, 2])
    for i in range(2):
        for j in range(3):
            expected_x[i * 3 + j, i] = 2 * x0[i, j] * w0[j]
    np.testing.assert_allclose(jx_t, expected_x, rtol=1e-12)
    np.testing.assert_allclose(jx_n, expected_x, atol=1e-8)
    np.testing.assert_allclose(jw_t, (x0 ** 2).T, rtol=1e-12)
    np.testing.assert_allclose(jw_n, (x0 ** 2).T, atol=1e-8)


def test_compute_gradient_error_and_its_own_errors():
    x = tf.placeholder(tf.float32, [4])
    y = tf.nn.relu(x) * 3.0
    with pytest.raises(ValueError, match="runs in the default session"):
        tf.test.compute_gradient(x, [4], y, [4])
    with tf.Session():
        error = tf.test.compute_gradient_error(x, [4], y, [4],
                                               x_init_value=[-1.0, 0.5, 2.0, -0.3])
        assert error < 1e-2
        with pytest.raises(ValueError, match=r"x_init_value has shape \[2\]"):
            tf.test.compute_gradient(x, [4], y, [4], x_init_value=[1.0, 2.0])
        i = tf.placeholder(tf.int32, [2])
        with pytest.raises(TypeError, match="floating-point tensors, got int32"):
            tf.test.compute_gradient(i, [2], tf.cast(i, tf.float32), [2])


def test_assert_equal_graph_def_ignores_order_but_not_content():
    def graph(order, value=1.0):
        g = tf.Graph()
        with g.as_default():
            for name in order:
                tf.constant(value, name=name)
        return g.as_graph_def()

    tf.test.assert_equal_graph_def(graph("ab"), graph("ba"))
    with pytest.raises(AssertionError, match="Did not find expected node 'c'"):
        tf.test.assert_equal_graph_def(graph("ab"), graph("abc"))
    with pytest.raises(AssertionError, match="Node named 'a' has different attrs"):
        tf.test.assert_equal_graph_def(graph("a", 1.0), graph("a", 2.0))


def test_module_helpers():
    assert os.path.isdir(tf.test.get_temp_dir())
    assert tf.test.get_temp_dir() == tf.test.get_temp_dir()
    assert not tf.test.is_built_with_rocm() and not tf.test.is_built_with_xla()
    assert tf.test.mock.MagicMock()(3) is not None
    with tf.Session() as sess:
        result = tf.test.Benchmark().run_op_benchmark(sess, tf.constant(1.0), min_iters=3)
    assert result["iters"] == 3 and result["wall_time"] > 0
