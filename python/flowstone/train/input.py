"""TF1's queue-based input pipeline: producers (string_input_producer, range_input_producer,
slice_input_producer, input_producer, limit_epochs) and batchers (batch, shuffle_batch,
batch_join, shuffle_batch_join, maybe_batch, maybe_shuffle_batch). Each builds a queue, its
enqueue ops and a QueueRunner in the graph's QUEUE_RUNNERS collection, as TensorFlow's
training/input.py does; start_queue_runners (or a MonitoredSession) starts them.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.tensor_shape import TensorShape
from flowstone.ops import (array_ops, basic_ops, check_ops, data_flow_ops, math_ops,
                           random_composites, variables)
from flowstone.ops.partition_ops import boolean_mask
from flowstone.train import queue_runner
from flowstone.util.tf_export import tf_export

# --- Producers ----------------------------------------------------------------------------------


@tf_export("train.limit_epochs")
def limit_epochs(tensor, num_epochs=None, name=None):
    """`tensor`, which raises OutOfRangeError once it has been evaluated `num_epochs` times. The
    count is a local variable: run tf.local_variables_initializer() first."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    with _ops.name_scope(name, "limit_epochs", [tensor]):
        epochs = variables.Variable(0, dtype=_dtypes.int64, name="epochs", trainable=False,
                                    collections=[_ops.GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with _ops.control_dependencies([counter]):
            return basic_ops.identity(tensor, name="limit_epochs")


@tf_export("train.input_producer")
def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True, seed=None,
                   capacity=32, shared_name=None, summary_name=None, name=None, cancel_op=None):
    """A FIFO queue fed with the rows of `input_tensor` (shuffled each epoch when `shuffle`),
    `num_epochs` times or forever."""
    del summary_name  # no fill-level summary (docs/COMPAT.md)
    with _ops.name_scope(name, "input_producer", [input_tensor]):
        input_tensor = _ops.convert_to_tensor(input_tensor, name="input_tensor")
        shape = input_tensor.shape[1:]
        if element_shape is not None:
            shape = shape.merge_with(TensorShape(element_shape))
        if not shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             "`element_shape` must be specified")
        if shuffle:
            input_tensor = random_composites.random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = data_flow_ops.FIFOQueue(capacity=capacity, dtypes=[input_tensor.dtype],
                                        shapes=[shape], shared_name=shared_name,
                                        name="fifo_queue")
        enqueue = queue.enqueue_many([input_tensor])
        queue_runner.add_queue_runner(
            queue_runner.QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        return queue


@tf_export("train.string_input_producer")
def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None, capacity=32,
                          shared_name=None, name=None, cancel_op=None):
    """A queue of the strings (usually file names) of `string_tensor`, for a reader."""
    message = "string_input_producer requires a non-null input tensor"
    if isinstance(string_tensor, (list, tuple)) and not string_tensor:
        raise ValueError(message)
    with _ops.name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = _ops.convert_to_tensor(string_tensor, dtype=_dtypes.string)
        # An empty tensor fed at run time would make the runner enqueue nothing forever.
        nonempty = check_ops.Assert(math_ops.greater(array_ops.size(string_tensor), 0),
                                    [message])
        with _ops.control_dependencies([nonempty]):
            string_tensor = basic_ops.identity(string_tensor)
        return input_producer(string_tensor, num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                              capacity=capacity, shared_name=shared_name, name=scope,
                              cancel_op=cancel_op)


@tf_export("train.range_input_producer")
def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """A queue of the integers 0 .. limit - 1 (int32)."""
    with _ops.name_scope(name, "input_producer", [limit]) as scope:
        range_tensor = array_ops.range(limit)
        return input_producer(range_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, name=scope)


