"""Object-based checkpoints: tf.train.Checkpoint, tf.train.CheckpointManager and
tf.train.CheckpointOptions, in TensorFlow 2's format.

A checkpoint is a V2 bundle (the Saver's, include/flowstone/tensor_bundle.h) whose keys are paths
of attribute names from the Checkpoint object down to each variable:

    model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE
    model/layer/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE   (a slot)

plus the TrackableObjectGraph (proto/trackable_object_graph.proto) under
"_CHECKPOINTABLE_OBJECT_GRAPH": node 0 the Checkpoint, each node's children by local name, its
attributes by checkpoint key, and an optimizer's slot variables. Restoring walks that graph and
the Python objects together from the root, matching children by name, so a checkpoint restores
into any program that builds the same structure, TensorFlow's included.

Which objects are tracked, and under which names, is decided here in one place (`_children`):
variables; tf.Module, tf.train.Checkpoint and plain objects by their attributes; Keras layers by
their public attributes and weights, Keras models also by "layer-N" and "layer_with_weights-N";
optimizers by their non-slot variables ("iter", hyperparameters, "beta1_power") and slots;
lists, tuples and dicts by index or key; objects with `_checkpoint_values` (mutable lookup
tables) save the tensors it returns and restore through `_restore_checkpoint_values`.

Values move without graph ops: in graph mode a session's variables are read and set directly
(as Saver does), in eager mode through the variables' values.
"""

import collections
import os
import time
import weakref

import numpy as np

from flowstone import _C
from flowstone import errors as _errors
from flowstone.client import session as _session
from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos as _protos
from flowstone.ops import module as _module
from flowstone.ops import variables as _variables
from flowstone.platform import tf_logging as _logging
from flowstone.train import optimizer as _optimizer
from flowstone.train import saver as _saver
from flowstone.util.tf_export import tf_export

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_VARIABLE_VALUE = "VARIABLE_VALUE"
_TrackableObjectGraph = _protos.message_class("TrackableObjectGraph")


def _call(fn, *args):
    try:
        return fn(*args)
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None


def _escape(name):
    """A local name as one path component (TensorFlow's escaping)."""
    return name.replace(".", "..").replace("/", ".S")


def _key(path, attribute):
    prefix = "/".join(_escape(name) for name in path)
    return f"{prefix}/.ATTRIBUTES/{attribute}" if prefix else f".ATTRIBUTES/{attribute}"


# --- which objects are tracked, under which names --------------------------------------------

def _is_keras_layer(obj):
    return "_tracked_layers" in getattr(obj, "__dict__", {}) and hasattr(obj, "weights")


def _is_keras_optimizer(obj):
    return hasattr(obj, "_update_optimizer") and hasattr(obj, "_hyper")


def _is_trackable(value):
    if isinstance(value, (_variables.Variable, _module.Module, Checkpoint,
                          _optimizer.Optimizer)):
        return True
    if _is_keras_layer(value) or _is_keras_optimizer(value) or \
            hasattr(value, "_checkpoint_values"):
        return True
    if isinstance(value, (list, tuple)):
        return any(_is_trackable(item) for item in value)
    if isinstance(value, dict):
        return any(_is_trackable(item) for item in value.values())
    return False


def _weight_name(var):
    """"dense/kernel:0" -> "kernel": the name add_weight gave."""
    name = var.name[:-2] if var.name.endswith(":0") else var.name
    return name.rsplit("/", 1)[-1]


def _attribute_children(obj, keras=False):
    """Trackable attributes by name. A Keras layer keeps its bookkeeping in private attributes
    (lists of its weights and layers): of those only single layers, modules and variables
    count (a custom layer's `self._dense`)."""
    out = []
    for name, value in vars(obj).items():
        if keras and name.startswith("_") and not (
                _is_keras_layer(value) or isinstance(value, (_variables.Variable,
                                                             _module.Module))):
            continue
        if _is_trackable(value):
            out.append((name, value))
    return out


