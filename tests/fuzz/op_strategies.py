"""Hypothesis strategies that build adversarial calls of one op from its registry schema.

Nothing here names an op (but the two encoders that make valid images for the decoders): inputs,
list lengths, dtypes and attrs all come from `_C.op_def`, so an op registered tomorrow is fuzzed
with no edit. A call is a plain description (`Call`) that the worker turns into a graph; it prints
as something a person can read and paste into a test.

The schema does not say which inputs must agree (a filter's depth with an image's channels,
`size_splits` with a dimension), so calls drawn from it alone rarely reach the kernels of
convolutions, pools, pads or splits. Half the calls of an op with conformance cases
(tests/python/op_cases*.py) therefore start from one of those valid calls and mutate it a little
(a dimension, some values, an attr, a dtype), which reaches the kernel and its edges. The fused
products (ops with a `fused_ops` attr: _FusedConv2D, _FusedMatMul...) start from their cases
three calls in four, with a `fused_ops` list drawn from what their kernels accept (FUSED_OPS)
and `args` to match.
"""

import dataclasses
import os
import sys

import numpy as np
from hypothesis import strategies as st

from flowstone import _C
from flowstone.framework.ops import _attr_for_c

# Flowstone dtype enum values by name, and the numpy dtype that feeds each one (bfloat16 is fed
# as float32 and converted by the binding; resources are variable handles, not arrays).
DTYPE_ENUM = {name: info[0] for name, info in _C.DTYPES.items()}
DTYPE_NAME = {enum: name for name, enum in DTYPE_ENUM.items()}
NUMPY_DTYPE = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
    "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_,
    "complex64": np.complex64, "complex128": np.complex128, "string": object,
}
# Variables and other-dtype inputs draw from the real dtypes (the complex and string ones came
# later; leaving them out keeps what each recorded seed generates).
VALUE_DTYPES = sorted(d for d in NUMPY_DTYPE if not d.startswith("complex") and d != "string")

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
# Integers that break index, axis, size and shape arithmetic: signs, type limits, values whose
# products overflow int64 (2**32 squared), and the small ones valid calls use.
EDGE_INTS = [0, 1, 2, 3, -1, -2, 4, 7, 8, -3, 9, 16, 100, INT32_MAX, INT32_MIN, INT32_MAX + 1,
             2**32, 2**40, 2**62, INT64_MAX, INT64_MIN, INT64_MIN + 1]
SMALL_INTS = [0, 1, 2, 3, -1, -2, 4, 5]
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, float("nan"), float("inf"), float("-inf"),
               5e-324, 1e-310, 1e-40, 1.4e-45, 3.4e38, 1.7976931348623157e308, -1e300, 1e-8]
# Strings for string attrs: every value the registry's defaults use, the enumerations TF's ops
# take, and malformed ones.
KNOWN_STRINGS = ["SAME", "VALID", "EXPLICIT", "NHWC", "NCHW", "NDHWC", "NCDHW", "NWC", "NCW",
                 "CONSTANT", "REFLECT", "SYMMETRIC", "", "same", "x" * 300, "\x00", "NHWC\x00",
                 "é", "NHW", "NHWCC"]

# TensorFlow's fused products take a `fused_ops` list and, in `args`, the per-channel vectors its
# first entry reads. What their kernels accept (FusedEpilogue::Parse, src/ops/fused_epilogue.h):
# a bias or a batch norm, then at most one activation, or the activation alone.
FUSED_ATTR = "fused_ops"
FUSED_SCALES = {"BiasAdd": 1, "FusedBatchNorm": 4}  # -> vectors in args (bias; scale, offset,
FUSED_ACTIVATIONS = ["Relu", "Relu6", "Elu", "LeakyRelu"]  # mean, variance)
FUSED_OPS = ([[s] for s in FUSED_SCALES] + [[a] for a in FUSED_ACTIVATIONS] +
             [[s, a] for s in FUSED_SCALES for a in FUSED_ACTIVATIONS])
# Lists they reject: none, the wrong order, two of a kind, ops they do not fuse, malformed names.
BAD_FUSED_OPS = [[], ["Relu", "BiasAdd"], ["BiasAdd", "BiasAdd"], ["BiasAdd", "Relu", "Relu"],
                 ["FusedBatchNorm", "Relu", "Elu"], ["Sigmoid"], ["BiasAdd", "Tanh"],
                 ["biasadd"], ["BiasAdd\x00"], ["x" * 300]]

