"""tf.strings and the string ops of tf.io: thin wrappers over the C++ ops of src/ops/string."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import array_ops
from flowstone.ops import ragged_tensor as _ragged_tensor
from flowstone.ops.ragged_tensor import RaggedTensor
from flowstone.util.tf_export import tf_export


def _strings(value, name="input"):
    return _ops.convert_to_tensor(value, dtype=_dtypes.string, name=name)


def _unary(op_type, input, name, attrs=None):  # noqa: A002 - TensorFlow's argument name
    return _ops.apply_op(op_type, [_strings(input)], attrs or {}, name=name or op_type).outputs[0]


@tf_export("strings.join", "string_join")
def string_join(inputs, separator="", name=None):
    return _ops.apply_op("StringJoin", [[_strings(x) for x in inputs]],
                         {"separator": separator}, name=name or "StringJoin").outputs[0]


@tf_export("strings.length")
def string_length(input, name=None, unit="BYTE"):  # noqa: A002
    return _unary("StringLength", input, name, {"unit": unit})


@tf_export("strings.upper")
def upper(input, encoding="", name=None):  # noqa: A002
    return _unary("StringUpper", input, name, {"encoding": encoding})


@tf_export("strings.lower")
def lower(input, encoding="", name=None):  # noqa: A002
    return _unary("StringLower", input, name, {"encoding": encoding})


@tf_export("strings.strip", "string_strip")
def strip(input, name=None):  # noqa: A002
    """Each string without its leading and trailing ASCII whitespace."""
    return _unary("StringStrip", input, name)


@tf_export("strings.substr", "substr")
def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002
    pos = _ops.convert_to_tensor(pos, name="pos")
    len = _ops.convert_to_tensor(len, dtype=pos.dtype, name="len")  # noqa: A001
    return _ops.apply_op("Substr", [_strings(input), pos, len], {"unit": unit},
                         name=name or "Substr").outputs[0]


@tf_export("strings.to_number", "string_to_number")
def string_to_number(string_tensor, out_type=_dtypes.float32, name=None):
    return _ops.apply_op("StringToNumber", [_strings(string_tensor, "string_tensor")],
                         {"out_type": _dtypes.as_dtype(out_type)},
                         name=name or "StringToNumber").outputs[0]


@tf_export("strings.as_string", "as_string", "dtypes.as_string")
def as_string(input, precision=-1, scientific=False, shortest=False, width=-1,  # noqa: A002
              fill="", name=None):
    return _ops.apply_op("AsString", [_ops.convert_to_tensor(input, name="input")], {
        "precision": precision, "scientific": scientific, "shortest": shortest,
        "width": width, "fill": fill}, name=name or "AsString").outputs[0]


@tf_export("strings.reduce_join", "reduce_join")
def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None,
                reduction_indices=None, keepdims=None):
    if reduction_indices is not None:
        if axis is not None:
            raise ValueError("Can not specify both 'axis' and 'reduction_indices'.")
        axis = reduction_indices
    if keepdims is not None:
        if keep_dims is not None:
            raise ValueError("Can not specify both 'keep_dims' and 'keepdims'.")
        keep_dims = keepdims
    inputs = _strings(inputs, "inputs")
    if axis is None:
        if inputs.shape.ndims is None:
            raise ValueError("reduce_join over every axis needs an input of known rank.")
        axis = list(range(inputs.shape.ndims))
    axis = _ops.convert_to_tensor(axis, dtype=_dtypes.int32, name="reduction_indices")
    return _ops.apply_op("ReduceJoin", [inputs, axis], {
        "keep_dims": bool(keep_dims), "separator": separator}, name=name or "ReduceJoin").outputs[0]


@tf_export("strings.regex_replace", "regex_replace")
def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    # Python strings compile once, in the kernel (StaticRegexReplace), as in TensorFlow.
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        return _unary("StaticRegexReplace", input, name, {
            "pattern": _text(pattern), "rewrite": _text(rewrite),
            "replace_global": replace_global})
    return _ops.apply_op("RegexReplace", [_strings(input), _strings(pattern, "pattern"),
                                          _strings(rewrite, "rewrite")],
                         {"replace_global": replace_global}, name=name or "RegexReplace").outputs[0]


@tf_export("strings.regex_full_match")
def regex_full_match(input, pattern, name=None):  # noqa: A002
    if isinstance(pattern, (str, bytes)):
        return _unary("StaticRegexFullMatch", input, name, {"pattern": _text(pattern)})
    return _ops.apply_op("RegexFullMatch", [_strings(input), _strings(pattern, "pattern")],
                         name=name or "RegexFullMatch").outputs[0]


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


@tf_export("io.encode_base64", "encode_base64")
def encode_base64(input, pad=False, name=None):  # noqa: A002
    return _unary("EncodeBase64", input, name, {"pad": pad})


@tf_export("io.decode_base64", "decode_base64")
def decode_base64(input, name=None):  # noqa: A002
    return _unary("DecodeBase64", input, name)


@tf_export("io.decode_raw", "decode_raw")
def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None,
               bytes=None):  # noqa: A002 - TF1's argument name
    if input_bytes is None:
        input_bytes = bytes
    elif bytes is not None:
        raise ValueError("Can not specify both 'input_bytes' and 'bytes'.")
    return _ops.apply_op("DecodeRaw", [_strings(input_bytes, "bytes")], {
        "out_type": _dtypes.as_dtype(out_type), "little_endian": little_endian},
        name=name or "DecodeRaw").outputs[0]


@tf_export("io.decode_csv", "decode_csv")
def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """The columns of CSV `records`: one tensor per entry of `record_defaults`, whose dtype is the
    column's and whose value fills empty fields (an empty default makes the column required)."""
    defaults = [_ops.convert_to_tensor(d, name=f"record_defaults_{i}")
                for i, d in enumerate(record_defaults)]
    return _ops.apply_op("DecodeCSV", [_strings(records, "records"), defaults], {
        "field_delim": field_delim, "use_quote_delim": use_quote_delim, "na_value": na_value,
        "select_cols": list(select_cols or []),
    }, name=name or "DecodeCSV").outputs


