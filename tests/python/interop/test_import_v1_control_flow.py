"""TF1 control flow (Switch, Merge, Enter, Exit, NextIteration, LoopCond) in imported GraphDefs:
the importer rewrites each loop into a While and each cond into an If over new library functions,
and the imported graph computes what TensorFlow computes. Graphs come from real TensorFlow with
control flow v1 (tf.compat.v1.disable_control_flow_v2()), and from two checked-in fixtures that
TensorFlow wrote, so the core path runs without TensorFlow."""

import json
import os

import numpy as np
import pytest
from google.protobuf import text_format

import flowstone as tf
from tf_oracle import requires_tensorflow, run_tensorflow

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# Builds the graph in TF with control flow v1, runs it on each feed case, and writes graph.pb and
# expected.json (the fetched values, per case).
TF_SCRIPT = """
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.nn.rnn_cell needs Keras 2
import json
import numpy as np
import tensorflow as tf
tf1 = tf.compat.v1
tf1.disable_eager_execution()
tf1.disable_control_flow_v2()
graph = tf1.Graph()
with graph.as_default():
{build}
    graph_def = graph.as_graph_def()
    with tf1.Session() as sess:
{session}
        expected = []
        for case in json.loads({feed_cases!r}):
            feeds = {{k: np.asarray(v, graph.get_tensor_by_name(k).dtype.as_numpy_dtype)
                     for k, v in case.items()}}
            expected.append([np.asarray(v).tolist() for v in sess.run({fetches!r}, feeds)])
open("graph.pb", "wb").write(graph_def.SerializeToString())
json.dump(expected, open("expected.json", "w"))
print(sorted({{n.op for n in graph_def.node}}))
"""


def _indent(code, spaces):
    lines = code.strip("\n").splitlines()
    margin = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(" " * spaces + line[margin:] for line in lines)


def tf_graph(tmp_path, build, fetches, feed_cases, session="pass", freeze=False):
    """Runs `build` under TensorFlow (control flow v1); returns (GraphDef bytes, expected values
    per feed case, the graph's op types)."""
    if freeze:
        session = session + "\ngraph_def = tf1.graph_util.convert_variables_to_constants(" \
                            "sess, graph_def, [f.split(':')[0] for f in " + repr(fetches) + "])"
    script = TF_SCRIPT.format(build=_indent(build, 4), session=_indent(session, 8),
                              feed_cases=json.dumps(feed_cases), fetches=fetches)
    ops = run_tensorflow(script, tmp_path)
    graph_bytes = (tmp_path / "graph.pb").read_bytes()
    expected = json.loads((tmp_path / "expected.json").read_text())
    return graph_bytes, expected, ops


def run_in_flowstone(graph_bytes, fetches, feeds):
    graph_def = tf.GraphDef.FromString(graph_bytes)
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=graph) as sess:
            return sess.run(fetches, {
                k: np.asarray(v, graph.get_tensor_by_name(k).dtype.as_numpy_dtype)
                for k, v in feeds.items()})


def assert_matches_tf(tmp_path, build, fetches, feed_cases, **kwargs):
    """Compares Flowstone's import of TF's graph with TF on every feed case (within 1e-6);
    returns the GraphDef's bytes."""
    graph_bytes, expected, ops = tf_graph(tmp_path, build, fetches, feed_cases, **kwargs)
    assert "Merge" in ops, ops  # really control flow v1
    for feeds, want in zip(feed_cases, expected):
        got = run_in_flowstone(graph_bytes, fetches, feeds)
        for w, g in zip(want, got):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)
    return graph_bytes


@requires_tensorflow
def test_while_loop_counter_and_fed_trip_count(tmp_path):
    build = """
        n = tf1.placeholder(tf.int32, [], name="n")
        x = tf1.placeholder(tf.float32, [2], name="x")
        i, acc = tf1.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 1.5 + x), [0, x])
        tf1.identity(i, name="count")
        tf1.identity(acc, name="acc")
    """
    cases = [{"n:0": 0, "x:0": [1.0, -2.0]}, {"n:0": 5, "x:0": [0.5, 3.0]}]
    graph_bytes = assert_matches_tf(tmp_path, build, ["count:0", "acc:0"], cases)
    # The loop became one While whose functions are in the library.
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(tf.GraphDef.FromString(graph_bytes), name="")
        exported = graph.as_graph_def()
    assert "While" in {n.op for n in exported.node}
    assert not {"Enter", "Merge", "Switch", "Exit"} & {n.op for n in exported.node}
    assert len(exported.library.function) == 2


