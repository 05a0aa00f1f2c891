"""The CUDA plugin's core kernels against the CPU kernels: each op is built twice, pinned to
/gpu:0 and to /cpu:0, from the same host inputs, and the results are compared.

Runs only where a GPU is usable; elsewhere the module is skipped with the reason discovery gave.
"""

import numpy as np
import pytest

import flowstone as tf
from flowstone import _C
from flowstone.framework.ops import apply_op


def _no_gpu_reason():
    if tf.config.list_physical_devices("GPU"):
        return None
    discovery = getattr(_C, "gpu_discovery", None)
    reason = discovery().get("reason", "") if discovery is not None else ""
    return "no usable GPU: " + (reason or "tf.config.list_physical_devices('GPU') is empty")


_SKIP_REASON = _no_gpu_reason()
if _SKIP_REASON:
    pytest.skip(_SKIP_REASON, allow_module_level=True)

FLOATS = [np.float32, np.float64]


def run_on(device, build, inputs, soft_placement=False):
    """Runs build(*input tensors) with its ops pinned to `device`; the inputs are host constants
    made outside the pin, so the executor copies them to the device. Without soft placement a
    pinned op that has no kernel for the device fails, so passing tests show the kernel ran."""
    tf.reset_default_graph()
    tensors = [tf.constant(x) for x in inputs]
    with tf.device(device):
        out = build(*tensors)
    config = tf.ConfigProto(allow_soft_placement=soft_placement)
    with tf.Session(config=config) as sess:
        return sess.run(out)


def tolerance(dtype):
    return (2e-6, 1e-6) if np.dtype(dtype) == np.float32 else (1e-13, 1e-13)


def compare(build, inputs, dtype=np.float32, rtol=None, atol=None, soft_placement=False):
    cpu = run_on("/cpu:0", build, inputs)
    gpu = run_on("/gpu:0", build, inputs, soft_placement)
    default_rtol, default_atol = tolerance(dtype)
    for c, g in zip(cpu if isinstance(cpu, list) else [cpu], gpu if isinstance(gpu, list) else [gpu]):
        c, g = np.asarray(c), np.asarray(g)
        assert g.dtype == c.dtype and g.shape == c.shape, (g.dtype, g.shape, c.dtype, c.shape)
        np.testing.assert_allclose(g, c, rtol=rtol or default_rtol, atol=atol or default_atol,
                                   equal_nan=True)
    return gpu


def sample(shape, dtype=np.float32, low=-3.0, high=3.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def op(op_type, attrs=None):
    """A build function adding one op of `op_type` and returning its first output."""
    return lambda *xs: apply_op(op_type, list(xs), attrs).outputs[0]


# --- unary math and activations ---------------------------------------------------------------

UNARY = [
    # op, input range
    ("Neg", (-3, 3)), ("Abs", (-3, 3)), ("Square", (-3, 3)), ("Sqrt", (0.01, 9)),
    ("Rsqrt", (0.01, 9)), ("Exp", (-5, 5)), ("Log", (0.01, 9)), ("Log1p", (-0.9, 9)),
    ("Sign", (-3, 3)), ("Floor", (-3, 3)), ("Ceil", (-3, 3)), ("Round", (-3, 3)),
    ("Sigmoid", (-8, 8)), ("Tanh", (-4, 4)), ("Relu", (-3, 3)), ("Relu6", (-3, 9)),
    ("Elu", (-3, 3)), ("Selu", (-3, 3)), ("LeakyRelu", (-3, 3)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,domain", UNARY)
def test_unary(name, domain, dtype):
    x = sample((7, 33), dtype, *domain)
    compare(op(name), [x], dtype)


def test_round_halves_to_even_and_sign_of_zero():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0], np.float32)
    np.testing.assert_array_equal(compare(op("Round"), [x]), np.round(x))
    np.testing.assert_array_equal(compare(op("Sign"), [x]), np.sign(x))


def test_leaky_relu_alpha():
    x = sample((100,))
    compare(op("LeakyRelu", {"alpha": 0.05}), [x])
    compare(op("LeakyReluGrad", {"alpha": 0.05}), [sample((100,), seed=1), x])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["ReluGrad", "Relu6Grad", "EluGrad", "SeluGrad",
                                  "LeakyReluGrad"])
def test_activation_grads(name, dtype):
    g = sample((5, 40), dtype, seed=1)
    v = sample((5, 40), dtype, -3, 9, seed=2)
    compare(op(name), [g, v], dtype)


def test_activation_grad_shape_mismatch_is_an_error():
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="shape"):
        run_on("/gpu:0", op("ReluGrad"), [sample((2, 3)), sample((3, 2))])


# --- binary ops with broadcasting -------------------------------------------------------------

BINARY = ["AddV2", "Sub", "Mul", "RealDiv", "Div", "Maximum", "Minimum", "SquaredDifference",
          "Pow"]
