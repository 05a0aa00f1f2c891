"""A layer norm as frozen graphs write it (tf.nn.moments, then BERT's
`(x - mean) * rsqrt(variance + eps) * gamma + beta`) runs as one _FusedLayerNorm node when the
remapper is on (issue 8's encoder: nine nodes per layer norm become one). The fused plan gives the
unfused plan's bits (rewrite_options.remapping OFF) at any thread count, matches float64 numpy and
real TensorFlow; variants it does not know, and read intermediates, keep the separate nodes."""

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework.ops import apply_op

from peers import requires_tensorflow, run_tensorflow
from test_fusion import OFF, ON
from test_graph_optimizer import bits, traced
from thread_counts import digests

RNG = np.random.default_rng(23)


def layer_norm(x, gamma, beta, eps=1e-12, swap=False):
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    if swap:  # the same function with every commutative operand swapped
        return beta + gamma * (tf.math.rsqrt(eps + variance) * (x - mean))
    return (x - mean) * tf.math.rsqrt(variance + eps) * gamma + beta


def reference(x, gamma, beta, eps=1e-12):
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def run_both(shape, dtype=np.float32, cfg_on=ON, **kwargs):
    n = shape[-1]
    data = (RNG.standard_normal(shape) * 3 + 1).astype(dtype)
    gamma = RNG.standard_normal(n).astype(dtype)
    beta = RNG.standard_normal(n).astype(dtype)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(dtype, [None] + list(shape[1:]))
        y = layer_norm(x, tf.constant(gamma), tf.constant(beta), **kwargs)
    fused, ran = traced(graph, [y], {x: data}, cfg_on)
    plain, ran_plain = traced(graph, [y], {x: data}, OFF)
    return fused, plain, list(ran.values()), list(ran_plain.values()), (data, gamma, beta)


@pytest.mark.parametrize("shape", [(7, 256), (3, 5, 64), (4, 13), (2, 3000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_fuses_bit_identically(shape, dtype):
    fused, plain, types, plain_types, (data, gamma, beta) = run_both(shape, dtype)
    assert bits(fused) == bits(plain)
    assert types.count("_FusedLayerNorm") == 1
    assert not {"Mean", "Rsqrt", "SquaredDifference", "Sub", "Mul"} & set(types)
    assert "_FusedLayerNorm" not in plain_types and "Mean" in plain_types
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fused[0], reference(data, gamma, beta), rtol=tol, atol=tol)


def test_swapped_operands_fuse():
    fused, plain, types, _, _ = run_both((9, 32), swap=True)
    assert bits(fused) == bits(plain)
    assert types.count("_FusedLayerNorm") == 1


def test_read_intermediate_keeps_the_nodes():
    """The variance fetched as well: nothing fuses, the results are the same."""
    graph = tf.Graph()
    data = RNG.standard_normal((6, 16)).astype(np.float32)
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 16])
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        y = (x - mean) * tf.math.rsqrt(variance + 1e-5) * tf.constant(np.ones(16, np.float32))
        y = y + tf.constant(np.zeros(16, np.float32))
    fused, ran = traced(graph, [y, variance], {x: data}, ON)
    plain, _ = traced(graph, [y, variance], {x: data}, OFF)
    assert bits(fused) == bits(plain)
    assert "_FusedLayerNorm" not in ran.values()


def test_other_axis_is_not_fused():
    graph = tf.Graph()
    data = RNG.standard_normal((6, 16)).astype(np.float32)
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 16])
        mean, variance = tf.nn.moments(x, axes=[0], keepdims=True)
        y = (x - mean) * tf.math.rsqrt(variance + 1e-5) * tf.constant(np.ones(16, np.float32))
        y = y + tf.constant(np.zeros(16, np.float32))
    fused, ran = traced(graph, y, {x: data}, ON)
    plain, _ = traced(graph, y, {x: data}, OFF)
    assert bits(fused) == bits(plain)
    assert "_FusedLayerNorm" not in ran.values()


def test_fused_layer_norm_does_not_depend_on_threads():
    per_threads = digests("""
        rng = np.random.default_rng(3)
        x = rng.standard_normal((512, 256)).astype(np.float32)
        g = rng.standard_normal(256).astype(np.float32)
        b = rng.standard_normal(256).astype(np.float32)
        p = tf.placeholder(tf.float32, [None, 256])
        mean, variance = tf.nn.moments(p, axes=[-1], keepdims=True)
        y = (p - mean) * tf.math.rsqrt(variance + 1e-12) * g + b
        meta = tf.RunMetadata()
        with tf.Session(config=config) as sess:
            out = sess.run(y, {p: x}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                           run_metadata=meta)
        labels = [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]
        assert sum(" = _FusedLayerNorm(" in label for label in labels) == 1, labels
        digest([out])
    """)
    assert per_threads[0] == per_threads[1] == per_threads[2]


def test_op_checks_its_inputs():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(RNG.standard_normal((3, 4)).astype(np.float32))
        good = apply_op("_FusedLayerNorm", [x, tf.constant(np.ones(4, np.float32)),
                                            tf.constant(np.zeros(4, np.float32))],
                        {"epsilon": 1e-3})
        bad = apply_op("_FusedLayerNorm", [x, tf.constant(np.ones(5, np.float32)),
                                           tf.constant(np.zeros(4, np.float32))], {})
    with tf.Session(graph=graph, config=OFF) as sess:
        got, x_v = sess.run([good.outputs[0], x])
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"scale must be a vector .*\(4\)"):
            sess.run(bad.outputs[0])
    np.testing.assert_allclose(got, reference(x_v, 1.0, 0.0, 1e-3), rtol=1e-5, atol=1e-6)


@requires_tensorflow
def test_fused_layer_norm_matches_tensorflow(tmp_path):
    data = (RNG.standard_normal((40, 256)) * 2).astype(np.float32)
    gamma = RNG.standard_normal(256).astype(np.float32)
    beta = RNG.standard_normal(256).astype(np.float32)
    for name, v in (("x", data), ("g", gamma), ("b", beta)):
        np.save(tmp_path / f"{name}.npy", v)
    run_tensorflow(f"""
        import numpy as np, tensorflow as tf
        x, g, b = (np.load("{tmp_path}/" + n + ".npy") for n in "xgb")
        mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
        y = (x - mean) * tf.math.rsqrt(variance + 1e-12) * g + b
        np.save("{tmp_path}/y.npy", y.numpy())
    """)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 256])
        y = layer_norm(x, tf.constant(gamma), tf.constant(beta))
    got, ran = traced(graph, y, {x: data}, ON)
    assert list(ran.values()).count("_FusedLayerNorm") == 1
    np.testing.assert_allclose(got, np.load(tmp_path / "y.npy"), rtol=1e-5, atol=1e-5)
