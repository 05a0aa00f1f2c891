"""TensorFlow 2's tf.summary: file writers (create_file_writer, as_default, flush) and writes at
a step, through the C++ writer ops (src/ops/summary/summary_writer_ops.cc), so they run the same
eagerly, in a tf.function and in a TF1 graph (where tf.compat.v1.summary.initialize opens the
writers and all_v2_summary_ops lists the writes).

tf.summary.scalar, histogram, image, text and audio are TensorFlow 1's and 2's at once, as
TensorFlow 2's compat.v1 ops forward to the v2 ones: a call takes the v2 path when it gives a
step (or v2's `data=` / `description=`), when a default writer is set, or when executing
eagerly; otherwise it builds the TF1 summary op (summary_ops.py).
"""

import contextlib
import itertools
import threading

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos as _protos
from flowstone.util.tf_export import tf_export

_WRITER_INIT_OPS = "_SUMMARY_WRITER_V2"  # TensorFlow's collection of writer init ops
_V2_SUMMARY_OPS = "_SUMMARY_V2"
_writer_ids = itertools.count()


class _State(threading.local):
    """Per thread, as TensorFlow's: the default writer, the default step, whether to record."""

    def __init__(self):
        self.writer = None
        self.step = None
        self.recording = True


_state = _State()


@tf_export("summary.SummaryWriter")
class SummaryWriter:
    """A writer of summaries, set as the default for the summary functions by as_default()."""

    def set_as_default(self, step=None):
        """Makes this the default writer (and `step` the default step) until another is set."""
        _state.writer = self
        if step is not None:
            _state.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Makes this the default writer (and `step` the default step) inside the block."""
        old_writer, old_step = _state.writer, _state.step
        self.set_as_default(step)
        try:
            yield self
        finally:
            if _ops.executing_eagerly():
                self.flush()
            _state.writer, _state.step = old_writer, old_step

    def init(self):
        raise NotImplementedError

    def flush(self):
        raise NotImplementedError

    def close(self):
        raise NotImplementedError


class _ResourceSummaryWriter(SummaryWriter):
    """A writer resource with an event file in `logdir`: opened at once when executing
    eagerly, by its init op (or tf.compat.v1.summary.initialize) in a graph."""

    def __init__(self, logdir, max_queue, flush_millis, filename_suffix, name):
        with _ops.name_scope(name, "SummaryWriter"):
            shared_name = f"summary_writer_{next(_writer_ids)}"
            self._handle = _ops.apply_op("SummaryWriter", [], {"shared_name": shared_name},
                                         name="writer").outputs[0]
            self._init_op = self._apply("CreateSummaryFileWriter", [
                _ops.convert_to_tensor(logdir, dtype=_dtypes.string, name="logdir"),
                _ops.convert_to_tensor(max_queue, dtype=_dtypes.int32, name="max_queue"),
                _ops.convert_to_tensor(flush_millis, dtype=_dtypes.int32, name="flush_millis"),
                _ops.convert_to_tensor(filename_suffix, dtype=_dtypes.string,
                                       name="filename_suffix")])
        if not _ops.executing_eagerly():
            _ops.add_to_collection(_WRITER_INIT_OPS, self._init_op)
        self._logdir = logdir

    def _apply(self, op_type, inputs, attrs=None):
        return _ops.apply_op(op_type, [self._handle] + list(inputs), attrs or {}, name=op_type)

    def init(self):
        """The op opening the event file (already run when executing eagerly)."""
        return self._init_op

    def flush(self):
        return self._apply("FlushSummaryWriter", [])

    def close(self):
        return self._apply("CloseSummaryWriter", [])


class _NoopSummaryWriter(SummaryWriter):
    """What create_file_writer(None) and create_noop_writer() give: writes nothing."""

    def init(self):
        return None

    def flush(self):
        return None

    def close(self):
        return None


@tf_export("summary.create_file_writer")
def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False, experimental_mesh=None):
    """A writer of an event file in `logdir` (made if missing); None gives a no-op writer."""
    if logdir is None:
        return _NoopSummaryWriter()
    return _ResourceSummaryWriter(str(logdir), 10 if max_queue is None else max_queue,
                                  120000 if flush_millis is None else flush_millis,
                                  ".v2" if filename_suffix is None else filename_suffix, name)


@tf_export("summary.create_noop_writer")
def create_noop_writer():
    return _NoopSummaryWriter()


@tf_export("summary.flush")
def flush(writer=None, name=None):
    """Flushes `writer` (the default writer when None)."""
    writer = writer or _state.writer
    return None if writer is None else writer.flush()


@tf_export("summary.initialize")
def initialize(graph=None, session=None):
    """Opens the event files of the graph's v2 writers (their init ops) in `session` (the
    default session); TensorFlow 1 programs call it once before their training loop."""
    from flowstone.client.session import get_default_session
    if _ops.executing_eagerly():
        return  # eager writers are open already
    graph = graph or _ops.get_default_graph()
    session = session or get_default_session()
    if session is None:
        raise ValueError("Argument `session` must be passed if no default session exists")
    init_ops = graph.get_collection(_WRITER_INIT_OPS)
    if init_ops:
        session.run(init_ops)


# --- step and recording ----------------------------------------------------------------------
@tf_export("summary.experimental.get_step")
def get_step():
    return _state.step


@tf_export("summary.experimental.set_step")
def set_step(step):
    """The step the summary functions use when they are given none."""
    _state.step = step


@tf_export("summary.record_if")
@contextlib.contextmanager
def record_if(condition):
    """Summaries write inside the block only when `condition` (a bool, a bool tensor, or a
    callable returning one) holds."""
    old = _state.recording
    _state.recording = condition
    try:
        yield
    finally:
        _state.recording = old


@tf_export("summary.should_record_summaries")
def should_record_summaries():
    recording = _state.recording
    recording = recording() if callable(recording) else recording
    if _state.writer is None or isinstance(_state.writer, _NoopSummaryWriter):
        return False if not _ops.is_tensor(recording) else _ops.constant(False)
    return recording


def has_default_writer():
    return _state.writer is not None


def uses_v2(step=None, v2_only_arguments=False):
    """Whether a shared summary function takes TensorFlow 2's path (see the module doc)."""
    return (step is not None or v2_only_arguments or _state.writer is not None
            or _ops.executing_eagerly())


