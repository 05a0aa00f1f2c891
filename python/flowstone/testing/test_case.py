"""tf.test.TestCase: unittest.TestCase with TensorFlow's helpers, so a TF1 test file runs with
`import flowstone as tf`: a fresh default graph and fixed seeds per test, sessions
(`session`, `cached_session`, `test_session`), `evaluate`, and the array assertions with
TensorFlow's messages."""

import contextlib
import math
import random
import re
import shutil
import tempfile
import threading
import unittest

import numpy as np
from google.protobuf import text_format

from flowstone import errors as _errors
from flowstone.client import session as _session
from flowstone.framework import ops as _ops
from flowstone.framework.device_spec import DeviceSpec
from flowstone.protos import ConfigProto
from flowstone.util import nest

# The seed TensorFlow's tests start from (random_seed.DEFAULT_GRAPH_SEED).
DEFAULT_GRAPH_SEED = 87654321


def _is_tensor_like(value):
    return isinstance(value, (_ops.Tensor, _ops.Operation)) or hasattr(value, "_fetch_components")


class _CheckedThread:
    """A thread whose exception fails the test when it is joined (TestCase.checkedThread)."""

    def __init__(self, test_case, target, args=None, kwargs=None):
        self._test_case = test_case
        self._target = target
        self._args = args or ()
        self._kwargs = kwargs or {}
        self._exception = None
        self._thread = threading.Thread(target=self._run)

    def _run(self):
        try:
            self._target(*self._args, **self._kwargs)
        except Exception as e:  # noqa: BLE001 - reported by join()
            self._exception = e

    def start(self):
        self._thread.start()

    def join(self):
        self._thread.join()
        if self._exception is not None:
            self._test_case.fail(f"Error in checkedThread: {self._exception}")

    def is_alive(self):
        return self._thread.is_alive()


