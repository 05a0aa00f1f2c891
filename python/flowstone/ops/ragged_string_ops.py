"""The string ops whose results are ragged: tf.strings.unicode_decode / _split (with offsets),
unicode_encode, bytes_split and ngrams, and the plain unicode_transcode, unicode_script and
to_hash_bucket_strong. The kernels are src/ops/string/unicode_ops.cc and ngram_hash_ops.cc; this
module applies them to the flat strings and puts the input's dimensions back around the result
(a scalar string gives a Tensor, an N-d one a RaggedTensor with N uniform or ragged outer
dimensions)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, reduction_ops
from flowstone.ops import ragged_tensor as _rt
from flowstone.ops.ragged_tensor import RaggedTensor
from flowstone.util.tf_export import tf_export


def _per_string(input, fn, name):  # noqa: A002 - TensorFlow's argument name
    """fn(flat vector of strings) -> a RaggedTensor (or a tuple of them) with a row per string,
    put back into the shape of `input`."""
    if isinstance(input, RaggedTensor):
        out = fn(input.flat_values)
        return tuple(input.with_flat_values(o) for o in out) if isinstance(out, tuple) else \
            input.with_flat_values(out)
    strings = _ops.convert_to_tensor(input, dtype=_dtypes.string, name=name)
    rank = strings.shape.ndims
    if rank is None:
        raise ValueError("Flowstone needs the rank of the input strings (set_shape it)")
    out = fn(array_ops.reshape(strings, [-1]))
    if rank == 0:
        return tuple(o.values for o in out) if isinstance(out, tuple) else out.values
    return tuple(_rt.with_outer_dims(o, strings) for o in out) if isinstance(out, tuple) else \
        _rt.with_outer_dims(out, strings)


def _ragged(splits, values):
    return RaggedTensor.from_row_splits(values, splits, validate=False)


def _decode_attrs(input_encoding, errors, replacement_char, replace_control_characters):
    return {"input_encoding": input_encoding, "errors": errors,
            "replacement_char": int(replacement_char),
            "replace_control_characters": bool(replace_control_characters)}


@tf_export("strings.unicode_decode")
def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """The code points of each string: a RaggedTensor with one more (ragged) dimension."""
    attrs = _decode_attrs(input_encoding, errors, replacement_char, replace_control_characters)
    with _ops.name_scope(name, "UnicodeDecode"):
        def decode(flat):
            splits, chars = _ops.apply_op("UnicodeDecode", [flat], attrs).outputs
            return _ragged(splits, chars)
        return _per_string(input, decode, "input")


@tf_export("strings.unicode_decode_with_offsets")
def unicode_decode_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                                replacement_char=65533, replace_control_characters=False,
                                name=None):
    """unicode_decode, and each character's start offset in bytes in its string."""
    attrs = _decode_attrs(input_encoding, errors, replacement_char, replace_control_characters)
    with _ops.name_scope(name, "UnicodeDecodeWithOffsets"):
        def decode(flat):
            splits, chars, starts = _ops.apply_op("UnicodeDecodeWithOffsets", [flat],
                                                  attrs).outputs
            return _ragged(splits, chars), _ragged(splits, starts)
        return _per_string(input, decode, "input")


def _split_chars(flat, input_encoding, errors, replacement_char, with_offsets):
    attrs = _decode_attrs(input_encoding, errors, replacement_char, False)
    op = _ops.apply_op("UnicodeDecodeWithOffsets" if with_offsets else "UnicodeDecode", [flat],
                       attrs)
    splits, chars = op.outputs[0], op.outputs[1]
    # Each character encoded on its own: a string per code point.
    count = array_ops.shape(chars, out_type=splits.dtype)[0]
    one_each = array_ops.range(count + 1)
    texts = _ops.apply_op("UnicodeEncode", [chars, one_each], {
        "output_encoding": input_encoding, "errors": errors,
        "replacement_char": int(replacement_char)}).outputs[0]
    if with_offsets:
        return _ragged(splits, texts), _ragged(splits, op.outputs[2])
    return _ragged(splits, texts)


@tf_export("strings.unicode_split")
def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                  name=None):
    """Each string split into its characters (strings of one character each)."""
    with _ops.name_scope(name, "UnicodeSplit"):
        return _per_string(input, lambda flat: _split_chars(
            flat, input_encoding, errors, replacement_char, False), "input")


@tf_export("strings.unicode_split_with_offsets")
def unicode_split_with_offsets(input, input_encoding, errors="replace",  # noqa: A002
                               replacement_char=65533, name=None):
    """unicode_split, and each character's start offset in bytes in its string."""
    with _ops.name_scope(name, "UnicodeSplitWithOffsets"):
        return _per_string(input, lambda flat: _split_chars(
            flat, input_encoding, errors, replacement_char, True), "input")


@tf_export("strings.unicode_encode")
def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   name=None):
    """Each innermost row of code points encoded as one string: the result has one dimension
    less than `input` (a RaggedTensor or a Tensor)."""
    attrs = {"output_encoding": output_encoding, "errors": errors,
             "replacement_char": int(replacement_char)}
    with _ops.name_scope(name, "UnicodeEncode"):
        return _encode(input, attrs)


