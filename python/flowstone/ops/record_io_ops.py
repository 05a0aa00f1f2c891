"""Files from Python and from the graph: tf.io.TFRecordWriter and tf_record_iterator (TFRecord
files written and read by the C++ io/record_io through _C), and the ReadFile, WriteFile and
MatchingFiles ops."""

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


@tf_export("io.TFRecordCompressionType", "python_io.TFRecordCompressionType")
class TFRecordCompressionType:
    """The compression of a TFRecord file."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_COMPRESSION_NAMES = {TFRecordCompressionType.NONE: "", TFRecordCompressionType.ZLIB: "ZLIB",
                      TFRecordCompressionType.GZIP: "GZIP"}


@tf_export("io.TFRecordOptions", "python_io.TFRecordOptions")
class TFRecordOptions:
    """How a TFRecord file is compressed: None, "", "ZLIB", "GZIP" or a TFRecordCompressionType.
    zlib's tuning arguments are accepted as TensorFlow's are; the writer uses zlib's defaults."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        del flush_mode, input_buffer_size, output_buffer_size, window_bits
        del compression_level, compression_method, mem_level, compression_strategy
        self.compression_type = _compression_name(compression_type)

    @classmethod
    def get_compression_type_string(cls, options):
        if options is None:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return _compression_name(options)


def _compression_name(value):
    if value is None:
        return ""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    if isinstance(value, int) and value in _COMPRESSION_NAMES:
        return _COMPRESSION_NAMES[value]
    if value in ("", "ZLIB", "GZIP"):
        return value
    raise ValueError(f'Unsupported compression_type: {value!r}. Use None, "", "ZLIB" or "GZIP".')


def _status_call(fn, *args):
    try:
        return fn(*args)
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None


@tf_export("io.TFRecordWriter", "python_io.TFRecordWriter")
class TFRecordWriter:
    """Writes records to a TFRecord file, framed and checksummed as TensorFlow does."""

    def __init__(self, path, options=None):
        self._writer = _status_call(_C.RecordWriter, str(path),
                                    TFRecordOptions.get_compression_type_string(options))

    def write(self, record):
        if isinstance(record, str):
            record = record.encode("utf-8")
        _status_call(self._writer.write, bytes(record))

    def flush(self):
        _status_call(self._writer.flush)

    def close(self):
        _status_call(self._writer.close)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


@tf_export("io.tf_record_iterator", "python_io.tf_record_iterator")
def tf_record_iterator(path, options=None):
    """The records of a TFRecord file, as bytes; a corrupted record raises DataLossError."""
    reader = _status_call(_C.RecordReader, str(path),
                          TFRecordOptions.get_compression_type_string(options))
    while True:
        record = _status_call(reader.next)
        if record is None:
            return
        yield record


@tf_export("io.read_file", "read_file")
def read_file(filename, name=None):
    return _ops.apply_op("ReadFile", [_ops.convert_to_tensor(filename, dtype=_dtypes.string)],
                         name=name or "ReadFile").outputs[0]


@tf_export("io.write_file", "write_file")
def write_file(filename, contents, name=None):
    return _ops.apply_op("WriteFile", [_ops.convert_to_tensor(filename, dtype=_dtypes.string),
                                       _ops.convert_to_tensor(contents, dtype=_dtypes.string)],
                         name=name or "WriteFile")


@tf_export("io.matching_files", "matching_files")
def matching_files(pattern, name=None):
    return _ops.apply_op("MatchingFiles", [_ops.convert_to_tensor(pattern, dtype=_dtypes.string)],
                         name=name or "MatchingFiles").outputs[0]


@tf_export("io.match_filenames_once", "train.match_filenames_once")
def match_filenames_once(pattern, name=None):
    """A local variable holding the files that match `pattern` (a glob or a list of them), found
    once, when local variables are initialized."""
    from flowstone.ops import variables
    with _ops.name_scope(name, "matching_filenames", [pattern]) as scope:
        return variables.Variable(initial_value=matching_files(pattern), name=scope,
                                  trainable=False, validate_shape=False,
                                  collections=[_ops.GraphKeys.LOCAL_VARIABLES])
