"""Checkpoints: tf.train.Saver and the functions that find and read checkpoints.

Saver writes TensorFlow's V2 format (the tensor bundle, include/flowstone/tensor_bundle.h):
"<prefix>.index" and "<prefix>.data-00000-of-00001" for the prefix `Saver.save` returns
("model.ckpt-100"), readable by TensorFlow and read from TensorFlow. Both files are written to
temporary names, synced and renamed, so a crash during a save leaves the previous checkpoints
intact and never a partial file under a checkpoint's name. Flowstone's earlier one-file format
(include/flowstone/checkpoint.h) is still read, with a note to re-save.

Next to the checkpoints, Saver keeps TensorFlow's "checkpoint" state file (text format):

    model_checkpoint_path: "model.ckpt-300"
    all_model_checkpoint_paths: "model.ckpt-200"
    all_model_checkpoint_paths: "model.ckpt-300"

which `latest_checkpoint` reads. It is replaced atomically too, and only after the checkpoint it
names is on disk; checkpoints beyond `max_to_keep` are deleted only after the state file stops
naming them.
"""

import logging
import numbers
import os
import re
import threading
import time

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.ops import basic_ops
from flowstone.ops import variables as _variables
from flowstone.train import meta_graph_export as _meta_graph_export

__all__ = [
    "Saver", "CheckpointState", "latest_checkpoint", "get_checkpoint_state",
    "update_checkpoint_state", "checkpoint_exists", "list_variables", "load_variable",
    "load_checkpoint", "NewCheckpointReader", "generate_checkpoint_state_proto",
]

_logger = logging.getLogger(__name__)

_STATE_FILENAME = "checkpoint"


def _call(fn, *args):
    """Calls into _C, raising tf.errors classes for failed Status values."""
    try:
        return fn(*args)
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None


def _invalid_checkpoint_error(path):
    # TensorFlow raises ValueError here; it is also a NotFoundError, which is what it is.
    return _errors.from_status_error(_C.StatusError(
        _errors.NOT_FOUND, f"The passed save_path is not a valid checkpoint: {path}",
        {"py_type": "ValueError"}))


# --- the "checkpoint" state file ----------------------------------------------------------------

class CheckpointState:
    """What the "checkpoint" file records: the newest checkpoint and all those kept, and (as
    CheckpointManager writes them) when each was saved and the last one kept for good."""

    def __init__(self, model_checkpoint_path="", all_model_checkpoint_paths=None,
                 all_model_checkpoint_timestamps=None, last_preserved_timestamp=0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths or [])
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps or [])
        self.last_preserved_timestamp = last_preserved_timestamp

    def __eq__(self, other):
        return (isinstance(other, CheckpointState) and
                self.model_checkpoint_path == other.model_checkpoint_path and
                self.all_model_checkpoint_paths == other.all_model_checkpoint_paths)

    def __repr__(self):
        return _format_state(self)


def _escape(text):
    """A protobuf text-format string literal body: C escapes, other bytes in octal."""
    out = []
    for byte in os.fsencode(text):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif 0x20 <= byte < 0x7f:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


_UNESCAPE = {"n": b"\n", "r": b"\r", "t": b"\t", '"': b'"', "'": b"'", "\\": b"\\",
             "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v", "?": b"?"}
_ESCAPE_RE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))", re.DOTALL)


def _unescape(body):
    def replace(match):
        octal, hexa, char = match.groups()
        if octal:
            return bytes([int(octal, 8) & 0xff])
        if hexa:
            return bytes([int(hexa, 16)])
        if char not in _UNESCAPE:
            raise ValueError(f"invalid escape \\{char}")
        return _UNESCAPE[char]

    pieces, pos = [], 0
    for match in _ESCAPE_RE.finditer(body):
        pieces.append(body[pos:match.start()].encode("utf-8", "surrogateescape"))
        pieces.append(replace(match))
        pos = match.end()
    pieces.append(body[pos:].encode("utf-8", "surrogateescape"))
    return os.fsdecode(b"".join(pieces))


def _format_state(state):
    lines = [f'model_checkpoint_path: "{_escape(state.model_checkpoint_path)}"']
    lines += [f'all_model_checkpoint_paths: "{_escape(p)}"'
              for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}"
              for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp:
        lines.append(f"last_preserved_timestamp: {state.last_preserved_timestamp!r}")
    return "\n".join(lines) + "\n"


