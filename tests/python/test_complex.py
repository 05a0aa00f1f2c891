"""complex64 and complex128: the dtypes everywhere dtypes go (feeds, fetches, constants,
GraphDefs, checkpoints, variables, the array ops), the complex-number functions, the Fourier
transforms against numpy.fft, gradients of real losses against finite differences and against
TensorFlow, and the errors for ops that take no complex numbers."""

import json
import os
import subprocess
import textwrap

import numpy as np
import pytest

import flowstone as tf
from flowstone.framework import tf_protos
from flowstone.framework.ops import apply_op
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON

requires_tensorflow = pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
RNG = np.random.default_rng(2024)


def crand(*shape, dtype=np.complex128):
    return (RNG.uniform(-1, 1, shape) + 1j * RNG.uniform(-1, 1, shape)).astype(dtype)


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def run_tensorflow(script, workdir=None):
    """Runs `script` under real TensorFlow and returns the JSON its last line printed."""
    done = subprocess.run([PEER_PYTHON, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, cwd=workdir, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


# ---- the dtypes ---------------------------------------------------------------------------------

def test_dtypes_are_usable_everywhere_dtypes_are():
    assert tf.as_dtype(np.complex64) is tf.complex64
    assert tf.as_dtype("complex128") is tf.complex128
    assert tf.as_dtype(18) is tf.complex128 and tf.complex64.as_datatype_enum == 8
    assert tf.complex64.is_complex and not tf.complex64.is_floating
    assert tf.complex64.real_dtype is tf.float32 and tf.complex128.real_dtype is tf.float64
    assert tf.complex64.size == 8 and tf.complex128.size == 16
    assert tf.as_dtype(complex) is tf.complex128
    assert tf.constant(1 + 2j).dtype == tf.complex128
    assert tf.placeholder(tf.complex64, [2]).dtype == tf.complex64


def test_feeds_fetches_and_constants_keep_the_values():
    z = crand(2, 3, dtype=np.complex64)
    x = tf.placeholder(tf.complex64, [2, 3])
    c = tf.constant([[1 + 2j, -3.5j]], dtype=tf.complex128)
    got_x, got_c = run([tf.identity(x), c], {x: z})
    assert got_x.dtype == np.complex64 and got_c.dtype == np.complex128
    np.testing.assert_array_equal(got_x, z)
    np.testing.assert_array_equal(got_c, [[1 + 2j, -3.5j]])
    # A strided, non-contiguous view feeds like any other array.
    view = crand(4, 6)[::2, ::3]
    y = tf.placeholder(tf.complex128, [2, 2])
    np.testing.assert_array_equal(run(y * 1, {y: view}), view)


def test_to_complex_casts_and_cast_semantics():
    x = tf.constant([1.5, -2.0])
    z64, z128 = tf.to_complex64(x), tf.to_complex128(x)
    assert z64.dtype == tf.complex64 and z128.dtype == tf.complex128
    np.testing.assert_array_equal(run(z128), [1.5 + 0j, -2 + 0j])
    # Complex to real drops the imaginary part; to int truncates the real part.
    z = tf.constant([2.7 - 1j, -3.2 + 5j], dtype=tf.complex64)
    np.testing.assert_array_equal(run(tf.cast(z, tf.float64)),
                                  np.array([2.7, -3.2], np.float32).astype(np.float64))
    np.testing.assert_array_equal(run(tf.cast(z, tf.int32)), [2, -3])
    np.testing.assert_array_equal(run(tf.cast(z, tf.bool)), [True, True])
    np.testing.assert_allclose(run(tf.cast(z, tf.complex128)), [2.7 - 1j, -3.2 + 5j], rtol=1e-7)


def test_graph_def_round_trip_and_tensorflows_complex_fields():
    value = crand(2, 2)
    tf.constant(value, name="c")
    graph_def = tf.get_default_graph().as_graph_def()
    tensor = graph_def.node[0].attr["value"].tensor
    assert tensor.dtype == 18 and len(tensor.tensor_content) == value.nbytes
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        np.testing.assert_array_equal(run("c:0"), value)
    # TensorFlow's scomplex_val holds (real, imaginary) pairs; the last pair repeats.
    proto = tf_protos.TensorProto(dtype=8)
    proto.tensor_shape.dim.add(size=3)
    proto.scomplex_val.extend([1.0, 2.0, -0.5, 4.0])
    node = tf_protos.GraphDef().node.add(name="k", op="Const")
    node.attr["dtype"].type = 8
    node.attr["value"].tensor.CopyFrom(proto)
    with tf.Graph().as_default():
        tf.import_graph_def(node_graph(node), name="")
        np.testing.assert_array_equal(run("k:0"), np.array([1 + 2j, -0.5 + 4j, -0.5 + 4j],
                                                           np.complex64))
    proto.scomplex_val.append(7.0)  # an odd count is not a list of pairs
    node.attr["value"].tensor.CopyFrom(proto)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="pairs"):
            tf.import_graph_def(node_graph(node), name="")


@pytest.mark.parametrize("value", [np.complex64(1 + 2j), 3 - 4j, np.array([1j, 2, 3 + 3j]),
                                   np.array([[0.5 - 1j]], np.complex64)])
def test_make_tensor_proto_and_make_ndarray(value):
    proto = tf.make_tensor_proto(value)
    back = tf.make_ndarray(proto)
    np.testing.assert_array_equal(back, value)
    assert back.dtype == np.asarray(value).dtype
    if np.size(value) == 1:
        fields = proto.scomplex_val if back.dtype == np.complex64 else proto.dcomplex_val
        z = complex(np.asarray(value).item())
        assert list(fields) == [z.real, z.imag]
    filled = tf.make_tensor_proto(value if np.size(value) == 1 else 2j, shape=[3])
    np.testing.assert_array_equal(tf.make_ndarray(filled), np.full(3, tf.make_ndarray(filled)[0]))


@requires_tensorflow
def test_make_tensor_proto_is_byte_identical_to_tensorflows():
    values = "[np.complex64(1 + 2j), 3 - 4j, np.array([1j, 2, 3 + 3j])]"
    theirs = run_tensorflow(f"""
        import json, numpy as np, tensorflow as tf
        print(json.dumps([tf.make_tensor_proto(v).SerializeToString().hex() for v in {values}]))
    """)
    ours = [tf.make_tensor_proto(v).SerializeToString().hex() for v in eval(values)]  # noqa: S307
    assert ours == theirs


def node_graph(node):
    graph_def = tf_protos.GraphDef()
    graph_def.node.add().CopyFrom(node)
    return graph_def


def test_variables_and_checkpoints_of_complex_dtype(tmp_path):
    value = crand(3)
    v = tf.Variable(value, name="v")
    w = tf.Variable(crand(2, dtype=np.complex64), name="w")
    step = v.assign_add(tf.constant([1j, 1j, 1j], dtype=tf.complex128))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(step), value + 1j)
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"))
        saved_w = sess.run(w)
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_dtype_map() == {"v": tf.complex128, "w": tf.complex64}
    np.testing.assert_array_equal(reader.get_tensor("v"), value + 1j)
    with tf.Graph().as_default():
        v2 = tf.Variable(np.zeros(3, np.complex128), name="v")
        w2 = tf.Variable(np.zeros(2, np.complex64), name="w")
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, prefix)
            np.testing.assert_array_equal(sess.run(v2), value + 1j)
            np.testing.assert_array_equal(sess.run(w2), saved_w)


