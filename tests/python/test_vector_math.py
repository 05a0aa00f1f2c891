"""The vectorized float32 math of src/ops/math/vector_math.h, through the ops that use it: accuracy
against float64 in units in the last place (the bound documented there and in docs/COMPAT.md),
IEEE edge cases, Softmax/LogSoftmax rows, the gradient ops the gradients now emit, and an
imported TensorFlow training graph that contains them."""

import math

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

ULP_BOUND = 3.0


def run(fn, x):
    with tf.Graph().as_default():
        p = tf.placeholder(x.dtype, x.shape)
        y = fn(p)
        with tf.Session() as sess:
            return sess.run(y, {p: x})


def ulp_error(got, ref):
    """|got - ref| in units of the float32 spacing at ref (denormal spacing below FLT_MIN)."""
    ref = np.atleast_1d(np.asarray(ref, np.float64))
    got = np.atleast_1d(np.asarray(got, np.float64))
    with np.errstate(over="ignore"):
        rounded = ref.astype(np.float32)
        spacing = np.spacing(np.abs(rounded)).astype(np.float64)
    # A result that rounds to inf counts from FLT_MAX, whose spacing is 2^104.
    spacing[np.isinf(rounded)] = 2.0 ** 104
    got = np.where(np.isinf(got) & np.isinf(rounded), ref, got)
    return np.abs(got - ref) / spacing


def sample(low, high, n=200_000, seed=0):
    """Uniform values plus values spread over every exponent in [low, high]."""
    rng = np.random.default_rng(seed)
    uniform = rng.uniform(low, high, n // 2)
    mags = np.exp(rng.uniform(np.log(1e-30), np.log(max(abs(low), abs(high))), n // 2))
    signed = mags * rng.choice([-1.0, 1.0], n // 2)
    values = np.concatenate([uniform, signed[(signed >= low) & (signed <= high)]])
    return values.astype(np.float32)


_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)

# op, reference on float64, input range
FUNCTIONS = {
    "exp": (tf.exp, np.exp, (-110.0, 95.0)),
    "expm1": (tf.math.expm1, np.expm1, (-110.0, 95.0)),
    "log": (tf.math.log, np.log, (0.0, 3e38)),
    "log1p": (tf.math.log1p, np.log1p, (-1.0, 3e38)),
    "sigmoid": (tf.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-120.0, 120.0)),
    "tanh": (tf.tanh, np.tanh, (-20.0, 20.0)),
    "erf": (tf.math.erf, lambda x: _erf(x).astype(np.float64), (-6.0, 6.0)),
    "erfc": (tf.math.erfc, lambda x: _erfc(x).astype(np.float64), (-6.0, 10.2)),
}
# Erfc keeps relative accuracy down to its denormal results, at a looser bound.
BOUNDS = {"erfc": 5.0}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float32_within_the_ulp_bound(name):
    op, ref, (low, high) = FUNCTIONS[name]
    x = sample(low, high)
    # A length that is not a multiple of the vector width, so the scalar tail runs too.
    x = x[: len(x) - len(x) % 8 + 5]
    got = run(op, x)
    err = ulp_error(got, ref(x.astype(np.float64)))
    worst = int(np.argmax(err))
    assert err[worst] <= BOUNDS.get(name, ULP_BOUND), (name, x[worst], got[worst], err[worst])


def test_float32_denormal_inputs_and_results():
    tiny = np.array([1e-45, -1e-45, 1e-40, -3e-39], np.float32)
    np.testing.assert_array_equal(run(tf.exp, tiny), np.ones(4, np.float32))
    np.testing.assert_array_equal(run(tf.math.expm1, tiny), tiny)
    np.testing.assert_array_equal(run(tf.math.log1p, tiny), tiny)
    np.testing.assert_array_equal(run(tf.tanh, tiny), tiny)
    # Results below FLT_MIN are denormals, not flushed to zero.
    x = np.array([-88.0, -95.0, -103.0], np.float32)
    got = run(tf.exp, x)
    assert np.all(got > 0) and np.all(got < np.finfo(np.float32).tiny)
    assert np.all(ulp_error(got, np.exp(x.astype(np.float64))) <= 1)
    assert np.all(run(tf.sigmoid, x) > 0)
    # log of a denormal
    assert ulp_error(run(tf.math.log, tiny[2:3]), np.log(np.float64(tiny[2]))) <= ULP_BOUND


@pytest.mark.parametrize("name, expected", [
    ("exp", [1, 1, np.inf, 0, np.nan, np.inf, 0]),
    ("expm1", [0, -0.0, np.inf, -1, np.nan, np.inf, -1]),
    ("sigmoid", [0.5, 0.5, 1, 0, np.nan, 1, 0]),
    ("tanh", [0, -0.0, 1, -1, np.nan, 1, -1]),
    ("erf", [0, -0.0, 1, -1, np.nan, 1, -1]),
    ("erfc", [1, 1, 0, 2, np.nan, 0, 2]),
])
def test_edge_values(name, expected):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 200.0, -200.0], np.float32)
    got = run(FUNCTIONS[name][0], x)
    np.testing.assert_array_equal(got, np.array(expected, np.float32))
    # -0.0 keeps its sign where the function is odd.
    assert np.signbit(got[1]) == np.signbit(np.float32(expected[1]))


