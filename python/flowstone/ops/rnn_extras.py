"""tf.nn.raw_rnn: a recurrent cell driven by a user's loop_fn, which decides each step's input,
what is emitted and when each example is finished (one tf.while_loop); and
tf.nn.static_state_saving_rnn: tf.nn.static_rnn whose state comes from and goes back to a state
saver. Both composed as in TensorFlow."""

from flowstone import dtypes as _dtypes
from flowstone.ops.rnn import _tf, static_rnn
from flowstone.util import nest as _nest
from flowstone.util.tf_export import tf_export


def _emit_shape(size):
    if isinstance(size, (list, tuple)):
        return list(size)
    if hasattr(size, "as_list"):
        return size.as_list()
    return [size]


@tf_export("nn.raw_rnn")
def raw_rnn(cell, loop_fn, parallel_iterations=None, swap_memory=False, scope=None):
    """Runs `cell` while some example is unfinished. loop_fn(time, cell_output, cell_state,
    loop_state) returns (finished, next_input, next_cell_state, emit_output, next_loop_state);
    it is called once with cell_output = cell_state = loop_state = None for the initial values
    (then next_cell_state is the initial state and emit_output the structure to emit, or None
    for cell.output_size). Returns (emit_ta, final_state, final_loop_state): TensorArrays of
    the emitted [batch, ...] values per step. A finished example emits zeros and keeps its
    state."""
    tf = _tf()
    if not callable(loop_fn):
        raise TypeError("loop_fn must be a callable")
    parallel_iterations = parallel_iterations or 32
    with tf.variable_scope(scope or "rnn"):
        time = tf.constant(0, dtype=_dtypes.int32)
        finished, next_input, initial_state, emit_structure, init_loop_state = loop_fn(
            time=time, cell_output=None, cell_state=None, loop_state=None)
        flat_input = [tf.convert_to_tensor(x) for x in _nest.flatten(next_input)]
        next_input = _nest.pack_sequence_as(next_input, flat_input)
        loop_state = init_loop_state if init_loop_state is not None else tf.constant(0)
        batch_size = flat_input[0].shape.as_list()[0] if flat_input[0].shape.rank else None
        dynamic_batch = batch_size if batch_size is not None else tf.shape(flat_input[0])[0]
        _nest.assert_same_structure(initial_state, cell.state_size)
        state = _nest.map_structure(tf.convert_to_tensor, initial_state)
        flat_state = _nest.flatten(state)
        if emit_structure is not None:
            flat_emit = _nest.flatten(emit_structure)
            flat_sizes = [e.shape.as_list()[1:] if e.shape.is_fully_defined()
                          else tf.shape(e)[1:] for e in flat_emit]
            flat_dtypes = [e.dtype for e in flat_emit]
        else:
            emit_structure = cell.output_size
            flat_sizes = [_emit_shape(s) for s in _nest.flatten(emit_structure)]
            flat_dtypes = [flat_state[0].dtype] * len(flat_sizes)
        emit_ta = _nest.pack_sequence_as(emit_structure, [
            tf.TensorArray(dtype=dtype, size=0, dynamic_size=True, name=f"rnn_output_{i}")
            for i, dtype in enumerate(flat_dtypes)])
        zero_emit = _nest.pack_sequence_as(emit_structure, [
            tf.zeros(tf.concat([[dynamic_batch], size], 0) if not isinstance(size, list)
                     else [dynamic_batch] + size, dtype)
            for size, dtype in zip(flat_sizes, flat_dtypes)])

        def condition(unused_time, elements_finished, *_):
            return tf.logical_not(tf.reduce_all(elements_finished))

        def body(time, elements_finished, current_input, emit_ta, state, loop_state):
            next_output, cell_state = cell(current_input, state)
            _nest.assert_same_structure(state, cell_state)
            next_time = time + 1
            next_finished, next_input, next_state, emit_output, next_loop_state = loop_fn(
                next_time, next_output, cell_state, loop_state)
            _nest.assert_same_structure(state, next_state)
            _nest.assert_same_structure(current_input, next_input)
            _nest.assert_same_structure(emit_ta, emit_output)
            loop_state = loop_state if next_loop_state is None else next_loop_state

            def keep_finished(current, candidate):
                # Scalars (and TensorArrays) pass through; per-example values of finished
                # examples stay as they were.
                if isinstance(current, tf.TensorArray) or current.shape.rank == 0:
                    return candidate
                return tf.where(elements_finished, current, candidate)

            emit_output = _nest.map_structure(keep_finished, zero_emit, emit_output)
            next_state = _nest.map_structure(keep_finished, state, next_state)
            emit_ta = _nest.map_structure(lambda ta, emit: ta.write(time, emit), emit_ta,
                                          emit_output)
            elements_finished = tf.logical_or(elements_finished, next_finished)
            return next_time, elements_finished, next_input, emit_ta, next_state, loop_state

        returned = tf.while_loop(condition, body,
                                 [time, finished, next_input, emit_ta, state, loop_state],
                                 parallel_iterations=parallel_iterations,
                                 swap_memory=swap_memory)
        emit_ta, final_state, final_loop_state = returned[-3:]
        if init_loop_state is None:
            final_loop_state = None
        return emit_ta, final_state, final_loop_state


@tf_export("nn.static_state_saving_rnn")
def static_state_saving_rnn(cell, inputs, state_saver, state_name, sequence_length=None,
                            scope=None):
    """tf.nn.static_rnn starting from state_saver.state(name) and saving the final state with
    state_saver.save_state(name, value) (state_name matching cell.state_size's structure). The
    last output and the state returned depend on the saves."""
    tf = _tf()
    state_size = cell.state_size
    state_is_tuple = _nest.is_nested(state_size)
    if state_is_tuple != _nest.is_nested(state_name):
        raise ValueError(f"Argument `state_name` should be the same type as "
                         f"`cell.state_size`. Received: state_name={state_name!s}, "
                         f"cell.state_size={state_size!s}.")
    names = _nest.flatten(state_name)
    if state_is_tuple:
        if len(names) != len(_nest.flatten(state_size)):
            raise ValueError(f"Number of elements in argument `state_name` and "
                             f"`cell.state_size` are mismatched. Received "
                             f"state_name={state_name} and cell.state_size={state_size}.")
        initial_state = _nest.pack_sequence_as(state_size,
                                               [state_saver.state(n) for n in names])
    else:
        initial_state = state_saver.state(state_name)
    outputs, state = static_rnn(cell, inputs, initial_state=initial_state,
                                sequence_length=sequence_length, scope=scope)
    flat_state = _nest.flatten(state)
    saves = [state_saver.save_state(n, s) for n, s in zip(names, flat_state)]
    with tf.control_dependencies(saves):
        last = outputs[-1]
        outputs[-1] = _nest.pack_sequence_as(last, [tf.identity(o) for o in _nest.flatten(last)])
        state = _nest.pack_sequence_as(state, [tf.identity(s) for s in flat_state])
    return outputs, state
