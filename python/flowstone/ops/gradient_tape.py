"""tf.GradientTape: gradients of eagerly run ops.

The tape itself is C++ (`_C.GradientTape`, include/flowstone/eager.h): the eager executor records
on it every op that reads a watched tensor, and `gradient` computes the backward pass with the
same per-op gradient functions as tf.gradients. This module maps TensorFlow's API onto it.
"""

import contextlib
import threading
import weakref

import numpy as np

from flowstone import _C
from flowstone import errors as _errors
from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, basic_ops
from flowstone.ops import gradients as _gradients
from flowstone.ops import variables as _variables
from flowstone.ops.gradient_options import UnconnectedGradients
from flowstone.util import nest
from flowstone.util.tf_export import tf_export


def _handle_of(value, what):
    """The C++ handle standing for a source or target: a variable's resource handle, or the
    tensor's own."""
    if isinstance(value, _variables.Variable):
        return value.handle._handle
    if isinstance(value, _eager.EagerTensor):
        return value._handle
    raise ValueError(f"Passed in object {value!r} of type '{type(value).__name__}', not "
                     f"tf.Tensor or tf.Variable or ExtensionType, as a {what}.")


# The tapes recording on each thread, innermost last (tf.custom_gradient pauses them and hands
# them its gradient function).
_thread_tapes = threading.local()


def recording_tapes():
    """The GradientTapes recording eagerly on this thread."""
    return [t for t in getattr(_thread_tapes, "stack", ()) if t._tape.recording]


@contextlib.contextmanager
def paused(tapes):
    """`tapes` record nothing in the block."""
    for tape in tapes:
        tape._tape.recording = False
    try:
        yield
    finally:
        for tape in tapes:
            tape._tape.recording = True


def _release_all(held):
    """Releases each (token, release) pair of `held`."""
    while held:
        token, release = held.pop()
        release(token)