@requires_tensorflow
def test_nested_loops_and_maximum_iterations(tmp_path):
    build = """
        x = tf1.placeholder(tf.float32, [3], name="x")
        def outer(i, a):
            _, b = tf1.while_loop(lambda j, b: j < i, lambda j, b: (j + 1, b + x * 2.0), [0, a])
            return [i + 1, b]
        _, y = tf1.while_loop(lambda i, a: i < 4, outer, [0, tf1.zeros([3])],
                              maximum_iterations=3)
        tf1.identity(y, name="y")
    """
    assert_matches_tf(tmp_path, build, ["y:0"], [{"x:0": [1.0, 2.0, -3.0]}])


@requires_tensorflow
def test_cond_nested_conds_and_a_dead_branch(tmp_path):
    build = """
        x = tf1.placeholder(tf.float32, [2], name="x")
        s = tf1.reduce_sum(x)
        y = tf1.cond(s > 0,
                     lambda: tf1.cond(s > 10, lambda: x * 3.0, lambda: tf1.square(x)),
                     lambda: x - 1.0)
        tf1.identity(y, name="y")
        # A branch that returns an outside tensor unchanged (Switch straight into Merge).
        z = tf1.cond(s < 0, lambda: x, lambda: tf1.exp(x))
        tf1.identity(z, name="z")
    """
    cases = [{"x:0": [20.0, 1.0]}, {"x:0": [1.0, 2.0]}, {"x:0": [-1.0, -4.0]}]
    assert_matches_tf(tmp_path, build, ["y:0", "z:0"], cases)


@requires_tensorflow
def test_cond_inside_loop_and_loop_inside_cond(tmp_path):
    build = """
        x = tf1.placeholder(tf.float32, [2], name="x")
        n = tf1.placeholder(tf.int32, [], name="n")
        def body(i, a):
            return i + 1, tf1.cond(tf1.equal(i % 2, 0), lambda: a * 2.0, lambda: a + x)
        _, y = tf1.while_loop(lambda i, a: i < n, body, [0, x])
        tf1.identity(y, name="y")
        z = tf1.cond(n > 2,
                     lambda: tf1.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a - x),
                                            [0, x])[1],
                     lambda: x)
        tf1.identity(z, name="z")
    """
    cases = [{"x:0": [1.0, -0.5], "n:0": 5}, {"x:0": [2.0, 3.0], "n:0": 1}]
    assert_matches_tf(tmp_path, build, ["y:0", "z:0"], cases)


@requires_tensorflow
def test_loop_over_tensor_arrays(tmp_path):
    # TF1's TensorArrayV3 ops: unstack (scatter) before the loop, read and write inside it,
    # stack (gather) and size after it.
    build = """
        x = tf1.placeholder(tf.float32, [4, 2], name="x")
        ta_in = tf1.TensorArray(tf.float32, size=4).unstack(x)
        ta_out = tf1.TensorArray(tf.float32, size=4)
        def body(i, acc, ta):
            acc = acc + ta_in.read(i)
            return i + 1, acc, ta.write(i, acc * 2.0)
        _, acc, ta_out = tf1.while_loop(lambda i, a, t: i < 4, body,
                                        [0, tf1.zeros([2]), ta_out])
        tf1.identity(ta_out.stack(), name="stacked")
        tf1.identity(ta_out.size(), name="size")
        tf1.identity(acc, name="acc")
    """
    x = (np.arange(8).reshape(4, 2) / 4.0 - 1.0).tolist()
    graph_bytes = assert_matches_tf(tmp_path, build, ["stacked:0", "size:0", "acc:0"],
                                    [{"x:0": x}])
    assert b"TensorArrayV3" in graph_bytes


@requires_tensorflow
def test_frozen_dynamic_rnn_of_a_basic_lstm_cell(tmp_path):
    build = """
        tf1.set_random_seed(1)
        x = tf1.placeholder(tf.float32, [2, 5, 3], name="x")
        cell = tf1.nn.rnn_cell.BasicLSTMCell(4)
        out, state = tf1.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        tf1.identity(out, name="out")
        tf1.identity(state.h, name="h")
    """
    x = (np.arange(30).reshape(2, 5, 3) / 10.0 - 1.5).tolist()
    graph_bytes = assert_matches_tf(tmp_path, build, ["out:0", "h:0"], [{"x:0": x}],
                                    session="sess.run(tf1.global_variables_initializer())",
                                    freeze=True)
    ops = {n.op for n in tf.GraphDef.FromString(graph_bytes).node}
    assert {"Enter", "TensorArrayV3", "MatMul"} <= ops and "VarHandleOp" not in ops


