"""tf.data.experimental's transformations: functions from a dataset to a dataset, for
`dataset.apply(...)`, over the Dataset methods (see docs/COMPAT.md for what they fuse in TF)."""

from flowstone.util.tf_export import tf_export


@tf_export("data.experimental.map_and_batch")
def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """map(map_func) then batch(batch_size); the map runs num_parallel_calls (or
    num_parallel_batches * batch_size) calls at a time."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("`map_and_batch` allows only one of `num_parallel_batches` and "
                         "`num_parallel_calls` to be set.")
    if num_parallel_batches is not None:
        num_parallel_calls = num_parallel_batches * batch_size

    def apply(dataset):
        return dataset.map(map_func, num_parallel_calls=num_parallel_calls).batch(
            batch_size, drop_remainder=drop_remainder)

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