SHAPES = [
    ((3, 4), (3, 4)),
    ((2, 3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((), (5,)),
    ((6,), ()),
    ((2, 1, 3, 1), (1, 4, 1, 5)),   # broadcasting alternates along four dimensions
    ((2, 3, 1, 4), (3, 5, 4)),
    ((0, 3), (1, 3)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("x_shape,y_shape", SHAPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasting(name, x_shape, y_shape, dtype):
    low = 0.1 if name == "Pow" else -3.0
    x = sample(x_shape, dtype, low, 3.0, seed=3)
    y = sample(y_shape, dtype, 0.5, 3.0, seed=4) if name in ("RealDiv", "Div", "Pow") \
        else sample(y_shape, dtype, seed=4)
    compare(op(name), [x, y], dtype)


def test_maximum_minimum_propagate_nan():
    x = np.array([1.0, np.nan, 3.0], np.float32)
    y = np.array([np.nan, 2.0, 1.0], np.float32)
    np.testing.assert_array_equal(compare(op("Maximum"), [x, y]), np.maximum(x, y))
    np.testing.assert_array_equal(compare(op("Minimum"), [x, y]), np.minimum(x, y))


def test_incompatible_broadcast_is_an_error():
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="ncompatible"):
        run_on("/gpu:0", op("AddV2"), [sample((2, 3)), sample((4,))])


@pytest.mark.parametrize("count", [1, 3, 8, 11])
def test_add_n(count):
    xs = [sample((4, 9), seed=i) for i in range(count)]
    compare(lambda *ts: apply_op("AddN", [list(ts)]).outputs[0], xs)


# --- Cast, Fill, ZerosLike, OnesLike ----------------------------------------------------------

CAST_SOURCES = {
    # Out-of-range floats saturate and NaN gives 0; integers narrow modulo 2^bits.
    np.float32: [-3e9, -2.7, -1.0, -0.0, 0.4, 1.5, 2.5, 200.0, 300.0, 3e9, np.nan, np.inf, -np.inf],
    np.int32: [-70000, -7, 0, 1, 255, 256, 70000],
}
CAST_SOURCES[np.float64] = CAST_SOURCES[np.float32]


@pytest.mark.parametrize("src", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("dst", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_])
def test_cast(src, dst):
    x = np.array(CAST_SOURCES[src], src)
    compare(lambda t: tf.cast(t, dst), [x])


HALF_SOURCES = {
    # Rounding to nearest even, overflow to infinity, NaN and signed zero kept.
    np.float32: [-7e4, -2.7, -1.0, -0.0, 0.1, 1.0 + 2.0 ** -11, 65504.0, 7e4, np.nan, np.inf],
    np.int32: [-70000, -2049, 0, 1, 2049, 65504, 70000],
}
HALF_SOURCES[np.float64] = HALF_SOURCES[np.float32] + [1e-300]


@pytest.mark.parametrize("truncate", [False, True])
@pytest.mark.parametrize("src", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("dst", ["float16", "bfloat16"])
def test_cast_to_16_bit_floats_matches_the_cpu_bit_for_bit(src, dst, truncate):
    x = np.array(HALF_SOURCES[src] + [1.0 + 2**-8 + 2**-9, 1.0 + 2**-10 + 2**-11], src)
    attrs = {"SrcT": tf.as_dtype(src), "DstT": getattr(tf, dst), "Truncate": truncate}
    cast = lambda t: apply_op("Cast", [t], attrs).outputs[0]  # noqa: E731
    cpu = np.asarray(run_on("/cpu:0", cast, [x]))
    gpu = np.asarray(run_on("/gpu:0", cast, [x]))
    assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    # Exact values (NaN where NaN) and the sign of zero; bfloat16 is fetched as float32.
    np.testing.assert_array_equal(gpu.astype(np.float64), cpu.astype(np.float64))
    np.testing.assert_array_equal(np.signbit(gpu), np.signbit(cpu))


@pytest.mark.parametrize("dtype", FLOATS)
def test_fill_zeros_ones_like(dtype):
    x = sample((3, 5), dtype)
    compare(lambda t: [op("ZerosLike")(t), op("OnesLike")(t)], [x], dtype)
    # Fill's dims and value are host-memory arguments.
    compare(op("Fill"), [np.array([2, 0, 3], np.int32), dtype(1.5)], dtype)
    out = compare(op("Fill"), [np.array([4, 3], np.int64), dtype(-2.25)], dtype)
    np.testing.assert_array_equal(out, np.full((4, 3), -2.25, dtype))


# --- reductions -------------------------------------------------------------------------------

REDUCTIONS = ["Sum", "Mean", "Prod", "Max", "Min"]
AXES = [
    ((17,), None),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), [0, 1]),
    ((2, 3, 4, 5), [0, 2]),
    ((2, 3, 4, 5), [1, 3]),
    ((2, 3, 4, 5), [-1]),
    ((2, 1, 4), [1]),          # only a size-1 axis: values unchanged
    ((4, 3), []),
    ((3, 0), [1]),             # empty rows: the identity (NaN for Mean)
    ((100003,), [0]),          # long row: split into chunks
    ((3, 70000), [1]),
    ((70000, 3), [0]),         # long columns: split into chunks too
    ((2, 5001, 3), [1]),
]


@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("shape,axes", AXES)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name, shape, axes, keep_dims):
    low, high = (0.9, 1.1) if name == "Prod" else (-3.0, 3.0)
    x = sample(shape, np.float32, low, high, seed=5)
    if axes is None:
        axes = list(range(len(shape)))
    axes_value = np.array(axes, np.int32)
    build = lambda t, a: apply_op(name, [t, a], {"keep_dims": keep_dims}).outputs[0]  # noqa: E731
    compare(build, [x, axes_value], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_float64(name):
    x = sample((6, 7, 8), np.float64, 0.9, 1.1, seed=6)
    build = lambda t, a: apply_op(name, [t, a]).outputs[0]  # noqa: E731
    compare(build, [x, np.array([0, 2], np.int64)], np.float64)


def test_max_propagates_nan():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    out = compare(op("Max"), [x, np.int32(1)])
    np.testing.assert_array_equal(out, [np.nan, 6.0])


def test_reduction_axis_out_of_range_is_an_error():
    with pytest.raises((tf.errors.InvalidArgumentError, ValueError), match="reduction"):
        run_on("/gpu:0", lambda t, a: apply_op("Sum", [t, a]).outputs[0],
               [sample((2, 3)), np.array([2], np.int32)])


# --- matrix products --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul(transpose_a, transpose_b, dtype):
    a = sample((5, 7) if not transpose_a else (7, 5), dtype, seed=7)
    b = sample((7, 3) if not transpose_b else (3, 7), dtype, seed=8)
    out = compare(lambda x, y: tf.matmul(x, y, transpose_a=transpose_a, transpose_b=transpose_b),
                  [a, b], dtype, rtol=1e-5 if dtype == np.float32 else None)
    expected = (a.T if transpose_a else a) @ (b.T if transpose_b else b)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_matmul_empty_inner_dimension_gives_zeros():
    out = compare(lambda x, y: tf.matmul(x, y), [np.zeros((3, 0), np.float32),
                                                  np.zeros((0, 4), np.float32)])
    np.testing.assert_array_equal(out, np.zeros((3, 4), np.float32))


def test_matmul_large():
    a, b = sample((257, 129), seed=9), sample((129, 65), seed=10)
    compare(lambda x, y: tf.matmul(x, y), [a, b], rtol=1e-4, atol=1e-4)


BATCH_SHAPES = [
    ((4, 3, 5), (4, 5, 2)),
    ((3, 5), (4, 5, 2)),           # x is one matrix shared by every batch
    ((4, 3, 5), (5, 2)),
    ((2, 1, 3, 5), (1, 4, 5, 2)),  # partial broadcast: one product per batch
    ((2, 3, 0), (2, 0, 4)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("adj_x", [False, True])
@pytest.mark.parametrize("adj_y", [False, True])
@pytest.mark.parametrize("x_shape,y_shape", BATCH_SHAPES)
def test_batch_matmul(x_shape, y_shape, adj_x, adj_y, dtype):
    def swap(shape, adj):
        return shape[:-2] + (shape[-1], shape[-2]) if adj else shape
    x = sample(swap(x_shape, adj_x), dtype, seed=11)
    y = sample(swap(y_shape, adj_y), dtype, seed=12)
    compare(lambda a, b: apply_op("BatchMatMulV2", [a, b], {"adj_x": adj_x, "adj_y": adj_y})
            .outputs[0], [x, y], dtype, rtol=1e-5 if dtype == np.float32 else None)


# --- metadata ops and variables ---------------------------------------------------------------

def test_shape_ops():
    x = sample((2, 3, 1))
    shape, axis = np.array([3, 2], np.int32), np.int32(0)
    out = compare(lambda t, s, d: [op("Reshape")(t, s), op("ExpandDims")(t, d),
                                   tf.squeeze(t, [2]), tf.identity(t), tf.stop_gradient(t),
                                   tf.shape(t), tf.size(t), tf.rank(t)],
                  [x, shape, axis])
    assert list(out[5]) == [2, 3, 1] and out[6] == 6 and out[7] == 3


def test_variable_on_gpu():
    tf.reset_default_graph()
    with tf.device("/gpu:0"):
        v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
        doubled = v * 2.0
        assign = v.assign(tf.ones((2, 3)) * 5.0)
    # Soft placement puts the constants (which have no GPU kernel) on the CPU.
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(doubled), np.arange(6).reshape(2, 3) * 2.0)
        sess.run(assign)
        np.testing.assert_array_equal(sess.run(v), np.full((2, 3), 5.0, np.float32))


def test_small_model_step_matches_cpu():
    """A forward pass and gradients through matmul, broadcasting add, relu and mean; the
    gradient's shape arithmetic (int32) runs on the CPU by soft placement."""
    x = sample((8, 5), seed=13)
    w = sample((5, 4), seed=14)
    b = sample((4,), seed=15)

    def build(xt, wt, bt):
        loss = tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(xt, wt) + bt)))
        return [loss] + tf.gradients(loss, [wt, bt])

    compare(build, [x, w, b], rtol=1e-5, atol=1e-6, soft_placement=True)
