"""Conformance cases for the tf.data ops of Dataset.cardinality, get_single_element, scan,
take_while, unique, group_by_window, choose_from_datasets and random (see op_cases_data.py for how a case builds a pipeline around its op).
tests/python/data/test_data_dataset_more.py covers their errors and TensorFlow's values."""

import numpy as np

import flowstone as tf
from op_cases import Case
from op_cases_data import X, _all

Dataset = tf.data.Dataset

CASES = [
    Case("DatasetCardinality", [X], lambda x: np.array(3, np.int64),
         build=lambda x: Dataset.from_tensor_slices(x).batch(2).cardinality().op),
    Case("DatasetToSingleElement", [X], lambda x: x[2],
         build=lambda x: Dataset.from_tensor_slices(x).skip(2).take(1).get_single_element().op),
    Case("ScanDataset", [X], lambda x: np.cumsum(x, axis=0), rtol=1e-12,
         build=lambda x: _all(Dataset.from_tensor_slices(x).scan(
             tf.constant(np.zeros(2)), lambda s, r: (s + r, s + r)))),
    Case("TakeWhileDataset", [X], lambda x: x[:4],
         build=lambda x: _all(Dataset.zip((Dataset.range(10), Dataset.from_tensor_slices(x)))
                              .take_while(lambda i, r: i < 4).map(lambda i, r: r))),
    Case("UniqueDataset", [np.array([3, 1, 3, 2, 1], np.int64)], lambda x: np.array([3, 1, 2]),
         build=lambda x: _all(Dataset.from_tensor_slices(x).unique())),
    Case("GroupByWindowDataset", [X], lambda x: np.concatenate([x[0::2], x[1::2]]),
         build=lambda x: _all(Dataset.zip((Dataset.range(6), Dataset.from_tensor_slices(x)))
                              .group_by_window(lambda i, r: i % 2, lambda k, w: w, 3)
                              .map(lambda i, r: r))),
    Case("DirectedInterleaveDataset", [X[:3], X[3:]], lambda a, b: np.stack([b[0], a[0], a[1]]),
         build=lambda a, b: _all(Dataset.choose_from_datasets(
             [Dataset.from_tensor_slices(a), Dataset.from_tensor_slices(b)],
             Dataset.from_tensor_slices(np.array([1, 0, 0], np.int64))))),
    # Two seeded RandomDatasets draw the same values: their difference is zero.
    Case("RandomDataset", [], lambda: np.zeros(4, np.int64),
         build=lambda: _all(Dataset.zip((Dataset.random(7), Dataset.random(7))).map(
             lambda a, b: a - b).take(4))),
    Case("AssertCardinalityDataset", [X], lambda x: x,
         build=lambda x: _all(Dataset.from_tensor_slices(x).apply(
             tf.data.experimental.assert_cardinality(6)))),
]