def test_logarithm_edges():
    x = np.array([0.0, -0.0, -1.0, np.inf, np.nan, -np.inf], np.float32)
    np.testing.assert_array_equal(run(tf.math.log, x),
                                  np.array([-np.inf, -np.inf, np.nan, np.inf, np.nan, np.nan],
                                           np.float32))
    x = np.array([-1.0, -2.0, -0.0, np.inf, np.nan], np.float32)
    got = run(tf.math.log1p, x)
    np.testing.assert_array_equal(got, np.array([-np.inf, np.nan, -0.0, np.inf, np.nan],
                                                 np.float32))
    assert np.signbit(got[2])


def test_activations_match_float64():
    x = sample(-30.0, 30.0, n=20_000)
    x64 = x.astype(np.float64)
    # TensorFlow's thresholds: x itself, or exp(x), where float32 cannot tell them from the rest.
    threshold = np.log(np.finfo(np.float32).eps) + 2
    with np.errstate(over="ignore"):
        softplus = np.where(x64 > -threshold, x64,
                            np.where(x64 < threshold, np.exp(x64), np.log1p(np.exp(x64))))
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    for op, ref in [(tf.nn.softplus, softplus),
                    (tf.nn.elu, np.where(x64 < 0, np.expm1(x64), x64)),
                    (tf.nn.selu, scale * np.where(x64 < 0, alpha * np.expm1(x64), x64))]:
        err = ulp_error(run(op, x), ref)
        assert err.max() <= 4, (op, x[np.argmax(err)])


@pytest.mark.parametrize("depth", [1, 7, 8, 300, 1025])
def test_softmax_rows_match_float64(depth):
    rng = np.random.default_rng(depth)
    x = (rng.standard_normal((5, depth)) * 20).astype(np.float32)
    # x - max rounds in float32 (in any float32 softmax); the rest is compared with float64.
    shifted = (x - x.max(axis=1, keepdims=True)).astype(np.float64)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(run(tf.nn.softmax, x), np.exp(log_softmax), rtol=2e-6,
                               atol=1e-37)
    np.testing.assert_allclose(run(tf.nn.log_softmax, x), log_softmax, rtol=2e-6, atol=2e-6)


def test_softmax_edge_rows():
    x = np.array([[1.0, np.nan, 2.0], [0.0, -np.inf, 1.0], [1e30, 1e30, -1e30],
                  [np.inf, 0.0, 1.0]], np.float32)
    got = run(tf.nn.softmax, x)
    assert np.all(np.isnan(got[0]))  # a NaN logit makes its row NaN
    e = np.exp([-1.0, 0.0])
    np.testing.assert_allclose(got[1], [e[0] / e.sum(), 0.0, e[1] / e.sum()], rtol=1e-6)
    np.testing.assert_array_equal(got[2], [0.5, 0.5, 0.0])  # large logits do not overflow
    assert np.all(np.isnan(got[3]))  # inf - inf, as in TensorFlow
    log = run(tf.nn.log_softmax, x[1:3])
    assert log[0, 1] == -np.inf
    np.testing.assert_allclose(log[1], [-np.log(2), -np.log(2), -2e30], rtol=1e-6)


def test_softmax_in_place_on_a_dying_input():
    # The kernel may write its output over its input (a consumer-less intermediate).
    x = np.random.default_rng(3).standard_normal((4, 600)).astype(np.float32)
    for op in (tf.nn.softmax, tf.nn.log_softmax):
        got = run(lambda p: op(p * 1.0), x)
        np.testing.assert_allclose(got, run(op, x), rtol=0, atol=0)