@requires_tensorflow
def test_checkpoints_match_tensorflows_bytes_both_ways(tmp_path):
    values = {"a": [[1 + 2j, 0.5 - 0.25j]], "b": [0.5 - 3j, 7.0, 1e-30j]}
    theirs = run_tensorflow(f"""
        import json, numpy as np, tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        a = tf.Variable(np.array({values['a']!r}, np.complex64), name="a")
        b = tf.Variable(np.array({values['b']!r}, np.complex128), name="b")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, "./tf/model.ckpt")
        print(json.dumps("saved"))
    """, workdir=tmp_path)
    assert theirs == "saved"
    a = tf.Variable(np.array(values["a"], np.complex64), name="a")
    b = tf.Variable(np.array(values["b"], np.complex128), name="b")
    (tmp_path / "fs").mkdir()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver().save(sess, str(tmp_path / "fs" / "model.ckpt"))
    data = "model.ckpt.data-00000-of-00001"
    assert (tmp_path / "fs" / data).read_bytes() == (tmp_path / "tf" / data).read_bytes()
    reader = tf.train.NewCheckpointReader(str(tmp_path / "tf" / "model.ckpt"))
    np.testing.assert_array_equal(reader.get_tensor("a"), np.array(values["a"], np.complex64))
    np.testing.assert_array_equal(reader.get_tensor("b"), np.array(values["b"], np.complex128))
    restored = run_tensorflow("""
        import json, numpy as np, tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        reader = tf.train.NewCheckpointReader("./fs/model.ckpt")
        print(json.dumps({k: [[float(v.real), float(v.imag)] for v in
                              reader.get_tensor(k).flat] + [str(reader.get_tensor(k).dtype)]
                          for k in ("a", "b")}))
    """, workdir=tmp_path)
    for key, dtype in (("a", "complex64"), ("b", "complex128")):
        assert restored[key][-1] == dtype
        expected = np.array(values[key], dtype).ravel()
        np.testing.assert_array_equal([complex(*p) for p in restored[key][:-1]], expected)