def _keras_layer_children(layer):
    out = []
    layers = getattr(layer, "layers", None) if hasattr(type(layer), "layers") else None
    if layers is not None and (getattr(layer, "_is_graph_network", False) or
                               type(layer).__name__ == "Sequential"):
        # Sequential and functional models name their layers by position. TensorFlow's
        # order: a layer's checkpoint keys use the first of its names.
        with_weights = 0
        for index, sub in enumerate(layers):
            if sub.weights:
                out.append((f"layer_with_weights-{with_weights}", sub))
                with_weights += 1
            out.append((f"layer-{index}", sub))
    out += _attribute_children(layer, keras=True)
    taken = {id(value) for _, value in out}
    names = {name for name, _ in out}
    for weight in list(layer._trainable_weights) + list(layer._non_trainable_weights):
        name = _weight_name(weight)
        if id(weight) not in taken and name not in names:
            out.append((name, weight))
            names.add(name)
    return out


def _optimizer_slots(obj):
    """{slot name: {variable: slot variable}} of a tf.train or Keras optimizer."""
    if _is_keras_optimizer(obj):
        obj = obj._update_optimizer
        if obj is None:
            return {}
    return getattr(obj, "_slots", {})


def _children(obj):
    """[(local name, child)] of a tracked object, in TensorFlow's order where it has one."""
    if isinstance(obj, _variables.Variable):
        return []
    if isinstance(obj, Checkpoint):
        return list(obj._tracked.items())
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj) if _is_trackable(v)]
    if isinstance(obj, dict):
        return [(str(k), v) for k, v in obj.items() if _is_trackable(v)]
    if _is_keras_optimizer(obj):
        out = [("iter", obj.iterations)] if obj._iterations is not None else []
        return out + sorted(obj._variables.items())
    if isinstance(obj, _optimizer.Optimizer):
        return sorted(obj._non_slots.items())
    if _is_keras_layer(obj):
        return _keras_layer_children(obj)
    if hasattr(obj, "__dict__"):
        return _attribute_children(obj)
    return []


def _values(obj):
    """{attribute name: value to save} of one object: a variable, or what the object's
    `_checkpoint_values()` gives: {attribute: {key suffix: tensor}}, saved under the
    attribute's key plus each suffix (a table's "table-keys" and "table-values", as
    TensorFlow saves several tensors as one attribute)."""
    if isinstance(obj, _variables.Variable):
        return {_VARIABLE_VALUE: obj}
    if hasattr(obj, "_checkpoint_values"):
        return obj._checkpoint_values()
    return {}


def _full_name(value):
    name = getattr(value, "name", "") or ""
    return name[:-2] if name.endswith(":0") else name


