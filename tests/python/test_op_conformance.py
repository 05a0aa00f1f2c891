"""Registry-driven conformance: every registered op has a CPU kernel, a gradient or an explicit
"not differentiable" mark, and a test case; each case matches its numpy reference and each
gradient matches central finite differences in float64 (complex128: of the real and imaginary
parts)."""

import os

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.framework.ops import apply_op

from op_cases import CASES, EXEMPT, GRADIENT_PENDING

OPS = _C.op_names()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _case_ops():
    return {case.op for case in CASES}


@pytest.mark.parametrize("op", OPS)
def test_every_op_has_a_kernel_a_gradient_decision_and_a_test(op):
    op_def = _C.op_def(op)
    assert "CPU" in op_def["kernels"], f"{op} has no CPU kernel"
    decided = op_def["has_gradient"] or op_def["not_differentiable"]
    if op in GRADIENT_PENDING:
        assert not decided, f"{op} now has a gradient decision: remove it from GRADIENT_PENDING"
    else:
        assert decided, f"{op} has neither a gradient nor .NotDifferentiable()"
    assert op in _case_ops() or op in EXEMPT, (
        f"{op} has no conformance case in tests/python/op_cases.py and no EXEMPT entry")
    if op in EXEMPT:
        where = EXEMPT[op].split()[0].rstrip(",")
        assert os.path.exists(os.path.join(ROOT, where)), f"{op}: {where} does not exist"


def _build(case, graph):
    with graph.as_default():
        placeholders = [tf.placeholder(tf.as_dtype(np.asarray(x).dtype), np.shape(x))
                        for x in case.inputs]
        if case.build is not None:
            op = case.build(*placeholders)
        else:
            op = apply_op(case.op, placeholders, case.attrs)
    return placeholders, op


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_case_matches_numpy(case):
    graph = tf.Graph()
    placeholders, op = _build(case, graph)
    with tf.Session(graph=graph) as sess:
        got = sess.run(op.outputs, dict(zip(placeholders, case.inputs)))
    expected = case.ref(*case.inputs)
    if case.outputs == 1:
        expected = (expected,)
    for g, e in zip(got, expected):
        e = np.asarray(e)
        if isinstance(g, bytes):  # a scalar string is fetched as bytes, as in TensorFlow
            g = np.array(g, dtype=object)
        assert g.shape == e.shape, f"{case}: shape {g.shape} != {e.shape}"
        assert g.dtype == e.dtype or e.dtype == object, f"{case}: dtype {g.dtype} != {e.dtype}"
        if g.dtype == object:  # strings: bytes objects, compared exactly
            assert [type(v) for v in g.flat] == [bytes] * g.size, f"{case}: not all bytes"
            np.testing.assert_array_equal(g, e, err_msg=repr(case))
        else:
            np.testing.assert_allclose(g, e, rtol=case.rtol, atol=case.atol, err_msg=repr(case))


GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=repr)
def test_gradient_matches_finite_differences(case):
    graph = tf.Graph()
    placeholders, op = _build(case, graph)
    out = op.outputs[0]
    expected = case.ref(*case.inputs)
    first_output = expected[0] if case.outputs > 1 else expected
    rng = np.random.default_rng(7)
    weights = rng.uniform(0.5, 1.5, size=np.shape(first_output))
    with graph.as_default():
        if out.dtype.is_complex:
            # A real loss of a complex output weighs its real and imaginary parts.
            imag_weights = rng.uniform(-1.5, 1.5, size=np.shape(first_output))
            real_dtype = out.dtype.real_dtype
            loss = (tf.reduce_sum(tf.math.real(out) * tf.constant(weights, dtype=real_dtype)) +
                    tf.reduce_sum(tf.math.imag(out) * tf.constant(imag_weights, dtype=real_dtype)))
        else:
            loss = tf.reduce_sum(out * tf.constant(weights, dtype=out.dtype))
        grads = tf.gradients(loss, [placeholders[i] for i in case.grad])
    feed = dict(zip(placeholders, [np.array(x) for x in case.inputs]))
    with tf.Session(graph=graph) as sess:
        symbolic = sess.run(grads, feed)
        eps = 1e-6
        for k, i in enumerate(case.grad):
            x = feed[placeholders[i]]
            # A complex input's gradient is dL/dRe + i dL/dIm (TensorFlow's convention).
            steps = (eps, 1j * eps) if np.iscomplexobj(x) else (eps,)
            numeric = np.zeros_like(x, dtype=np.complex128 if len(steps) == 2 else np.float64)
            for idx in np.ndindex(x.shape):
                orig = x[idx]
                for step in steps:
                    x[idx] = orig + step
                    up = sess.run(loss, feed)
                    x[idx] = orig - step
                    down = sess.run(loss, feed)
                    x[idx] = orig
                    numeric[idx] += (up - down) / (2 * eps) * (step / eps)
            np.testing.assert_allclose(symbolic[k], numeric, rtol=1e-5, atol=1e-6,
                                       err_msg=f"gradient of {case} w.r.t. input {i}")
