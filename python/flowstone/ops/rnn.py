"""Running a recurrent cell over a sequence: tf.nn.static_rnn (unrolled in the graph),
tf.nn.dynamic_rnn (one tf.while_loop over the time steps), and their bidirectional forms.

As in TensorFlow, the cell runs inside the variable scope "rnn" (or the `scope` given), so its
variables are `rnn/<cell name>/...`; the bidirectional forms add "bidirectional_rnn/fw" and
".../bw". With `sequence_length`, steps past an example's length emit zeros and carry its state
through unchanged, so the final state is the state at each example's last valid step.
"""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util import nest as _nest
from flowstone.util.tf_export import tf_export


def _tf():
    """The public namespace, at call time (this module is imported while it is being built)."""
    import flowstone
    return flowstone


def _batch_size(flat_inputs, batch_axis):
    """The batch size: static when any input knows it, else read from the first input."""
    tf = _tf()
    for tensor in flat_inputs:
        if tensor.shape.rank is not None:
            if tensor.shape.rank < 2:
                raise ValueError(f"Input size (depth of inputs) must be accessible via shape "
                                 f"inference, but saw value None; expected rank >= 2, got "
                                 f"{tensor.shape}")
            size = tensor.shape.as_list()[batch_axis]
            if size is not None:
                return size
    return tf.shape(flat_inputs[0])[batch_axis]


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch_size, dtype)


def _checked_sequence_length(sequence_length):
    tf = _tf()
    if sequence_length is None:
        return None
    sequence_length = tf.cast(sequence_length, _dtypes.int32)
    if sequence_length.shape.rank not in (None, 1):
        raise ValueError("sequence_length must be a vector of length batch_size, but saw "
                         f"shape: {sequence_length.shape}")
    return tf.identity(sequence_length, name="sequence_length")


def _mask_step(time, sequence_length, zero_output, state, new_output, new_state):
    """Zeros for the output and the previous state for examples whose sequence has ended."""
    tf = _tf()
    finished = tf.greater_equal(time, sequence_length)
    output = _nest.map_structure(lambda zero, new: tf.where(finished, zero, new),
                                 zero_output, new_output)
    state = _nest.map_structure(lambda old, new: tf.where(finished, old, new), state, new_state)
    return output, state


def _zero_output(cell, batch_size, dtype):
    tf = _tf()
    return _nest.map_structure(
        lambda size: tf.zeros(tf.stack([batch_size] + (list(size) if isinstance(size, (list, tuple))
                                                        else [size])), dtype),
        cell.output_size)


