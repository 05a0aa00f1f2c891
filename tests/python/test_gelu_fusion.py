"""The exact GELU after a dense layer fuses into the product (issue 8's encoder): MatMul + BiasAdd,
then BERT's `x * 0.5 * (1.0 + erf(x / sqrt(2)))` in its usual spellings, runs as one
`_FusedMatMul` with fused_ops ["BiasAdd", "GeluExact"] (TensorFlow's name for it). The fused plan
gives the unfused plan's bits (rewrite_options.remapping OFF) at any thread count, matches float64
numpy and real TensorFlow, and a graph that reads an intermediate keeps the separate nodes."""

import math

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op

from peers import requires_tensorflow, run_tensorflow
from test_fusion import OFF, ON
from test_graph_optimizer import bits, traced
from thread_counts import digests

RNG = np.random.default_rng(11)
ERF = np.vectorize(math.erf)
SQRT2 = float(np.sqrt(2.0))


def gelu_reference(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + ERF(x / SQRT2))


# Each builds GELU from y as a graph writes it; all are the same function.
FORMS = {
    "bert_div": lambda y: y * 0.5 * (1.0 + tf.math.erf(y / SQRT2)),
    "mul": lambda y: y * 0.5 * (1.0 + tf.math.erf(y * (1.0 / SQRT2))),
    "swapped": lambda y: (tf.math.erf((1.0 / SQRT2) * y) + 1.0) * (0.5 * y),
}


def dense_gelu(x, units, form, dtype=np.float32, bias="bias_add"):
    w = tf.constant((RNG.standard_normal((int(x.shape[-1]), units)) * 0.3).astype(dtype))
    b = tf.constant(RNG.standard_normal(units).astype(dtype))
    h = tf.matmul(x, w)
    h = tf.nn.bias_add(h, b) if bias == "bias_add" else h + b
    return FORMS[form](h), (w, b)


def run_both(build, feed_value, cfg_on=ON):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(feed_value.dtype, [None, feed_value.shape[1]])
        fetches = build(x)
    fused, ran = traced(graph, fetches, {x: feed_value}, cfg_on)
    plain, ran_plain = traced(graph, fetches, {x: feed_value}, OFF)
    return fused, plain, list(ran.values()), list(ran_plain.values())


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_fuses_bit_identically(form, dtype):
    data = RNG.standard_normal((37, 24)).astype(dtype) * 2
    fused, plain, types, plain_types = run_both(lambda x: dense_gelu(x, 40, form, dtype)[0], data)
    assert bits(fused) == bits(plain)
    assert types.count("_FusedMatMul") == 1
    assert "Erf" not in types and "Mul" not in types and "AddV2" not in types
    assert "Erf" in plain_types and "_FusedMatMul" not in plain_types
    assert fused.dtype == dtype


def test_gelu_matches_float64_numpy():
    data = RNG.standard_normal((64, 32)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 32])
        y, (w, b) = dense_gelu(x, 48, "bert_div")
    with tf.Session(graph=graph, config=ON) as sess:
        got, w_v, b_v = sess.run([y, w, b], {x: data})
    want = gelu_reference(data.astype(np.float64) @ w_v.astype(np.float64) + b_v)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_gelu_after_an_add_of_the_bias_fuses():
    data = RNG.standard_normal((5, 16)).astype(np.float32)
    fused, plain, types, _ = run_both(lambda x: dense_gelu(x, 8, "mul", bias="add")[0], data)
    assert bits(fused) == bits(plain)
    assert types.count("_FusedMatMul") == 1 and "Erf" not in types


def test_gelu_with_a_read_intermediate_is_not_fused():
    """The bias's output fetched beside the GELU: the GELU's nodes run as written (the product
    and the bias may still fuse), with the same results."""
    data = RNG.standard_normal((6, 16)).astype(np.float32)

    def build(x):
        w = tf.constant(RNG.standard_normal((16, 8)).astype(np.float32))
        h = tf.nn.bias_add(tf.matmul(x, w), tf.constant(np.ones(8, np.float32)))
        return [FORMS["bert_div"](h), h]

    fused, plain, types, _ = run_both(build, data)
    assert bits(fused) == bits(plain)
    assert "Erf" in types