def test_array_ops_move_complex_elements():
    z = crand(2, 3)
    x = tf.constant(z)
    results = run({
        "zeros": tf.zeros([2], tf.complex64), "ones": tf.ones([2], tf.complex128),
        "fill": tf.fill([2], tf.constant(1 - 1j)), "zeros_like": tf.zeros_like(x),
        "ones_like": tf.ones_like(x), "reshape": tf.reshape(x, [3, 2]),
        "concat": tf.concat([x, x], 0), "gather": tf.gather(x, [1, 0], axis=1),
        "transpose": tf.transpose(x), "tile": tf.tile(x, [1, 2]), "stack": tf.stack([x, x]),
        "slice": x[:, 1:], "reverse": tf.reverse(x, [1]), "pad": tf.pad(x, [[1, 0], [0, 1]]),
        "where": tf.where([True, False], x[0, :2], x[1, :2]), "expand": tf.expand_dims(x, 0),
        "split": tf.split(x, 3, axis=1)[2], "unstack": tf.unstack(x)[1],
    })
    np.testing.assert_array_equal(results["zeros"], np.zeros(2, np.complex64))
    np.testing.assert_array_equal(results["ones"], np.ones(2, np.complex128))
    np.testing.assert_array_equal(results["fill"], [1 - 1j, 1 - 1j])
    np.testing.assert_array_equal(results["zeros_like"], np.zeros_like(z))
    np.testing.assert_array_equal(results["ones_like"], np.ones_like(z))
    np.testing.assert_array_equal(results["reshape"], z.reshape(3, 2))
    np.testing.assert_array_equal(results["concat"], np.concatenate([z, z]))
    np.testing.assert_array_equal(results["gather"], z[:, [1, 0]])
    np.testing.assert_array_equal(results["transpose"], z.T)
    np.testing.assert_array_equal(results["tile"], np.tile(z, [1, 2]))
    np.testing.assert_array_equal(results["stack"], np.stack([z, z]))
    np.testing.assert_array_equal(results["slice"], z[:, 1:])
    np.testing.assert_array_equal(results["reverse"], z[:, ::-1])
    np.testing.assert_array_equal(results["pad"], np.pad(z, [[1, 0], [0, 1]]))
    np.testing.assert_array_equal(results["where"], [z[0, 0], z[1, 1]])
    np.testing.assert_array_equal(results["expand"], z[None])
    np.testing.assert_array_equal(results["split"], z[:, 2:])
    np.testing.assert_array_equal(results["unstack"], z[1])