# Files that string inputs name, relative to the worker's directory (fuzz_worker.py writes them
# there: FUZZ_FILES' contents, and real TFRecords in RECORDS_FILE) for the readers, datasets and
# file ops. Ops that write files (WriteFile, summary writers) write into that directory too.
FUZZ_DIR = "fuzz_files"
RECORDS_FILE = "records.tfrecord"
FUZZ_FILES = {
    "truncated.tfrecord": b"\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00",
    "lines.txt": b"a,1,2.5\nb,\"q,\"\"x\",-3\n\n\xff\xfe,9223372036854775808,nan",
    "empty": b"",
    "garbage.bin": bytes(range(256)) * 3,
}
# A serialized tf.train.Example: feature "a", an Int64List [7].
EXAMPLE = b"\n\x0b\n\t\n\x01a\x12\x04\x1a\x02\x08\x07"
# Byte strings that break parsers, converters, regexes, codecs and path handling: empty, NUL,
# invalid UTF-8, numbers past every type's range, CSV quoting, base64 padding, regexes that do
# not compile or backtrack, image headers, long strings, and the fuzz files above.
EDGE_STRINGS = [
    b"", b"a", b"0", b"-1", b"1e400", b"-1e-400", b"nan", b"-inf", b"0x1F", b" 12 ", b"1_000",
    b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809", b"2147483648",
    b"\x00", b"a\x00b", b"\xff\xfe", b"\xc3", "\u00e9t\u00e9".encode(), b"\xf0\x9f\x98\x80",
    b"a,b,\"c,d\"", b"\"unterminated", b"\"\"\"", b",,,", b"a\nb", b"YWJj", b"YWJ", b"====",
    b"-_-_",
    b"(a+)+$", b"[", b"(?P<x>", b"\\", b"\\1\\9", b"$0", b"(a|aa)*c", b".*", b"*",
    b"\x89PNG\r\n\x1a\n",
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x7f\xff\xff\xff\x7f\xff\xff\xff\x08\x06",
    b"\xff\xd8\xff\xe0\x00\x10JFIF", b"\xff\xd8\xff\xc0\x00\x11\x08\xff\xff\xff\xff\x03",
    b"GIF89a", b"BM", b"\n\x03\n\x01a", b"\n\xff\xff\xff\xff\x0f", EXAMPLE, b"x" * 5000,
    b"/", b".", b"..", b"/nonexistent/dir/file", FUZZ_DIR.encode() + b"/*",
] + [f"{FUZZ_DIR}/{name}".encode() for name in [*FUZZ_FILES, RECORDS_FILE]]


def _encoded_images():
    """A small PNG and JPEG from Flowstone's encoders, so that decoders see valid images (and,
    mutated, nearly valid ones)."""
    graph = _C.Graph()
    pixels = graph.add_node("Const", "pixels", [], [], {
        "value": np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3),
        "dtype": DTYPE_ENUM["uint8"]}, "", "")
    encoded = [graph.add_node(op, op, [(pixels, 0)], [], {}, "", "")
               for op in ("EncodePng", "EncodeJpeg")]
    session = _C.Session.create(graph, {})
    try:
        return list(session.make_callable([], [(node, 0) for node in encoded], [])())
    finally:
        session.close()


EDGE_STRINGS += _encoded_images()

# Int inputs that ops read as an output's shape (random ops, Fill) or as a stateless op's seed
# pair: half of them are a vector of small non-negative dims or a pair, so that those kernels run.
_DIMS = st.lists(st.integers(0, 4), max_size=4)
SIZED_INPUTS = {"shape": _DIMS, "dims": _DIMS,
                "seed": st.lists(st.integers(INT32_MIN, INT32_MAX), min_size=2, max_size=2)}

# Element counts stay small so that a call is fast; shapes of attrs and of int inputs that ops
# read as shapes are not bounded (that is where the overflow bugs live).
MAX_ELEMENTS = 4096
MAX_RANK = 8


@dataclasses.dataclass
class Input:
    """One input of a call: a constant, a fed placeholder (whose declared shape may be unknown or
    partial) or a variable handle (`dtype` is the variable's; `value` its initial value or None
    for an uninitialized variable)."""
    # "const", "feed", "variable", "tensorlist" (of `value`'s rows), "unfed", or "op": output 0
    # of `call`, a call of an op that makes a resource or variant (a queue, a reader, a dataset)
    kind: str
    dtype: str
    value: np.ndarray
    declared_shape: object = None  # for feeds: None (unknown rank) or a list with None dims
    call: object = None

    def __repr__(self):
        if self.kind == "op":
            return f"op({self.call!r})"
        value = self.value
        if value is not None:
            value = np.array2string(np.asarray(value), threshold=40, max_line_width=200)
            value = f"{value} shape={tuple(np.shape(self.value))}"
        extra = f", declared_shape={self.declared_shape}" if self.kind == "feed" else ""
        return f"{self.kind}({self.dtype}, {value}{extra})"


