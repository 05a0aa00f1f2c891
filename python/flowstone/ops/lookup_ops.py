"""tf.lookup: hash tables over the table ops of src/ops/lookup/lookup_table_ops.cc.

A table is a resource in the session (graph mode) or the eager context, made by its handle op.
StaticHashTable is filled once by its initializer: in graph mode the initializer op joins
GraphKeys.TABLE_INITIALIZERS (run by tf.tables_initializer()), in eager mode it runs at once.
StaticVocabularyTable maps keys it lacks to `num_oov_buckets` extra ids by TensorFlow's hash
(Fingerprint64, as tf.strings.to_hash_bucket_fast), so its ids equal TensorFlow's. The mutable
tables are saved in object-based checkpoints under "table-keys" and "table-values", as
TensorFlow saves them.
"""

import itertools

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import basic_ops
from flowstone.ops import math_ops as _math_ops
from flowstone.ops import string_ops as _string_ops
from flowstone.util.tf_export import tf_export

_eager_tables = itertools.count()


def _table_op(op_type, inputs, attrs, shared_name, name):
    if not shared_name and _ops.executing_eagerly():
        # Eager ops have no unique node names to key the table by: each table gets its own.
        shared_name = f"{name}_eager_{next(_eager_tables)}"
    if shared_name:
        attrs["shared_name"] = shared_name
    with _ops.init_scope():
        return _ops.apply_op(op_type, inputs, attrs, name=name).outputs[0]


def _convert(value, dtype, what):
    if isinstance(value, _ops.Tensor):
        if value.dtype.base_dtype != dtype:
            raise TypeError(f"Dtype of argument `{what}` must be {dtype.name}, received: "
                            f"{value.dtype.name}")
        return value
    return _ops.convert_to_tensor(value, dtype=dtype, name=what)


@tf_export("lookup.TextFileIndex")
class TextFileIndex:
    """Special column indices of TextFileInitializer."""
    WHOLE_LINE = -2
    LINE_NUMBER = -1


# --- initializers -------------------------------------------------------------------------------

class TableInitializerBase:
    """Fills a table: `key_dtype`, `value_dtype` and `initialize(table)` -> the op."""

    def __init__(self, key_dtype, value_dtype):
        self._key_dtype = _dtypes.as_dtype(key_dtype)
        self._value_dtype = _dtypes.as_dtype(value_dtype)

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)

    def _check_table_dtypes(self, key_dtype, value_dtype):
        if key_dtype != self._key_dtype:
            raise TypeError(f"Invalid key dtype for table, expected {self._key_dtype.name} but "
                            f"got {key_dtype.name}.")
        if value_dtype != self._value_dtype:
            raise TypeError(f"Invalid value dtype for table, expected {self._value_dtype.name} "
                            f"but got {value_dtype.name}.")


@tf_export("lookup.KeyValueTensorInitializer")
class KeyValueTensorInitializer(TableInitializerBase):
    """Fills a table from a tensor of keys and one of values, of one shape."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        with _ops.init_scope():
            self._keys = _ops.convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = _ops.convert_to_tensor(values, dtype=value_dtype, name="values")
        self._name = name or "key_value_init"
        super().__init__(self._keys.dtype, self._values.dtype)

    def initialize(self, table):
        self._check_table_dtypes(table.key_dtype, table.value_dtype)
        with _ops.init_scope():
            return _ops.apply_op("InitializeTableV2",
                                 [table.resource_handle, self._keys, self._values],
                                 {"Tkey": self._keys.dtype, "Tval": self._values.dtype},
                                 name=self._name)


@tf_export("lookup.TextFileInitializer")
class TextFileInitializer(TableInitializerBase):
    """Fills a table from a text file, one entry a line: the key and the value are each a
    column (split at `delimiter`), the whole line (TextFileIndex.WHOLE_LINE) or the line number
    (TextFileIndex.LINE_NUMBER)."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index,
                 vocab_size=None, delimiter="\t", name=None, value_index_offset=0):
        if key_index < -2:
            raise ValueError(f"`key_index` should be >= -2, received: {key_index}.")
        if key_index == TextFileIndex.LINE_NUMBER and key_dtype != _dtypes.int64:
            raise ValueError("`key_dtype` must be int64 if `key_index` is "
                             f"{TextFileIndex.LINE_NUMBER}, received: {key_dtype}")
        if key_index == TextFileIndex.WHOLE_LINE and \
                not _dtypes.as_dtype(key_dtype).is_integer and key_dtype != _dtypes.string:
            raise ValueError("`key_dtype` should be either integer or string for `key_index` "
                             f"{TextFileIndex.WHOLE_LINE}, received: {key_dtype}")
        if value_index < -2:
            raise ValueError(f"`value_index` should be >= -2, received: {value_index}.")
        if value_index == TextFileIndex.LINE_NUMBER and value_dtype != _dtypes.int64:
            raise ValueError("`value_dtype` must be int64 for `value_index` "
                             f"{TextFileIndex.LINE_NUMBER}, received: {value_dtype}")
        if value_index == TextFileIndex.WHOLE_LINE and value_dtype != _dtypes.string:
            raise ValueError("`value_dtype` must be string for `value_index` "
                             f"{TextFileIndex.WHOLE_LINE}, received: {value_dtype}")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"`vocab_size` should be > 0, received: {vocab_size}")
        self._filename = filename
        self._key_index = key_index
        self._value_index = value_index
        self._vocab_size = vocab_size
        self._delimiter = delimiter
        self._offset = value_index_offset
        self._name = name or "text_file_init"
        super().__init__(key_dtype, value_dtype)

    def initialize(self, table):
        self._check_table_dtypes(table.key_dtype, table.value_dtype)
        with _ops.init_scope():
            filename = _ops.convert_to_tensor(self._filename, dtype=_dtypes.string,
                                              name="asset_filepath")
            op = _ops.apply_op("InitializeTableFromTextFileV2", [table.resource_handle, filename], {
                "key_index": int(self._key_index), "value_index": int(self._value_index),
                "vocab_size": -1 if self._vocab_size is None else int(self._vocab_size),
                "delimiter": self._delimiter, "offset": int(self._offset),
            }, name=self._name)
            if not _ops.executing_eagerly():
                _ops.add_to_collection(_ops.GraphKeys.ASSET_FILEPATHS, filename)
        return op