class _ObjectGraph:
    """The tracked objects below a root, breadth first: node ids, paths and checkpoint keys."""

    def __init__(self, root):
        self.nodes = [root]
        self.paths = [()]
        self.children = []  # per node: [(local name, node id)]
        self.slots = collections.defaultdict(list)  # optimizer node -> [(var id, name, slot id)]
        ids = {id(root): 0}
        queue = collections.deque([0])
        while queue:
            node = queue.popleft()
            refs = []
            for name, child in _children(self.nodes[node]):
                if id(child) not in ids:
                    ids[id(child)] = len(self.nodes)
                    self.nodes.append(child)
                    self.paths.append(self.paths[node] + (name,))
                    queue.append(ids[id(child)])
                refs.append((name, ids[id(child)]))
            while len(self.children) <= node:
                self.children.append([])
            self.children[node] = refs
        # Slot variables are nodes without a parent edge; their keys hang below the variable.
        for node, obj in list(enumerate(self.nodes)):
            for slot_name, by_variable in sorted(_optimizer_slots(obj).items()):
                for variable, slot in by_variable.items():
                    if id(variable) not in ids or id(slot) in ids:
                        continue
                    slot_id = ids[id(slot)] = len(self.nodes)
                    self.nodes.append(slot)
                    self.paths.append(self.paths[ids[id(variable)]] + (".OPTIMIZER_SLOT",) +
                                      self.paths[node] + (slot_name,))
                    self.children.append([])
                    self.slots[node].append((ids[id(variable)], slot_name, slot_id))

    def key(self, node, attribute):
        path = self.paths[node]
        if ".OPTIMIZER_SLOT" in path:  # not escaped: TensorFlow's marker
            at = path.index(".OPTIMIZER_SLOT")
            return (f"{'/'.join(_escape(n) for n in path[:at])}/.OPTIMIZER_SLOT/"
                    f"{_key(path[at + 1:], attribute)}")
        return _key(path, attribute)

    def values(self):
        """[(checkpoint key, value)] of every node's attributes."""
        out = []
        for node, obj in enumerate(self.nodes):
            for attribute, value in _values(obj).items():
                key = self.key(node, attribute)
                if isinstance(value, dict):
                    out += [(key + suffix, tensor) for suffix, tensor in value.items()]
                else:
                    out.append((key, value))
        return out

    def proto(self):
        graph = _TrackableObjectGraph()
        for node, obj in enumerate(self.nodes):
            message = graph.nodes.add()
            for name, child in self.children[node]:
                message.children.add(node_id=child, local_name=name)
            for attribute, value in _values(obj).items():
                message.attributes.add(name=attribute, full_name=_full_name(value),
                                       checkpoint_key=self.key(node, attribute))
            for variable, slot_name, slot in self.slots.get(node, []):
                message.slot_variables.add(original_variable_node_id=variable,
                                           slot_name=slot_name, slot_variable_node_id=slot)
            message.has_checkpoint_values.value = True
        return graph


# --- writing ----------------------------------------------------------------------------------

def _session_for(session, graph):
    if session is None:
        session = _session.get_default_session()
    if session is None:
        raise ValueError("Saving or restoring a checkpoint in graph mode needs a session: pass "
                         "session=sess or run it inside `with sess.as_default():`.")
    if session.graph is not graph:
        raise ValueError("The session runs another graph than the one of the checkpoint's "
                         "variables.")
    return session


def _write(root, prefix, session):
    """Writes the values below `root` and their object graph at `prefix`."""
    graph = _ObjectGraph(root)
    keyed = graph.values()
    extra = [(OBJECT_GRAPH_KEY, np.array(graph.proto().SerializeToString(), dtype=object))]
    directory = os.path.dirname(prefix)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory, exist_ok=True)
    graph_vars = [(k, v) for k, v in keyed if isinstance(v, _variables.Variable) and not v._eager]
    others = [(k, v) for k, v in keyed if not (isinstance(v, _variables.Variable) and
                                               not v._eager)]
    if graph_vars or any(not _is_eager_value(v) for _, v in others):
        first = graph_vars[0][1].graph if graph_vars else _ops.get_default_graph()
        session = _session_for(session, first)
        fetched = session.run([v for _, v in others if not _is_eager_value(v)])
        fetched = iter(fetched)
        extra += [(k, _as_array(v if _is_eager_value(v) else next(fetched))) for k, v in others]
        _call(_C.save_checkpoint, session._c, [(k, v.op._node) for k, v in graph_vars], prefix,
              True, extra)
    else:
        extra += [(k, _as_array(v)) for k, v in others]
        _call(_C.write_tensor_bundle, extra, prefix)
    return prefix


def _is_eager_value(value):
    """Whether the value is at hand without a session."""
    if isinstance(value, _variables.Variable):
        return value._eager
    return not isinstance(value, _ops.Tensor) or isinstance(value, _eager.EagerTensor)


def _as_array(value):
    if hasattr(value, "numpy"):
        value = value.numpy()
    array = np.asarray(value)
    if array.dtype.kind in "SU":
        array = array.astype(object)
    return array


# --- restoring --------------------------------------------------------------------------------

