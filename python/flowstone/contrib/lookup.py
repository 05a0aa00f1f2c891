"""tf.contrib.lookup: TF1's names for the tables of flowstone/ops/lookup_ops.py, and the
vocabulary helpers (index_table_from_file/tensor, index_to_string_table_from_file/tensor)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops.lookup_ops import (DenseHashTable as MutableDenseHashTable,  # noqa: F401
                                      KeyValueTensorInitializer, MutableHashTable,
                                      StaticHashTable, StaticVocabularyTable,
                                      TextFileIdTableInitializer, TextFileIndex,
                                      TextFileInitializer, TextFileStringTableInitializer)


class HashTable(StaticHashTable):
    """TF1's StaticHashTable: `init` is its initializer op."""

    def __init__(self, initializer, default_value, shared_name=None, name=None):
        super().__init__(initializer, default_value, name=name)

    init = property(lambda self: self.initializer)


def _check_oov(num_oov_buckets):
    if num_oov_buckets is None or num_oov_buckets < 0:
        raise ValueError(f"num_oov_buckets must be greater or equal than 0, got "
                         f"{num_oov_buckets}.")


def _id_table(initializer, num_oov_buckets, default_value, key_dtype, name):
    if num_oov_buckets:
        return StaticVocabularyTable(initializer, num_oov_buckets, lookup_key_dtype=key_dtype,
                                     name=name)
    return HashTable(initializer, default_value, name=name)


def index_table_from_file(vocabulary_file=None, num_oov_buckets=0, vocab_size=None,
                          default_value=-1, hasher_spec=None, key_dtype=_dtypes.string,
                          name=None, key_column_index=TextFileIndex.WHOLE_LINE,
                          value_column_index=TextFileIndex.LINE_NUMBER, delimiter="\t"):
    """A table from the keys in `vocabulary_file` (one a line) to their line numbers; keys
    outside it map to `default_value`, or to one of `num_oov_buckets` buckets after it."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    _check_oov(num_oov_buckets)
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"vocab_size must be greater than 0, got {vocab_size}.")
    key_dtype = _dtypes.as_dtype(key_dtype)
    if not (key_dtype.is_integer or key_dtype == _dtypes.string):
        raise TypeError(f"Only integer and string keys are supported, got {key_dtype.name}.")
    table_key_dtype = _dtypes.int64 if key_dtype.is_integer else _dtypes.string
    with _ops.name_scope(name, "string_to_index"):
        initializer = TextFileInitializer(vocabulary_file, table_key_dtype, key_column_index,
                                          _dtypes.int64, value_column_index,
                                          vocab_size=vocab_size, delimiter=delimiter)
        return _id_table(initializer, num_oov_buckets, default_value, key_dtype, "hash_table")


def index_table_from_tensor(mapping=None, num_oov_buckets=0, default_value=-1,
                            hasher_spec=None, dtype=_dtypes.string, name=None,
                            vocabulary_list=None):
    """A table from the 1-D tensor `mapping` (or `vocabulary_list`) to positions in it."""
    mapping = vocabulary_list if mapping is None else mapping
    if mapping is None:
        raise ValueError("mapping must be specified.")
    _check_oov(num_oov_buckets)
    dtype = _dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "string_to_index"):
        with _ops.init_scope():
            keys = _ops.convert_to_tensor(mapping, name="keys")
            if keys.dtype.is_integer != dtype.is_integer:
                raise ValueError(f"Expected {dtype.name}, got {keys.dtype.name}.")
            if keys.dtype.is_integer:
                keys = _math_ops.cast(keys, _dtypes.int64)
            ids = array_ops.range(array_ops.size(keys, out_type=_dtypes.int64),
                                  dtype=_dtypes.int64)
        initializer = KeyValueTensorInitializer(keys, ids, name="table_init")
        return _id_table(initializer, num_oov_buckets, default_value, dtype, "hash_table")


def index_to_string_table_from_file(vocabulary_file, vocab_size=None, default_value="UNK",
                                    name=None, key_column_index=TextFileIndex.LINE_NUMBER,
                                    value_column_index=TextFileIndex.WHOLE_LINE,
                                    delimiter="\t"):
    """A table from line numbers to the strings of `vocabulary_file`."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("vocabulary_file must be specified and must not be empty.")
    with _ops.name_scope(name, "index_to_string"):
        initializer = TextFileInitializer(vocabulary_file, _dtypes.int64, key_column_index,
                                          _dtypes.string, value_column_index,
                                          vocab_size=vocab_size, delimiter=delimiter)
        return HashTable(initializer, default_value)


def index_to_string_table_from_tensor(mapping=None, default_value="UNK", name=None,
                                      vocabulary_list=None):
    """A table from positions in the 1-D string tensor `mapping` to its strings."""
    mapping = vocabulary_list if mapping is None else mapping
    if mapping is None:
        raise ValueError("mapping must be specified.")
    with _ops.name_scope(name, "index_to_string"):
        with _ops.init_scope():
            values = _ops.convert_to_tensor(mapping, _dtypes.string, name="values")
            ids = array_ops.range(array_ops.size(values, out_type=_dtypes.int64),
                                  dtype=_dtypes.int64)
        initializer = KeyValueTensorInitializer(ids, values, _dtypes.int64, _dtypes.string,
                                                name="table_init")
        return HashTable(initializer, default_value)


def index_to_string(tensor, mapping, default_value="UNK", name=None):
    """The strings of `mapping` at the int64 positions in `tensor`."""
    table = index_to_string_table_from_tensor(mapping, default_value, name)
    return table.lookup(tensor)


def string_to_index(tensor, mapping, default_value=-1, name=None):
    """The positions in `mapping` of the strings in `tensor`."""
    table = index_table_from_tensor(mapping, default_value=default_value, name=name)
    return table.lookup(tensor)
