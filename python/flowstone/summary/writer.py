"""tf.summary.FileWriter and FileWriterCache (TensorFlow 1's).

The writer turns summaries, graphs, session logs and run metadata into `Event` protos and hands
them, serialized, to `_C.EventFileWriter` (src/io/events_writer.cc), which names the file
`events.out.tfevents.<time>.<host><suffix>`, writes the version record, queues events and
flushes every `flush_secs` on a C++ thread of its own. After `close()` a writer ignores events,
with a warning, until `reopen()` starts a new file, as TensorFlow's does.
"""

import threading
import time
import warnings

import numpy as np

from flowstone import _C
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos as _protos
from flowstone.platform import gfile as _gfile
from flowstone.platform import tf_logging as _logging
from flowstone.util.tf_export import tf_export


def _status_call(fn, *args):
    try:
        return fn(*args)
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None


def _as_summary(summary):
    """A Summary message from a Summary, its serialized bytes, or a fetched string scalar."""
    if isinstance(summary, np.ndarray) and summary.shape == ():
        summary = summary.item()
    if isinstance(summary, (bytes, np.bytes_)):
        return _protos.Summary.FromString(bytes(summary))
    if isinstance(summary, _protos.Summary):
        return summary
    raise TypeError(f"add_summary takes a Summary proto or its serialized bytes (what a summary "
                    f"op returns from Session.run), got {type(summary).__name__}")


@tf_export("summary.FileWriter")
class FileWriter:
    """Writes Summary protos, graphs and events to an event file in `logdir` for TensorBoard."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        if _ops.executing_eagerly():
            raise RuntimeError("tf.summary.FileWriter is not compatible with eager execution. "
                               "Build the model in a graph (tf.Graph().as_default()) to write "
                               "summaries with it.")
        if session is not None:
            raise NotImplementedError(
                "FileWriter(session=...) writes through graph-side summary writer ops, which "
                "Flowstone does not have; pass the logdir alone")
        self._logdir = str(logdir)
        self._max_queue = int(max_queue)
        self._flush_secs = float(flush_secs)
        self._suffix = filename_suffix or ""
        _gfile.makedirs(self._logdir)
        self._writer = self._open()
        self._closed = False
        self._seen_summary_tags = set()
        self._session_run_tags = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph=graph, graph_def=graph_def)
            as_def = graph.as_graph_def(add_shapes=True) if isinstance(graph, _ops.Graph) else graph
            meta_graph = _protos.MetaGraphDef()
            meta_graph.graph_def.CopyFrom(graph_def or as_def)
            self.add_meta_graph(meta_graph)

    def _open(self):
        return _status_call(_C.EventFileWriter, self._logdir, self._max_queue, self._flush_secs,
                            self._suffix)

    def get_logdir(self):
        return self._logdir

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # --- events ---------------------------------------------------------------------------------

    def _warn_if_closed(self):
        if self._closed:
            warnings.warn("Attempting to use a closed FileWriter. The operation will be a noop "
                          "unless the FileWriter is explicitly reopened.")
            return True
        return False

    def add_event(self, event):
        """Writes an Event proto as it is."""
        if self._warn_if_closed():
            return
        _status_call(self._writer.add, event.SerializeToString())

    def _add_event(self, event, global_step):
        event.wall_time = time.time()
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_summary(self, summary, global_step=None):
        """Writes a Summary (or the bytes a summary op returns) at `global_step`. Plugin metadata
        is kept only on the first value of each tag, as TensorFlow keeps it."""
        summary = _as_summary(summary)
        for value in summary.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
            else:
                self._seen_summary_tags.add(value.tag)
        event = _protos.Event()
        event.summary.CopyFrom(summary)
        self._add_event(event, global_step)

    def add_session_log(self, session_log, global_step=None):
        event = _protos.Event()
        event.session_log.CopyFrom(session_log)
        self._add_event(event, global_step)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Writes a Graph (with each node's output shapes), or a GraphDef, for TensorBoard's
        graph view."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if isinstance(graph, _ops.Graph) or isinstance(graph_def, _ops.Graph):
            true_graph_def = (graph or graph_def).as_graph_def(add_shapes=True)
        elif isinstance(graph, _protos.GraphDef) or isinstance(graph_def, _protos.GraphDef):
            _logging.warning("Passing a `GraphDef` to the SummaryWriter is deprecated. Pass a "
                             "`Graph` object instead, such as `sess.graph`.")
            true_graph_def = graph if isinstance(graph, _protos.GraphDef) else graph_def
        else:
            raise TypeError("The passed graph must be an instance of `Graph` or the deprecated "
                            "`GraphDef`")
        event = _protos.Event(graph_def=true_graph_def.SerializeToString())
        self._add_event(event, global_step)

    def add_meta_graph(self, meta_graph_def, global_step=None):
        if not isinstance(meta_graph_def, _protos.MetaGraphDef):
            raise TypeError(f"meta_graph_def must be type MetaGraphDef, saw type: "
                            f"{type(meta_graph_def)}")
        event = _protos.Event(meta_graph_def=meta_graph_def.SerializeToString())
        self._add_event(event, global_step)

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Writes a RunMetadata under `tag` (each tag once per writer)."""
        if tag in self._session_run_tags:
            raise ValueError("The provided tag was already used for this event type")
        self._session_run_tags.add(tag)
        event = _protos.Event()
        event.tagged_run_metadata.tag = tag
        event.tagged_run_metadata.run_metadata = run_metadata.SerializeToString()
        self._add_event(event, global_step)

    # --- the file -------------------------------------------------------------------------------

    def flush(self):
        """Writes every queued event to disk."""
        if self._warn_if_closed():
            return
        _status_call(self._writer.flush)

    def close(self):
        """Flushes and closes the file; later events are ignored until reopen()."""
        if not self._closed:
            self._closed = True
            _status_call(self._writer.close)

    def reopen(self):
        """After close(), starts a new event file in the same logdir."""
        if self._closed:
            self._writer = self._open()
            self._closed = False


@tf_export("summary.FileWriterCache")
class FileWriterCache:
    """One FileWriter per logdir, shared by the hooks and estimators that write there."""

    _cache = {}
    _lock = threading.RLock()

    @staticmethod
    def clear():
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            for writer in FileWriterCache._cache.values():
                writer.close()
            FileWriterCache._cache = {}

    @staticmethod
    def get(logdir):
        """The writer of `logdir`, made (with the default graph) on first use."""
        with FileWriterCache._lock:
            if logdir not in FileWriterCache._cache:
                FileWriterCache._cache[logdir] = FileWriter(logdir,
                                                            graph=_ops.get_default_graph())
            return FileWriterCache._cache[logdir]
