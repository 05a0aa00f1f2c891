"""BatchMatMulV2 runs the batches of products up to 2^23 multiply-adds in parallel, each on one
thread (an attention head's 128 x 128 x 64 product is one Gemm tile, so its batches used to run
one after another on one core). Results match float64 numpy and do not depend on the thread
count (each count in a process of its own), for the encoder's shapes (with adj_y, as scores =
q k^T) and for larger products, which still run one after another, each split into tiles."""

import numpy as np
import pytest

import flowstone as tf
from thread_counts import digests

RNG = np.random.default_rng(31)


def run(x, y, adj_y):
    graph = tf.Graph()
    with graph.as_default():
        out = tf.matmul(tf.constant(x), tf.constant(y), transpose_b=adj_y)
    with tf.Session(graph=graph) as sess:
        return sess.run(out)


@pytest.mark.parametrize("x_shape,y_shape,adj_y", [
    ((2, 4, 128, 64), (2, 4, 128, 64), True),   # attention scores at batch 2
    ((2, 4, 128, 128), (2, 4, 128, 64), False),  # attention context
    ((3, 300, 200), (3, 200, 160), False),       # 9.6M multiply-adds: one product at a time
])
def test_batches_match_numpy_at_any_thread_count(x_shape, y_shape, adj_y):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    y = RNG.standard_normal(y_shape).astype(np.float32)
    got = run(x, y, adj_y)
    want = np.matmul(x.astype(np.float64), np.swapaxes(y, -1, -2) if adj_y else y)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    per_threads = digests(f"""
        rng = np.random.default_rng(5)
        x = rng.standard_normal({x_shape!r}).astype(np.float32)
        y = rng.standard_normal({y_shape!r}).astype(np.float32)
        with tf.Session(config=config) as sess:
            digest([sess.run(tf.matmul(x, y, transpose_b={adj_y!r}))])
    """)
    assert per_threads[0] == per_threads[1] == per_threads[2]