@tf_export("GradientTape", "contrib.eager.GradientTape")
class GradientTape:
    """Records the operations run inside `with tf.GradientTape() as tape:` for
    `tape.gradient(target, sources)`."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = _C.GradientTape(persistent, watch_accessed_variables)
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._recording = False
        self._used = False
        self._in_graph = False
        # Gradient functions of tf.custom_gradient calls this tape recorded (custom_gradient_ops),
        # held until the tape is reset, used up or deleted.
        self._custom_gradients = []

    def __enter__(self):
        self._push_tape()
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._pop_tape()

    def _push_tape(self):
        self._in_graph = not _ops.executing_eagerly()
        if self._in_graph:
            return  # in a tf.function's trace, gradient() differentiates the graph instead
        if self._recording:
            raise ValueError("Tape is still recording, This can happen if you try to re-enter an "
                             "already-active tape.")
        self._tape.push()
        self._recording = True
        if not hasattr(_thread_tapes, "stack"):
            _thread_tapes.stack = []
        _thread_tapes.stack.append(self)

    def _pop_tape(self):
        if self._in_graph:
            return
        if not self._recording:
            raise ValueError("Tape is not recording.")
        self._tape.pop()
        self._recording = False
        _thread_tapes.stack.remove(self)

    def watch(self, tensor):
        """Makes the tape trace ops on `tensor` (a tensor, a variable or a structure of them)."""
        if self._in_graph:
            return  # gradient() differentiates the graph, which reaches every tensor
        # One eager tensor, the common case, needs no flattening.
        flat = (tensor,) if type(tensor) is _eager.EagerTensor else nest.flatten(tensor)
        for t in flat:
            if isinstance(t, _ops.Tensor) and not (t.dtype.is_floating or t.dtype.is_complex):
                continue  # TensorFlow watches only floating-point and complex tensors
            self._tape.watch(_handle_of(t, "watched tensor"))

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops run in the block are not recorded."""
        if not self._recording:
            raise ValueError("Tape must be recording when stop_recording is called.")
        self._tape.recording = False
        try:
            yield
        finally:
            self._tape.recording = True

    def reset(self):
        """Forgets everything recorded so far (the tape keeps recording)."""
        self._tape.reset()
        self._used = False
        self._release_custom_gradients()

    def _hold_custom_gradient(self, token, release):
        """Keeps a custom gradient function (its token) until this tape cannot need it; then
        `release(token)`."""
        if not self._custom_gradients:
            weakref.finalize(self, _release_all, self._custom_gradients)
        self._custom_gradients.append((token, release))

    def _release_custom_gradients(self):
        _release_all(self._custom_gradients)

    def _mark_used(self):
        """After a gradient or jacobian: a non-persistent tape is spent."""
        self._used = True
        if not self._persistent:
            self._release_custom_gradients()

    def watched_variables(self):
        """The variables the tape watches (explicitly or as they were read), in watch order."""
        by_id = _variables.eager_variables_by_handle_id
        return tuple(by_id[i] for i in self._tape.watch_order if i in by_id)

    def _check_usable(self):
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")

    def _raw_gradient(self, flat_targets, flat_sources, output_gradients):
        try:
            return self._tape.gradient(flat_targets, flat_sources, output_gradients)
        except _C.StatusError as error:
            raise _errors.from_status_error(error) from None

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(target)/d(source) for each source, in `sources`' structure."""
        self._check_usable()
        if self._in_graph:
            return self._graph_gradient(target, sources, output_gradients, unconnected_gradients)
        if self._recording and not self._persistent:
            self._pop_tape()
        unconnected = (unconnected_gradients
                       if unconnected_gradients is UnconnectedGradients.NONE
                       else UnconnectedGradients(unconnected_gradients))
        if (type(target) is _eager.EagerTensor and type(sources) is _eager.EagerTensor and
                output_gradients is None):
            # The common `tape.gradient(loss, x)`, without the structure handling below.
            (handle,) = self._raw_gradient([target._handle], [sources._handle], [None])
            self._mark_used()
            if handle is not None:
                return _eager.EagerTensor(handle)
            if unconnected is UnconnectedGradients.ZERO:
                return array_ops.zeros_like(sources)
            return None
        flat_targets = [_handle_of(t, "target") for t in nest.flatten(target)]
        flat_sources_values = nest.flatten(sources)
        flat_sources = [_handle_of(s, "source") for s in flat_sources_values]
        grads_in = [None] * len(flat_targets)
        if output_gradients is not None:
            grads_in = [None if g is None else _eager.to_eager(g)._handle
                        for g in nest.flatten(output_gradients)]
        handles = self._raw_gradient(flat_targets, flat_sources, grads_in)
        self._mark_used()
        results = []
        for source, handle in zip(flat_sources_values, handles):
            if handle is not None:
                results.append(_eager.EagerTensor(handle))
            elif unconnected is UnconnectedGradients.ZERO:
                results.append(array_ops.zeros_like(source))
            else:
                results.append(None)
        return nest.pack_sequence_as(sources, results)

    def _graph_gradient(self, target, sources, output_gradients, unconnected_gradients):
        """Inside a tf.function's trace: tf.gradients over the traced graph, where an eager
        variable is the captured placeholder of its handle. Unlike TensorFlow's tape, this does
        not check that the sources were watched (docs/COMPAT.md)."""
        graph = _ops.get_default_graph()
        flat_sources = nest.flatten(sources)
        xs = [graph._capture_eager(s.handle, "GradientTape.gradient")
              if isinstance(s, _variables.Variable) and s._eager else s for s in flat_sources]
        grads = _gradients.gradients(
            nest.flatten(target), xs,
            grad_ys=None if output_gradients is None else nest.flatten(output_gradients),
            unconnected_gradients=UnconnectedGradients(unconnected_gradients).value)
        self._used = True
        return nest.pack_sequence_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d(target[i...])/d(source[j...]) for each source: shape target.shape + source.shape."""
        self._check_usable()
        if self._recording and not self._persistent:
            self._pop_tape()
        unconnected = UnconnectedGradients(unconnected_gradients)
        target = _eager.to_eager(target)
        flat_sources_values = nest.flatten(sources)
        flat_sources = [_handle_of(s, "source") for s in flat_sources_values]
        size = int(np.prod(target.shape.as_list()))
        rows = [[] for _ in flat_sources]
        for i in range(size):
            one_hot = np.zeros(size, dtype=target.dtype.as_numpy_dtype)
            one_hot[i] = 1
            seed = basic_ops.constant(one_hot.reshape(target.shape.as_list()))
            handles = self._raw_gradient([target._handle], flat_sources, [seed._handle])
            for row, handle, source in zip(rows, handles, flat_sources_values):
                row.append(None if handle is None else _eager.EagerTensor(handle))
        self._mark_used()
        results = []
        for row, source in zip(rows, flat_sources_values):
            source_shape = source.shape.as_list()
            if all(g is None for g in row) and unconnected is UnconnectedGradients.NONE:
                results.append(None)
                continue
            filled = [array_ops.zeros_like(source) if g is None else g for g in row]
            stacked = array_ops.stack(filled) if filled else array_ops.zeros(
                [0] + source_shape, dtype=source.dtype)
            results.append(array_ops.reshape(stacked, target.shape.as_list() + source_shape))
        return nest.pack_sequence_as(sources, results)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """Per example b: d(target[b, ...])/d(source[b, ...]); examples are independent."""
        self._check_usable()
        if self._recording and not self._persistent:
            self._pop_tape()
        target = _eager.to_eager(target)
        shape = target.shape.as_list()
        if not shape:
            raise ValueError("Need first dimension of `target` shape to be known.")
        batch, inner = shape[0], int(np.prod(shape[1:]))
        source_handle = _handle_of(source, "source")
        columns = []
        connected = False
        for j in range(inner):
            one_hot = np.zeros((batch, inner), dtype=target.dtype.as_numpy_dtype)
            one_hot[:, j] = 1
            seed = basic_ops.constant(one_hot.reshape(shape))
            (handle,) = self._raw_gradient([target._handle], [source_handle], [seed._handle])
            connected |= handle is not None
            columns.append(array_ops.zeros_like(source) if handle is None
                           else _eager.EagerTensor(handle))
        self._mark_used()
        if not connected and (UnconnectedGradients(unconnected_gradients)
                              is UnconnectedGradients.NONE):
            return None
        source_shape = source.shape.as_list()
        stacked = array_ops.stack(columns, axis=1)
        return array_ops.reshape(stacked, [batch] + shape[1:] + source_shape[1:])