# --- writes ----------------------------------------------------------------------------------
def _tag(name):
    """`name` under the enclosing name scopes, not made unique (TensorFlow 2's tags)."""
    if _ops.executing_eagerly():
        scope = _ops.eager_name_scope().rstrip("/")
    else:
        scope = _ops.get_default_graph().get_name_scope()
    return f"{scope}/{name}" if scope else name


def _resolve_step(step):
    step = _state.step if step is None else step
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument "
                         "or through tf.summary.experimental.set_step()")
    return _ops.convert_to_tensor(step, dtype=_dtypes.int64, name="step")


def _write(name, make_op, step):
    """Runs (or adds) the write `make_op(writer, step, tag)` when a writer records; returns
    whether it wrote (a bool tensor in a graph, as TensorFlow's)."""
    writer = _state.writer
    if writer is None or isinstance(writer, _NoopSummaryWriter):
        return _ops.constant(False)
    recording = _state.recording
    recording = recording() if callable(recording) else recording
    if recording is False:
        return _ops.constant(False)
    from flowstone.ops import basic_ops, control_flow_ops
    tag = _tag(name)
    with _ops.name_scope(name):
        step_tensor = _resolve_step(step)

        def write():
            op = make_op(writer, step_tensor, tag)
            with _ops.control_dependencies([op]):
                return basic_ops.identity(_ops.constant(True))

        if recording is True:
            result = write()
        else:
            result = control_flow_ops.cond(
                _ops.convert_to_tensor(recording, dtype=_dtypes.bool), write,
                lambda: _ops.constant(False))
    if not _ops.executing_eagerly():
        _ops.add_to_collection(_V2_SUMMARY_OPS, result.op)
    return result


