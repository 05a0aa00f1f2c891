"""tf.data's file datasets: TFRecordDataset, TextLineDataset and FixedLengthRecordDataset, over
the C++ ops of src/ops/data/file_dataset_ops.cc. Elements are scalar tf.string records."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import dataset_structure as structure
from flowstone.ops.dataset_ops import DatasetV1
from flowstone.util.tf_export import tf_export

_RECORD_SPEC = structure.TensorSpec([], _dtypes.string)


def _string(value, name):
    return _ops.convert_to_tensor(value, dtype=_dtypes.string, name=name)


def _int64(value, name):
    return _ops.convert_to_tensor(value, dtype=_dtypes.int64, name=name)


class _FileDataset(DatasetV1):
    """Records of `filenames` (a string, a list or a string tensor, read in order; or a dataset
    of file names, read one file after another or `num_parallel_reads` files interleaved)."""

    def __init__(self, filenames, num_parallel_reads, make_for_files):
        if isinstance(filenames, DatasetV1):
            cycle = num_parallel_reads or 1
            per_file = filenames.interleave(lambda f: _Files(f, make_for_files),
                                            cycle_length=cycle, block_length=1)
            super().__init__([per_file], _RECORD_SPEC, lambda variant: variant)
        else:
            super().__init__([], _RECORD_SPEC,
                             lambda: make_for_files(_string(filenames, "filenames")))


class _Files(DatasetV1):
    def __init__(self, filenames, make_for_files):
        super().__init__([], _RECORD_SPEC, lambda: make_for_files(filenames))


@tf_export("data.TFRecordDataset")
class TFRecordDataset(_FileDataset):
    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        def make(files):
            return _ops.apply_op("TFRecordDataset", [
                files, _string(compression_type or "", "compression_type"),
                _int64(buffer_size or 0, "buffer_size")], name="TFRecordDataset").outputs[0]

        super().__init__(filenames, num_parallel_reads, make)


@tf_export("data.TextLineDataset")
class TextLineDataset(_FileDataset):
    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None):
        def make(files):
            return _ops.apply_op("TextLineDataset", [
                files, _string(compression_type or "", "compression_type"),
                _int64(buffer_size or 0, "buffer_size")], name="TextLineDataset").outputs[0]

        super().__init__(filenames, num_parallel_reads, make)


@tf_export("data.FixedLengthRecordDataset")
class FixedLengthRecordDataset(_FileDataset):
    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None):
        def make(files):
            return _ops.apply_op("FixedLengthRecordDatasetV2", [
                files, _int64(header_bytes or 0, "header_bytes"),
                _int64(record_bytes, "record_bytes"), _int64(footer_bytes or 0, "footer_bytes"),
                _int64(buffer_size or 0, "buffer_size"),
                _string(compression_type or "", "compression_type")],
                name="FixedLengthRecordDataset").outputs[0]

        super().__init__(filenames, num_parallel_reads, make)