def _read_object_graph(path):
    if not _saver.checkpoint_exists(path):
        raise _saver._invalid_checkpoint_error(path)
    reader = _saver.NewCheckpointReader(path)
    if not reader.has_tensor(OBJECT_GRAPH_KEY):
        raise ValueError(f"The checkpoint at {path} has no object graph: it was written by a "
                         "name-based tf.train.Saver. Restore it with tf.train.Saver, or with "
                         "tf.train.init_from_checkpoint.")
    return reader, parse_object_graph(reader.get_tensor(OBJECT_GRAPH_KEY))


def parse_object_graph(value):
    """The TrackableObjectGraph of the bundle's object-graph string. The bytes are taken as
    they are: a numpy bytes array would drop trailing NULs, the encoding of an empty last field
    (TensorFlow's SavedModels end with one)."""
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0]
    graph = _TrackableObjectGraph()
    graph.ParseFromString(value)
    return graph


def _describe(path):
    return "(root)" + "".join(f".{name}" for name in path)


class _Match:
    """The checkpoint's nodes matched to Python objects below a root, by local names."""

    def __init__(self, root, saved):
        self.saved = saved
        self.objects = {0: root}
        self.paths = {0: ()}
        queue = collections.deque([0])
        while queue:
            node = queue.popleft()
            obj = self.objects[node]
            children = dict(_children(obj))
            for ref in saved.nodes[node].children:
                child = children.get(ref.local_name)
                if child is None or ref.node_id in self.objects:
                    continue
                self.objects[ref.node_id] = child
                self.paths[ref.node_id] = self.paths[node] + (ref.local_name,)
                queue.append(ref.node_id)
        # Slots once every variable is matched: an optimizer may come before its variables.
        for node, obj in list(self.objects.items()):
            for slot in saved.nodes[node].slot_variables:
                variable = self.objects.get(slot.original_variable_node_id)
                by_variable = _optimizer_slots(obj).get(slot.slot_name, {})
                if variable is not None and variable in by_variable:
                    self.objects[slot.slot_variable_node_id] = by_variable[variable]
                    self.paths[slot.slot_variable_node_id] = (
                        self.paths[slot.original_variable_node_id] +
                        (".OPTIMIZER_SLOT", slot.slot_name))

    def restorations(self):
        """[(checkpoint key, object, attribute name)] for every matched attribute."""
        out = []
        for node, obj in self.objects.items():
            values = _values(obj)
            for attribute in self.saved.nodes[node].attributes:
                if attribute.name in values:
                    out.append((attribute.checkpoint_key, obj, attribute.name))
        return out

    def unmatched_saved(self):
        """The saved nodes with values that no Python object took (as in TensorFlow, nodes
        without values do not count: they matter only through their children)."""
        return [node for node, proto in enumerate(self.saved.nodes)
                if node not in self.objects and proto.attributes]

    def saved_names(self):
        """Each saved node's "(root).model.w" path, breadth first from the root."""
        names = {0: "(root)"}
        queue = collections.deque([0])
        while queue:
            node = queue.popleft()
            for ref in self.saved.nodes[node].children:
                if ref.node_id not in names:
                    names[ref.node_id] = f"{names[node]}.{ref.local_name}"
                    queue.append(ref.node_id)
        return names


def _match_creating_slots(root, saved):
    """The match, after a tf.train optimizer without the slots that the checkpoint holds for
    its (eager) variables has made them, so that they restore: TensorFlow makes them on restore
    too, where a training step would otherwise start them at zero."""
    match = _Match(root, saved)
    created = False
    for node, obj in list(match.objects.items()):
        if not isinstance(obj, _optimizer.Optimizer):
            continue
        missing = []
        for slot in saved.nodes[node].slot_variables:
            variable = match.objects.get(slot.original_variable_node_id)
            if isinstance(variable, _variables.Variable) and variable._eager and \
                    variable not in obj._slots.get(slot.slot_name, {}) and \
                    all(variable is not v for v in missing):
                missing.append(variable)
        if missing:
            obj._create_slots(missing)
            created = True
    return _Match(root, saved) if created else match