@tf_export("lookup.experimental.TextFileStringTableInitializer")
class TextFileStringTableInitializer(TextFileInitializer):
    """Maps line numbers (int64) to a column's strings."""

    def __init__(self, filename, key_column_index=TextFileIndex.LINE_NUMBER,
                 value_column_index=TextFileIndex.WHOLE_LINE, vocab_size=None, delimiter="\t",
                 name="text_file_string_table_init"):
        super().__init__(filename, _dtypes.int64, key_column_index, _dtypes.string,
                         value_column_index, vocab_size=vocab_size, delimiter=delimiter,
                         name=name)


@tf_export("lookup.experimental.TextFileIdTableInitializer")
class TextFileIdTableInitializer(TextFileInitializer):
    """Maps a column's strings (or ints) to their line numbers."""

    def __init__(self, filename, key_column_index=TextFileIndex.WHOLE_LINE,
                 value_column_index=TextFileIndex.LINE_NUMBER, vocab_size=None, delimiter="\t",
                 name="text_file_id_table_init", key_dtype=_dtypes.string):
        super().__init__(filename, key_dtype, key_column_index, _dtypes.int64,
                         value_column_index, vocab_size=vocab_size, delimiter=delimiter,
                         name=name)


# --- tables ---------------------------------------------------------------------------------

class LookupInterface:
    """What every table has: dtypes, a name, its resource handle, lookup and size."""

    def __init__(self, key_dtype, value_dtype):
        self._key_dtype = _dtypes.as_dtype(key_dtype)
        self._value_dtype = _dtypes.as_dtype(value_dtype)

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)
    name = property(lambda self: self._name)
    resource_handle = property(lambda self: self._resource_handle)

    def size(self, name=None):
        """The number of entries (int64)."""
        return _ops.apply_op("LookupTableSizeV2", [self._resource_handle], {},
                             name=name or f"{self._name}_Size").outputs[0]

    def _find(self, keys, default_value, name):
        return _ops.apply_op("LookupTableFindV2", [self._resource_handle, keys, default_value],
                             {"Tin": self._key_dtype, "Tout": self._value_dtype},
                             name=name or f"{self._name}_Lookup").outputs[0]

    def _lookup_keys(self, keys):
        if isinstance(keys, SparseTensor):
            return keys, keys.values
        return None, _convert(keys, self._key_dtype, "keys")

    def _export(self, name=None):
        op = _ops.apply_op("LookupTableExportV2", [self._resource_handle],
                           {"Tkeys": self._key_dtype, "Tvalues": self._value_dtype},
                           name=name or f"{self._name}_Export")
        return op.outputs[0], op.outputs[1]

    def __call__(self, keys):
        return self.lookup(keys)

    def _checkpoint_values(self):
        """A node of object-based checkpoints that saves nothing (its initializer refills it),
        as in TensorFlow; mutable tables save their contents."""
        return {}


def _with_sparse(sparse, values):
    if sparse is None:
        return values
    return SparseTensor(sparse.indices, values, sparse.dense_shape)