# ---- the complex-number functions and math ------------------------------------------------------

def test_complex_real_imag_conj_angle_abs():
    re, im = RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (3,))
    z = tf.complex(tf.constant(re), tf.constant(im))
    assert z.dtype == tf.complex128
    z32 = tf.complex(tf.constant(re, tf.float32), tf.constant(re, tf.float32))
    assert z32.dtype == tf.complex64
    got = run({"z": z, "real": tf.math.real(z), "imag": tf.math.imag(z), "conj": tf.math.conj(z),
               "angle": tf.math.angle(z), "abs": tf.abs(z), "abs32": tf.abs(z32)})
    expected = re + 1j * im
    np.testing.assert_array_equal(got["z"], expected)
    np.testing.assert_array_equal(got["real"], expected.real)
    np.testing.assert_array_equal(got["imag"], expected.imag)
    np.testing.assert_array_equal(got["conj"], np.conj(expected))
    np.testing.assert_allclose(got["angle"], np.angle(expected), rtol=1e-15)
    np.testing.assert_allclose(got["abs"], np.abs(expected), rtol=1e-15)
    assert got["abs"].dtype == np.float64 and got["abs32"].dtype == np.float32
    # Real tensors are their own real part and conjugate, with imaginary part 0.
    x = tf.constant([-1.5, 2.0])
    assert tf.math.conj(x) is x and tf.math.real(x) is x
    np.testing.assert_array_equal(run(tf.math.imag(x)), [0.0, 0.0])
    np.testing.assert_allclose(run(tf.math.angle(x)), [np.pi, 0.0])
    # Large parts do not overflow in |z|.
    np.testing.assert_allclose(run(tf.abs(tf.constant([3e200 + 4e200j]))), [5e200])


def test_math_ops_match_numpy_in_complex128_and_complex64():
    a, b = crand(3, 4), crand(4)
    for dtype, rtol in ((tf.complex128, 1e-13), (tf.complex64, 2e-5)):
        x = tf.constant(a, dtype)
        y = tf.constant(b, dtype)
        got = run({"add": x + y, "sub": x - y, "mul": x * y, "div": x / y, "neg": -x,
                   "square": tf.square(x), "exp": tf.exp(x), "log": tf.log(x),
                   "sqrt": tf.sqrt(x), "rsqrt": tf.rsqrt(x), "pow": tf.pow(x, y),
                   "reciprocal": tf.reciprocal(x), "sign": tf.sign(x), "tanh": tf.tanh(x),
                   "sin": tf.sin(x), "cos": tf.cos(x), "sigmoid": tf.sigmoid(x),
                   "sum": tf.reduce_sum(x, 1), "prod": tf.reduce_prod(x, 0),
                   "mean": tf.reduce_mean(x), "add_n": tf.add_n([x, x, x]),
                   "eq": tf.equal(x, x * 1), "ne": tf.not_equal(x, y)})
        a_, b_ = a.astype(dtype.as_numpy_dtype), b.astype(dtype.as_numpy_dtype)
        expected = {"add": a_ + b_, "sub": a_ - b_, "mul": a_ * b_, "div": a_ / b_, "neg": -a_,
                    "square": a_ * a_, "exp": np.exp(a_), "log": np.log(a_),
                    "sqrt": np.sqrt(a_), "rsqrt": 1 / np.sqrt(a_), "pow": a_ ** b_,
                    "reciprocal": 1 / a_, "sign": a_ / np.abs(a_), "tanh": np.tanh(a_),
                    "sin": np.sin(a_), "cos": np.cos(a_), "sigmoid": 1 / (1 + np.exp(-a_)),
                    "sum": a_.sum(1), "prod": a_.prod(0), "mean": a_.mean(), "add_n": 3 * a_,
                    "eq": np.ones((3, 4), bool), "ne": a_ != b_}
        for key, value in expected.items():
            assert got[key].dtype == np.asarray(value).dtype, key
            np.testing.assert_allclose(got[key], value, rtol=rtol, atol=rtol, err_msg=key)