@requires_tensorflow
@pytest.mark.parametrize("step", [
    "tf1.sin(a) * x + a * a",
    # A cond in the loop: its pushes and pops happen inside branches (through Switches), and the
    # backward cond uses the loop's invariants without a Switch.
    "tf1.cond(a[0] > 0, lambda: tf1.sin(a) * x, lambda: a * a + x)",
])
def test_tf1_gradients_through_a_while_loop(tmp_path, step):
    # TF1's tf.gradients writes the loop's gradient as a second loop, fed by stacks that the
    # forward loop pushes to (StackV2 / StackPushV2 / StackPopV2): a training graph.
    build = """
        x = tf1.placeholder(tf.float32, [2], name="x")
        n = tf1.placeholder(tf.int32, [], name="n")
        _, y = tf1.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, STEP), [0, x])
        loss = tf1.reduce_sum(y * y, name="loss")
        tf1.identity(tf1.gradients(loss, x)[0], name="dx")
    """.replace("STEP", step)
    cases = [{"x:0": [0.5, -1.2], "n:0": 4}, {"x:0": [-0.3, 0.8], "n:0": 3},
             {"x:0": [0.1, 0.2], "n:0": 0}]
    graph_bytes = assert_matches_tf(tmp_path, build, ["loss:0", "dx:0"], cases)
    assert b"StackPushV2" in graph_bytes


@requires_tensorflow
@pytest.mark.parametrize("inner_step", [
    "tf1.sin(b) * x",
    # A cond in the inner loop: its stacks enter two loops, then pass a Switch.
    "tf1.cond(b[0] > 0, lambda: tf1.sin(b) * x, lambda: b * b + x)",
])
def test_tf1_gradients_through_nested_while_loops(tmp_path, inner_step):
    # Nested loops' gradient stacks enter two frames (the outer loop, then the inner one) in
    # both the forward and the backward loops; the inner trip count depends on the outer
    # counter, so each outer iteration pushes a different number of values.
    build = """
        x = tf1.placeholder(tf.float32, [2], name="x")
        n = tf1.placeholder(tf.int32, [], name="n")
        def outer(i, a):
            _, b = tf1.while_loop(lambda j, b: j < i + 1,
                                  lambda j, b: (j + 1, INNER_STEP), [0, a])
            return [i + 1, b * a]
        _, y = tf1.while_loop(lambda i, a: i < n, outer, [0, x])
        loss = tf1.reduce_sum(y * y, name="loss")
        tf1.identity(tf1.gradients(loss, x)[0], name="dx")
    """.replace("INNER_STEP", inner_step)
    cases = [{"x:0": [0.5, -1.2], "n:0": 3}, {"x:0": [-0.3, 0.8], "n:0": 2},
             {"x:0": [0.1, 0.2], "n:0": 0}]
    graph_bytes = assert_matches_tf(tmp_path, build, ["loss:0", "dx:0"], cases)
    assert b"StackPushV2" in graph_bytes


@requires_tensorflow
def test_tf1_gradients_through_three_nested_while_loops(tmp_path):
    # The innermost loop's stacks enter through a chain of three Enters.
    build = """
        x = tf1.placeholder(tf.float32, [2], name="x")
        def middle(j, b):
            _, c = tf1.while_loop(lambda k, c: k < j + 1, lambda k, c: (k + 1, tf1.sin(c) * x),
                                  [0, b])
            return [j + 1, c + b]
        def outer(i, a):
            _, b = tf1.while_loop(lambda j, b: j < 2, middle, [0, a])
            return [i + 1, b * a]
        _, y = tf1.while_loop(lambda i, a: i < 2, outer, [0, x])
        loss = tf1.reduce_sum(y * y, name="loss")
        tf1.identity(tf1.gradients(loss, x)[0], name="dx")
    """
    cases = [{"x:0": [0.5, -1.2]}, {"x:0": [-0.3, 0.8]}]
    graph_bytes = assert_matches_tf(tmp_path, build, ["loss:0", "dx:0"], cases)
    assert b"StackPushV2" in graph_bytes


