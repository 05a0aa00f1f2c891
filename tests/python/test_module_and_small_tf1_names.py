"""tf.Module, tf.ensure_shape, the *_v2 convolution gradients, make_tensor_proto / make_ndarray and the
version/build constants."""

import numpy as np
import pytest

import flowstone as tf


def test_version_constants_describe_the_graph_defs_this_build_writes():
    assert tf.GRAPH_DEF_VERSION == tf.version.GRAPH_DEF_VERSION == 2474
    with tf.Graph().as_default() as graph:
        tf.constant(1.0)
        assert graph.as_graph_def().versions.producer == tf.GRAPH_DEF_VERSION
    assert tf.GRAPH_DEF_VERSION_MIN_CONSUMER == tf.GRAPH_DEF_VERSION_MIN_PRODUCER == 0
    assert tf.version.VERSION == tf.__version__
    assert tf.version.COMPILER_VERSION.startswith(tf.sysconfig.get_build_info()["cpu_compiler"])
    assert tf.CXX11_ABI_FLAG == tf.sysconfig.CXX11_ABI_FLAG == 1
    assert tf.sysconfig.CXX_VERSION >= 201703 and tf.MONOLITHIC_BUILD == 0


class Dense(tf.Module):
    def __init__(self, units, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = tf.Variable(tf.ones([3, units]), name="w")
            self.b = tf.Variable(tf.zeros([units]), name="b", trainable=False)

    @tf.Module.with_name_scope
    def __call__(self, x):
        return tf.matmul(x, self.w) + self.b


class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Dense(3), {"head": Dense(1, name="head")}]
        self.alias = self.blocks[0]  # the same module twice is tracked once


def test_module_tracks_variables_and_submodules_through_containers():
    with tf.Graph().as_default():
        model = Model()
        assert model.name == "model"
        assert [v.name for v in model.variables] == ["dense/b:0", "dense/w:0", "head/b:0",
                                                     "head/w:0"]
        assert [v.name for v in model.trainable_variables] == ["dense/w:0", "head/w:0"]
        assert [v.name for v in model.non_trainable_variables] == ["dense/b:0", "head/b:0"]
        assert [m.name for m in model.submodules] == ["dense", "head"]
        y = model.blocks[0](tf.ones([2, 3]))
        assert y.op.name.startswith("dense/")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(y), np.full((2, 3), 3.0))
        with pytest.raises(ValueError, match="not a valid module name"):
            tf.Module(name="has space")


def test_ensure_shape_checks_statically_then_at_run_time():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.ensure_shape(x, [2, None])
        assert y.shape.as_list() == [2, 3]
        with pytest.raises(ValueError, match=r"not compatible with expected shape \[4\]"):
            tf.ensure_shape(tf.zeros([3]), [4])
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {x: np.ones((2, 3))}), np.ones((2, 3)))
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"not compatible with expected shape \[2,\?\]"):
                sess.run(y, {x: np.ones((4, 3))})
            assert sess.run(y, {x: np.zeros((2, 3))}).sum() == 0  # still usable
        unknown_rank = tf.placeholder(tf.float32)
        z = tf.ensure_shape(unknown_rank, [2])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="expected shape"):
                sess.run(z, {unknown_rank: np.ones((2, 1))})


def test_v2_convolution_gradients_use_the_shape_of_the_tensor_given():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 5, 2))
    f = rng.standard_normal((3, 3, 2, 4))
    dy = rng.standard_normal((2, 2, 2, 4))
    with tf.Graph().as_default(), tf.Session() as sess:
        for padding, explicit in [("VALID", [])]:
            got_f = tf.conv2d_backprop_filter_v2(x, f, dy, [1, 2, 2, 1], padding,
                                                 explicit_paddings=explicit)
            want_f = tf.nn.conv2d_backprop_filter(x, f.shape, dy, [1, 2, 2, 1], padding)
            got_x = tf.conv2d_backprop_input_v2(x, f, dy, [1, 2, 2, 1], padding)
            want_x = tf.nn.conv2d_backprop_input(x.shape, f, dy, [1, 2, 2, 1], padding)
            a, b, c, d = sess.run([got_f, want_f, got_x, want_x])
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(c, d)
        explicit = tf.conv2d_backprop_filter_v2(x, f, np.ones((2, 3, 3, 4)), [1, 2, 2, 1],
                                                "EXPLICIT",
                                                explicit_paddings=[0, 0, 1, 1, 1, 2, 0, 0])
        same_as = tf.nn.conv2d_backprop_filter(x, f.shape, np.ones((2, 3, 3, 4)), [1, 2, 2, 1],
                                               [[0, 0], [1, 1], [1, 2], [0, 0]])
        np.testing.assert_array_equal(*sess.run([explicit, same_as]))
        with pytest.raises(ValueError, match="explicit_paddings must have 8 values"):
            tf.conv2d_backprop_filter_v2(x, f, dy, [1, 2, 2, 1], "EXPLICIT",
                                         explicit_paddings=[1, 1])


# TensorFlow 2.21's serialized TensorProtos for these values (tf.make_tensor_proto(...)
# .SerializeToString().hex()): the encoding must be byte for byte the same.
_TENSOR_PROTO_CASES = [
    (lambda: tf.make_tensor_proto([[1., 2.]]), "08011208120208011202080222080000803f00000040", [[1.0, 2.0]]),
    (lambda: tf.make_tensor_proto(b"ab"), "0807120042026162", b"ab"),
    (lambda: tf.make_tensor_proto(3, shape=[2, 2]), "0803120812020802120208023a0103", [[3, 3], [3, 3]]),
    (lambda: tf.make_tensor_proto(np.arange(6, dtype=np.int64).reshape(2, 3)), "0809120812020802120208032230000000000000000001000000000000000200000000000000030000000000000004000000000000000500000000000000",
     [[0, 1, 2], [3, 4, 5]]),
    (lambda: tf.make_tensor_proto([b"x", "y"]), "0807120412020802420178420179", [b"x", b"y"]),
    (lambda: tf.make_tensor_proto(np.float16([1.5, 2])), "08131204120208022204003e0040", [1.5, 2.0]),
    (lambda: tf.make_tensor_proto(True), "080a12005a0101", True),
    (lambda: tf.make_tensor_proto([1, 2, 3], dtype=tf.float64), "08021204120208032218000000000000f03f00000000000000400000000000000840", [1.0, 2.0, 3.0]),
    (lambda: tf.make_tensor_proto(7.5), "080112002a040000f040", 7.5),
    (lambda: tf.make_tensor_proto([], dtype=tf.int32), "080312021200", []),
]


@pytest.mark.parametrize("make,expected_hex,value", _TENSOR_PROTO_CASES)
def test_make_tensor_proto_encodes_as_tensorflow_and_make_ndarray_decodes(make, expected_hex,
                                                                          value):
    proto = make()
    assert proto.SerializeToString().hex() == expected_hex
    assert tf.make_ndarray(proto).tolist() == value


def test_make_tensor_proto_errors():
    with pytest.raises(ValueError, match="Too many elements provided. Takes at most 2"):
        tf.make_tensor_proto([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.make_tensor_proto([1, 2], shape=[2, 1], verify_shape=True)