@dataclasses.dataclass
class Call:
    op: str
    inputs: list  # per flat input: Input
    attrs: dict

    def __repr__(self):
        attrs = {k: (DTYPE_NAME.get(v, v) if isinstance(v, int) and k in self._type_attrs else v)
                 for k, v in self.attrs.items()}
        return f"{self.op}(inputs={self.inputs!r}, attrs={attrs!r})"

    @property
    def _type_attrs(self):
        return {name for name, type_name, _ in _C.op_def(self.op)["attrs"] if type_name == "type"}


def _shape_pool():
    """Shapes of rank 0..8 with zero-sized dims, at most MAX_ELEMENTS elements each."""
    rng = np.random.default_rng(0)
    shapes = {(), (0,), (1,), (3,), (0, 3), (2, 3), (3, 0, 2), (1, 1, 1, 1)}
    while len(shapes) < 400:
        rank = int(rng.choice([1, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8]))
        dims = tuple(int(d) for d in rng.choice([0, 1, 1, 2, 2, 3, 4, 5, 7], size=rank))
        if np.prod(dims) <= MAX_ELEMENTS:
            shapes.add(dims)
    return sorted(shapes, key=lambda s: (len(s), s))


SHAPES = st.sampled_from(_shape_pool())
SEEDS = st.integers(0, 2**32 - 1)
EDGE_INT = st.one_of(st.sampled_from(EDGE_INTS), st.integers(INT64_MIN, INT64_MAX))
SMALL_OR_EDGE_INT = st.sampled_from(SMALL_INTS * 3 + EDGE_INTS)
VALUE_KINDS = ["small", "small", "edge", "random", "constant"]