def _assign_eager(key, variable, value):
    if not variable.shape.is_compatible_with(value.shape):
        raise ValueError(f"Received incompatible tensor with shape {value.shape} when "
                         f"attempting to restore variable with shape {variable.shape} and "
                         f"name {variable.name} from checkpoint key {key}.")
    variable.assign(value.astype(variable.dtype.as_numpy_dtype, copy=False), read_value=False)


class _Restore:
    """Applies a match's values: at once in eager mode, by run_restore_ops in graph mode.

    TensorFlow restores an object created after restore() when it is created; Flowstone has no
    hook there, so the match is redone whenever the status is used (run_restore_ops and the
    assert_* methods), restoring objects made since, and values no object took are reported in
    a warning when the status goes away (unless expect_partial)."""

    def __init__(self, path, reader, root, saved):
        self.path = path
        self.reader = reader
        self.root = root
        self.saved = saved
        self.match = _match_creating_slots(root, saved)
        self.restored = set()  # ids of objects given values
        self.expect_partial = False

    def refresh(self):
        """Matches again; eager mode restores what matched since."""
        self.match = _match_creating_slots(self.root, self.saved)
        if _ops.executing_eagerly():
            self.run(eager_only=True)

    def warn_unused(self):
        if self.expect_partial:
            return
        names = self.match.saved_names()
        for node in self.match.unmatched_saved()[:10]:
            _logging.warning("Value in checkpoint could not be found in the restored object: "
                             "%s (from %s)", names.get(node, f"node {node}"), self.path)

    def pending(self):
        return [(k, o, a) for k, o, a in self.match.restorations() if id(o) not in self.restored]

    def run(self, session=None, eager_only=False):
        """Restores what is pending; `eager_only`: only in eager mode (graph mode waits for
        run_restore_ops and its session)."""
        if eager_only and not _ops.executing_eagerly():
            return
        pending = self.pending()
        graph_vars, eager, tables = [], [], collections.defaultdict(dict)
        for key, obj, attribute in pending:
            if isinstance(obj, _variables.Variable):
                (eager if obj._eager else graph_vars).append((key, obj))
            else:
                stored = self.reader.get_variable_to_shape_map()
                tables[id(obj)][attribute] = (obj, {
                    name[len(key):]: self.reader.get_tensor(name) for name in stored
                    if name.startswith(key) and not name[len(key):].startswith("/")})
        if eager:
            values = _call(_C.load_checkpoint_tensors, self.path, [key for key, _ in eager])
            for (key, var), value in zip(eager, values):
                _assign_eager(key, var, np.asarray(value))
                self.restored.add(id(var))
        if graph_vars:
            session = _session_for(session, graph_vars[0][1].graph)
            _call(_C.restore_checkpoint, session._c,
                  [(key, var.op._node) for key, var in graph_vars], self.path)
            self.restored.update(id(var) for _, var in graph_vars)
        for by_attribute in tables.values():
            obj = next(iter(by_attribute.values()))[0]
            if not _ops.executing_eagerly():
                session = _session_for(session, obj.resource_handle.graph)
            obj._restore_checkpoint_values({a: v for a, (_, v) in by_attribute.items()},
                                           session)
            self.restored.add(id(obj))