@tf_export("train.slice_input_producer")
def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row of every tensor in `tensor_list` (the same row of each) per evaluation."""
    with _ops.name_scope(name, "input_producer", tensor_list):
        tensor_list = [_ops.convert_to_tensor(t) for t in tensor_list]
        if not tensor_list:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        range_size = array_ops.shape(tensor_list[0])[0]
        queue = range_input_producer(range_size, num_epochs=num_epochs, shuffle=shuffle,
                                     seed=seed, capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [array_ops.gather(t, index) for t in tensor_list]


# --- Batchers -----------------------------------------------------------------------------------


def _flatten(tensors):
    """(the tensors of a list, tuple, dict or single tensor, how to rebuild that structure)."""
    if isinstance(tensors, dict):
        keys = sorted(tensors)
        return [tensors[k] for k in keys], lambda out: dict(zip(keys, out))
    if isinstance(tensors, (list, tuple)):
        kind = type(tensors)
        return list(tensors), lambda out: kind(out) if kind is tuple else list(out)
    return [tensors], lambda out: out[0]


def _shapes(tensor_lists, shapes, enqueue_many, dynamic_pad):
    if shapes is None:
        first = tensor_lists[0]
        shapes = [t.shape[1:] if enqueue_many else t.shape for t in first]
        for other in tensor_lists[1:]:
            shapes = [s.merge_with(t.shape[1:] if enqueue_many else t.shape)
                      for s, t in zip(shapes, other)]
    shapes = [TensorShape(s) for s in shapes]
    if dynamic_pad:
        if any(s.rank is None for s in shapes):
            raise ValueError(f"With dynamic_pad, all shapes must have a known rank: {shapes}")
    elif not all(s.is_fully_defined() for s in shapes):
        raise ValueError(f"All shapes must be fully defined: {shapes}")
    return shapes


def _enqueue(queue, tensor_lists, enqueue_many, keep_input):
    """One enqueue op per tensor list, each run by its own QueueRunner thread. `keep_input` (a
    bool, or with enqueue_many a bool vector) drops the inputs it marks False."""
    ops = []
    for tensors in tensor_lists:
        if keep_input is None:
            ops.append(queue.enqueue_many(tensors) if enqueue_many else queue.enqueue(tensors))
            continue
        # A scalar keep_input becomes a mask of the batch (of one, without enqueue_many), so
        # both forms enqueue the rows a boolean_mask keeps.
        keep = _ops.convert_to_tensor(keep_input, dtype=_dtypes.bool)
        if not enqueue_many:
            tensors = [array_ops.expand_dims(t, 0) for t in tensors]
        if keep.shape.rank == 0:
            keep = array_ops.fill(array_ops.shape(tensors[0])[:1], keep)
        elif not (enqueue_many and keep.shape.rank == 1):
            raise ValueError("keep_input must be a scalar, or with enqueue_many a vector")
        ops.append(queue.enqueue_many([boolean_mask(t, keep) for t in tensors]))
    queue_runner.add_queue_runner(queue_runner.QueueRunner(queue, ops))


def _batch(tensor_lists, rebuild, make_queue, batch_size, enqueue_many, shapes, dynamic_pad,
           allow_smaller_final_batch, keep_input, name, default_name):
    if enqueue_many and any(t.shape.rank == 0 for ts in tensor_lists for t in ts):
        raise ValueError("With enqueue_many, every tensor needs a batch dimension")
    with _ops.name_scope(name, default_name, tensor_lists[0]):
        tensor_lists = [[_ops.convert_to_tensor(t) for t in ts] for ts in tensor_lists]
        dtypes = [t.dtype for t in tensor_lists[0]]
        for ts in tensor_lists[1:]:
            if [t.dtype for t in ts] != dtypes:
                raise TypeError("Every tensor list must have the same dtypes")
        shapes = _shapes(tensor_lists, shapes, enqueue_many, dynamic_pad)
        queue = make_queue(dtypes, shapes)
        _enqueue(queue, tensor_lists, enqueue_many, keep_input)
        if allow_smaller_final_batch:
            out = queue.dequeue_up_to(batch_size)
        else:
            out = queue.dequeue_many(batch_size)
        out = out if isinstance(out, list) else [out]
        return rebuild(out)


def _fifo(capacity, dynamic_pad, shared_name):
    def make(dtypes, shapes):
        if dynamic_pad:
            return data_flow_ops.PaddingFIFOQueue(capacity, dtypes, shapes,
                                                  shared_name=shared_name)
        return data_flow_ops.FIFOQueue(capacity, dtypes, shapes, shared_name=shared_name)
    return make


def _shuffle(capacity, min_after_dequeue, seed, shared_name):
    def make(dtypes, shapes):
        return data_flow_ops.RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes,
                                                seed=seed, shared_name=shared_name)
    return make


def _one_list(tensors, num_threads):
    flat, rebuild = _flatten(tensors)
    return [flat] * max(1, int(num_threads)), rebuild


def _many_lists(tensors_list):
    if not tensors_list:
        raise ValueError("Expecting at least one tensor list")
    flats = [_flatten(t) for t in tensors_list]
    return [f for f, _ in flats], flats[0][1]


@tf_export("train.batch")
def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches of `tensors` from a FIFO queue that `num_threads` threads fill (a
    PaddingFIFOQueue with dynamic_pad). With allow_smaller_final_batch the last batch may be
    smaller; otherwise a closed queue with fewer than batch_size elements raises
    OutOfRangeError."""
    lists, rebuild = _one_list(tensors, num_threads)
    return _batch(lists, rebuild, _fifo(capacity, dynamic_pad, shared_name), batch_size,
                  enqueue_many, shapes, dynamic_pad, allow_smaller_final_batch, None, name,
                  "batch")