@requires_tensorflow
def test_flowstone_gradients_through_imported_nested_while_loops(tmp_path):
    # The forward graph alone from TensorFlow; Flowstone's tf.gradients differentiates the
    # imported (functionalized) nested loops, compared with TensorFlow's own gradient.
    build = """
        x = tf1.placeholder(tf.float32, [2], name="x")
        def outer(i, a):
            _, b = tf1.while_loop(lambda j, b: j < i + 1,
                                  lambda j, b: (j + 1, tf1.sin(b) * x + b), [0, a])
            return [i + 1, b * a]
        _, y = tf1.while_loop(lambda i, a: i < 3, outer, [0, x])
        tf1.identity(y, name="y")
        tf1.identity(tf1.gradients(tf1.reduce_sum(y * y), x)[0], name="dx")
    """
    x_value = [0.5, -1.2]
    graph_bytes, expected, _ = tf_graph(tmp_path, build, ["y:0", "dx:0"], [{"x:0": x_value}])
    forward = tf.graph_util.extract_sub_graph(tf.GraphDef.FromString(graph_bytes), ["y"])
    assert "StackV2" not in {n.op for n in forward.node}
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        y, = tf.import_graph_def(forward, input_map={"x:0": x}, return_elements=["y:0"])
        dx, = tf.gradients(tf.reduce_sum(y * y), [x])
        with tf.Session() as sess:
            got_y, got_dx = sess.run([y, dx], {x: x_value})
    np.testing.assert_allclose(got_y, expected[0][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_dx, expected[0][1], rtol=1e-5, atol=1e-6)


@requires_tensorflow
def test_map_fn_scan_case_and_a_gru_with_sequence_lengths(tmp_path):
    # Library code over v1 control flow: map_fn and scan (TensorArrays in loops), tf.case
    # (chained conds), and dynamic_rnn with sequence_length (a cond in the loop's body whose
    # Merges join tuples), frozen.
    build = """
        tf1.set_random_seed(2)
        x = tf1.placeholder(tf.float32, [3, 4, 2], name="x")
        k = tf1.placeholder(tf.int32, [], name="k")
        lengths = tf1.placeholder(tf.int32, [3], name="lengths")
        tf1.identity(tf1.map_fn(lambda row: tf1.reduce_sum(row * row, axis=1), x), name="mapped")
        tf1.identity(tf1.scan(lambda acc, row: acc * 0.5 + row, x[0]), name="scanned")
        tf1.identity(tf1.case([(tf1.equal(k, 0), lambda: x[0]), (tf1.equal(k, 1), lambda: x[1])],
                              default=lambda: x[2] * 2.0), name="picked")
        cell = tf1.nn.rnn_cell.GRUCell(3)
        out, state = tf1.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
        tf1.identity(out, name="out")
        tf1.identity(state, name="state")
    """
    x = (np.arange(24).reshape(3, 4, 2) / 12.0 - 1.0).tolist()
    cases = [{"x:0": x, "k:0": k, "lengths:0": lengths}
             for k, lengths in [(0, [4, 2, 1]), (1, [0, 3, 4]), (2, [1, 1, 1])]]
    assert_matches_tf(tmp_path, build, ["mapped:0", "scanned:0", "picked:0", "out:0", "state:0"],
                      cases, session="sess.run(tf1.global_variables_initializer())",
                      freeze=True)


def test_checked_in_fixture_runs_without_tensorflow():
    # TF 2.21 wrote this with control flow v1: a counted loop (trip count fed) whose body holds a
    # tf.cond: i, acc = while i < n: (i + 1, cond(i > 1, acc * 2, acc + x)).
    with open(os.path.join(DATA, "v1_loop_with_cond.pbtxt")) as f:
        graph_def = text_format.Parse(f.read(), tf.GraphDef())
    assert {"Enter", "Merge", "Switch", "Exit", "LoopCond"} <= {n.op for n in graph_def.node}
    x = np.array([1.0, -3.0], np.float32)
    for n in [0, 1, 4]:
        want = x.astype(np.float64)
        for i in range(n):
            want = want * 2.0 if i > 1 else want + x
        with tf.Graph().as_default():
            tf.import_graph_def(graph_def, name="imported")
            with tf.Session() as sess:
                got = sess.run("imported/y:0", {"imported/n:0": n, "imported/x:0": x})
                # The Exit's name still names the loop's result.
                exit_value = sess.run("imported/w/Exit_1:0", {"imported/n:0": n,
                                                              "imported/x:0": x})
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_array_equal(got, exit_value)


def test_imported_loop_takes_flowstone_gradients_and_imports_twice():
    graph_def = _fixture()
    x = tf.placeholder(tf.float32, [2])
    n = tf.placeholder(tf.int32, [])
    y, = tf.import_graph_def(graph_def, input_map={"x:0": x, "n:0": n}, return_elements=["y:0"])
    grad, = tf.gradients(tf.reduce_sum(y), [x])
    with tf.Session() as sess:
        # n = 4: x+x, then *2 twice... y = 12 x, so dy/dx = 12.
        value, dx = sess.run([y, grad], {x: [1.0, 2.0], n: 4})
    np.testing.assert_allclose(value, [12.0, 24.0])
    np.testing.assert_allclose(dx, [12.0, 12.0])
    # A second import gets functions of its own names; both run.
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="a")
        tf.import_graph_def(graph_def, name="b")
        names = [f.signature.name for f in graph.as_graph_def().library.function]
        assert len(names) == len(set(names)) == 8
        with tf.Session() as sess:
            a, b = sess.run(["a/y:0", "b/y:0"], {"a/x:0": [1.0, 1.0], "a/n:0": 3,
                                                 "b/x:0": [2.0, 2.0], "b/n:0": 3})
    np.testing.assert_allclose(a, [6.0, 6.0])
    np.testing.assert_allclose(b, [12.0, 12.0])


