"""Small TF2 surfaces added together, compared with real TensorFlow run eagerly in the peer
Python: variable slice assignment, tf.nn.gelu (exact and tanh forms), gather's default axis with
batch_dims, and tf.random.set_seed replaying the same sequence (the values themselves are
Flowstone's, docs/COMPAT.md, so only the replay and the differences between calls are compared)."""

import math

import numpy as np

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow

PROGRAM = """
v = tf.Variable(np.arange(12.0).reshape(3, 4))
v[1, ::-1].assign([1.0, 2.0, 3.0, 4.0])
v[::2, 1:3].assign([[-1.0, -2.0], [-3.0, -4.0]])
x = tf.constant([-3.0, -1.0, 0.0, 0.5, 2.0], tf.float64)
params = tf.constant(np.arange(24).reshape(2, 4, 3))
tf.random.set_seed(7)
first = [tf.random.uniform([3]).numpy(), tf.random.normal([2]).numpy()]
tf.random.set_seed(7)
again = [tf.random.uniform([3]).numpy(), tf.random.normal([2]).numpy()]
replays = all(np.array_equal(a, b) for a, b in zip(first, again))
differs = not np.array_equal(tf.random.uniform([3]).numpy(), first[0])
results = [v.numpy().tolist(), tf.nn.gelu(x).numpy().tolist(),
           tf.nn.gelu(x, approximate=True).numpy().tolist(),
           tf.gather(params, [[3, 0], [1, 1]], batch_dims=1).numpy().tolist(), replays, differs]
"""


def _ours():
    scope = {"tf": tf, "np": np}  # executing eagerly (this directory's conftest)
    exec(PROGRAM, scope)
    return scope["results"]


@requires_tensorflow
def test_small_tf2_surfaces_match_tensorflow():
    theirs = eval(run_tensorflow("import numpy as np\nimport tensorflow as tf\n" + PROGRAM
                                 + "\nprint(repr(results))"))
    ours = _ours()
    assert ours[0] == theirs[0]
    # At x = -3 TensorFlow's float64 result (its erfc form) is 1.7e-7 off the exact
    # -1.5 * erfc(3 / sqrt(2)), which Flowstone's matches to the last digits.
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-12)
    assert abs(ours[1][0] - (-1.5 * math.erfc(3 / math.sqrt(2)))) < 1e-15
    # The tanh form: TensorFlow's float64 result is up to 7e-8 off the textbook value, which
    # Flowstone's matches.
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    textbook = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(ours[2], textbook, rtol=1e-14, atol=1e-17)
    assert ours[3] == theirs[3]
    assert ours[4:] == theirs[4:] == [True, True]