@tf_export("train.maybe_batch")
def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32,
                enqueue_many=False, shapes=None, dynamic_pad=False,
                allow_smaller_final_batch=False, shared_name=None, name=None):
    """batch() of the inputs `keep_input` marks True."""
    lists, rebuild = _one_list(tensors, num_threads)
    return _batch(lists, rebuild, _fifo(capacity, dynamic_pad, shared_name), batch_size,
                  enqueue_many, shapes, dynamic_pad, allow_smaller_final_batch, keep_input,
                  name, "batch")


@tf_export("train.batch_join")
def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """Batches from one FIFO queue that one thread per entry of `tensors_list` fills."""
    lists, rebuild = _many_lists(tensors_list)
    return _batch(lists, rebuild, _fifo(capacity, dynamic_pad, shared_name), batch_size,
                  enqueue_many, shapes, dynamic_pad, allow_smaller_final_batch, None, name,
                  "batch_join")


@tf_export("train.shuffle_batch")
def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """Batches drawn at random from a RandomShuffleQueue that keeps at least
    `min_after_dequeue` elements while its input lasts."""
    lists, rebuild = _one_list(tensors, num_threads)
    return _batch(lists, rebuild, _shuffle(capacity, min_after_dequeue, seed, shared_name),
                  batch_size, enqueue_many, shapes, False, allow_smaller_final_batch, None, name,
                  "shuffle_batch")


@tf_export("train.maybe_shuffle_batch")
def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    """shuffle_batch() of the inputs `keep_input` marks True."""
    lists, rebuild = _one_list(tensors, num_threads)
    return _batch(lists, rebuild, _shuffle(capacity, min_after_dequeue, seed, shared_name),
                  batch_size, enqueue_many, shapes, False, allow_smaller_final_batch,
                  keep_input, name, "shuffle_batch")


@tf_export("train.shuffle_batch_join")
def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """shuffle_batch() filled by one thread per entry of `tensors_list`."""
    lists, rebuild = _many_lists(tensors_list)
    return _batch(lists, rebuild, _shuffle(capacity, min_after_dequeue, seed, shared_name),
                  batch_size, enqueue_many, shapes, False, allow_smaller_final_batch, None, name,
                  "shuffle_batch_join")


@tf_export("train.maybe_batch_join")
def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    """batch_join() of the inputs `keep_input` marks True."""
    lists, rebuild = _many_lists(tensors_list)
    return _batch(lists, rebuild, _fifo(capacity, dynamic_pad, shared_name), batch_size,
                  enqueue_many, shapes, dynamic_pad, allow_smaller_final_batch, keep_input,
                  name, "batch_join")


@tf_export("train.maybe_shuffle_batch_join")
def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, keep_input,
                             seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    """shuffle_batch_join() of the inputs `keep_input` marks True."""
    lists, rebuild = _many_lists(tensors_list)
    return _batch(lists, rebuild, _shuffle(capacity, min_after_dequeue, seed, shared_name),
                  batch_size, enqueue_many, shapes, False, allow_smaller_final_batch,
                  keep_input, name, "shuffle_batch_join")
