"""tf.raw_ops: every registered op as a keyword-only function made from its schema, in graph and
eager mode, with TensorFlow's argument names and output structure."""

import inspect
import json

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.ops.raw_ops import _keyword
from peers import requires_tensorflow, run_tensorflow


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_every_registered_op_has_a_function_with_its_inputs_as_keywords():
    names = [n for n in _C.op_names() if not n.startswith("_")]  # internal ops are hidden
    assert sorted(dir(tf.raw_ops)) == sorted(names)
    for op_type in names:
        params = inspect.signature(getattr(tf.raw_ops, op_type)).parameters
        inputs = [_keyword(op_type, name) for name, *_ in _C.op_def(op_type)["input_types"]]
        assert list(params)[:len(inputs)] == inputs, op_type
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
        assert "name" in params


def test_graph_calls_infer_type_and_length_attrs_and_group_outputs():
    a = tf.constant([1.0, 2.0])
    concat = tf.raw_ops.ConcatV2(values=[a, [3.0]], axis=0)
    unique = tf.raw_ops.Unique(x=[3, 1, 3])
    halves = tf.raw_ops.Split(axis=0, value=[1.0, 2.0, 3.0, 4.0], num_split=2)
    total = tf.raw_ops.AddV2(x=1.5, y=2, name="total")  # y converts to x's float32
    assert total.name == "total:0" and total.dtype == tf.float32
    assert unique._fields == ("y", "idx")
    assert isinstance(halves, list) and len(halves) == 2
    with tf.Session() as sess:
        c, u, h, t = sess.run([concat, unique, halves, total])
    np.testing.assert_array_equal(c, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(u.y, [3, 1])
    np.testing.assert_array_equal(u.idx, [0, 1, 0])
    np.testing.assert_array_equal(h[1], [3.0, 4.0])
    assert t == 3.5


def test_ops_without_outputs_and_resource_inputs():
    v = tf.Variable(2.0)
    noop = tf.raw_ops.NoOp()
    assert isinstance(noop, tf.Operation) and noop.type == "NoOp"
    update = tf.raw_ops.AssignAddVariableOp(resource=v, value=1.0)
    read = tf.raw_ops.ReadVariableOp(resource=v.handle, dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(update)
        assert sess.run(read) == 3.0


def test_eager_calls_run_the_op_at_once():
    tf.enable_eager_execution()
    try:
        np.testing.assert_array_equal(tf.raw_ops.AddV2(x=[1, 2], y=[3, 4]).numpy(), [4, 6])
        unique = tf.raw_ops.Unique(x=[3, 1, 3])
        np.testing.assert_array_equal(unique.idx.numpy(), [0, 1, 0])
        assert tf.raw_ops.NoOp() is None
        v = tf.Variable(2.0)
        tf.raw_ops.AssignAddVariableOp(resource=v, value=1.0)
        assert v.numpy() == 3.0
    finally:
        tf.disable_eager_execution()
        tf.reset_default_graph()


def test_call_errors_name_the_op_and_the_arguments():
    with pytest.raises(TypeError, match=r"AddV2\(\.\.\.\) takes keyword arguments only"):
        tf.raw_ops.AddV2(1, 2)
    with pytest.raises(TypeError, match=r"AddV2 is missing required arguments \['y'\]"):
        tf.raw_ops.AddV2(x=1)
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['z'\]"):
        tf.raw_ops.AddV2(x=1, y=2, z=3)
    with pytest.raises(TypeError, match="Expected list for 'values' argument to 'ConcatV2'"):
        tf.raw_ops.ConcatV2(values=1.0, axis=0)
    with pytest.raises(AttributeError, match="no op of that type is registered"):
        tf.raw_ops.NoSuchOp
    with pytest.raises(TypeError, match="Expected a bool for attr 'transpose_a'"):
        tf.raw_ops.MatMul(a=[[1.0]], b=[[1.0]], transpose_a=3)
    # The graph is still usable after the errors.
    with tf.Session() as sess:
        assert sess.run(tf.raw_ops.AddV2(x=1, y=2)) == 3


@requires_tensorflow
def test_argument_names_are_tensorflows():
    """For every op both have, Flowstone's raw_ops inputs have TensorFlow's keywords, in its
    order (attrs may differ: either side has a few the other lacks)."""
    ours = {}
    for op_type in dir(tf.raw_ops):
        ours[op_type] = [p for p in inspect.signature(getattr(tf.raw_ops, op_type)).parameters]
    theirs = json.loads(run_tensorflow(f"""
        import inspect, json
        import tensorflow as tf
        names = {sorted(ours)!r}
        out = {{}}
        for n in names:
            fn = getattr(tf.raw_ops, n, None)
            if fn is not None:
                out[n] = list(inspect.signature(fn).parameters)
        print(json.dumps(out))
    """).splitlines()[-1])
    assert len(theirs) > 400
    differ = {}
    for op_type, their_params in theirs.items():
        mine = ours[op_type]
        # Inputs come first in both, in the op's order.
        n_inputs = len(_C.op_def(op_type)["input_types"])
        if mine[:n_inputs] != their_params[:n_inputs]:
            differ[op_type] = (mine, their_params)
    assert not differ
