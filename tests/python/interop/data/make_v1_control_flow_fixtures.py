"""Writes the TF1 control-flow fixtures of test_import_v1_control_flow.py. Run it with real
TensorFlow (the peer venv, see tests/python/peers.py) from this directory."""

import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.disable_control_flow_v2()

graph = tf1.Graph()
with graph.as_default():
    n = tf1.placeholder(tf.int32, [], name="n")
    x = tf1.placeholder(tf.float32, [2], name="x")
    _, acc = tf1.while_loop(
        lambda i, a: i < n,
        lambda i, a: (i + 1, tf1.cond(i > 1, lambda: a * 2.0, lambda: a + x)),
        [0, x], name="w")
    tf1.identity(acc, name="y")
tf1.train.write_graph(graph.as_graph_def(), ".", "v1_loop_with_cond.pbtxt", as_text=True)

graph = tf1.Graph()
with graph.as_default():
    x = tf1.placeholder(tf.float32, [3], name="x")

    def outer(i, a):
        _, b = tf1.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b + x), [0, a],
                              name="inner")
        return i + 1, b

    _, y = tf1.while_loop(lambda i, a: i < 3, outer, [0, tf1.zeros([3])], name="outer")
    tf1.identity(y, name="y")
tf1.train.write_graph(graph.as_graph_def(), ".", "v1_nested_loops.pbtxt", as_text=True)