def test_no_nan_divisions_take_complex_numbers():
    x, y = crand(4), np.array([1 + 1j, 0, 2j, 0])
    got = run({"div": tf.math.divide_no_nan(x, y), "mul": tf.math.multiply_no_nan(x, y),
               "reciprocal": tf.math.reciprocal_no_nan(y)})
    np.testing.assert_allclose(got["div"], np.where(y == 0, 0, x / np.where(y == 0, 1, y)))
    np.testing.assert_allclose(got["mul"], x * y)
    np.testing.assert_allclose(got["reciprocal"], [0.5 - 0.5j, 0, -0.5j, 0])


def test_matmul_adjoint_and_batch_matmul():
    a, b = crand(3, 4), crand(3, 5)
    x, y = tf.constant(a), tf.constant(b)
    batch_a, batch_b = crand(2, 3, 4), crand(2, 3, 5)
    got = run({"adjoint": tf.linalg.adjoint(x), "mm": tf.matmul(x, y, adjoint_a=True),
               "mm_t": tf.matmul(x, y, transpose_a=True),
               "bmm": tf.matmul(batch_a, batch_b, adjoint_a=True),
               "bmm_t": tf.matmul(batch_a, batch_b, transpose_a=True),
               "mm64": tf.matmul(tf.cast(x, tf.complex64), tf.cast(y, tf.complex64),
                                 transpose_a=True)})
    np.testing.assert_array_equal(got["adjoint"], a.conj().T)
    assert tf.linalg.adjoint(x).op.type == "ConjugateTranspose"
    np.testing.assert_allclose(got["mm"], a.conj().T @ b, rtol=1e-13)
    np.testing.assert_allclose(got["mm_t"], a.T @ b, rtol=1e-13)
    np.testing.assert_allclose(got["bmm"], np.conj(np.swapaxes(batch_a, 1, 2)) @ batch_b,
                               rtol=1e-13)
    np.testing.assert_allclose(got["bmm_t"], np.swapaxes(batch_a, 1, 2) @ batch_b, rtol=1e-13)
    np.testing.assert_allclose(got["mm64"], a.T @ b, rtol=1e-5)


def test_as_string_writes_real_and_imaginary_parts():
    np.testing.assert_array_equal(
        run(tf.strings.as_string(tf.constant([1.5 + 2j], tf.complex64))),
        [b"(1.500000,2.000000)"])


# ---- Fourier transforms -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,rtol", [(np.complex64, 2e-5), (np.complex128, 1e-12)])
def test_complex_transforms_match_numpy(dtype, rtol):
    z = crand(2, 3, 4, 5, dtype=dtype)
    got = run({"fft": tf.signal.fft(z), "ifft": tf.signal.ifft(z), "fft2d": tf.signal.fft2d(z),
               "ifft2d": tf.signal.ifft2d(z), "fft3d": tf.signal.fft3d(z),
               "ifft3d": tf.signal.ifft3d(z)})
    expected = {"fft": np.fft.fft(z), "ifft": np.fft.ifft(z), "fft2d": np.fft.fft2(z),
                "ifft2d": np.fft.ifft2(z), "fft3d": np.fft.fftn(z, axes=(1, 2, 3)),
                "ifft3d": np.fft.ifftn(z, axes=(1, 2, 3))}
    for key, value in expected.items():
        assert got[key].dtype == dtype, key
        np.testing.assert_allclose(got[key], value, rtol=rtol, atol=rtol * 10, err_msg=key)