def _encode(input, attrs):  # noqa: A002
    if isinstance(input, RaggedTensor):
        if isinstance(input.values, RaggedTensor):
            return input.with_values(_encode(input.values, attrs))
        values = _ops.convert_to_tensor(input.values, dtype=_dtypes.int32)
        if values.shape.ndims != 1:
            # Uniform inner dimensions: the innermost one holds the characters.
            return input.with_values(_encode(values, attrs))
        return _ops.apply_op("UnicodeEncode", [values, input.row_splits], attrs).outputs[0]
    chars = _ops.convert_to_tensor(input, dtype=_dtypes.int32, name="input")
    rank = chars.shape.ndims
    if rank is None or rank == 0:
        raise ValueError("unicode_encode needs an input of known rank >= 1")
    shape = array_ops.shape(chars, out_type=_dtypes.int64)
    rows = array_ops.reshape(chars, [-1])
    count = reduction_ops.reduce_prod(shape[:-1])
    splits = array_ops.range(count + 1) * shape[-1]
    text = _ops.apply_op("UnicodeEncode", [rows, splits], attrs).outputs[0]
    return array_ops.reshape(text, shape[:-1])


@tf_export("strings.unicode_transcode")
def unicode_transcode(input, input_encoding, output_encoding, errors="replace",  # noqa: A002
                      replacement_char=65533, replace_control_characters=False, name=None):
    attrs = _decode_attrs(input_encoding, errors, replacement_char, replace_control_characters)
    attrs["output_encoding"] = output_encoding
    return _ops.apply_op("UnicodeTranscode", [
        _ops.convert_to_tensor(input, dtype=_dtypes.string, name="input")], attrs,
        name=name or "UnicodeTranscode").outputs[0]


@tf_export("strings.unicode_script")
def unicode_script(input, name=None):  # noqa: A002
    """ICU's UScriptCode of each code point (int32); -1 for an invalid one."""
    return _ops.apply_op("UnicodeScript", [
        _ops.convert_to_tensor(input, dtype=_dtypes.int32, name="input")],
        name=name or "UnicodeScript").outputs[0]


@tf_export("strings.bytes_split")
def bytes_split(input, name=None):  # noqa: A002
    """Each string split into its bytes (strings of length 1)."""
    with _ops.name_scope(name, "BytesSplit"):
        def split(flat):
            indices, values, shape = _ops.apply_op("StringSplit", [flat, _ops.convert_to_tensor(
                "", dtype=_dtypes.string)], {"skip_empty": False}).outputs
            return RaggedTensor.from_value_rowids(values, indices[:, 0], shape[0],
                                                  validate=False)
        return _per_string(input, split, "input")


@tf_export("strings.ngrams")
def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """The n-grams (joined by `separator`) of each innermost row of `data`, for each width in
    `ngram_width`; pad_values (one string, or a (left, right) pair) pads each row by
    padding_width (width - 1 when None) on both sides."""
    widths = [ngram_width] if isinstance(ngram_width, int) else list(ngram_width)
    if pad_values is None:
        left = right = ""
        pad_width = 0
    else:
        left, right = (pad_values, pad_values) if isinstance(pad_values, (str, bytes)) else \
            tuple(pad_values)
        pad_width = -1 if padding_width is None else int(padding_width)
        if padding_width is not None and padding_width < 1:
            raise ValueError("padding_width must be greater than 0.")
    attrs = {"separator": _text(separator), "ngram_widths": widths, "left_pad": _text(left),
             "right_pad": _text(right), "pad_width": pad_width,
             "preserve_short_sequences": bool(preserve_short_sequences)}
    with _ops.name_scope(name, "StringNGrams"):
        if isinstance(data, RaggedTensor):
            if isinstance(data.values, RaggedTensor):
                return data.with_values(ngrams(data.values, widths, separator, pad_values,
                                               padding_width, preserve_short_sequences))
            grams, splits = _ops.apply_op("StringNGrams", [data.values, data.row_splits],
                                          attrs).outputs
            return _ragged(splits, grams)
        tokens = _ops.convert_to_tensor(data, dtype=_dtypes.string, name="data")
        if tokens.shape.ndims == 1:
            splits = array_ops.concat([[0], array_ops.shape(tokens, out_type=_dtypes.int64)], 0)
            return _ops.apply_op("StringNGrams", [tokens, splits], attrs).outputs[0]
        rt = RaggedTensor.from_tensor(tokens, ragged_rank=tokens.shape.ndims - 1)
        return ngrams(rt, widths, separator, pad_values, padding_width,
                      preserve_short_sequences).to_tensor()


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


@tf_export("strings.to_hash_bucket_strong", "string_to_hash_bucket_strong")
def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """Each string's SipHash-2-4 under the two-word `key`, modulo num_buckets (TensorFlow's
    buckets exactly)."""
    key = [int(k) for k in key]
    if len(key) != 2:
        raise ValueError(f"key must have 2 elements, got {len(key)}")
    # The attr is a list of int64s; TensorFlow reads each as the bits of a uint64.
    key = [k - (1 << 64) if k >= (1 << 63) else k for k in key]
    return _ops.apply_op("StringToHashBucketStrong", [
        _ops.convert_to_tensor(input, dtype=_dtypes.string, name="input")],
        {"num_buckets": int(num_buckets), "key": key},
        name=name or "StringToHashBucketStrong").outputs[0]
