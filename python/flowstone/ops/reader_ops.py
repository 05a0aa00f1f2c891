"""TF1's readers (tf.TextLineReader, TFRecordReader, WholeFileReader, FixedLengthRecordReader)
over the C++ reader ops (src/ops/io/reader_ops.cc).

A reader takes file names from a queue (usually a string_input_producer's) and produces
(key, value) string records from them; like a queue it lives in the session.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops.record_io_ops import TFRecordOptions
from flowstone.util.tf_export import tf_export


def _queue_ref(queue):
    return queue.queue_ref if hasattr(queue, "queue_ref") else queue


@tf_export("ReaderBase")
class ReaderBase:
    """The methods every reader has; `reader_ref` is the reader op's handle."""

    def __init__(self, reader_ref, supports_serialize=False):
        if _ops.executing_eagerly():
            raise RuntimeError("Readers are not supported when eager execution is enabled. "
                               "Instead, please use tf.data to get data into your model.")
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self):
        return self._reader_ref

    @property
    def supports_serialize(self):
        return self._supports_serialize

    def _name(self, name, default):
        return name or f"{self._reader_ref.op.name}_{default}"

    def read(self, queue, name=None):
        """The next (key, value) record; when the current file ends, the next file name is
        dequeued from `queue`. OutOfRangeError once the queue is closed and every file read."""
        op = _ops.apply_op("ReaderReadV2", [self._reader_ref, _queue_ref(queue)],
                           name=self._name(name, "ReaderReadV2"))
        return op.outputs[0], op.outputs[1]

    def read_up_to(self, queue, num_records, name=None):
        """Up to `num_records` (keys, values), fewer at the end of the input."""
        n = _ops.convert_to_tensor(num_records, dtype=_dtypes.int64, name="num_records")
        op = _ops.apply_op("ReaderReadUpToV2", [self._reader_ref, _queue_ref(queue), n],
                           name=self._name(name, "ReaderReadUpToV2"))
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name=None):
        return _ops.apply_op("ReaderNumRecordsProducedV2", [self._reader_ref],
                             name=self._name(name, "ReaderNumRecordsProducedV2")).outputs[0]

    def num_work_units_completed(self, name=None):
        return _ops.apply_op("ReaderNumWorkUnitsCompletedV2", [self._reader_ref],
                             name=self._name(name, "ReaderNumWorkUnitsCompletedV2")).outputs[0]

    def reset(self, name=None):
        return _ops.apply_op("ReaderResetV2", [self._reader_ref],
                             name=self._name(name, "ReaderResetV2"))

    def serialize_state(self, name=None):
        raise NotImplementedError("Flowstone's readers do not serialize their state "
                                  "(supports_serialize is False)")

    def restore_state(self, state, name=None):
        raise NotImplementedError("Flowstone's readers do not restore a serialized state "
                                  "(supports_serialize is False)")


def _reader(op_type, attrs, name):
    if _ops.executing_eagerly():
        return None  # ReaderBase raises TensorFlow's RuntimeError
    return _ops.apply_op(op_type, [], attrs, name=name).outputs[0]


@tf_export("TextLineReader")
class TextLineReader(ReaderBase):
    """Records are a file's lines (without the newline); keys are "file:line" from 1."""

    def __init__(self, skip_header_lines=None, name=None):
        super().__init__(_reader("TextLineReaderV2",
                                 {"skip_header_lines": int(skip_header_lines or 0)},
                                 name or "TextLineReaderV2"))


@tf_export("TFRecordReader")
class TFRecordReader(ReaderBase):
    """Records are a TFRecord file's records; keys are "file:offset"."""

    def __init__(self, name=None, options=None):
        compression = TFRecordOptions.get_compression_type_string(options)
        super().__init__(_reader("TFRecordReaderV2", {"compression_type": compression},
                                 name or "TFRecordReaderV2"))


@tf_export("WholeFileReader")
class WholeFileReader(ReaderBase):
    """One record per file: the key is its name, the value its bytes."""

    def __init__(self, name=None):
        super().__init__(_reader("WholeFileReaderV2", {}, name or "WholeFileReaderV2"))


@tf_export("FixedLengthRecordReader")
class FixedLengthRecordReader(ReaderBase):
    """Records of `record_bytes` bytes after `header_bytes` and before `footer_bytes`, starting
    `hop_bytes` apart (record_bytes when None); keys are "file:index" from 0."""

    def __init__(self, record_bytes, header_bytes=None, footer_bytes=None, hop_bytes=None,
                 name=None, encoding=None):
        super().__init__(_reader("FixedLengthRecordReaderV2", {
            "record_bytes": int(record_bytes), "header_bytes": int(header_bytes or 0),
            "footer_bytes": int(footer_bytes or 0), "hop_bytes": int(hop_bytes or 0),
            "encoding": encoding or ""}, name or "FixedLengthRecordReaderV2"))