class CheckpointLoadStatus:
    """What Checkpoint.restore returns: checks on how the checkpoint matched the program, and
    (graph mode) the step that restores."""

    def __init__(self, checkpoint, restore):
        self._checkpoint = checkpoint
        self._restore = restore
        weakref.finalize(self, restore.warn_unused)

    def _python_objects(self):
        graph = _ObjectGraph(self._checkpoint)
        return [(graph.paths[i], obj) for i, obj in enumerate(graph.nodes)]

    def assert_consumed(self):
        """Raises AssertionError unless every value in the checkpoint found its Python object
        and every Python object its value."""
        self.assert_existing_objects_matched()
        match = self._restore.match
        unresolved = match.unmatched_saved()
        if unresolved:
            names = match.saved_names()
            described = [f"{names.get(node, f'node {node}')} (" + ", ".join(
                a.checkpoint_key for a in match.saved.nodes[node].attributes) + ")"
                for node in unresolved]
            raise AssertionError(f"Unresolved object in checkpoint {self._restore.path}: "
                                 f"{'; '.join(described)}")
        return self

    def assert_existing_objects_matched(self):
        """Raises AssertionError when a Python object with values (a variable) below the
        checkpoint has no value in the checkpoint."""
        self._restore.refresh()
        matched = {id(obj) for obj in self._restore.match.objects.values()}
        missing = [f"{_describe(path)}: {obj!r}" for path, obj in self._python_objects()
                   if id(obj) not in matched and _values(obj)]
        if missing:
            raise AssertionError("Some Python objects were not bound to checkpointed values, "
                                 "likely due to changes in the Python program: " +
                                 ", ".join(missing))
        return self

    def assert_nontrivial_match(self):
        self._restore.refresh()
        if len(self._restore.match.objects) <= 1:
            raise AssertionError(f"Nothing except the root object matched a checkpointed value "
                                 f"in {self._restore.path}. Typically this means that the "
                                 "checkpoint does not match the Python program.")
        return self

    def expect_partial(self):
        """Silences the note about values of the checkpoint that were not used."""
        self._restore.expect_partial = True
        return self

    def run_restore_ops(self, session=None):
        """Graph mode: sets the matched variables in `session` (the default session when
        None). Eager mode: nothing, the values were set by restore."""
        self._restore.refresh()
        if not _ops.executing_eagerly():
            self._restore.run(session)

    def initialize_or_restore(self, session=None):
        """Graph mode: runs the initializers of the variables below the checkpoint that it
        has no value for, and restores the others."""
        self._restore.refresh()
        if _ops.executing_eagerly():
            return
        matched = {id(obj) for obj in self._restore.match.objects.values()}
        initializers = [obj.initializer for _, obj in self._python_objects()
                        if isinstance(obj, _variables.Variable) and id(obj) not in matched and
                        obj.initializer is not None]
        session = _session_for(session, _ops.get_default_graph()) if initializers else session
        if initializers:
            session.run(initializers)
        self._restore.run(session)


class InitializationOnlyStatus:
    """What restore(None) returns: nothing to match; initialize_or_restore initializes."""

    def __init__(self, checkpoint):
        self._checkpoint = checkpoint

    def assert_consumed(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being "
                             "restored.")

    assert_existing_objects_matched = assert_consumed
    assert_nontrivial_match = assert_consumed

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        pass

    def initialize_or_restore(self, session=None):
        if _ops.executing_eagerly():
            return
        initializers = [obj.initializer for obj in _ObjectGraph(self._checkpoint).nodes
                        if isinstance(obj, _variables.Variable) and obj.initializer is not None]
        if initializers:
            _session_for(session, _ops.get_default_graph()).run(initializers)


# --- tf.train.Checkpoint --------------------------------------------------------------------