@requires_tensorflow
def test_gradients_of_the_imported_rnn_match_tensorflow(tmp_path):
    # TF's tf.gradients through its own v1 loop vs Flowstone's through the While it became.
    run_tensorflow("""
        import os
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import json
        import numpy as np
        import tensorflow as tf
        tf1 = tf.compat.v1
        tf1.disable_eager_execution()
        tf1.disable_control_flow_v2()
        tf1.set_random_seed(3)
        x = tf1.placeholder(tf.float32, [2, 4, 3], name="x")
        cell = tf1.nn.rnn_cell.BasicLSTMCell(5)
        out, _ = tf1.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        loss = tf1.reduce_sum(tf1.square(out), name="loss")
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            frozen = tf1.graph_util.convert_variables_to_constants(
                sess, tf1.get_default_graph().as_graph_def(), ["loss"])
            grad, = tf1.gradients(loss, [x])
            value = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 4, 3)
            want = sess.run([loss, grad], {x: value})
        open("rnn.pb", "wb").write(frozen.SerializeToString())
        json.dump([np.asarray(v).tolist() for v in want], open("want.json", "w"))
    """, tmp_path)
    want_loss, want_grad = json.loads((tmp_path / "want.json").read_text())
    graph_def = tf.GraphDef.FromString((tmp_path / "rnn.pb").read_bytes())
    x = tf.placeholder(tf.float32, [2, 4, 3])
    loss, = tf.import_graph_def(graph_def, input_map={"x:0": x}, return_elements=["loss:0"])
    grad, = tf.gradients(loss, [x])
    with tf.Session() as sess:
        value = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 4, 3)
        got_loss, got_grad = sess.run([loss, grad], {x: value})
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-6)


def test_checked_in_nested_loop_fixture():
    # y = sum over i < 3 of (i copies of x): 3 * x.
    with open(os.path.join(DATA, "v1_nested_loops.pbtxt")) as f:
        graph_def = text_format.Parse(f.read(), tf.GraphDef())
    x = np.array([1.0, 2.0, -0.5], np.float32)
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), 3 * x, rtol=1e-6)


def _fixture():
    with open(os.path.join(DATA, "v1_loop_with_cond.pbtxt")) as f:
        return text_format.Parse(f.read(), tf.GraphDef())


def _node(graph_def, name):
    return next(n for n in graph_def.node if n.name == name)


def _import(graph_def):
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")


def test_malformed_loops_are_invalid_argument():
    graph_def = _fixture()
    _node(graph_def, "w/LoopCond").op = "Identity"  # a frame without its LoopCond
    with pytest.raises(ValueError, match="w/while_context' has 0 LoopCond"):
        _import(graph_def)

    graph_def = _fixture()
    del _node(graph_def, "w/Merge").input[1]  # a loop Merge without its NextIteration
    with pytest.raises(ValueError, match="Merge 'w/Merge' .* must merge its Enter with a "
                                         "NextIteration"):
        _import(graph_def)

    graph_def = _fixture()
    exit_node = _node(graph_def, "w/Exit_1")
    exit_node.input[0] = "x"  # an Exit outside any loop
    with pytest.raises(ValueError, match="Exit 'w/Exit_1' is not inside a while loop"):
        _import(graph_def)

    graph_def = _fixture()
    _node(graph_def, "w/add").input[1] = "n"  # an outside tensor used inside without an Enter
    with pytest.raises(ValueError, match="has inputs from two frames: ''"):
        _import(graph_def)


