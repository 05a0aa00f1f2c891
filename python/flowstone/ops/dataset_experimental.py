"""tf.data.experimental's transformations: functions from a dataset to a dataset, for
`dataset.apply(...)`, over the Dataset methods (see docs/COMPAT.md for what they fuse in TF)."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops.dataset_ops import DatasetV1
from flowstone.util.tf_export import tf_export


@tf_export("data.experimental.map_and_batch")
def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """map(map_func) then batch(batch_size), as one MapAndBatchDataset op: the map runs
    num_parallel_calls (or num_parallel_batches * batch_size, by default batch_size) calls at a
    time, each writing its result into its row of the batch."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("`map_and_batch` allows only one of `num_parallel_batches` and "
                         "`num_parallel_calls` to be set.")
    if num_parallel_batches is not None:
        num_parallel_calls = num_parallel_batches * batch_size

    def apply(dataset):
        return dataset._map_and_batch(map_func, batch_size, num_parallel_calls, drop_remainder)

    return apply


@tf_export("data.experimental.dense_to_ragged_batch")
def dense_to_ragged_batch(batch_size, drop_remainder=False, row_splits_dtype=_dtypes.int64):
    """Dataset.ragged_batch as a transformation for `dataset.apply(...)`."""
    def apply(dataset):
        return dataset.ragged_batch(batch_size, drop_remainder, row_splits_dtype)

    return apply


@tf_export("data.experimental.parallel_interleave")
def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """interleave(map_func, cycle_length, block_length): elements in the deterministic order
    (sloppy=True allows any order; this one is it)."""
    del sloppy, buffer_output_elements, prefetch_input_elements  # tuning of TF's threads

    def apply(dataset):
        return dataset.interleave(map_func, cycle_length=cycle_length, block_length=block_length)

    return apply


@tf_export("data.experimental.unbatch")
def unbatch():
    """Dataset.unbatch as a transformation."""
    return lambda dataset: dataset.unbatch()


@tf_export("data.experimental.ignore_errors")
def ignore_errors(log_warning=False):
    """Dataset.ignore_errors as a transformation."""
    del log_warning
    return lambda dataset: dataset.ignore_errors()


@tf_export("data.experimental.cardinality")
def cardinality(dataset):
    """dataset.cardinality(): its number of elements as a scalar int64 tensor
    (INFINITE_CARDINALITY or UNKNOWN_CARDINALITY where there is no count)."""
    return dataset.cardinality()


@tf_export("data.experimental.get_single_element")
def get_single_element(dataset):
    """dataset.get_single_element(): its one element."""
    if not hasattr(dataset, "get_single_element"):
        raise TypeError(f"Invalid `dataset`. Expected a `tf.data.Dataset` object but got "
                        f"{type(dataset)}.")
    return dataset.get_single_element()


@tf_export("data.experimental.scan")
def scan(initial_state, scan_func):
    """Dataset.scan as a transformation."""
    return lambda dataset: dataset.scan(initial_state, scan_func)


@tf_export("data.experimental.take_while")
def take_while(predicate):
    """Dataset.take_while as a transformation."""
    return lambda dataset: dataset.take_while(predicate)


@tf_export("data.experimental.unique")
def unique():
    """Dataset.unique as a transformation."""
    return lambda dataset: dataset.unique()


@tf_export("data.experimental.Counter")
def Counter(start=0, step=1, dtype=_dtypes.int64):  # noqa: N802 (TF's name)
    """Dataset.counter: start, start + step, ... without end."""
    return DatasetV1.counter(start, step, dtype)


@tf_export("data.experimental.group_by_window")
def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    """Dataset.group_by_window as a transformation."""
    return lambda dataset: dataset.group_by_window(key_func, reduce_func, window_size,
                                                   window_size_func)


@tf_export("data.experimental.bucket_by_sequence_length")
def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """Dataset.bucket_by_sequence_length as a transformation."""
    return lambda dataset: dataset.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
        padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)


@tf_export("data.experimental.choose_from_datasets")
def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=False):
    """Dataset.choose_from_datasets (stop_on_empty_dataset defaults to False here, as in TF)."""
    return DatasetV1.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


@tf_export("data.experimental.sample_from_datasets")
def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    """Dataset.sample_from_datasets."""
    return DatasetV1.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


@tf_export("data.experimental.assert_cardinality")
def assert_cardinality(expected_cardinality):
    """The dataset, reporting `expected_cardinality` as its cardinality and failing with
    FailedPreconditionError when running it finds another number of elements."""
    return lambda dataset: dataset._unary("AssertCardinalityDataset", [
        lambda: _ops.convert_to_tensor(expected_cardinality, dtype=_dtypes.int64,
                                       name="cardinality")])


@tf_export("data.experimental.enumerate_dataset")
def enumerate_dataset(start=0):
    """Dataset.enumerate as a transformation."""
    return lambda dataset: dataset.enumerate(start)


@tf_export("data.experimental.RandomDataset")
def RandomDataset(seed=None):  # noqa: N802 (TF's name)
    """Dataset.random: endless pseudo-random int64 values."""
    return DatasetV1.random(seed)