class TestCase(unittest.TestCase):
    """Base class for tests of TensorFlow programs (tf.test.TestCase)."""

    def __init__(self, methodName="runTest"):  # noqa: N803 - unittest's name
        super().__init__(methodName)
        self._cached_session = None
        self._tempdir = None

    def setUp(self):
        random.seed(DEFAULT_GRAPH_SEED)
        np.random.seed(DEFAULT_GRAPH_SEED)
        _ops.reset_default_graph()
        _ops.set_random_seed(DEFAULT_GRAPH_SEED)

    def tearDown(self):
        self._close_cached_session()

    def _close_cached_session(self):
        if self._cached_session is not None:
            self._cached_session.close()
            self._cached_session = None

    def get_temp_dir(self):
        """A temporary directory of this test, removed when it ends."""
        if self._tempdir is None:
            self._tempdir = tempfile.mkdtemp(prefix="flowstone_test_")
            self.addCleanup(shutil.rmtree, self._tempdir, True)
        return self._tempdir

    # --- sessions ----------------------------------------------------------------------------
    @staticmethod
    def _config(config, force_gpu):
        if config is None:
            config = ConfigProto()
            config.allow_soft_placement = not force_gpu
        return config

    @contextlib.contextmanager
    def _as_default(self, sess, use_gpu, force_gpu):
        device = "/device:GPU:0" if force_gpu else (None if use_gpu else "/device:CPU:0")
        with sess.graph.as_default(), sess.as_default():
            if device is None:
                yield sess
            else:
                with sess.graph.device(device):
                    yield sess

    @contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        """A new session on `graph` (default: the default graph), its default while the block
        runs, closed after it. use_gpu=False pins the block's ops to the CPU, force_gpu=True to
        the GPU."""
        if _ops.executing_eagerly():
            yield None
            return
        with _session.Session(graph=graph or _ops.get_default_graph(),
                              config=self._config(config, force_gpu)) as sess:
            with self._as_default(sess, use_gpu, force_gpu):
                yield sess

    @contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        """One session for the whole test (closed when it ends), made default by each block."""
        if _ops.executing_eagerly():
            yield None
            return
        graph = graph or _ops.get_default_graph()
        if self._cached_session is None:
            self._cached_session = _session.Session(graph=graph,
                                                    config=self._config(config, force_gpu))
        elif self._cached_session.graph is not graph:
            raise ValueError("The graph used to get the cached session is different than the "
                             "one that was used to create the session. Maybe create a new "
                             "session with self.session()")
        with self._as_default(self._cached_session, use_gpu, force_gpu):
            yield self._cached_session

    def test_session(self, graph=None, config=None, use_gpu=True, force_gpu=False):
        """The deprecated name of cached_session (TensorFlow 1's tests use it)."""
        if self.id().endswith(".test_session"):
            self.skipTest("Not a test.")
        return self.cached_session(graph, config, use_gpu, force_gpu)

    def evaluate(self, tensors):
        """The values of a nested structure of tensors: .numpy() in eager mode, else a run of
        the default session (or of the test's cached session)."""
        if _ops.executing_eagerly():
            return nest.map_structure(
                lambda t: t.numpy() if hasattr(t, "numpy") else t, tensors)
        sess = _session.get_default_session()
        if sess is not None:
            return sess.run(tensors)
        with self.cached_session() as sess:
            return sess.run(tensors)

    def checkedThread(self, target, args=None, kwargs=None):  # noqa: N802 - TF's name
        return _CheckedThread(self, target, args, kwargs)

    # --- array assertions ----------------------------------------------------------------------
    def _GetNdArray(self, value):  # noqa: N802 - TF's name
        if _is_tensor_like(value) or hasattr(value, "numpy"):
            value = self.evaluate(value)
        return value if isinstance(value, np.ndarray) else np.array(value)

    def _assert_arrays_close(self, a, b, rtol, atol, msg, path):
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        where = f" at {path}" if path else ""
        self.assertEqual(a.shape, b.shape,
                         f"Shape mismatch{where}: expected {a.shape}, got {b.shape} with "
                         f"contents {b}.")
        if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return
        if a.dtype.kind not in "fc" and b.dtype.kind not in "fc":
            a, b = a.astype(np.float64), b.astype(np.float64)
        messages = [msg or ""]
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if a.ndim:
            bad = np.where(~close)
            messages += [f"not close where = {bad}", f"not close lhs = {a[bad]}",
                         f"not close rhs = {b[bad]}", f"not close dif = {np.abs(a - b)[bad]}",
                         f"not close tol = {atol + rtol * np.abs(b)[bad]}"]
        messages.append(f"dtype = {a.dtype}, shape = {a.shape}")
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg="\n".join(messages),
                                   equal_nan=True)

    def _assert_close_recursive(self, a, b, rtol, atol, msg, path):
        if isinstance(a, dict) or isinstance(b, dict):
            self.assertIsInstance(a, dict, f"{path or 'value'}: expected a dict, got {a!r}")
            self.assertIsInstance(b, dict, f"{path or 'value'}: expected a dict, got {b!r}")
            self.assertEqual(set(a), set(b), f"mismatched keys{' at ' + path if path else ''}: "
                                             f"{sorted(map(str, a))} vs {sorted(map(str, b))}")
            for key in a:
                self._assert_close_recursive(a[key], b[key], rtol, atol, msg, f"{path}[{key!r}]")
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            # Lists of numbers compare as arrays; lists of tensors or of arrays of different
            # shapes element by element.
            try:
                a_array, b_array = np.asarray(a), np.asarray(b)
                numeric = a_array.dtype != object and b_array.dtype != object
            except ValueError:  # ragged nesting
                numeric = False
            if numeric:
                self._assert_arrays_close(a_array, b_array, rtol, atol, msg, path)
                return
            self.assertEqual(len(a), len(b), f"Length of {path or 'value'} differs: {len(a)} "
                                             f"vs {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                self._assert_close_recursive(x, y, rtol, atol, msg, f"{path}[{i}]")
        else:
            self._assert_arrays_close(a, b, rtol, atol, msg, path)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        """a and b (arrays, tensors, or nested lists, tuples and dicts of them) have the same
        structure and shapes, and agree within atol + rtol * |b| elementwise (NaNs match)."""
        self._assert_close_recursive(a, b, rtol, atol, msg, "")

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6,  # noqa: N802
                                      float_rtol=1e-6, float_atol=1e-6, half_rtol=1e-3,
                                      half_atol=1e-3, bfloat16_rtol=1e-2, bfloat16_atol=1e-2,
                                      msg=None):
        """assertAllClose with looser tolerances for lower-precision dtypes."""
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        dtypes = {a.dtype, b.dtype}
        if np.float32 in dtypes or np.complex64 in dtypes:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.float16 in dtypes:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        del bfloat16_rtol, bfloat16_atol  # numpy holds bfloat16 values as float32

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(msg or "The two values are close at all elements")

    def assertAllEqual(self, a, b, msg=None):  # noqa: N802
        """a and b have the same shape and equal elements (NaNs match in float arrays)."""
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        contents = f" Contents: {b!r}. " if b.ndim <= 3 or b.size < 500 else " "
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got "
                                           f"{b.shape}.{contents}\n{msg or ''}.")
        same = a == b
        if a.dtype.kind == "f" and b.dtype.kind == "f":
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if np.all(same):
            return
        messages = [msg or ""]
        if a.ndim:
            where = np.where(np.logical_not(same))
            messages += [f"not equal where = {where}", f"not equal lhs = {a[where]!r}",
                         f"not equal rhs = {b[where]!r}"]
        else:
            messages += [f"not equal lhs = {a!r}", f"not equal rhs = {b!r}"]
        np.testing.assert_array_equal(a, b, err_msg="\n".join(messages))

    def assertNotAllEqual(self, a, b, msg=None):  # noqa: N802
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(msg or "The two values are equal at all elements")

    def assertAllGreater(self, a, comparison_target):  # noqa: N802
        self.assertGreater(np.min(self._GetNdArray(a)), comparison_target)

    def assertAllLess(self, a, comparison_target):  # noqa: N802
        self.assertLess(np.max(self._GetNdArray(a)), comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target):  # noqa: N802
        self.assertGreaterEqual(np.min(self._GetNdArray(a)), comparison_target)

    def assertAllLessEqual(self, a, comparison_target):  # noqa: N802
        self.assertLessEqual(np.max(self._GetNdArray(a)), comparison_target)

    def assertAllInRange(self, target, lower_bound, upper_bound,  # noqa: N802
                         open_lower_bound=False, open_upper_bound=False):
        """Every element of target is in the range (open or closed at each end)."""
        target = self._GetNdArray(target)
        if not np.issubdtype(target.dtype, np.number) and target.dtype != np.bool_:
            raise AssertionError(f"The value of {target} does not have an ordered numeric type "
                                 f"({target.dtype})")
        below = target <= lower_bound if open_lower_bound else target < lower_bound
        above = target >= upper_bound if open_upper_bound else target > upper_bound
        outside = np.logical_or(np.logical_or(below, above), np.isnan(target)
                                if target.dtype.kind == "f" else False)
        if np.any(outside):
            where = np.argwhere(outside)
            detail = "\n".join(f"  {tuple(int(i) for i in index)}: {target[tuple(index)]}"
                               for index in where[:100])
            interval = (("(" if open_lower_bound else "[") + f"{lower_bound}, {upper_bound}"
                        + (")" if open_upper_bound else "]"))
            raise AssertionError(f"{len(where)} of the {target.size} element(s) are outside "
                                 f"the range {interval}. Subscript(s) and value(s) of the "
                                 f"offending elements:\n{detail}")

    def assertAllInSet(self, target, expected_set):  # noqa: N802
        target = self._GetNdArray(target)
        diff = np.setdiff1d(target.flatten(), list(expected_set))
        if np.size(diff):
            raise AssertionError(f"{np.size(diff)} unique element(s) are not in the set "
                                 f"{expected_set}: {diff}")

    def assertDTypeEqual(self, target, expected_dtype):  # noqa: N802
        self.assertEqual(self._GetNdArray(target).dtype, expected_dtype)

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802
        self.assertTrue(f1 == f2 or math.fabs(f1 - f2) <= err,
                        f"{f1:f} != {f2:f} +/- {err:f}" + (f" ({msg})" if msg else ""))

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):  # noqa: N802
        if not isinstance(np_array, (np.ndarray, np.generic)):
            raise TypeError("np_array must be a Numpy ndarray or Numpy scalar")
        if not isinstance(tf_tensor, _ops.Tensor):
            raise TypeError("tf_tensor must be a Tensor")
        self.assertAllEqual(np_array.shape, tf_tensor.shape.as_list(), msg=msg)

    def assertDeviceEqual(self, device1, device2, msg=None):  # noqa: N802
        canonical = [DeviceSpec.from_string(d or "").to_string() for d in (device1, device2)]
        self.assertEqual(canonical[0], canonical[1],
                         f"Devices {device1} and {device2} are not equal. {msg or ''}")

    def assertStartsWith(self, actual, expected_start, msg=None):  # noqa: N802
        if not actual.startswith(expected_start):
            self.fail(f"{actual!r} does not start with {expected_start!r}" +
                      (f" : {msg!r}" if msg else ""))

    def assertItemsEqual(self, first, second, msg=None):  # noqa: N802
        self.assertCountEqual(first, second, msg)

    def assertProtoEquals(self, expected_message_maybe_ascii, message, msg=None):  # noqa: N802
        """message equals the expected protocol message (or its text format)."""
        expected = expected_message_maybe_ascii
        if isinstance(expected, str):
            expected = text_format.Parse(expected, type(message)())
        if expected != message:
            self.fail(f"{msg or 'Protocol messages differ'}:\nexpected:\n"
                      f"{text_format.MessageToString(expected)}\nactual:\n"
                      f"{text_format.MessageToString(message)}")

    # --- errors --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def assertRaisesWithPredicateMatch(self, exception_type,  # noqa: N802
                                       expected_err_re_or_predicate):
        """The block raises `exception_type`, whose message matches the regular expression (or
        which satisfies the predicate)."""
        if callable(expected_err_re_or_predicate):
            predicate = expected_err_re_or_predicate
        else:
            def predicate(e):
                text = e.message if isinstance(e, _errors.OpError) else str(e)
                return re.search(expected_err_re_or_predicate, text)
        try:
            yield
        except Exception as e:  # noqa: BLE001 - compared below
            if not isinstance(e, exception_type) or not predicate(e):
                raise AssertionError(f"Exception of type {type(e)}: {e}") from e
        else:
            self.fail(exception_type.__name__ + " not raised")

    def assertRaisesOpError(self, expected_err_re_or_predicate):  # noqa: N802
        return self.assertRaisesWithPredicateMatch(_errors.OpError,
                                                   expected_err_re_or_predicate)
