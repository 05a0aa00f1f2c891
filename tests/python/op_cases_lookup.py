"""Conformance cases for the lookup table ops (see op_cases.py). A table lives in the session, so
each case makes a table, fills it and reads it in one run, ordered by control dependencies.
tests/python/test_lookup.py compares the tables with TensorFlow's and covers their errors."""

import numpy as np

import flowstone as tf
from op_cases import Case

KEYS = np.array([3, 1, 7, 2], np.int64)


def _after(deps, make):
    with tf.control_dependencies(deps if isinstance(deps, list) else [deps]):
        return make()


def _static():
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant([1, 2, 3], tf.int64),
                                            tf.constant([10.0, 20.0, 30.0], tf.float64)), -1.0)


def _static_find(keys):
    table = _static()
    return tf.identity(_after(table.initializer, lambda: table.lookup(keys))).op


def _static_size(keys):
    table = _static()
    return tf.identity(_after(table.initializer, table.size)).op


def _static_export(keys):
    table = _static()
    keys_out, values = _after(table.initializer, table.export)
    return tf.identity_n([keys_out, values])[0].op  # one op with both as outputs


def _mutable(value_shape=()):
    default = np.full(value_shape, -1.0)
    return tf.lookup.experimental.MutableHashTable(tf.int64, tf.float64, default)


def _insert_find(value_shape):
    def build(keys):
        table = _mutable(value_shape)
        values = tf.reshape(tf.cast(keys, tf.float64) * 10.0, [-1] + [1] * len(value_shape)) + \
            tf.zeros(value_shape, tf.float64)
        return tf.identity(_after(table.insert(keys[:2], values[:2]),
                                  lambda: table.lookup(keys))).op
    return build


def _remove(keys):
    table = _mutable()
    insert = table.insert(keys, tf.cast(keys, tf.float64))
    remove = _after(insert, lambda: table.remove(keys[:1]))
    return tf.identity(_after(remove, lambda: table.lookup(keys))).op


def _import(keys):
    table = _mutable()
    imported = table.import_(keys, tf.cast(keys, tf.float64) + 0.5)
    return tf.identity(_after(imported, table.size)).op


def _dense(keys):
    table = tf.lookup.experimental.DenseHashTable(tf.int64, tf.float64, -1.0, empty_key=-10,
                                                  deleted_key=-20)
    insert = table.insert(keys[1:], tf.cast(keys[1:], tf.float64) * 2.0)
    return tf.identity(_after(insert, lambda: table.lookup(keys))).op


def _find_ref(keys):
    return np.array([{1: 10.0, 2: 20.0, 3: 30.0}.get(int(k), -1.0) for k in keys])


def _insert_ref(value_shape):
    def ref(keys):
        rows = [np.full(value_shape, float(k) * 10.0) if i < 2 else np.full(value_shape, -1.0)
                for i, k in enumerate(keys)]
        return np.stack(rows)
    return ref


def _export_ref(keys):
    return np.array([1, 2, 3], np.int64), np.array([10.0, 20.0, 30.0])


CASES = [
    Case("HashTableV2", [KEYS], _find_ref, build=_static_find),
    Case("InitializeTableV2", [KEYS], _find_ref, build=_static_find),
    Case("LookupTableFindV2", [KEYS], _find_ref, build=_static_find),
    Case("LookupTableSizeV2", [KEYS], lambda k: np.int64(3), build=_static_size),
    Case("LookupTableExportV2", [KEYS], _export_ref, outputs=2, build=_static_export),
    Case("MutableHashTableV2", [KEYS], _insert_ref(()), build=_insert_find(())),
    Case("LookupTableInsertV2", [KEYS], _insert_ref(()), build=_insert_find(())),
    Case("MutableHashTableOfTensorsV2", [KEYS], _insert_ref((2,)), build=_insert_find((2,))),
    Case("LookupTableRemoveV2", [KEYS],
         lambda k: np.array([-1.0] + [float(x) for x in k[1:]]), build=_remove),
    Case("LookupTableImportV2", [KEYS], lambda k: np.int64(len(k)), build=_import),
    Case("MutableDenseHashTableV2", [KEYS],
         lambda k: np.array([-1.0] + [float(x) * 2.0 for x in k[1:]]), build=_dense),
]

EXEMPT = {
    "InitializeTableFromTextFileV2":
        "tests/python/test_lookup.py (vocabulary files the test writes, against TensorFlow)",
}
