"""tf.variable_scope and tf.get_variable as TF1 has them: reuse modes, unique default names,
re-entering scopes, inherited initializers / regularizers / dtypes, custom getters,
tf.make_template and the regularization-loss collection. The expected names and messages are
TensorFlow's (checked side by side with tf.compat.v1 at the end when it is installed)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON


def _run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def test_the_two_reuse_errors_read_as_in_tensorflow():
    with tf.variable_scope("x"):
        tf.get_variable("w", [1])
    with pytest.raises(ValueError) as info:
        with tf.variable_scope("x"):
            tf.get_variable("w", [1])
    assert str(info.value) == ("Variable x/w already exists, disallowed. Did you mean to set "
                               "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
    with pytest.raises(ValueError) as info:
        with tf.variable_scope("y", reuse=True):
            tf.get_variable("w", [1])
    assert str(info.value) == ("Variable y/w does not exist, or was not created with "
                               "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                               "VarScope?")


def test_reuse_true_auto_reuse_and_reuse_variables_share_one_variable():
    with tf.variable_scope("s") as scope:
        w = tf.get_variable("w", [2])
        scope.reuse_variables()
        assert tf.get_variable_scope().reuse is True
        assert tf.get_variable("w", [2]) is w
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("w") is w
        with tf.variable_scope("inner"):  # reuse is inherited
            assert tf.get_variable_scope().reuse is True
    with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
        first = tf.get_variable("v", [1])
        assert tf.get_variable("v", [1]) is first
    assert [v.name for v in tf.global_variables()] == ["s/w:0", "a/v:0"]
    with pytest.raises(ValueError, match=r"Trying to share variable s/w, but specified shape "
                                         r"\(3,\) and found shape \(2,\)"):
        with tf.variable_scope("s", reuse=True):
            tf.get_variable("w", [3])
    with pytest.raises(ValueError, match="The reuse parameter must be True or False or None"):
        tf.variable_scope("s", reuse="yes")
    with pytest.raises(ValueError, match="reuse=True cannot be used without a name_or_scope"):
        with tf.variable_scope(None, default_name="d", reuse=True):
            pass


def test_default_names_are_unique_and_reset_when_the_parent_is_reentered():
    with tf.variable_scope("outer"):
        with tf.variable_scope(None, default_name="d"):
            a = tf.get_variable("v", [1])
        with tf.variable_scope(None, default_name="d"):
            b = tf.get_variable("v", [1])
    with tf.variable_scope("outer", reuse=True):
        with tf.variable_scope(None, default_name="d"):
            again = tf.get_variable("v", [1])
    assert (a.name, b.name) == ("outer/d/v:0", "outer/d_1/v:0")
    assert again is a


def test_scope_names_and_name_scopes_follow_tensorflow():
    with tf.variable_scope(None, default_name="foo") as s1:
        pass
    with tf.variable_scope(None, default_name="foo") as s2:
        pass
    assert (s1.name, s1.original_name_scope) == ("foo", "foo/")
    assert (s2.name, s2.original_name_scope) == ("foo_1", "foo_1/")
    # Re-entering a scope object keeps its variable names and opens a fresh name scope.
    with tf.variable_scope(s1) as again:
        assert (again.name, again.original_name_scope) == ("foo", "foo/")
        assert tf.get_default_graph().get_name_scope() == "foo_2"
        v = tf.get_variable("v", [1])
    assert v.name == "foo/v:0"
    with tf.name_scope("ns"):
        with tf.variable_scope("vs"):
            q = tf.get_variable("q", [1])
            c = tf.constant(0)
    assert (q.name, c.name) == ("vs/q:0", "ns/vs/Const:0")
    with tf.variable_scope("plain", auxiliary_name_scope=False):
        assert tf.constant(0).name == "Const:0"


def test_a_layers_network_built_twice_reuses_its_variables():
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])

    def net(reuse):
        with tf.variable_scope("ConvNet", reuse=reuse):
            h = tf.layers.conv2d(x, 4, 3, activation=tf.nn.relu)
            h = tf.layers.conv2d(h, 4, 3)
            return tf.layers.dense(tf.layers.flatten(h), 2)

    train, test = net(False), net(True)
    assert [v.name for v in tf.global_variables()] == [
        "ConvNet/conv2d/kernel:0", "ConvNet/conv2d/bias:0", "ConvNet/conv2d_1/kernel:0",
        "ConvNet/conv2d_1/bias:0", "ConvNet/dense/kernel:0", "ConvNet/dense/bias:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        value = np.random.default_rng(0).random((2, 8, 8, 1), dtype=np.float32)
        a, b = sess.run([train, test], {x: value})
    np.testing.assert_array_equal(a, b)


def test_initializer_regularizer_and_dtype_are_inherited():
    def l1(t):
        return tf.reduce_sum(tf.abs(t))

    with tf.variable_scope("init", initializer=tf.constant_initializer(3.0), regularizer=l1,
                           dtype=tf.float64):
        with tf.variable_scope("inner") as inner:
            v = tf.get_variable("v", [2])
            unregularized = tf.get_variable("u", [2], regularizer=tf.no_regularizer)
    assert inner.dtype == tf.float64 and inner.regularizer is l1
    assert v.dtype == tf.float64 and unregularized.dtype == tf.float64
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert [t.name for t in losses] == ["init/inner/v/Regularizer/Sum:0"]
    assert tf.losses.get_regularization_losses() == losses
    total = tf.losses.get_regularization_loss()
    assert total.name == "total_regularization_loss:0"
    value, loss = _run([v, total])
    np.testing.assert_array_equal(value, [3.0, 3.0])
    assert loss == 6.0


def test_a_tensor_initializer_gives_its_dtype_and_shape():
    v = tf.get_variable("v", initializer=tf.constant([1.0, 2.0], tf.float64))
    assert v.dtype == tf.float64 and v.shape.as_list() == [2]
    np.testing.assert_array_equal(_run(v), [1.0, 2.0])
    with pytest.raises(ValueError) as info:
        tf.get_variable("w", initializer=tf.constant([1.0], tf.float64), dtype=tf.float32)
    assert str(info.value) == ("Initializer type '<dtype: 'float64'>' and explicit dtype "
                               "'<dtype: 'float32'>' don't match.")
    with pytest.raises(ValueError, match="If initializer is a constant, do not specify shape."):
        tf.get_variable("z", [2], initializer=tf.constant([1.0, 2.0]))
    with pytest.raises(ValueError, match="Variable nos did not get an initializer, so its "
                                         "`shape` argument must be specified."):
        tf.get_variable("nos")


def test_default_initializers_by_dtype():
    ints = tf.get_variable("ints", [3], dtype=tf.int32)
    floats = tf.get_variable("floats", [200, 100])
    ints_value, floats_value = _run([ints, floats])
    np.testing.assert_array_equal(ints_value, [0, 0, 0])
    limit = np.sqrt(6.0 / 300)  # Glorot uniform
    assert np.abs(floats_value).max() <= limit and floats_value.std() > limit / 3


def test_custom_getters_see_every_argument_and_nest():
    calls = []

    def outer(getter, name, *args, **kwargs):
        calls.append(("outer", name, sorted(kwargs)))
        return getter(name, *args, **kwargs)

    def inner(getter, name, *args, **kwargs):
        calls.append(("inner", name))
        kwargs["trainable"] = False
        return getter(name, *args, **kwargs)

    with tf.variable_scope("cg", custom_getter=outer):
        with tf.variable_scope("deeper", custom_getter=inner):
            v = tf.get_variable("v", [1])
    assert calls[0][:2] == ("inner", "cg/deeper/v")
    assert calls[1] == ("outer", "cg/deeper/v", [
        "aggregation", "caching_device", "collections", "constraint", "dtype", "initializer",
        "partitioner", "regularizer", "reuse", "shape", "synchronization", "trainable",
        "use_resource", "validate_shape"])
    assert tf.trainable_variables() == [] and tf.global_variables() == [v]


def test_partitioner_is_accepted_and_must_be_callable():
    # Flowstone keeps partitioned variables whole (docs/COMPAT.md).
    partitioner = tf.fixed_size_partitioner(2)
    assert partitioner([4, 3]) == [2, 1]
    with tf.variable_scope("p", partitioner=partitioner):
        v = tf.get_variable("v", [4, 3])
    assert v.name == "p/v:0" and v.shape.as_list() == [4, 3]
    with pytest.raises(ValueError, match="Partitioner must be callable, but received: 3"):
        tf.get_variable("w", [4], partitioner=3)


def test_a_name_taken_by_another_op_is_an_error_not_a_renamed_variable():
    tf.constant(0.0, name="taken")
    with pytest.raises(ValueError, match="Variable taken cannot be created: the graph already "
                                         "has an op named taken"):
        tf.get_variable("taken", [1])
    assert tf.global_variables() == []


def test_variable_creator_scopes_wrap_variable_creation_innermost_first():
    calls = []

    def outer(next_creator, **kwargs):
        calls.append(("outer", kwargs["name"], sorted(kwargs)))
        return next_creator(**kwargs)

    def inner(next_creator, **kwargs):
        calls.append(("inner", kwargs["name"]))
        kwargs["trainable"] = False
        return next_creator(**kwargs)

    with tf.variable_creator_scope(outer), tf.variable_creator_scope(inner):
        v = tf.Variable(1.0, name="v")
        w = tf.get_variable("w", [1])
    assert [c[:2] for c in calls] == [("inner", "v"), ("outer", "v"), ("inner", "w"),
                                      ("outer", "w")]
    assert calls[1][2] == ["aggregation", "caching_device", "collections", "constraint",
                           "dtype", "expected_shape", "import_scope", "initial_value", "name",
                           "shape", "synchronization", "trainable", "use_resource",
                           "validate_shape", "variable_def"]
    assert tf.global_variables() == [v, w] and tf.trainable_variables() == []
    with tf.variable_creator_scope(lambda next_creator, **kwargs: "made elsewhere"):
        assert tf.Variable(1.0) == "made elsewhere"
    assert len(tf.global_variables()) == 2


def test_get_local_variable_is_local_and_untrained():
    v = tf.get_local_variable("counter", [], dtype=tf.int64)
    assert tf.local_variables() == [v] and tf.trainable_variables() == []
    assert v not in tf.global_variables()


def test_make_template_shares_variables_between_calls():
    def scale(x):
        return x * tf.get_variable("w", [1], initializer=tf.constant_initializer(2.0))

    template = tf.make_template("tmpl", scale)
    first, second = template(1.0), template(3.0)
    assert (first.name, second.name) == ("tmpl/mul:0", "tmpl_1/mul:0")
    assert [v.name for v in template.variables] == ["tmpl/w:0"]
    assert template.variable_scope.name == "tmpl" and template.variable_scope_name == "tmpl/"
    np.testing.assert_array_equal(_run([first, second]), [[2.0], [6.0]])

    other = tf.make_template("tmpl", scale)
    other(1.0)
    assert [v.name for v in other.variables] == ["tmpl_1/w:0"]

    def makes_a_new_variable(x):
        return x * tf.Variable(1.0)

    leaky = tf.make_template("leaky", makes_a_new_variable)
    leaky(1.0)
    with pytest.raises(ValueError, match="Trainable variable created when calling a template "
                                         "after the first time") as info:
        leaky(2.0)
    assert "originally defined at:" in str(info.value)


def test_make_template_with_scope_created_now_and_kwargs():
    def affine(x, bias):
        return x * tf.get_variable("w", [], initializer=tf.ones_initializer()) + bias

    template = tf.make_template("affine", affine, create_scope_now_=True, bias=5.0)
    assert template.variable_scope.name == "affine"
    assert _run([template(1.0), template(2.0)]) == [6.0, 7.0]
    assert len(tf.global_variables()) == 1


def test_variable_scope_object_attributes_and_setters():
    scope = tf.get_variable_scope()
    assert scope.name == "" and scope.reuse is False and scope.dtype == tf.float32
    with tf.variable_scope("attrs") as s:
        s.set_initializer(tf.ones_initializer())
        s.set_dtype(tf.float64)
        v = tf.get_variable("v", [2])
        assert s.global_variables() == [v] and s.trainable_variables() == [v]
    np.testing.assert_array_equal(_run(v), [1.0, 1.0])
    with pytest.raises(TypeError, match="If default_name is None then name_or_scope is "
                                        "required"):
        tf.variable_scope(None)


def test_scopes_are_per_graph():
    with tf.variable_scope("g1"):
        tf.get_variable("v", [1])
    other = tf.Graph()
    with other.as_default():
        assert tf.get_variable_scope().name == ""
        v = tf.get_variable("v", [1])
        assert v.name == "v:0"


def test_a_function_body_uses_the_scopes_and_variables_of_its_outer_graph():
    # A body traced for tf.cond / tf.while_loop is a graph with an `outer_graph`.
    outer = tf.get_default_graph()
    body = tf.Graph()
    body.outer_graph = outer
    with tf.variable_scope("net"):
        w = tf.get_variable("w", [1])
        with body.as_default():
            assert tf.get_variable_scope().name == "net"
            with tf.variable_scope(tf.get_variable_scope(), reuse=True):
                assert tf.get_variable("w", [1]) is w


def test_variables_ignore_control_dependencies_and_init_scope_keeps_the_name_scope():
    x = tf.constant(1.0, name="x")
    with tf.control_dependencies([x]):
        v = tf.Variable(2.0, name="v")
        w = tf.get_variable("w", [1])
        y = tf.constant(3.0, name="y")
        with tf.init_scope():
            free = tf.constant(0.0, name="free")
    assert v.op.control_inputs == [] and v.initializer.control_inputs == []
    assert w.op.control_inputs == [] and free.op.control_inputs == []
    assert y.op.control_inputs == [x.op]
    with tf.name_scope("ns"):
        with tf.init_scope():
            assert tf.constant(0).name == "ns/Const:0"


_SCOPE_PROGRAM = textwrap.dedent("""
    import sys
    if sys.argv[1] == "tensorflow":
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
    else:
        import flowstone as tf
    out = []
    with tf.variable_scope("a"):
        with tf.variable_scope(None, default_name="b") as b:
            out.append(tf.get_variable("v", [1]).name)
        with tf.variable_scope(None, default_name="b"):
            out.append(tf.get_variable("v", [1]).name)
            out.append(tf.constant(0).name)
    with tf.variable_scope("a", reuse=True):
        with tf.variable_scope(None, default_name="b"):
            out.append(tf.get_variable("v", [1]).name)
    with tf.variable_scope(b) as again:
        out.append(again.original_name_scope)
        out.append(tf.constant(0).name)
    with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
        out.append(tf.get_variable("new", [1]).name)
    with tf.variable_scope("t"):
        tmpl = tf.make_template("m", lambda x: x * tf.get_variable("w", [1]))
        out.append(tmpl(1.0).name)
        out.append(tmpl(2.0).name)
    for message in ("exists", "missing"):
        try:
            with tf.variable_scope("a", reuse=(message == "missing")):
                tf.get_variable("zz" if message == "missing" else "new", [1])
        except ValueError as e:
            out.append(str(e).splitlines()[0])
    print("\\n".join(out))
""")


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_names_and_messages_match_tensorflow_side_by_side(tmp_path):
    script = tmp_path / "scopes.py"
    script.write_text(_SCOPE_PROGRAM)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")

    def run(python, which):
        done = subprocess.run([python, str(script), which], capture_output=True, text=True,
                              env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    ours = run(sys.executable, "flowstone")
    theirs = run(PEER_PYTHON, "tensorflow")
    assert ours == theirs