@pytest.mark.parametrize("forward, grad_op", [
    (tf.tanh, "TanhGrad"), (tf.sigmoid, "SigmoidGrad"), (tf.sqrt, "SqrtGrad"),
    (tf.math.rsqrt, "RsqrtGrad"), (tf.math.reciprocal, "ReciprocalGrad"),
    (tf.nn.softplus, "SoftplusGrad"), (tf.nn.softsign, "SoftsignGrad"),
])
def test_gradients_are_one_gradient_op(forward, grad_op):
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float64, [4])
        y = forward(x)
        (dx,) = tf.gradients(y, x)
        assert dx.op.type == grad_op
        types = [op.type for op in g.get_operations()]
        assert "Square" not in types and "RealDiv" not in types
        value = np.array([0.3, 0.9, 1.7, 2.5])
        with tf.Session() as sess:
            got = sess.run(dx, {x: value})
    step = 1e-6
    numeric = (run(forward, value + step) - run(forward, value - step)) / (2 * step)
    np.testing.assert_allclose(got, numeric, rtol=1e-6)


def test_second_derivative_of_tanh():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [3])
        y = tf.tanh(x)
        (dx,) = tf.gradients(y, x)
        (ddx,) = tf.gradients(dx, x)
        value = np.array([-0.5, 0.1, 1.2])
        with tf.Session() as sess:
            got = sess.run(ddx, {x: value})
    t = np.tanh(value)
    np.testing.assert_allclose(got, -2 * t * (1 - t * t), rtol=1e-12)


def test_gradient_op_shape_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="same shape"):
            tf.raw_ops.TanhGrad(y=tf.zeros([2, 3]), dy=tf.zeros([3, 2]))
        a = tf.placeholder(tf.float32, None)
        b = tf.placeholder(tf.float32, None)
        z = tf.raw_ops.SigmoidGrad(y=a, dy=b)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"SigmoidGrad: both inputs must have the same shape.*\[2\].*\[3\]"):
                sess.run(z, {a: np.zeros(2), b: np.zeros(3)})
            # The session stays usable.
            np.testing.assert_array_equal(sess.run(z, {a: np.ones(2), b: np.ones(2)}), [0, 0])


@requires_tensorflow
def test_imported_tensorflow_training_graph_with_gradient_ops(tmp_path):
    run_tensorflow("""
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        w = tf1.constant(np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4), name="w")
        h = tf1.matmul(x, w)
        # TensorFlow 2's softplus gradient is a Sigmoid; SoftplusGrad (and its own gradient)
        # appear as a TensorFlow 1 graph would have them.
        softplus_grad = tf1.raw_ops.SoftplusGrad(gradients=h, features=h)
        parts = [tf1.tanh(h), tf1.sigmoid(h), tf1.sqrt(tf1.abs(h) + 1), tf1.math.rsqrt(h * h + 1),
                 tf1.math.reciprocal(h + 3), softplus_grad, tf1.nn.softsign(h)]
        loss = tf1.add_n([tf1.reduce_sum(p * p) for p in parts], name="loss")
        (grad,) = tf1.gradients(loss, [x])
        grad = tf1.identity(grad, name="grad")
        types = {op.type for op in tf1.get_default_graph().get_operations()}
        expected_ops = {"TanhGrad", "SigmoidGrad", "SqrtGrad", "RsqrtGrad", "ReciprocalGrad",
                        "SoftplusGrad", "SoftsignGrad"}
        assert expected_ops <= types, expected_ops - types
        feed = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
        with tf1.Session() as sess:
            np.save("expected.npy", sess.run(grad, {x: feed}))
        np.save("feed.npy", feed)
        tf1.train.write_graph(tf1.get_default_graph(), ".", "graph.pb", as_text=False)
    """, tmp_path)
    graph_def = tf.GraphDef.FromString((tmp_path / "graph.pb").read_bytes())
    assert {"TanhGrad", "SoftplusGrad"} <= {n.op for n in graph_def.node}
    with tf.Graph().as_default():
        x, grad = tf.import_graph_def(graph_def, return_elements=["x:0", "grad:0"], name="")
        with tf.Session() as sess:
            got = sess.run(grad, {x: np.load(tmp_path / "feed.npy")})
    np.testing.assert_allclose(got, np.load(tmp_path / "expected.npy"), rtol=1e-5, atol=1e-6)
