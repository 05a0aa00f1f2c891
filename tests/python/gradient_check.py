"""A float64 finite-difference check of tf.gradients, shared by the convolution and pooling
tests (2-D and 3-D), the RNN tests and others."""

import numpy as np

import flowstone as tf

_RNG = np.random.default_rng(42)


def check_gradients(build, inputs, wrt, eps=1e-6, rtol=1e-6, atol=1e-8):
    """Checks tf.gradients of sum(w * build(*inputs)) with respect to inputs[i] (i in `wrt`)
    against central finite differences, in float64."""
    graph = tf.Graph()
    with graph.as_default():
        phs = [tf.placeholder(tf.float64, x.shape) for x in inputs]
        out = build(*phs)
        weights = _RNG.uniform(0.5, 1.5, size=out.shape.as_list())
        grads = tf.gradients(out, [phs[i] for i in wrt], grad_ys=tf.constant(weights))
        init = tf.global_variables_initializer()  # for builds that make variables (RNN cells)
    feed = {p: np.array(x, dtype=np.float64) for p, x in zip(phs, inputs)}
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        symbolic = sess.run(grads, feed)
        for k, i in enumerate(wrt):
            x = feed[phs[i]]
            numeric = np.zeros_like(x)
            for idx in np.ndindex(x.shape):
                orig = x[idx]
                x[idx] = orig + eps
                up = np.sum(weights * sess.run(out, feed))
                x[idx] = orig - eps
                down = np.sum(weights * sess.run(out, feed))
                x[idx] = orig
                numeric[idx] = (up - down) / (2 * eps)
            np.testing.assert_allclose(symbolic[k], numeric, rtol=rtol, atol=atol,
                                       err_msg=f"gradient of input {i}")