@tf_export("train.CheckpointOptions")
class CheckpointOptions:
    """Options for saving and restoring; accepted for compatibility (Flowstone writes
    synchronously on the host whatever they say)."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False,
                 experimental_sharding_callback=None, experimental_skip_slot_variables=False):
        self.experimental_io_device = experimental_io_device
        self.experimental_enable_async_checkpoint = experimental_enable_async_checkpoint
        self.experimental_write_callbacks = experimental_write_callbacks
        self.enable_async = enable_async
        self.experimental_sharding_callback = experimental_sharding_callback
        self.experimental_skip_slot_variables = experimental_skip_slot_variables


@tf_export("train.Checkpoint")
class Checkpoint:
    """Groups trackable objects (variables, tf.Modules, Keras models and layers, optimizers,
    lists and dicts of them) for saving and restoring in TensorFlow 2's checkpoint format.

        ckpt = tf.train.Checkpoint(model=model, optimizer=opt)
        path = ckpt.save("/tmp/ckpts/ckpt")          # "/tmp/ckpts/ckpt-1"
        ckpt.restore(path).assert_consumed()

    In graph mode, save/write take `session=` (or use the default session) and restore returns
    a status whose run_restore_ops(sess) or initialize_or_restore(sess) sets the values.
    """

    def __init__(self, root=None, **kwargs):
        object.__setattr__(self, "_tracked", {})
        object.__setattr__(self, "_save_counter", None)
        object.__setattr__(self, "_increment", None)
        if root is not None:
            if not _is_trackable(root):
                raise ValueError(f"`Checkpoint` was expecting root to be a trackable object "
                                 f"(an object derived from `Trackable`), got {root}.")
            for name, child in _children(root):
                self._tracked[name] = child
        for name, value in sorted(kwargs.items()):
            if not _is_trackable(value):
                raise ValueError(f"`Checkpoint` was expecting {name} to be a trackable object "
                                 f"(an object derived from `Trackable`), got {value!r}. If you "
                                 "believe this object should be trackable (i.e. it is part of "
                                 "the TensorFlow Python API and manages state), please open an "
                                 "issue.")
            setattr(self, name, value)

    def __setattr__(self, name, value):
        """Attributes set later are tracked too when they are trackable (as TensorFlow's
        AutoTrackable does); others are plain attributes."""
        if not name.startswith("_"):
            self._tracked.pop(name, None)
            if _is_trackable(value):
                self._tracked[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._tracked.pop(name, None)
        object.__delattr__(self, name)

    @property
    def save_counter(self):
        """An int64 variable counting the saves (created on first use)."""
        self._maybe_create_save_counter()
        return self._save_counter

    def _maybe_create_save_counter(self):
        if self._save_counter is not None:
            return False
        with _ops.init_scope():
            counter = _variables.Variable(np.int64(0), name="save_counter", trainable=False,
                                          collections=[] if not _ops.executing_eagerly() else
                                          None)
        object.__setattr__(self, "_save_counter", counter)
        self._tracked["save_counter"] = counter
        return True

    def _count_save(self, session):
        """save_counter + 1, returned as an int."""
        self._maybe_create_save_counter()
        counter = self._save_counter
        if counter._eager:
            counter.assign_add(1, read_value=False)
            return int(counter.numpy())
        session = _session_for(session, counter.graph)
        if self._increment is None:
            with counter.graph.as_default(), _ops.init_scope():
                object.__setattr__(self, "_increment",
                                   (counter.is_initialized(), counter.assign_add(1)))
        initialized, increment = self._increment
        # A counter made here or by restore (from a checkpoint without one) starts at 0.
        if not session.run(initialized):
            session.run(counter.initializer)
        return int(session.run(increment))

    def write(self, file_prefix, options=None, session=None):
        """Writes the checkpoint at exactly `file_prefix` (no counter, no "checkpoint" file)
        and returns it."""
        return _write(self, os.fspath(file_prefix), session)

    def save(self, file_prefix, options=None, session=None):
        """Writes "<file_prefix>-<save_counter>" after counting this save, records it in the
        directory's "checkpoint" file and returns the path."""
        file_prefix = os.fspath(file_prefix)
        number = self._count_save(session)
        path = self.write(f"{file_prefix}-{number}", session=session)
        _saver.update_checkpoint_state(os.path.dirname(file_prefix) or os.curdir, path, [path],
                                       save_relative_paths=True)
        return path

    def read(self, save_path, options=None):
        """Restores from `save_path` (see restore), without creating the save counter."""
        if save_path is None:
            return InitializationOnlyStatus(self)
        save_path = os.fspath(save_path)
        if os.path.isdir(save_path):
            save_path = _saver.latest_checkpoint(save_path) or save_path
        reader, saved = _read_object_graph(save_path)
        restore = _Restore(save_path, reader, self, saved)
        status = CheckpointLoadStatus(self, restore)
        restore.run(eager_only=True)
        return status

    def restore(self, save_path, options=None):
        """Restores the values in the checkpoint at `save_path` (a prefix, or a directory's
        newest) into the objects that match it. Eager mode restores at once; graph mode
        returns a status to run (run_restore_ops / initialize_or_restore). None restores
        nothing and returns a status that initializes."""
        if save_path is not None:
            self._maybe_create_save_counter()
        return self.read(save_path, options)