_FIELD_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*:\s*(.*?)\s*$")


def _parse_state(text):
    """Parses the state file; fields other than the two paths (TensorFlow also writes
    timestamps) are skipped."""
    state = CheckpointState()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _FIELD_RE.match(line)
        if not match:
            raise ValueError(f"line {number}: expected 'field: value', got {line!r}")
        field, value = match.groups()
        if field in ("all_model_checkpoint_timestamps", "last_preserved_timestamp"):
            try:
                stamp = float(value)
            except ValueError:
                raise ValueError(f"line {number}: {field} must be a number, got {value}") \
                    from None
            if field == "last_preserved_timestamp":
                state.last_preserved_timestamp = stamp
            else:
                state.all_model_checkpoint_timestamps.append(stamp)
            continue
        if field not in ("model_checkpoint_path", "all_model_checkpoint_paths"):
            continue
        if len(value) < 2 or value[0] not in "\"'" or value[-1] != value[0]:
            raise ValueError(f"line {number}: {field} must be a quoted string, got {value}")
        path = _unescape(value[1:-1])
        if field == "model_checkpoint_path":
            state.model_checkpoint_path = path
        else:
            state.all_model_checkpoint_paths.append(path)
    return state


def _state_filename(save_dir, latest_filename):
    return os.path.join(save_dir, latest_filename or _STATE_FILENAME)


def _relative_to(path, save_dir):
    # Both are absolute or relative to the working directory, which relpath resolves alike.
    return os.path.relpath(path, save_dir or os.curdir)