@tf_export("strings.to_hash_bucket_fast", "string_to_hash_bucket_fast")
def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Each string's FarmHash Fingerprint64 modulo `num_buckets`: TensorFlow's buckets exactly."""
    return _unary("StringToHashBucketFast", input, name, {"num_buckets": int(num_buckets)})


@tf_export("strings.to_hash_bucket", "string_to_hash_bucket")
def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None,
                          input=None):  # noqa: A002 - TensorFlow's argument name
    """Each string's legacy TensorFlow Hash64 modulo `num_buckets` (TensorFlow's buckets)."""
    if string_tensor is None:
        string_tensor = input
    return _ops.apply_op("StringToHashBucket", [_strings(string_tensor, "string_tensor")],
                         {"num_buckets": int(num_buckets)},
                         name=name or "StringToHashBucket").outputs[0]


def _split(op_type, source, sep, attrs, result_type):
    """The split op on a vector of strings, as a SparseTensor, or as a RaggedTensor (with the
    input's outer dimensions around it) for result_type="RaggedTensor"."""
    if result_type not in ("SparseTensor", "RaggedTensor"):
        raise ValueError(f"result_type must be 'RaggedTensor' or 'SparseTensor', got "
                         f"{result_type!r}")
    if isinstance(source, RaggedTensor):  # each string split in place: one more dimension
        return source.with_flat_values(_split(op_type, source.flat_values, sep, attrs,
                                              "RaggedTensor"))
    source = _ops.convert_to_tensor(source, dtype=_dtypes.string, name="source")
    rank = source.shape.ndims
    if result_type == "SparseTensor":
        if rank is not None and rank > 1:
            raise ValueError(f"A SparseTensor split needs a vector of strings, got shape "
                             f"{source.shape}; use result_type='RaggedTensor'")
        return SparseTensor(*_ops.apply_op(op_type, [source, sep], attrs).outputs)
    if rank is None:
        raise ValueError("A RaggedTensor split needs input strings of known rank")
    indices, values, shape = _ops.apply_op(op_type, [array_ops.reshape(source, [-1]), sep],
                                           attrs).outputs
    rows = RaggedTensor.from_value_rowids(values, indices[:, 0], shape[0], validate=False)
    if rank == 0:
        return rows.values
    return _ragged_tensor.with_outer_dims(rows, source)


@tf_export("string_split")
def string_split(source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor",
                 name=None):
    """The strings of the vector `source` split at any character of `sep` (every byte when
    empty; default " "), empty tokens dropped unless skip_empty=False, as a SparseTensor
    [len(source), most tokens]."""
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'sep' and 'delimiter'")
    sep = " " if sep is None and delimiter is None else (sep if sep is not None else delimiter)
    with _ops.name_scope(name, "StringSplit"):
        return _split("StringSplit", source, _ops.convert_to_tensor(sep, dtype=_dtypes.string),
                      {"skip_empty": bool(skip_empty)}, result_type)


@tf_export("strings.split")
def string_split_v2(input=None, sep=None, maxsplit=-1, result_type="SparseTensor",  # noqa: A002
                    source=None, name=None):
    """The strings of the vector `input` split as Python's str.split(sep, maxsplit) splits them
    (at runs of whitespace when sep is None), as a SparseTensor [len(input), most tokens]."""
    if input is None:
        input = source  # noqa: A001 - TensorFlow's older argument name
    with _ops.name_scope(name, "StringSplit"):
        return _split("StringSplitV2", input, _ops.convert_to_tensor(sep or "",
                                                                     dtype=_dtypes.string),
                      {"maxsplit": int(maxsplit)}, result_type)


@tf_export("strings.unsorted_segment_join")
def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """The strings of `inputs` whose segment_ids are k joined with `separator`, in input order,
    for each k of [0, num_segments) (the empty string for a segment no id names)."""
    return _ops.apply_op("UnsortedSegmentJoin", [
        _ops.convert_to_tensor(inputs, dtype=_dtypes.string, name="inputs"),
        _ops.convert_to_tensor(segment_ids, name="segment_ids"),
        _ops.convert_to_tensor(num_segments, name="num_segments")],
        {"separator": separator}, name=name or "UnsortedSegmentJoin").outputs[0]