# --- tf.train.CheckpointManager --------------------------------------------------------------

@tf_export("train.CheckpointManager")
class CheckpointManager:
    """Saves a Checkpoint as "<directory>/<checkpoint_name>-<N>", keeps the newest
    `max_to_keep` (None keeps all) and one every `keep_checkpoint_every_n_hours` of the older,
    and records them in the directory's "checkpoint" file."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"checkpoint must be a tf.train.Checkpoint, got {checkpoint!r}")
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got "
                             f"{max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not "
                             "None.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_every_n_hours = keep_checkpoint_every_n_hours
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_step = None
        # As TensorFlow's manager: checkpoints saved after the last one kept for good are this
        # manager's to delete; without recorded timestamps (a Saver's state file), none are.
        recovered = _saver.get_checkpoint_state(self._directory)
        now = time.time()
        self._kept = []  # [(path, time saved)], oldest first
        if recovered is None:
            self._last_preserved = now - 1.0
        else:
            self._last_preserved = recovered.last_preserved_timestamp
            stamps = recovered.all_model_checkpoint_timestamps or \
                [self._last_preserved] * len(recovered.all_model_checkpoint_paths)
            for path, stamp in zip(recovered.all_model_checkpoint_paths, stamps):
                if min(stamp, now) > self._last_preserved:
                    self._kept.append((path, min(stamp, now)))

    directory = property(lambda self: self._directory)
    checkpoint = property(lambda self: self._checkpoint)
    checkpoint_interval = property(lambda self: self._checkpoint_interval)

    @property
    def latest_checkpoint(self):
        """The newest checkpoint's prefix, or None."""
        return _saver.latest_checkpoint(self._directory)

    @property
    def checkpoints(self):
        """The prefixes of the kept checkpoints, oldest first."""
        return [path for path, _ in self._kept]

    def _current_step(self, session):
        return _int_of(self._step_counter, session)

    def save(self, checkpoint_number=None, check_interval=True, options=None, session=None):
        """Saves a checkpoint numbered `checkpoint_number` (default: the save counter after
        counting this save) and returns its path; None when `checkpoint_interval` steps have
        not passed since the last save."""
        if self._checkpoint_interval is not None and check_interval:
            step = self._current_step(session)
            if self._last_step is not None and step < self._last_step + \
                    self._checkpoint_interval:
                return None
            self._last_step = step
        number = self._checkpoint._count_save(session)
        if checkpoint_number is not None:
            number = _int_of(checkpoint_number, session)
        path = self._checkpoint.write(f"{self._prefix}-{number}", session=session)
        self._kept = [(p, t) for p, t in self._kept if p != path] + [(path, time.time())]
        self._sweep()
        _saver.update_checkpoint_state(
            self._directory, path, self.checkpoints,
            all_model_checkpoint_timestamps=[stamp for _, stamp in self._kept],
            last_preserved_timestamp=self._last_preserved, save_relative_paths=True)
        return path

    def _sweep(self):
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            path, saved = self._kept.pop(0)
            if self._keep_every_n_hours is not None and \
                    saved - self._keep_every_n_hours * 3600 >= self._last_preserved:
                self._last_preserved = saved
                continue
            for file in _saver._checkpoint_files(path):
                try:
                    os.remove(file)
                except OSError as e:
                    _logging.warning("Ignoring: could not delete old checkpoint %s: %s", file, e)

    def restore_or_initialize(self):
        """Restores the newest checkpoint and returns its path, or runs init_fn and returns
        None when there is none."""
        latest = self.latest_checkpoint
        if latest is not None:
            self._checkpoint.restore(latest)
            return latest
        if self._init_fn is not None:
            self._init_fn()
        return None


def _int_of(value, session):
    """A step number given as an int, a variable or a tensor."""
    if _is_eager_value(value):
        return int(value.numpy() if hasattr(value, "numpy") else value)
    return int(_session_for(session, value.graph).run(value))