@tf_export("nn.static_rnn")
def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Unrolls `cell` over `inputs`, a list of [batch, depth] tensors (one per step). Returns
    (outputs, a list per step, and the final state)."""
    tf = _tf()
    if not _nest.is_nested(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    outputs = []
    with tf.variable_scope(scope or "rnn") as varscope:
        first = [_ops.convert_to_tensor(t) for t in _nest.flatten(inputs[0])]
        batch_size = _batch_size(first, 0)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        sequence_length = _checked_sequence_length(sequence_length)
        zero_output = None
        if sequence_length is not None:
            zero_output = _zero_output(cell, batch_size,
                                       dtype or _nest.flatten(state)[0].dtype)
        for time, step_input in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            new_output, new_state = cell(step_input, state)
            if sequence_length is None:
                output, state = new_output, new_state
            else:
                output, state = _mask_step(time, sequence_length, zero_output, state,
                                           new_output, new_state)
            outputs.append(output)
        return outputs, state


@tf_export("nn.dynamic_rnn")
def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """Runs `cell` over the time axis of `inputs` ([batch, time, depth], or [time, batch,
    depth] with time_major) in one tf.while_loop. Returns (outputs, final_state)."""
    tf = _tf()
    with tf.variable_scope(scope or "rnn"):
        flat_inputs = [_ops.convert_to_tensor(t, name="input") for t in _nest.flatten(inputs)]
        if not time_major:
            flat_inputs = [_to_time_major(t) for t in flat_inputs]
        batch_size = _batch_size(flat_inputs, 1)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        sequence_length = _checked_sequence_length(sequence_length)
        inputs = _nest.pack_sequence_as(inputs, flat_inputs)
        outputs, final_state = _dynamic_rnn_loop(cell, inputs, state, parallel_iterations or 32,
                                                 sequence_length, batch_size,
                                                 dtype or _nest.flatten(state)[0].dtype)
        if not time_major:
            outputs = _nest.map_structure(_to_time_major, outputs)
        return outputs, final_state


def _to_time_major(tensor):
    """Swaps the first two axes ([batch, time, ...] <-> [time, batch, ...])."""
    tf = _tf()
    rank = tensor.shape.rank
    if rank is None:
        raise ValueError("dynamic_rnn needs inputs of known rank")
    if rank < 2:
        raise ValueError(f"Expected input tensor {tensor.name} to have rank at least 2")
    return tf.transpose(tensor, [1, 0] + list(range(2, rank)))


def _dynamic_rnn_loop(cell, inputs, initial_state, parallel_iterations, sequence_length,
                      batch_size, dtype):
    tf = _tf()
    flat_inputs = _nest.flatten(inputs)
    time_steps = tf.shape(flat_inputs[0])[0]
    static_steps = flat_inputs[0].shape.as_list()[0]
    with tf.name_scope("dynamic_rnn"):
        input_tas = [tf.TensorArray(t.dtype, size=time_steps, element_shape=t.shape[1:],
                                    name=f"input_{i}").unstack(t)
                     for i, t in enumerate(flat_inputs)]
        flat_output_sizes = _nest.flatten(cell.output_size)
        output_tas = [tf.TensorArray(dtype, size=time_steps, name=f"output_{i}")
                      for i in range(len(flat_output_sizes))]
        zero_output = None
        loop_bound = time_steps
        if sequence_length is not None:
            zero_output = _zero_output(cell, batch_size, dtype)
            loop_bound = tf.minimum(time_steps, tf.maximum(1, tf.reduce_max(sequence_length)))
        time = tf.constant(0, _dtypes.int32, name="time")

    def step(time, output_tas, state):
        step_inputs = _nest.pack_sequence_as(inputs, [ta.read(time) for ta in input_tas])
        for tensor, source in zip(_nest.flatten(step_inputs), flat_inputs):
            tensor.set_shape(source.shape[1:])
        new_output, new_state = cell(step_inputs, state)
        if sequence_length is None:
            output, state = new_output, new_state
        else:
            output, state = _mask_step(time, sequence_length, zero_output, state, new_output,
                                       new_state)
        output_tas = [ta.write(time, out) for ta, out in zip(output_tas, _nest.flatten(output))]
        return time + 1, output_tas, state

    _, final_tas, final_state = tf.while_loop(
        lambda time, *_: time < loop_bound, step, (time, output_tas, initial_state),
        parallel_iterations=parallel_iterations, maximum_iterations=time_steps)
    flat_outputs = []
    for ta, size in zip(final_tas, flat_output_sizes):
        stacked = ta.stack()
        dims = list(size) if isinstance(size, (list, tuple)) else [size]
        static_batch = batch_size if isinstance(batch_size, int) else None
        stacked.set_shape([static_steps, static_batch] + dims)
        flat_outputs.append(stacked)
    return _nest.pack_sequence_as(cell.output_size, flat_outputs), final_state


def _reverse(tensors, sequence_length, seq_axis, batch_axis):
    """Reverses each tensor along time: whole sequences, or each example's first
    sequence_length steps."""
    tf = _tf()
    if sequence_length is None:
        return _nest.map_structure(lambda t: tf.reverse(t, [seq_axis]), tensors)
    return _nest.map_structure(
        lambda t: tf.reverse_sequence(t, sequence_length, seq_axis=seq_axis,
                                      batch_axis=batch_axis), tensors)


@tf_export("nn.bidirectional_dynamic_rnn")
def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """A forward and a backward dynamic_rnn over the same inputs. Returns ((output_fw,
    output_bw), (state_fw, state_bw)); the backward outputs are in input order."""
    tf = _tf()
    with tf.variable_scope(scope or "bidirectional_rnn"):
        with tf.variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length,
                                              initial_state_fw, dtype, parallel_iterations,
                                              swap_memory, time_major, scope=fw_scope)
        time_axis, batch_axis = (0, 1) if time_major else (1, 0)
        with tf.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse(inputs, sequence_length, time_axis, batch_axis)
            reversed_output, state_bw = dynamic_rnn(cell_bw, reversed_inputs, sequence_length,
                                                    initial_state_bw, dtype,
                                                    parallel_iterations, swap_memory,
                                                    time_major, scope=bw_scope)
        output_bw = _reverse(reversed_output, sequence_length, time_axis, batch_axis)
        return (output_fw, output_bw), (state_fw, state_bw)


@tf_export("nn.static_bidirectional_rnn")
def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """A forward and a backward static_rnn. Returns (outputs, state_fw, state_bw) where each
    step's output is the forward and backward outputs concatenated."""
    tf = _tf()
    if not _nest.is_nested(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with tf.variable_scope(scope or "bidirectional_rnn"):
        with tf.variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length, scope=fw_scope)
        with tf.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_steps(inputs, sequence_length)
            reversed_output, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw,
                                                   dtype, sequence_length, scope=bw_scope)
    output_bw = _reverse_steps(reversed_output, sequence_length)
    outputs = [tf.concat([fw, bw], 1) for fw, bw in zip(output_fw, output_bw)]
    return outputs, state_fw, state_bw


def _reverse_steps(steps, sequence_length):
    """A list of per-step tensors reversed in time (per example, within its length)."""
    tf = _tf()
    if sequence_length is None:
        return list(reversed(steps))
    stacked = tf.stack(steps, axis=0)
    reversed_stack = tf.reverse_sequence(stacked, tf.cast(sequence_length, _dtypes.int64),
                                         seq_axis=0, batch_axis=1)
    return tf.unstack(reversed_stack, num=len(steps), axis=0)