@tf_export("lookup.StaticHashTable")
class StaticHashTable(LookupInterface):
    """A table filled once by `initializer`; keys it lacks look up as `default_value`."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        super().__init__(initializer.key_dtype, initializer.value_dtype)
        self._name = name or "hash_table"
        self._initializer = initializer
        with _ops.init_scope():
            self._default_value = _ops.convert_to_tensor(default_value, dtype=self._value_dtype,
                                                         name="default_value")
        self._resource_handle = _table_op("HashTableV2", [], {
            "key_dtype": self._key_dtype, "value_dtype": self._value_dtype,
        }, None, self._name)
        self._init_op = initializer.initialize(self)
        if not _ops.executing_eagerly():
            _ops.add_to_collection(_ops.GraphKeys.TABLE_INITIALIZERS, self._init_op)

    default_value = property(lambda self: self._default_value)
    initializer = property(lambda self: self._init_op)

    def lookup(self, keys, name=None):
        """The values of `keys` (a tensor or SparseTensor of key_dtype)."""
        sparse, keys = self._lookup_keys(keys)
        return _with_sparse(sparse, self._find(keys, self._default_value, name))

    def export(self, name=None):
        """(keys, values): the table's entries, keys sorted."""
        return self._export(name)


@tf_export("lookup.StaticVocabularyTable")
class StaticVocabularyTable(LookupInterface):
    """Ids of a vocabulary (int64 values from `initializer`); a key outside it gets the id
    vocabulary_size + Fingerprint64(key) % num_oov_buckets, as in TensorFlow."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None,
                 experimental_is_anonymous=False):
        if num_oov_buckets <= 0:
            raise ValueError(f"`num_oov_buckets` must be > 0; use StaticHashTable. Received: "
                             f"{num_oov_buckets}")
        if initializer is None:
            raise ValueError("`initializer` cannot be None.")
        if initializer.value_dtype != _dtypes.int64:
            raise TypeError(f"Invalid `value_dtype`, expected {_dtypes.int64.name} but got "
                            f"{initializer.value_dtype.name}.")
        if initializer.key_dtype not in (_dtypes.int64, _dtypes.string):
            raise TypeError(f"Invalid `key_dtype`, expected int64 or string but got "
                            f"{initializer.key_dtype.name}.")
        self._num_oov_buckets = int(num_oov_buckets)
        self._name = name or "hash_table"
        self._table = StaticHashTable(initializer, -1, name=self._name)
        key_dtype = _dtypes.as_dtype(lookup_key_dtype or initializer.key_dtype)
        if key_dtype == _dtypes.int32 and initializer.key_dtype == _dtypes.int64:
            self._cast_keys = True
        elif key_dtype != initializer.key_dtype:
            raise TypeError(f"Invalid `key_dtype`, expected {initializer.key_dtype.name} but "
                            f"got {key_dtype.name}.")
        else:
            self._cast_keys = False
        super().__init__(key_dtype, _dtypes.int64)
        self._resource_handle = self._table.resource_handle

    initializer = property(lambda self: self._table.initializer)

    def size(self, name=None):
        """The vocabulary's size plus the buckets."""
        with _ops.name_scope(name, f"{self._name}_Size"):
            return self._table.size() + self._num_oov_buckets

    def lookup(self, keys, name=None):
        sparse, keys = self._lookup_keys(keys)
        with _ops.name_scope(name, f"{self._name}_Lookup"):
            if self._cast_keys:
                keys = _math_ops.cast(keys, _dtypes.int64)
            ids = self._table.lookup(keys)
            text = keys if keys.dtype == _dtypes.string else _string_ops.as_string(keys)
            buckets = _string_ops.string_to_hash_bucket_fast(text, self._num_oov_buckets)
            buckets = _math_ops.add(_math_ops.cast(buckets, _dtypes.int64), self._table.size())
            found = _math_ops.not_equal(ids, _ops.convert_to_tensor(-1, _dtypes.int64))
            return _with_sparse(sparse, _math_ops.where(found, ids, buckets))