def _metadata(plugin_name, description=None):
    metadata = _protos.SummaryMetadata(
        plugin_data=_protos.SummaryMetadata.PluginData(plugin_name=plugin_name))
    if description:
        metadata.summary_description = description
    return metadata.SerializeToString()


@tf_export("summary.write")
def write(tag, tensor, step=None, metadata=None, name=None):
    """Writes `tensor` at `step` under `tag` with `metadata` (a SummaryMetadata or its bytes)."""
    if metadata is None:
        metadata = b""
    elif hasattr(metadata, "SerializeToString"):
        metadata = metadata.SerializeToString()

    def make(writer, step_tensor, _):
        return writer._apply("WriteSummary", [
            step_tensor, _ops.convert_to_tensor(tensor),
            _ops.convert_to_tensor(tag, dtype=_dtypes.string),
            _ops.convert_to_tensor(metadata, dtype=_dtypes.string)])

    return _write(name or "write_summary", make, step)


def _tensor_write(plugin, name, data, step, description, dtype=None):
    def make(writer, step_tensor, tag):
        value = _ops.convert_to_tensor(data, dtype=dtype)
        return writer._apply("WriteSummary", [
            step_tensor, value, _ops.convert_to_tensor(tag, dtype=_dtypes.string),
            _ops.convert_to_tensor(_metadata(plugin, description), dtype=_dtypes.string)])

    return _write(name, make, step)


def _raw_write(op_type, name, inputs, attrs, step):
    """A TF1 summary op's Summary proto, written at the step (TensorBoard reads both forms)."""

    def make(writer, step_tensor, tag):
        summary = _ops.apply_op(op_type,
                                [_ops.convert_to_tensor(tag, dtype=_dtypes.string)] + inputs(),
                                attrs).outputs[0]
        return writer._apply("WriteRawProtoSummary", [step_tensor, summary])

    return _write(name, make, step)


def scalar_v2(name, data, step=None, description=None):
    """Writes a float scalar (TensorBoard's scalars plugin)."""
    data = _ops.convert_to_tensor(data)
    if data.shape.rank not in (None, 0):
        raise ValueError(f"tf.summary.scalar '{name}' takes a scalar, got shape {data.shape}")
    return _tensor_write("scalars", name, _cast(data, _dtypes.float32), step, description)


def text_v2(name, data, step=None, description=None):
    data = _ops.convert_to_tensor(data, dtype=_dtypes.string)
    return _tensor_write("text", name, data, step, description)


def histogram_v2(name, data, step=None, buckets=None, description=None):
    data = _ops.convert_to_tensor(data)
    return _raw_write("HistogramSummary", name, lambda: [data], {}, step)


def image_v2(name, data, step=None, max_outputs=3, description=None):
    data = _ops.convert_to_tensor(data)
    return _raw_write("ImageSummary", name, lambda: [data], {"max_images": max_outputs}, step)


def audio_v2(name, data, sample_rate, step=None, max_outputs=3, encoding=None,
             description=None):
    def inputs():
        return [_ops.convert_to_tensor(data, dtype=_dtypes.float32),
                _ops.convert_to_tensor(sample_rate, dtype=_dtypes.float32)]

    return _raw_write("AudioSummaryV2", name, inputs, {"max_outputs": max_outputs}, step)


def _cast(tensor, dtype):
    from flowstone.ops import math_ops
    return tensor if tensor.dtype == dtype else math_ops.cast(tensor, dtype)


@tf_export("summary.experimental.write_raw_pb")
def write_raw_pb(tensor, step=None, name=None):
    """Writes serialized Summary protos (a string tensor) at the step."""

    def make(writer, step_tensor, _):
        return writer._apply("WriteRawProtoSummary", [
            step_tensor, _ops.convert_to_tensor(tensor, dtype=_dtypes.string)])

    return _write(name or "write_raw_pb", make, step)