def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None, save_relative_paths=False):
    """Writes the "checkpoint" file in `save_dir` (atomically) naming the newest checkpoint.

    As in TensorFlow, paths are stored relative to `save_dir` when `save_dir` is relative (or
    with `save_relative_paths`), and as given otherwise. The timestamps (CheckpointManager's)
    are recorded when given, as TensorFlow's CheckpointManager needs them to take over a
    directory's checkpoints.
    """
    save_dir = os.fspath(save_dir)
    model_path = os.fspath(model_checkpoint_path)
    all_paths = [os.fspath(p) for p in (all_model_checkpoint_paths or [])]
    if not all_paths or all_paths[-1] != model_path:
        all_paths.append(model_path)
    if save_relative_paths or not os.path.isabs(save_dir):
        model_path = _relative_to(model_path, save_dir)
        all_paths = [_relative_to(p, save_dir) for p in all_paths]
    state_file = _state_filename(save_dir, latest_filename)
    if os.path.abspath(state_file) == os.path.abspath(model_checkpoint_path):
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for "
                           "checkpoint state.  Please use a different save path.")
    text = _format_state(CheckpointState(model_path, all_paths,
                                         all_model_checkpoint_timestamps,
                                         last_preserved_timestamp or 0.0))
    _call(_C.write_file_atomically, state_file, text.encode("utf-8"))


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The CheckpointState recorded in `checkpoint_dir`, or None when there is none (or it
    cannot be parsed). Relative paths in it are returned joined to `checkpoint_dir`."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    state_file = _state_filename(checkpoint_dir, latest_filename)
    try:
        with open(state_file, "rb") as f:
            text = f.read().decode("utf-8", "surrogateescape")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    try:
        state = _parse_state(text)
    except ValueError as e:
        _logger.warning("%s: %s", state_file, e)
        _logger.warning("%s: Checkpoint ignored", state_file)
        return None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}")

    def absolute(path):
        return path if os.path.isabs(path) else os.path.join(checkpoint_dir, path)
    state.model_checkpoint_path = absolute(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [absolute(p) for p in state.all_model_checkpoint_paths]
    return state


def checkpoint_exists(checkpoint_prefix):
    """Whether a checkpoint exists at `checkpoint_prefix` (the path Saver.save returned): a V2
    checkpoint's index, or a file in Flowstone's earlier one-file format."""
    prefix = os.fspath(checkpoint_prefix)
    return _C.is_tensor_bundle(prefix) or os.path.isfile(prefix)


def _note_if_old_format(path):
    if not _C.is_tensor_bundle(path) and os.path.isfile(path):
        _logger.warning("%s is a checkpoint in Flowstone's old one-file format; it still "
                        "restores, but re-save it to get TensorFlow's format.", path)


def _checkpoint_files(prefix):
    """The files of the checkpoint at `prefix`, in either format."""
    directory, base = os.path.split(prefix)
    try:
        names = os.listdir(directory or os.curdir)
    except OSError:
        return []
    pattern = re.compile(re.escape(base) + r"(\.index|\.data-\d{5}-of-\d{5}|\.meta)?$")
    return [os.path.join(directory, n) for n in names if pattern.match(n)]


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The path of the newest checkpoint recorded in `checkpoint_dir`, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _logger.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


# --- reading checkpoints without a session ------------------------------------------------------

class NewCheckpointReader:
    """Reads the values in a checkpoint file: `get_tensor(key)`, `has_tensor(key)`,
    `get_variable_to_shape_map()`, `get_variable_to_dtype_map()`."""

    def __init__(self, filepattern):
        self._path = os.fspath(filepattern)
        _note_if_old_format(self._path)
        self._entries = {key: (_dtypes.from_enum(dtype), list(dims))
                         for key, dtype, dims in _call(_C.list_checkpoint, self._path)}

    def has_tensor(self, key):
        return key in self._entries

    def get_tensor(self, key):
        return _call(_C.load_checkpoint_tensor, self._path, key)

    def get_variable_to_shape_map(self):
        return {key: list(shape) for key, (_, shape) in self._entries.items()}

    def get_variable_to_dtype_map(self):
        return {key: dtype for key, (dtype, _) in self._entries.items()}

    def debug_string(self):
        return "".join(f"{key} ({dtype.name}) {shape}\n"
                       for key, (dtype, shape) in self._entries.items()).encode()


def _checkpoint_file(ckpt_dir_or_file):
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return latest
    return path


def load_checkpoint(ckpt_dir_or_file):
    """A reader for a checkpoint file, or for the newest checkpoint in a directory."""
    return NewCheckpointReader(_checkpoint_file(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of the values in a checkpoint (or a directory's newest), sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def load_variable(ckpt_dir_or_file, name):
    """The value saved under `name` ("layer/w" or "layer/w:0") as a numpy array."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


# --- Saver ---------------------------------------------------------------------------------------

def _keyed_variables(var_list):
    """[(checkpoint key, Variable)] from a dict key -> Variable or a list of Variables (keyed by
    their names, as TensorFlow keys them)."""
    if isinstance(var_list, dict):
        items = list(var_list.items())
    elif isinstance(var_list, (list, tuple, set, frozenset)):
        items = [(getattr(var, "_name", None), var) for var in var_list]
    else:
        raise TypeError(f"Variables to save should be passed in a dict or a list: {var_list}")
    keys = set()
    for key, var in items:
        if not isinstance(var, _variables.Variable):
            raise TypeError(f"Variable to save is not a Variable: {var!r}")
        if not isinstance(key, str) or not key:
            raise TypeError(f"Checkpoint keys must be non-empty strings, got {key!r}")
        if key in keys:
            raise ValueError(f"At least two variables have the same name: {key}")
        keys.add(key)
    return sorted(items, key=lambda item: item[0])


class Saver:
    """Saves and restores variables.

        saver = tf.train.Saver(max_to_keep=3)
        path = saver.save(sess, "/tmp/model/model.ckpt", global_step=step)
        saver.restore(sess, tf.train.latest_checkpoint("/tmp/model"))

    `var_list` is None (all global variables), a list of variables (saved under their names) or
    a dict from checkpoint key to variable. `max_to_keep` checkpoints are kept (None or 0 keeps
    all); of the older ones, one every `keep_checkpoint_every_n_hours` is kept as well.
    `name`, `reshape`, `sharded`, `restore_sequentially`, `saver_def`, `builder`,
    `write_version` and `filename` are accepted for compatibility: Flowstone saves without graph
    ops, always in TensorFlow's V2 format with one data shard.
    """

    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=None, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        self._var_list = var_list
        self._max_to_keep = max_to_keep
        self._keep_every_n_hours = keep_checkpoint_every_n_hours
        self._allow_empty = allow_empty
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._graph = _ops.get_default_graph()
        self._keyed = None  # [(key, Variable)] once built
        self._c_vars = None  # [(key, VarHandleOp node)] for _C
        self._tables = []  # [_SavedTable] of the mutable lookup tables saved
        self._last_checkpoints = []  # [(path, time saved)], oldest first
        # Saves run one at a time (a Supervisor's checkpoint thread saves beside the training
        # loop), so the checkpoint state's newest entry is the save that started last.
        self._save_lock = threading.RLock()
        self._to_delete = []
        self._next_checkpoint_time = time.time() + keep_checkpoint_every_n_hours * 3600
        if not defer_build:
            self.build()

    def build(self):
        """Resolves the variables to save (done by the constructor unless defer_build)."""
        if self._keyed is not None:
            return
        var_list = self._var_list
        if var_list is None:
            with self._graph.as_default():
                var_list = _variables.global_variables() + _ops.get_collection(
                    _ops.GraphKeys.SAVEABLE_OBJECTS)
        if isinstance(var_list, (list, tuple, set, frozenset)):
            tables = [t for t in var_list if hasattr(t, "_restore_checkpoint_values")]
            var_list = [v for v in var_list if not hasattr(v, "_restore_checkpoint_values")]
        else:
            tables = []
        keyed = _keyed_variables(var_list)
        if not keyed and not tables and not self._allow_empty:
            raise ValueError("No variables to save")
        with self._graph.as_default():
            self._tables = [_SavedTable(table) for table in tables]
        for _, var in keyed:
            if var.graph is not self._graph:
                raise ValueError(f"Variable {var.name} belongs to another graph than the "
                                 "Saver's; create the Saver in the graph of its variables.")
        self._keyed = keyed
        self._c_vars = [(key, var.op._node) for key, var in keyed]

    @property
    def last_checkpoints(self):
        """The checkpoints this Saver keeps, oldest first."""
        return [path for path, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        self._last_checkpoints = [(os.fspath(p), None) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        self._last_checkpoints = [(os.fspath(p), t) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths):
        """Takes over existing checkpoints (e.g. get_checkpoint_state(dir).all_model_checkpoint_
        paths after a restart) so that max_to_keep counts and deletes them too."""
        recovered = []
        for path in checkpoint_paths:
            path = os.fspath(path)
            index = path + ".index"
            try:
                saved = os.path.getmtime(index if os.path.isfile(index) else path)
            except OSError:
                continue
            recovered.append((path, saved))
        self.set_last_checkpoints_with_time(recovered)

    def _check_session(self, sess):
        if getattr(sess, "_c", None) is None:
            raise TypeError(f"'sess' must be a Session; {sess}")
        if sess._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if sess.graph is not self._graph:
            raise ValueError("The session runs a different graph than the one the Saver was "
                             "built in; create the Saver in the session's graph.")

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        """Saves the variables' values in `sess` and returns the checkpoint's path:
        `save_path`, or "<save_path>-<global_step>" when `global_step` (an int, or a variable or
        tensor to read in `sess`) is given. With `write_meta_graph`, the graph and its
        collections go to "<checkpoint>.<meta_graph_suffix>" (a MetaGraphDef, without a
        saver_def: Flowstone's Saver has no save ops in the graph)."""
        with self._save_lock:
            return self._save(sess, save_path, global_step, latest_filename, meta_graph_suffix,
                              write_meta_graph, write_state)

    def _save(self, sess, save_path, global_step, latest_filename, meta_graph_suffix,
              write_meta_graph, write_state):
        self.build()
        if latest_filename is None:
            latest_filename = _STATE_FILENAME
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        self._check_session(sess)
        save_path = os.fspath(save_path)
        if global_step is not None:
            if not isinstance(global_step, numbers.Integral):
                global_step = sess.run(global_step)
            step = int(global_step)
            checkpoint_file = f"{save_path}-{step:08d}" if self._pad_step_number else \
                f"{save_path}-{step}"
        else:
            checkpoint_file = save_path
        save_dir = os.path.dirname(save_path)
        if not os.path.isdir(save_dir or os.curdir):
            raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
        if not self._keyed and not self._tables:
            return None
        extra = []
        for table, (keys, values) in zip(self._tables, sess.run([t.export
                                                                 for t in self._tables])):
            extra += [(table.name + "-keys", keys), (table.name + "-values", values)]
        _call(_C.save_checkpoint, sess._c, self._c_vars, checkpoint_file, True, extra)
        if write_meta_graph:
            self.export_meta_graph(f"{checkpoint_file}.{meta_graph_suffix}")
        if write_state:
            self._record(checkpoint_file)
            update_checkpoint_state(save_dir, checkpoint_file, self.last_checkpoints,
                                    latest_filename,
                                    save_relative_paths=self._save_relative_paths)
            self._delete_old_checkpoints()
        return checkpoint_file

    def export_meta_graph(self, filename=None, collection_list=None, as_text=False,
                          export_scope=None, clear_devices=False,
                          clear_extraneous_savers=False, strip_default_attrs=False,
                          save_debug_info=False):
        """tf.train.export_meta_graph of the Saver's graph."""
        return _meta_graph_export.export_meta_graph(
            filename=filename, collection_list=collection_list, as_text=as_text,
            graph=self._graph, export_scope=export_scope, clear_devices=clear_devices,
            clear_extraneous_savers=clear_extraneous_savers,
            strip_default_attrs=strip_default_attrs, save_debug_info=save_debug_info)

    def _record(self, path):
        if not self._max_to_keep:
            return
        self._last_checkpoints = [entry for entry in self._last_checkpoints if entry[0] != path]
        self._last_checkpoints.append((path, time.time()))
        if len(self._last_checkpoints) > self._max_to_keep:
            self._to_delete.append(self._last_checkpoints.pop(0))

    def _delete_old_checkpoints(self):
        while self._to_delete:
            path, saved = self._to_delete.pop(0)
            if saved is not None and saved > self._next_checkpoint_time:
                self._next_checkpoint_time += self._keep_every_n_hours * 3600
                continue
            for file in _checkpoint_files(path):
                try:
                    os.remove(file)
                except OSError as e:
                    _logger.warning("Ignoring: could not delete old checkpoint %s: %s", file, e)

    def restore(self, sess, save_path):
        """Sets the variables in `sess` from the checkpoint at `save_path`; no initializer needs
        to run first. A failed restore changes no variable."""
        self.build()
        if not self._keyed and not self._tables:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        save_path = os.fspath(save_path)
        self._check_session(sess)
        if not checkpoint_exists(save_path):
            raise _invalid_checkpoint_error(save_path)
        _note_if_old_format(save_path)
        _call(_C.restore_checkpoint, sess._c, self._c_vars, save_path)
        for table in self._tables:
            keys, values = (_call(_C.load_checkpoint_tensor, save_path, table.name + suffix)
                            for suffix in ("-keys", "-values"))
            sess.run(table.restore, {table.keys: keys, table.values: values})


class _SavedTable:
    """A mutable lookup table a Saver saves as "<name>-keys" and "<name>-values" (TensorFlow's
    keys): its export, and its import fed the values read back."""

    def __init__(self, table):
        self.name = table.name
        self.export = list(table.export())
        self.keys = basic_ops.placeholder(table.key_dtype, name=f"{table.name}_restore_keys")
        self.values = basic_ops.placeholder(table.value_dtype,
                                            name=f"{table.name}_restore_values")
        self.restore = table.import_(self.keys, self.values)


def generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
                                    all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None):
    """A CheckpointState naming `model_checkpoint_path` as the newest checkpoint (appended to the
    list if it is not last). When `save_dir` is relative, relative paths are rewritten relative
    to it, as in TensorFlow. Timestamps are checked for length and not recorded (see
    update_checkpoint_state)."""
    save_dir = os.fspath(save_dir)
    model_path = os.fspath(model_checkpoint_path)
    all_paths = [os.fspath(p) for p in (all_model_checkpoint_paths or [])]
    if not all_paths or all_paths[-1] != model_path:
        all_paths.append(model_path)
    if all_model_checkpoint_timestamps and (len(all_model_checkpoint_timestamps)
                                            != len(all_paths)):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths "
                         f"({len(all_model_checkpoint_timestamps)} vs {len(all_paths)})")
    if not os.path.isabs(save_dir):
        model_path = model_path if os.path.isabs(model_path) else _relative_to(model_path,
                                                                                save_dir)
        all_paths = [p if os.path.isabs(p) else _relative_to(p, save_dir) for p in all_paths]
    return CheckpointState(model_path, all_paths)