class _MutableTable(LookupInterface):
    """MutableHashTable and DenseHashTable: insert, remove, lookup, export, import, and a place
    in object-based checkpoints."""

    def __init__(self, key_dtype, value_dtype, default_value, name, checkpoint):
        super().__init__(key_dtype, value_dtype)
        self._name = name
        self._checkpoint = checkpoint
        with _ops.init_scope():
            self._default_value = _ops.convert_to_tensor(default_value, dtype=self._value_dtype,
                                                         name="default_value")
        self._value_shape = self._default_value.shape
        self._graph_export = None  # graph mode: the ops checkpoints save and restore with
        self._graph_import = None

    def lookup(self, keys, dynamic_default_values=None, name=None):
        sparse, keys = self._lookup_keys(keys)
        default = self._default_value if dynamic_default_values is None else \
            _ops.convert_to_tensor(dynamic_default_values, dtype=self._value_dtype)
        return _with_sparse(sparse, self._find(keys, default, name))

    def insert(self, keys, values, name=None):
        keys = _convert(keys, self._key_dtype, "keys")
        values = _convert(values, self._value_dtype, "values")
        return _ops.apply_op("LookupTableInsertV2", [self._resource_handle, keys, values],
                             {"Tin": self._key_dtype, "Tout": self._value_dtype},
                             name=name or f"{self._name}_insert")

    def remove(self, keys, name=None):
        keys = _convert(keys, self._key_dtype, "keys")
        return _ops.apply_op("LookupTableRemoveV2", [self._resource_handle, keys],
                             {"Tin": self._key_dtype}, name=name or f"{self._name}_remove")

    def export(self, name=None):
        return self._export(name)

    def import_(self, keys, values, name=None):
        keys = _convert(keys, self._key_dtype, "keys")
        values = _convert(values, self._value_dtype, "values")
        return _ops.apply_op("LookupTableImportV2", [self._resource_handle, keys, values],
                             {"Tin": self._key_dtype, "Tout": self._value_dtype},
                             name=name or f"{self._name}_import")

    def _add_to_saveables(self):
        """Graph mode: tf.train.Saver() saves the table as "<name>-keys" and "<name>-values"."""
        if self._checkpoint and not _ops.executing_eagerly():
            _ops.add_to_collection(_ops.GraphKeys.SAVEABLE_OBJECTS, self)

    # The object-based checkpoint protocol (train/object_checkpoint.py).
    def _checkpoint_values(self):
        if not self._checkpoint:
            return {}
        if _ops.executing_eagerly():
            keys, values = self._export()
        else:  # one export op per table, however often it is saved
            if self._graph_export is None:
                with _ops.init_scope():
                    self._graph_export = self._export()
            keys, values = self._graph_export
        return {"table": {"-keys": keys, "-values": values}}

    def _restore_checkpoint_values(self, values, session):
        keys, vals = values["table"]["-keys"], values["table"]["-values"]
        if _ops.executing_eagerly():
            self.import_(keys, vals)
            return
        if self._graph_import is None:
            with _ops.init_scope():
                key_ph = basic_ops.placeholder(self._key_dtype)
                value_ph = basic_ops.placeholder(self._value_dtype)
                self._graph_import = (self.import_(key_ph, value_ph), key_ph, value_ph)
        op, key_ph, value_ph = self._graph_import
        session.run(op, {key_ph: keys, value_ph: vals})


@tf_export("lookup.experimental.MutableHashTable")
class MutableHashTable(_MutableTable):
    """A table that insert and remove change; its values are scalars or tensors of the shape
    of `default_value`."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable",
                 checkpoint=True, experimental_is_anonymous=False):
        super().__init__(key_dtype, value_dtype, default_value, name, checkpoint)
        attrs = {"key_dtype": self._key_dtype, "value_dtype": self._value_dtype}
        if self._value_shape.ndims == 0:
            op_type = "MutableHashTableV2"
        else:
            op_type = "MutableHashTableOfTensorsV2"
            attrs["value_shape"] = self._value_shape
        self._resource_handle = _table_op(op_type, [], attrs, None, name)
        self._add_to_saveables()


@tf_export("lookup.experimental.DenseHashTable")
class DenseHashTable(_MutableTable):
    """A mutable table whose `empty_key` and `deleted_key` (two distinct keys) may never be
    inserted or looked up."""

    def __init__(self, key_dtype, value_dtype, default_value, empty_key, deleted_key,
                 initial_num_buckets=None, name="MutableDenseHashTable", checkpoint=True,
                 experimental_is_anonymous=False):
        super().__init__(key_dtype, value_dtype, default_value, name, checkpoint)
        with _ops.init_scope():
            empty = _ops.convert_to_tensor(empty_key, dtype=self._key_dtype, name="empty_key")
            deleted = _ops.convert_to_tensor(deleted_key, dtype=self._key_dtype,
                                             name="deleted_key")
        attrs = {"key_dtype": self._key_dtype, "value_dtype": self._value_dtype,
                 "value_shape": self._value_shape}
        if initial_num_buckets is not None:
            attrs["initial_num_buckets"] = int(initial_num_buckets)
        self._resource_handle = _table_op("MutableDenseHashTableV2", [empty, deleted], attrs,
                                          None, name)
        self._add_to_saveables()