def test_other_constants_are_not_gelu():
    """1 + erf replaced by 2 + erf is not a GELU: nothing but the product and bias fuses."""
    data = RNG.standard_normal((6, 16)).astype(np.float32)

    def build(x):
        w = tf.constant(RNG.standard_normal((16, 8)).astype(np.float32))
        h = tf.nn.bias_add(tf.matmul(x, w), tf.constant(np.ones(8, np.float32)))
        return h * 0.5 * (2.0 + tf.math.erf(h / SQRT2))

    fused, plain, types, _ = run_both(build, data)
    assert bits(fused) == bits(plain)
    assert "Erf" in types


def test_fused_gelu_does_not_depend_on_threads():
    per_threads = digests("""
        rng = np.random.default_rng(3)
        x = rng.standard_normal((300, 64)).astype(np.float32)
        w = rng.standard_normal((64, 512)).astype(np.float32) * 0.3
        b = rng.standard_normal(512).astype(np.float32)
        h = tf.nn.bias_add(tf.matmul(x, w), b)
        y = h * 0.5 * (1.0 + tf.math.erf(h / float(np.sqrt(2.0))))
        meta = tf.RunMetadata()
        with tf.Session(config=config) as sess:
            out = sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                           run_metadata=meta)
        labels = [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]
        assert sum(" = _FusedMatMul(" in label for label in labels) == 1, labels
        digest([out])
    """)
    assert per_threads[0] == per_threads[1] == per_threads[2]


def test_gelu_exact_op_as_tensorflow_writes_it():
    """_FusedMatMul with fused_ops [BiasAdd, GeluExact], as TensorFlow's remapper writes it into
    graphs it exports: 0.5 * x * (1 + erf(x / sqrt(2))); without a bias it is refused."""
    a, w, b = RNG.standard_normal((7, 12)), RNG.standard_normal((12, 5)), RNG.standard_normal(5)
    a, w, b = (v.astype(np.float32) for v in (a, w, b))
    graph = tf.Graph()
    with graph.as_default():
        mm = apply_op("_FusedMatMul", [tf.constant(a), tf.constant(w), [tf.constant(b)]],
                      {"fused_ops": ["BiasAdd", "GeluExact"], "num_args": 1})
        bad = apply_op("_FusedMatMul", [tf.constant(a), tf.constant(w), []],
                       {"fused_ops": ["GeluExact"], "num_args": 0})
    with tf.Session(graph=graph, config=OFF) as sess:
        got = sess.run(mm.outputs[0])
        with pytest.raises(tf.errors.UnimplementedError, match=r"BiasAdd, GeluExact"):
            sess.run(bad.outputs[0])
    want = gelu_reference(a.astype(np.float64) @ w.astype(np.float64) + b)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@requires_tensorflow
def test_fused_gelu_matches_tensorflow(tmp_path):
    a = RNG.standard_normal((33, 20)).astype(np.float32)
    w = (RNG.standard_normal((20, 64)) * 0.5).astype(np.float32)
    b = RNG.standard_normal(64).astype(np.float32)
    for name, v in (("a", a), ("w", w), ("b", b)):
        np.save(tmp_path / f"{name}.npy", v)
    run_tensorflow(f"""
        import numpy as np, tensorflow as tf
        a, w, b = (np.load("{tmp_path}/" + n + ".npy") for n in "awb")
        h = tf.nn.bias_add(tf.matmul(a, w), b)
        y = h * 0.5 * (1.0 + tf.math.erf(h / {SQRT2!r}))
        np.save("{tmp_path}/y.npy", y.numpy())
    """)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 20])
        h = tf.nn.bias_add(tf.matmul(x, tf.constant(w)), tf.constant(b))
        y = FORMS["bert_div"](h)
    got, ran = traced(graph, y, {x: a}, ON)
    assert list(ran.values()).count("_FusedMatMul") == 1
    np.testing.assert_allclose(got, np.load(tmp_path / "y.npy"), rtol=1e-5, atol=1e-6)