def test_real_transforms_match_numpy_with_default_and_given_lengths():
    x_value = RNG.uniform(-1, 1, (2, 6, 9))
    x = tf.constant(x_value)
    got = run({"rfft": tf.signal.rfft(x), "rfft_pad": tf.signal.rfft(x, [12]),
               "rfft_crop": tf.signal.rfft(x, [5]), "rfft2d": tf.signal.rfft2d(x),
               "rfft3d": tf.signal.rfft3d(x, [2, 4, 10]),
               # numpy float64 values become float32, as TensorFlow's preferred dtype makes them
               "rfft32": tf.signal.rfft(x_value)})
    x = x_value
    np.testing.assert_allclose(got["rfft"], np.fft.rfft(x), atol=1e-12)
    np.testing.assert_allclose(got["rfft_pad"], np.fft.rfft(x, 12), atol=1e-12)
    np.testing.assert_allclose(got["rfft_crop"], np.fft.rfft(x, 5), atol=1e-12)
    np.testing.assert_allclose(got["rfft2d"], np.fft.rfft2(x), atol=1e-12)
    np.testing.assert_allclose(got["rfft3d"], np.fft.rfftn(x, s=(2, 4, 10), axes=(0, 1, 2)),
                               atol=1e-12)
    assert got["rfft32"].dtype == np.complex64 and got["rfft"].dtype == np.complex128
    spectrum = np.fft.rfft(x)  # 5 frequencies: the default length is 2 * (5 - 1) = 8
    back = run({"irfft": tf.signal.irfft(tf.constant(spectrum)),
                "irfft9": tf.signal.irfft(tf.constant(spectrum), [9]),
                "irfft2d": tf.signal.irfft2d(tf.constant(np.fft.rfft2(x)), [6, 9]),
                "irfft3d": tf.signal.irfft3d(tf.constant(np.fft.rfftn(x)), [2, 6, 9]),
                "irfft32": tf.signal.irfft(spectrum)})
    assert back["irfft32"].dtype == np.float32 and back["irfft"].dtype == np.float64
    np.testing.assert_allclose(back["irfft"], np.fft.irfft(spectrum), atol=1e-12)
    np.testing.assert_allclose(back["irfft9"], x, atol=1e-12)
    np.testing.assert_allclose(back["irfft2d"], x, atol=1e-12)
    np.testing.assert_allclose(back["irfft3d"], x, atol=1e-12)
    # Shapes are known while building when fft_length is.
    assert tf.signal.rfft(x, [12]).shape.as_list() == [2, 6, 7]
    assert tf.signal.irfft2d(np.fft.rfft2(x), [6, 9]).shape.as_list() == [2, 6, 9]


def test_tf1_names_for_the_transforms():
    z = crand(8)
    assert tf.spectral.fft is tf.signal.fft and tf.fft is tf.signal.fft
    assert tf.spectral.irfft2d is tf.signal.irfft2d and tf.ifft3d is tf.signal.ifft3d
    np.testing.assert_allclose(run(tf.spectral.ifft(tf.spectral.fft(z))), z, atol=1e-14)


def test_fftshift_and_ifftshift_match_numpy():
    x = np.arange(30.0).reshape(5, 6)
    unknown = tf.placeholder(tf.float64, [None, None])
    got = run({"all": tf.signal.fftshift(x), "axis": tf.signal.fftshift(x, axes=-1),
               "inverse": tf.signal.ifftshift(x, axes=[0]),
               "dynamic": tf.signal.ifftshift(unknown, axes=[1, -2])}, {unknown: x})
    np.testing.assert_array_equal(got["all"], np.fft.fftshift(x))
    np.testing.assert_array_equal(got["axis"], np.fft.fftshift(x, axes=-1))
    np.testing.assert_array_equal(got["inverse"], np.fft.ifftshift(x, axes=[0]))
    np.testing.assert_array_equal(got["dynamic"], np.fft.ifftshift(x, axes=[1, -2]))