def array_values(dtype, shape, seed):
    """An array of `shape` filled by numpy from a seed that hypothesis drew: small values,
    edge values, random bit patterns or one edge value everywhere (drawing thousands of
    elements one by one through hypothesis would be slow)."""
    np_dtype = NUMPY_DTYPE[dtype]
    rng = np.random.default_rng(seed)
    kind = VALUE_KINDS[seed % len(VALUE_KINDS)]
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype == "string":
        return string_values(shape, rng, kind)
    if dtype in ("complex64", "complex128"):  # real and imaginary parts drawn as float64s
        real = array_values("float64", shape, seed)
        imag = array_values("float64", shape, seed // len(VALUE_KINDS))
        with np.errstate(over="ignore", invalid="ignore"):
            return (real + 1j * imag).astype(np_dtype)
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        pool = {"small": [0.0, 1.0, -1.0, 0.5, 2.0, 3.0], "edge": EDGE_FLOATS,
                "constant": [EDGE_FLOATS[seed % len(EDGE_FLOATS)]]}.get(kind)
        with np.errstate(over="ignore"):
            if pool is None:  # random: any bit pattern, so also NaN payloads and denormals
                bits = rng.integers(0, 2**64 - 1, size=shape, dtype=np.uint64, endpoint=True)
                return bits.view(np.float64).astype(np_dtype)
            return rng.choice(np.array(pool, np.float64), size=shape).astype(np_dtype)
    info = np.iinfo(np_dtype)
    pool = {"small": SMALL_INTS, "edge": EDGE_INTS,
            "constant": [EDGE_INTS[seed % len(EDGE_INTS)]]}.get(kind)
    if pool is None:
        return rng.integers(info.min, info.max, size=shape, dtype=np_dtype, endpoint=True)
    # Wrap to the dtype's range the way a C cast does, so INT_MIN and friends survive.
    wrapped = np.array([v % (1 << info.bits) for v in pool], np.uint64).astype(np_dtype)
    return rng.choice(wrapped, size=shape)


def string_values(shape, rng, kind):
    """An object array of bytes: edge strings, random bytes of random lengths, or one edge
    string everywhere."""
    count = int(np.prod(shape))
    if kind == "random":
        values = [rng.bytes(int(rng.choice([0, 1, 3, 8, 64, 700]))) for _ in range(count)]
    elif kind == "constant":
        values = [EDGE_STRINGS[int(rng.integers(len(EDGE_STRINGS)))]] * count
    else:
        values = [EDGE_STRINGS[i] for i in rng.integers(len(EDGE_STRINGS), size=count)]
    out = np.empty(count, dtype=object)
    out[:] = values
    out = out.reshape(shape)
    return mutate_strings(out, rng) if kind == "edge" else out


def mutate_strings(values, rng):
    """`values` with one element's bytes changed: a byte flipped, the string cut or doubled, or an
    edge string in its place (a valid PNG, CSV record or regex a little broken)."""
    flat = values.reshape(-1).copy()
    if not flat.size:
        return values
    j = int(rng.integers(flat.size))
    data = bytearray(flat[j] if isinstance(flat[j], bytes) else str(flat[j]).encode())
    how = int(rng.integers(4))
    if how == 0 and data:
        data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
    elif how == 1:
        del data[int(rng.integers(len(data) + 1)):]
    elif how == 2:
        data = data + data
    else:
        data = bytearray(EDGE_STRINGS[int(rng.integers(len(EDGE_STRINGS)))])
    flat[j] = bytes(data)
    return flat.reshape(values.shape)


def dtype_name(value):
    """The Flowstone dtype name of a numpy value: object arrays hold strings."""
    return "string" if value.dtype == object else value.dtype.name


def index_like_shapes(base):
    """Shapes an int input has when it holds axes, sizes, multiples or paddings for a tensor of
    shape `base`: a scalar, one per dim, a pair per dim, or `base` itself."""
    rank = len(base)
    return [(), (1,), (rank,), (rank, 2), base, (max(rank - 1, 0),)]


@st.composite
def tensors(draw, dtype, base_shape, position, arg_name="", variable_dtype=None):
    """One input. Float inputs after the first usually share the first one's shape; int inputs
    usually have the shape of an axis, a shape or paddings for it, and often small values. Hypothesis draws a shape
    and a seed; the seed's bits decide the rest (fewer draws make a call cheaper to generate).
    With `variable_dtype`, a resource input is half the time an initialized variable of that
    dtype and of the first input's shape."""
    seed = draw(SEEDS)
    shape = draw(SHAPES)
    if dtype == "resource" and variable_dtype and draw(st.booleans()):
        shape = base_shape if base_shape is not None else shape
        return Input("variable", variable_dtype, array_values(variable_dtype, shape, seed))
    if dtype in ("resource", "variant") and seed % 4 >= (1 if dtype == "resource" else 2) \
            and producers(dtype):
        # Usually a producer whose name shares a word with the input's (a queue for queue_handle,
        # a reader for reader_handle, a dataset for input_dataset), else any.
        matching = producers(dtype, arg_name)
        op = draw(st.sampled_from(matching if matching and seed % 8 < 6 else producers(dtype)))
        return Input("op", dtype, None, call=draw(calls(op)))
    if dtype == "variant" and seed % 2:
        # A real tensor list, built in the graph from a float32 tensor (TensorListFromTensor).
        return Input("tensorlist", "float32", array_values("float32", shape or (1,), seed))
    if dtype not in NUMPY_DTYPE and dtype != "resource":
        # No numpy value exists: an unfed placeholder, so the graph checks run and the run fails
        # with a Status ("You must feed a value").
        return Input("unfed", dtype, None, None)
    if dtype == "resource":
        var_dtype = VALUE_DTYPES[seed % len(VALUE_DTYPES)]
        return Input("variable", var_dtype, array_values(var_dtype, shape, seed)
                     if seed % 3 else None)
    if (seed >> 8) % 3:
        if dtype in ("int32", "int64"):  # also a first input: RandomUniform's, Fill's shape
            shapes = index_like_shapes(base_shape if base_shape is not None else shape)
            shape = shapes[(seed >> 10) % len(shapes)]
        elif base_shape is not None:
            shape = base_shape
    value = array_values(dtype, shape, seed)
    if dtype in ("int32", "int64") and (seed >> 12) % 2:
        # Small: valid axes and sizes (np.asarray: arithmetic makes a 0-d array a numpy scalar,
        # which a Const does not take).
        value = np.asarray(value % 4 - (seed % 3 == 0)).astype(value.dtype)
    if dtype in ("int32", "int64") and arg_name in SIZED_INPUTS and draw(st.booleans()):
        value = np.array(draw(SIZED_INPUTS[arg_name]), NUMPY_DTYPE[dtype])
    kind = ["const", "feed-unknown", "feed-exact", "feed-partial"][(seed >> 14) % 4]
    if dtype == "bfloat16":  # no numpy dtype: it can only be fed (as float32)
        kind = "feed-unknown"
    if kind == "const":
        return Input("const", dtype, value)
    declared = {"feed-unknown": None, "feed-exact": list(shape),
                "feed-partial": [None if (seed >> (16 + i)) & 1 else d
                                 for i, d in enumerate(shape)]}
    return Input("feed", dtype, value, declared[kind])


SHAPE_ATTRS = st.one_of(
    st.none(), st.sampled_from([[], [2, 3], [None, 3], [-1], [0, 5], [2**32, 2**32, 2**32]]),
    st.lists(st.one_of(st.sampled_from([None, 0, 1, 2, 3, -1, -2]), EDGE_INT),
             max_size=MAX_RANK + 2))
WRONG_TYPES = st.sampled_from(["a string", 1.5, -7, [1, "x"], [[1]], True, {"k": 1}, 2**70,
                               -2**70, [2**70], b"bytes", None])
ALL_DTYPES = list(DTYPE_ENUM.values())
WELL_TYPED = {
    "int": SMALL_OR_EDGE_INT,
    "float": st.one_of(st.sampled_from(EDGE_FLOATS), st.floats()),
    "bool": st.booleans(),
    "string": st.sampled_from(KNOWN_STRINGS),
    "shape": SHAPE_ATTRS,
    "tensor": st.tuples(st.sampled_from(VALUE_DTYPES[1:]), SHAPES, SEEDS).map(
        lambda t: array_values(*t)),
    "list(int)": st.one_of(st.lists(st.sampled_from(SMALL_INTS), max_size=8),
                           st.lists(SMALL_OR_EDGE_INT, max_size=10)),
    "list(float)": st.lists(st.sampled_from(EDGE_FLOATS), max_size=6),
    "list(type)": st.lists(st.sampled_from(ALL_DTYPES + [0, 99]), max_size=4),
    "list(shape)": st.lists(SHAPE_ATTRS, max_size=4),
    "list(string)": st.lists(st.sampled_from(KNOWN_STRINGS), max_size=4),
    # Function attrs name a function in the graph's library; a fresh graph has none.
    "func": st.sampled_from(["", "no_such_function", "x" * 300, "\x00"]),
}


def attr_values(type_name, default, allowed_dtypes):
    """Values for an attr of `type_name`: the default, well-typed edge values, or (one time in
    five) a value of the wrong type."""
    if type_name == "type":
        well_typed = st.sampled_from((allowed_dtypes or ALL_DTYPES) * 3 + ALL_DTYPES +
                                     [0, -1, 99, 2**40])
    else:
        well_typed = WELL_TYPED[type_name]
    choices = [well_typed, well_typed, well_typed, WRONG_TYPES]
    if default is not None:
        choices.append(st.just(default))
    return st.one_of(*choices)


_PRODUCERS = {}


def producers(dtype, arg_name=None):
    """The ops whose first output is a `dtype` (resource or variant) and that take no resource or
    variant input: variables, queues, readers, iterators, source datasets, tensor lists. With
    `arg_name`, those whose name contains one of its words (other than handle and input)."""
    if arg_name is not None:
        words = [w for w in arg_name.lower().split("_") if w not in ("handle", "input", "")]
        return [op for op in producers(dtype) if any(w in op.lower() for w in words)]
    if dtype not in _PRODUCERS:
        wanted, inner = DTYPE_ENUM[dtype], {DTYPE_ENUM["resource"], DTYPE_ENUM["variant"]}
        found = []
        for op in _C.op_names():
            op_def = _C.op_def(op)
            outputs = op_def["output_types"]
            if (outputs and outputs[0][1] == wanted and
                    not any(arg[1] in inner for arg in op_def["input_types"])):
                found.append(op)
        _PRODUCERS[dtype] = sorted(found)
    return _PRODUCERS[dtype]


# A lookup table's key and value dtypes, by the names its consumers give them (LookupTableFindV2's
# Tin and Tout, InitializeTableV2's Tkey and Tval, LookupTableExportV2's Tkeys and Tvalues).
PRODUCER_TYPE_ALIASES = {"key_dtype": ("Tin", "Tkey", "Tkeys"),
                         "value_dtype": ("Tout", "Tval", "Tvalues")}


def align_producer(call, attrs, listed_types, types):
    """Makes the call of an input's producer agree with the consumer's: its type and shape list
    attrs (component_types, output_types, output_shapes) copied from the consumer's attrs of the
    same name, or else set to the dtypes of the consumer's type-list inputs (a queue's components
    for QueueEnqueueV2); a table's key_dtype and value_dtype from the consumer's type attrs
    (`types`: set, or carried by its inputs)."""
    for name, type_name, _ in _C.op_def(call.op)["attrs"]:
        if type_name in ("list(type)", "list(shape)") and name in attrs:
            call.attrs[name] = attrs[name]
        elif type_name == "list(type)" and listed_types:
            call.attrs[name] = list(listed_types)
        elif type_name == "type":
            found = [types[a] for a in PRODUCER_TYPE_ALIASES.get(name, ()) if a in types]
            if found:
                call.attrs[name] = found[0]


_CALLS = {}


def calls(op):
    """The strategy of adversarial calls of `op`, built once per op from its schema."""
    if op not in _CALLS:
        _CALLS[op] = _calls(op)
    return _CALLS[op]


def _calls(op):
    schema = _schema_calls(op)
    cases = conformance_cases().get(op)
    if not cases:
        return schema
    mutated = mutated_cases(op, cases)
    if _has_attr(op, FUSED_ATTR):
        # Shapes drawn from the schema almost never make a valid convolution or product.
        return st.sampled_from([mutated, mutated, mutated, schema]).flatmap(lambda s: s)
    return st.one_of(schema, mutated)


def _has_attr(op, attr):
    return any(name == attr for name, _, _ in _C.op_def(op)["attrs"])


_CASES = None


def conformance_cases():
    """The conformance cases that are plain calls (inputs and attrs, no builder), by op; and
    those of the fused products, whose builder only groups the inputs after the first two into
    `args` (the fuzzer passes them flat, with `num_args` set: fused_variant)."""
    global _CASES
    if _CASES is None:
        tests_python = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
        sys.path.insert(0, tests_python)
        try:
            from op_cases import CASES
        finally:
            sys.path.remove(tests_python)
        _CASES = {}
        for case in CASES:
            dtypes = [dtype_name(np.asarray(x)) for x in case.inputs]
            plain = case.build is None or _has_attr(case.op, FUSED_ATTR)
            if plain and all(d in NUMPY_DTYPE for d in dtypes):
                _CASES.setdefault(case.op, []).append(case)
    return _CASES


# How a conformance case is changed: values, a dimension, an attr or a dtype; or not at all
# (a valid call still runs the kernel on the feed path with another declared shape).
MUTATIONS = ["none", "values", "int_nudge", "dim_zero", "dim_grow", "dim_drop", "dim_add",
             "attr", "attr", "dtype"]


def _edge_attr(value, seed):
    """A value near `value`'s edges, of the same type where it has one."""
    rng = np.random.default_rng(seed)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return int(rng.choice([value + 1, value - 1, -value - 1, 0, 2**31, 2**62, -2**63]))
    if isinstance(value, float):
        return float(rng.choice(EDGE_FLOATS))
    if isinstance(value, str):
        return str(rng.choice(KNOWN_STRINGS))
    if isinstance(value, list) and value:
        value = list(value)
        i = int(rng.integers(len(value)))
        value[i] = _edge_attr(value[i], seed + 1)
        return value
    return value


def fused_variant(draw, op, values, attrs):
    """A fused product's case with another `fused_ops` list, usually one its kernel accepts, and
    `args` to match: vectors of the case's channel count (the length of its first arg) in the
    input's dtype, a positive variance for a batch norm. A case without args keeps to the
    activations alone."""
    channels = len(values[2]) if len(values) > 2 else None
    valid = FUSED_OPS if channels else [[a] for a in FUSED_ACTIVATIONS]
    fused_ops = draw(st.sampled_from(valid * 4 + BAD_FUSED_OPS))
    if fused_ops in valid:
        count = FUSED_SCALES.get(fused_ops[0], 0)
    else:
        count = draw(st.sampled_from([0, 1, 4]))
    seed = draw(SEEDS)
    rng = np.random.default_rng(seed)
    if seed % 2:  # edge values: NaN, inf, denormals, a negative variance
        args = [array_values(dtype_name(values[0]), (channels or 1,), seed + k)
                for k in range(count)]
    else:
        args = [rng.uniform(-1, 1, channels or 1).astype(values[0].dtype) for _ in range(count)]
        if count == 4:
            args[3] = np.abs(args[3]) + 0.5
    attrs = dict(attrs, **{FUSED_ATTR: fused_ops, "num_args": count})
    if _has_attr(op, "TArgs"):  # _FusedConv2D's args are a list of any types
        attrs["TArgs"] = [DTYPE_ENUM[dtype_name(a)] for a in args]
    return values[:2] + args, attrs


def mutated_cases(op, cases):
    """Calls that start from a conformance case of `op` and change one or two things."""
    fused = _has_attr(op, FUSED_ATTR)

    @st.composite
    def draw(draw):
        case = draw(st.sampled_from(cases))
        values = [np.array(x) for x in case.inputs]
        attrs = {k: _attr_for_c(v) for k, v in case.attrs.items() if v is not None}
        if fused:  # a changed fused_ops list and args are already a mutation
            values, attrs = fused_variant(draw, op, values, attrs)
        for _ in range(draw(st.sampled_from([0, 0, 1, 2] if fused else [1, 1, 2]))):
            mutation, seed = draw(st.sampled_from(MUTATIONS)), draw(SEEDS)
            i = seed % len(values) if values else 0
            rng = np.random.default_rng(seed)
            if not values and mutation not in ("attr", "none"):
                continue
            if mutation == "values" and values[i].dtype == object and seed % 2:
                values[i] = mutate_strings(values[i], rng)
            elif mutation == "values":
                values[i] = array_values(dtype_name(values[i]), values[i].shape, seed)
            elif mutation == "int_nudge" and values[i].dtype.kind in "iu" and values[i].size:
                flat = values[i].reshape(-1).copy()
                j = int(rng.integers(flat.size))
                info = np.iinfo(flat.dtype)  # wraps around like a C cast
                nudged = int(flat[j]) + int(rng.choice([-1, 1, 2**31 - 1]))
                flat[j] = (nudged - info.min) % (int(info.max) - info.min + 1) + info.min
                values[i] = flat.reshape(values[i].shape)
            elif mutation.startswith("dim_"):
                shape = list(values[i].shape)
                if mutation == "dim_add" or not shape:
                    shape.insert(int(rng.integers(len(shape) + 1)), 1)
                elif mutation == "dim_drop":
                    del shape[int(rng.integers(len(shape)))]
                else:
                    j = int(rng.integers(len(shape)))
                    shape[j] = 0 if mutation == "dim_zero" else shape[j] + 1
                if int(np.prod(shape)) <= MAX_ELEMENTS:
                    values[i] = array_values(dtype_name(values[i]), tuple(shape), seed)
            elif mutation == "attr" and attrs:
                name = sorted(attrs)[seed % len(attrs)]
                attrs[name] = _edge_attr(attrs[name], seed)
            elif mutation == "dtype" and values[i].dtype == object:  # strings become numbers
                values[i] = array_values(VALUE_DTYPES[seed % len(VALUE_DTYPES)],
                                         values[i].shape, seed)
            elif mutation == "dtype":  # to a real dtype: a complex value keeps its real part
                values[i] = np.real(values[i]).astype(
                    NUMPY_DTYPE[VALUE_DTYPES[seed % len(VALUE_DTYPES)]])
        inputs = []
        for value in values:
            kind = draw(st.sampled_from(["const", "feed-exact", "feed-unknown"]))
            dtype = dtype_name(value)
            if kind == "const":
                inputs.append(Input("const", dtype, value))
            else:
                declared = list(value.shape) if kind == "feed-exact" else None
                inputs.append(Input("feed", dtype, value, declared))
        return Call(op, inputs, attrs)

    return draw()


def _schema_calls(op):
    op_def = _C.op_def(op)
    if op_def is None:
        raise ValueError(f"{op} is not a registered op")
    attr_types = {name: type_name for name, type_name, _ in op_def["attrs"]}
    defaults = op_def["attr_defaults"]
    allowed = op_def["allowed_types"]
    number_attrs = {number for _, _, _, number, _ in op_def["input_types"] if number}
    # Type attrs that an input carries; the others (a table's key_dtype, an export's Tkeys) must
    # be set for the call to build at all.
    input_type_attrs = {type_attr for _, _, type_attr, _, _ in op_def["input_types"] if type_attr}
    type_choices = {name: st.sampled_from(allowed[name] or ALL_DTYPES)
                    for name, type_name in attr_types.items() if type_name == "type"}
    # One input in ten gets another dtype than its type attr says (mismatched dtypes).
    mismatch = st.sampled_from([None] * 9 + ["other"])
    other_dtype = st.sampled_from(VALUE_DTYPES)
    list_length = st.sampled_from([0, 1, 1, 2, 2, 3, 5])
    list_item_dtype = st.sampled_from(VALUE_DTYPES + ["string", "string", "complex64"])
    # Per attr, two ways to draw it. Adversarial: left to the default (or to inference from the
    # inputs), or any value, wrong types included. Gentle: left to the default where there is
    # one, else a well-typed value with small numbers, so that the call often reaches the kernel.
    adversarial, gentle = {}, {}
    for name, type_name in attr_types.items():
        value = attr_values(type_name, defaults.get(name), allowed.get(name))
        if name == FUSED_ATTR:  # its vocabulary, not random strings
            value = st.one_of(st.sampled_from(FUSED_OPS + BAD_FUSED_OPS), value)
        inferred = ((type_name == "type" and name in input_type_attrs) or name in number_attrs or
                    name in defaults)
        adversarial[name] = st.one_of(st.just(_UNSET), value) if inferred else value
        if name == FUSED_ATTR:
            gentle[name] = st.sampled_from(FUSED_OPS)
        elif inferred:
            gentle[name] = st.just(_UNSET)
        elif type_name == "type":
            gentle[name] = type_choices[name]
        elif type_name == "int":
            gentle[name] = st.sampled_from(SMALL_INTS)
        elif type_name == "list(int)":  # strides, ksize, dilations: often all ones
            gentle[name] = st.one_of(st.sampled_from([[1] * k for k in range(6)]),
                                     st.lists(st.sampled_from([1, 1, 1, 2, 0, -1]), max_size=5))
        else:
            gentle[name] = WELL_TYPED.get(type_name, value)
    func_attrs = [name for name, type_name in attr_types.items() if type_name == "func"]
    type_lists = [name for name, type_name in attr_types.items() if type_name == "list(type)"]
    shape_lists = [name for name, type_name in attr_types.items() if type_name == "list(shape)"]
    extra_attr = st.sampled_from([False] * 49 + [True])
    gentle_call = st.sampled_from([True, True, True, False, False])
    # An op that updates or reads variables (its first resource input is one, or no producer
    # matches its name: an optimizer's var, m and v, ReadVariableOp's resource) gets, in gentle
    # calls, initialized variables of its type attr's dtype and the first input's shape.
    resources = [arg[0] for arg in op_def["input_types"] if arg[1] == DTYPE_ENUM["resource"]]
    matching = producers("resource", resources[0]) if resources else []
    takes_variables = bool(resources) and (not matching or "VarHandleOp" in matching)

    @st.composite
    def draw_call(draw):
        is_gentle = draw(gentle_call)
        chosen_types = {name: draw(s) for name, s in type_choices.items()}
        lengths = {name: draw(list_length) for name in number_attrs}
        variable_dtype = None
        if is_gentle and takes_variables and chosen_types:
            variable_dtype = DTYPE_NAME.get(next(iter(chosen_types.values())))
            variable_dtype = variable_dtype if variable_dtype in VALUE_DTYPES else None
        inputs, base_shape, listed, types = [], None, {}, {}
        for arg_name, fixed, type_attr, number_attr, list_attr in op_def["input_types"]:
            if list_attr:  # a list of any dtypes (a queue's components): its attr matches them
                listed[list_attr] = [draw(list_item_dtype) for _ in range(draw(list_length))]
            for i in range(len(listed[list_attr]) if list_attr else
                           lengths[number_attr] if number_attr else 1):
                dtype = (listed[list_attr][i] if list_attr else
                         DTYPE_NAME[fixed or chosen_types.get(type_attr, DTYPE_ENUM["float32"])])
                if not is_gentle and draw(mismatch):
                    dtype = draw(other_dtype)
                item = draw(tensors(dtype, base_shape, len(inputs), arg_name, variable_dtype))
                if type_attr and item.kind != "tensorlist":
                    types.setdefault(type_attr, DTYPE_ENUM[item.dtype])
                if base_shape is None and item.value is not None:
                    base_shape = tuple(np.shape(item.value))
                inputs.append(item)
        attrs = {}
        for name, strategy in (gentle if is_gentle else adversarial).items():
            value = draw(strategy)
            if value is not _UNSET:
                attrs[name] = value
        for name, dtypes in listed.items():
            if is_gentle or draw(st.booleans()):
                attrs[name] = [DTYPE_ENUM[d] for d in dtypes]
        if is_gentle and len(type_lists) == 1 and isinstance(attrs.get(type_lists[0]), list):
            # One shape per dtype (a dataset's output_types and output_shapes), unknown.
            for name in shape_lists:
                if draw(st.booleans()):
                    attrs[name] = [None] * len(attrs[type_lists[0]])
        listed_types = [DTYPE_ENUM[d] for dtypes in listed.values() for d in dtypes]
        types.update({name: value for name, value in attrs.items()
                      if attr_types.get(name) == "type" and isinstance(value, int)})
        for item in inputs:
            if item.kind == "op":
                align_producer(item.call, attrs, listed_types, types)
        if func_attrs and draw(st.booleans()):
            attrs.update(library_functions(op_def, func_attrs, inputs, draw(st.sampled_from([0, 1]))))
        if not is_gentle and draw(extra_attr):
            attrs["not_an_attr_of_this_op"] = 1
        return Call(op, inputs, attrs)

    return draw_call()


def library_functions(op_def, func_attrs, inputs, skip):
    """Func attrs naming functions the worker adds to the graph's library (fuzz_worker.py
    add_library_function): a loop condition (`cond`) returns false, every other function
    returns its arguments, which are the call's inputs after the first `skip` (If's condition).
    The list(type) attrs are set to match, so the call can reach the kernel."""
    types = [item.dtype if item.kind != "tensorlist" else "variant" for item in inputs[skip:]]
    signature = "-".join(types)
    attrs = {name: f"fuzz_{'false' if name == 'cond' else 'identity'}_{signature}"
             for name in func_attrs}
    enums = [DTYPE_ENUM[t] for t in types]
    for name, type_name, _ in op_def["attrs"]:
        if type_name == "list(type)" and name in ("T", "Tin", "Tout"):
            attrs[name] = enums
    return attrs


class _Unset:
    def __repr__(self):
        return "<unset>"


_UNSET = _Unset()