# A hand-written TF1 cond: out = pred ? x * x : x (the false branch is the Switch itself).
COND = """
node { name: "pred" op: "Placeholder" attr { key: "dtype" value { type: DT_BOOL } } }
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "cond/Switch" op: "Switch" input: "x" input: "pred"
       attr { key: "T" value { type: DT_FLOAT } } }
node { name: "cond/mul" op: "Mul" input: "cond/Switch:1" input: "cond/Switch:1"
       attr { key: "T" value { type: DT_FLOAT } } }
node { name: "cond/Merge" op: "Merge" input: "cond/Switch" input: "cond/mul"
       attr { key: "T" value { type: DT_FLOAT } } attr { key: "N" value { i: 2 } } }
"""


def _cond_graph(extra=""):
    return text_format.Parse(COND + extra, tf.GraphDef())


def test_hand_written_cond():
    with tf.Graph().as_default():
        tf.import_graph_def(_cond_graph(), name="")
        with tf.Session() as sess:
            for pred, want in [(True, 9.0), (False, 3.0)]:
                assert sess.run("cond/Merge:0", {"pred:0": pred, "x:0": 3.0}) == want


def test_unconvertible_patterns_are_unimplemented():
    # A Merge's value_index output has no counterpart in If.
    graph_def = _cond_graph("""node { name: "which" op: "Identity" input: "cond/Merge:1"
                                      attr { key: "T" value { type: DT_INT32 } } }""")
    with pytest.raises(tf.errors.UnimplementedError,
                       match="Node 'which' uses the value_index output of Merge 'cond/Merge'"):
        _import(graph_def)

    # A branch's tensor used outside the cond without a Merge.
    graph_def = _cond_graph("""node { name: "leak" op: "Neg" input: "cond/mul"
                                      attr { key: "T" value { type: DT_FLOAT } } }""")
    with pytest.raises(tf.errors.UnimplementedError,
                       match="Node 'leak' \\(Neg\\) inside the cond on 'pred:0' computes a value"):
        _import(graph_def)

    # Both Merge inputs from one branch.
    graph_def = _cond_graph()
    _node(graph_def, "cond/Merge").input[0] = "cond/Switch:1"
    with pytest.raises(tf.errors.UnimplementedError, match="joins two tensors of the same branch"):
        _import(graph_def)

    # A loop variable that enters without a Merge.
    graph_def = _fixture()
    _node(graph_def, "w/Merge_1").input[0] = "w/Enter"
    with pytest.raises((tf.errors.UnimplementedError, ValueError), match="Enter 'w/Enter(_1)?'"):
        _import(graph_def)


def test_nodes_inside_loops_cannot_be_mapped_or_returned():
    for kwargs in [lambda: {"return_elements": ["w/add:0"]},
                   lambda: {"input_map": {"w/cond/mul:0": tf.constant([1.0, 2.0])}}]:
        with tf.Graph().as_default():
            kwargs = kwargs()
            with pytest.raises(ValueError, match="node 'w/(add|cond/mul)' is inside a TF1 while "
                                                 "loop or cond.*use the loop's Exit"):
                tf.import_graph_def(_fixture(), **kwargs)
    with tf.Graph().as_default():
        exit_value, = tf.import_graph_def(_fixture(), return_elements=["w/Exit_1:0"])
        assert exit_value.op.type == "Identity"


def test_other_unsupported_ops_are_still_listed():
    graph_def = _fixture()
    _node(graph_def, "w/add").op = "NoSuchOp"
    with pytest.raises(tf.errors.NotFoundError,
                       match="Op type not registered 'NoSuchOp'.*node 'w/add'"):
        _import(graph_def)


def test_garbage_never_hangs():
    # Every node rewired to a random input of the fixture: each import ends in an error or a
    # graph, never a hang or a crash.
    rng = np.random.default_rng(0)
    base = _fixture()
    names = [n.name for n in base.node]
    for _ in range(200):
        graph_def = tf.GraphDef()
        graph_def.CopyFrom(base)
        node = graph_def.node[int(rng.integers(len(names)))]
        if node.input:
            node.input[int(rng.integers(len(node.input)))] = names[int(rng.integers(len(names)))]
        try:
            _import(graph_def)
        except (ValueError, TypeError, tf.errors.OpError):
            pass