def test_transforms_of_empty_and_single_points():
    empty = np.zeros((0, 4), np.complex64)
    np.testing.assert_array_equal(run(tf.signal.fft(empty)), empty)
    np.testing.assert_array_equal(run(tf.signal.ifft([[3 + 1j]])), [[3 + 1j]])
    np.testing.assert_array_equal(run(tf.signal.rfft([[2.0]])), [[2 + 0j]])


# ---- gradients ----------------------------------------------------------------------------------

def numeric_gradient(loss, x, feed, eps=1e-6):
    """dL/dx (real x) by central differences."""
    with tf.Session() as sess:
        values = feed[x].copy()
        grad = np.zeros_like(values)
        for idx in np.ndindex(values.shape):
            for sign in (1, -1):
                shifted = values.copy()
                shifted[idx] += sign * eps
                grad[idx] += sign * sess.run(loss, {**feed, x: shifted}) / (2 * eps)
    return grad


FUNCTIONS = {
    "mul": lambda z: z * tf.constant(0.3 - 0.7j, tf.complex128) * z,
    "div": lambda z: (z + 2) / (z * z + 3j),
    "exp_log": lambda z: tf.exp(z) + tf.log(z + 2),
    "sqrt_tanh": lambda z: tf.sqrt(z + 3) * tf.tanh(z),
    "fft": lambda z: tf.signal.fft(z * z),
    "ifft2d": lambda z: tf.signal.ifft2d(tf.reshape(z, [2, 3])),
    "rfft_irfft": lambda z: tf.signal.rfft(tf.signal.irfft(z, [10]) ** 2),
    "abs_angle": lambda z: tf.cast(tf.abs(z) * tf.math.angle(z), tf.complex128),
    "matmul": lambda z: tf.matmul(tf.reshape(z, [2, 3]), tf.reshape(tf.math.conj(z), [3, 2])),
    "reductions": lambda z: tf.reduce_prod(z) + tf.reduce_mean(z * z),
    "real_imag": lambda z: tf.complex(tf.math.real(z) ** 2, tf.math.imag(z) * tf.math.real(z)),
    "cumprod": lambda z: tf.math.cumprod(z, reverse=True),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_gradients_of_real_losses_match_finite_differences(name):
    x = tf.placeholder(tf.float64, [6])
    y = tf.placeholder(tf.float64, [6])
    out = FUNCTIONS[name](tf.complex(x, y))
    loss = tf.reduce_sum(tf.square(tf.abs(out)))  # sum |f(z)|^2
    grads = tf.gradients(loss, [x, y])
    feed = {x: RNG.uniform(0.2, 1.0, 6), y: RNG.uniform(-1.0, 1.0, 6)}
    symbolic = run(grads, feed)
    for var, got in zip((x, y), symbolic):
        np.testing.assert_allclose(got, numeric_gradient(loss, var, feed), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: d loss / d {var.name}")


# Functions of z whose gradients (for a given upstream gradient) TensorFlow and Flowstone must
# give alike: the convention is dL/dRe + i dL/dIm, with conjugates for holomorphic functions.
ORACLE = {
    "mul": "z * z * w", "div": "w / z", "exp": "tf.exp(z)", "log": "tf.math.log(z)",
    "sqrt": "tf.sqrt(z)", "tanh": "tf.tanh(z)", "sin": "tf.sin(z)", "pow": "tf.pow(z, w)",
    "square": "tf.square(z)", "reciprocal": "tf.math.reciprocal(z)",
    "conj": "tf.math.conj(z)", "real": "tf.cast(tf.math.real(z), tf.complex128)",
    "imag": "tf.cast(tf.math.imag(z), tf.complex128)",
    "abs": "tf.cast(tf.abs(z), tf.complex128)", "angle": "tf.cast(tf.math.angle(z), tf.complex128)",
    "fft": "tf.signal.fft(z)", "ifft": "tf.signal.ifft(z)",
    "rfft": "tf.signal.rfft(tf.math.real(z))",
    "irfft": "tf.cast(tf.signal.irfft(z[:4]), tf.complex128)",
    "matmul": "tf.matmul(tf.reshape(z, [2, 3]), tf.reshape(w, [3, 2]))",
    "reduce_prod": "tf.reduce_prod(z)",
    "adjoint": "tf.linalg.adjoint(tf.reshape(z, [2, 3])) * tf.reshape(w, [3, 2])",
}
# TensorFlow's Cumprod gradient leaves out the conjugates its other complex gradients take (see
# docs/COMPAT.md); Flowstone's matches finite differences (the "cumprod" case above and
# op_cases_complex.py).


@requires_tensorflow
def test_gradient_conventions_match_tensorflow():
    z_value, w_value = crand(6), crand(6)
    script = f"""
        import json, numpy as np, tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        z = tf.constant(np.array({z_value.tolist()!r}))
        w = tf.constant(np.array({w_value.tolist()!r}))
        out = {{}}
        with tf.Session() as sess:
            for name, expr in {ORACLE!r}.items():
                y = eval(expr)
                ones = tf.ones_like(tf.math.real(y))
                upstream = tf.complex(ones, -0.5 * ones)
                g = sess.run(tf.gradients(y, z, grad_ys=upstream)[0])
                out[name] = [[float(v.real), float(v.imag)] for v in g.flat]
        print(json.dumps(out))
    """
    theirs = run_tensorflow(script)
    z = tf.constant(z_value)
    w = tf.constant(w_value)
    with tf.Session() as sess:
        for name, expr in ORACLE.items():
            y = eval(expr.replace("tf.math.log", "tf.log"))  # noqa: S307 - the table above
            ones = tf.ones_like(tf.math.real(y))
            upstream = tf.complex(ones, -0.5 * ones)
            ours = sess.run(tf.gradients(y, z, grad_ys=upstream)[0])
            expected = np.array([complex(*p) for p in theirs[name]])
            np.testing.assert_allclose(ours.ravel(), expected, rtol=1e-9, atol=1e-12,
                                       err_msg=name)


# ---- errors -------------------------------------------------------------------------------------

def test_complex_into_ops_that_do_not_take_it_is_a_type_error_naming_the_op():
    z = tf.constant([1 + 1j], tf.complex64)
    with pytest.raises(TypeError, match=r"Value for attr 'T' of complex64 is not in the list of "
                                        r"allowed values for Relu: float32, float64"):
        tf.nn.relu(z)
    with pytest.raises(TypeError, match="Maximum"):
        tf.maximum(z, z)
    with pytest.raises(TypeError, match="Max"):
        tf.reduce_max(z)
    with pytest.raises(TypeError, match="Unique"):
        tf.unique(z)
    with pytest.raises(TypeError, match="same dtype"):
        tf.complex(tf.constant(1.0), tf.constant(1.0, tf.float64))
    with pytest.raises(TypeError, match="float32 or float64"):
        tf.complex(1, 2)
    with pytest.raises(TypeError, match="complex64 goes with float32, not float64"):
        apply_op("Real", [z], {"Tout": tf.float64})
    with pytest.raises(ValueError, match="float32 or tf.float64"):
        tf.signal.rfft(z)


def test_bad_fft_input_fails_cleanly_at_run_time():
    lengths = tf.placeholder(tf.int32, [None])
    spectrum = tf.signal.rfft(tf.zeros([4]), lengths)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"fft_length of shape \[1\]"):
        run(spectrum, {lengths: [4, 4]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="fft_length must be >= 0"):
        run(spectrum, {lengths: [-3]})
    with pytest.raises(ValueError, match="rank at least 2"):
        tf.signal.rfft2d(tf.zeros([4]))
