"""The objects of a TensorFlow 2 SavedModel, rebuilt when `tf.saved_model.load(path)` runs
eagerly: each SavedObjectGraph node becomes a Python object (variables hold the checkpoint's
values, tf.functions and concrete functions call the SavedModel's FunctionDefs, lists and dicts
come back as lists and dicts, other objects as plain objects with their children as attributes).

A function call is one StatefulPartitionedCall of the library function in a private graph,
compiled once by a session and fed the eager inputs and the restored variables' handles, as
def_function.ConcreteFunction calls a trace.
"""

import numpy as np

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.client import session as _session
from flowstone.framework import eager as _eager
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.ops import graph_io as _graph_io
from flowstone.ops import tensor_util as _tensor_util
from flowstone.ops import variables as _variables
from flowstone.ops.dataset_structure import TensorSpec
from flowstone.saved_model import nested_structure_coder as _coder
from flowstone.train import object_checkpoint as _object_checkpoint
from flowstone.train import saver as _saver
from flowstone.util import nest


class _RestoredConcreteFunction:
    """One FunctionDef of the SavedModel, called with eager tensors: its flat inputs are the
    tensors of the call's arguments, then its bound inputs (variables, constants)."""

    def __init__(self, name, library, saved, captures, keywords=None):
        self.name = name
        self._captures = captures
        self._keywords = keywords
        args, kwargs = _coder.decode(saved.canonicalized_input_signature)
        self.structured_input_signature = (args, kwargs)
        self.structured_outputs = _coder.decode(saved.output_signature)
        self._specs = [s for s in nest.flatten((args, kwargs)) if isinstance(s, TensorSpec)]
        fdef = next(f for f in library.function if f.signature.name == name)
        graph_def = tf_protos.GraphDef()
        graph_def.library.CopyFrom(library)
        call = graph_def.node.add(name="call", op="StatefulPartitionedCall")
        for index, arg in enumerate(fdef.signature.input_arg):
            node = graph_def.node.add(name=f"arg_{index}", op="Placeholder")
            node.attr["dtype"].type = arg.type
            call.input.append(node.name)
            call.attr["Tin"].list.type.append(arg.type)
        call.attr["Tout"].list.type.extend(a.type for a in fdef.signature.output_arg)
        call.attr["f"].func.name = name
        self._num_outputs = len(fdef.signature.output_arg)
        self._outer = _ops.Graph()
        with self._outer.as_default():
            _graph_io.import_graph_def(graph_def, name="")
        feeds = [self._outer.get_tensor_by_name(f"arg_{i}:0")
                 for i in range(len(fdef.signature.input_arg))]
        outputs = [self._outer.get_tensor_by_name(f"call:{i}") for i in range(self._num_outputs)]
        self._dtypes = [t.dtype for t in feeds]
        try:
            self._session = _C.Session.create(
                self._outer._c, _session.rewrite_overrides(_session.DEFAULT_REWRITE_OPTIONS))
            self._callable = self._session.make_callable(
                [f._as_node_output() for f in feeds], [t._as_node_output() for t in outputs], [])
        except _C.StatusError as e:
            raise _errors.from_status_error(e, as_op_error=False) from None

    def _capture_handles(self):
        handles = []
        for value in self._captures:
            if isinstance(value, _variables.Variable):
                handles.append(value.handle._handle)
            else:
                handles.append(value._handle)
        return handles

    def matches(self, flat):
        if len(flat) != len(self._specs):
            return False
        for value, spec in zip(flat, self._specs):
            tensor = value if isinstance(value, _ops.Tensor) else _ops.convert_to_tensor(value)
            if not spec.is_compatible_with(TensorSpec(tensor.shape, tensor.dtype)):
                return False
        return True

    def call_flat(self, flat):
        handles = [_eager.to_eager(value, dtype=dtype)._handle
                   for value, dtype in zip(flat, self._dtypes)]
        handles += self._capture_handles()
        try:
            results = self._callable.call_eager(handles)
        except _C.StatusError as e:
            raise _errors.from_status_error(e) from None
        results = [_eager.EagerTensor(h) for h in results[:self._num_outputs]]
        if self.structured_outputs is None:
            return None
        return nest.pack_sequence_as(self.structured_outputs, results)

    def __call__(self, *args, **kwargs):
        if self._keywords is not None:  # a bare concrete function: a signature, by keyword
            if len(args) > len(self._keywords):
                raise TypeError(f"{self.name} takes at most {len(self._keywords)} positional "
                                f"arguments, got {len(args)}")
            values = dict(zip(self._keywords, args))
            values.update(kwargs)
            missing = [k for k in self._keywords if k not in values]
            unexpected = sorted(set(values) - set(self._keywords))
            if missing or unexpected:
                raise TypeError(f"{self.name} takes the arguments {self._keywords}; missing "
                                f"{missing}, unexpected {unexpected}")
            return self.call_flat([values[k] for k in self._keywords])
        return self.call_flat([v for v in nest.flatten((args, kwargs))
                               if not isinstance(v, (bool, int, float, str, type(None)))
                               or isinstance(v, _ops.Tensor)])


class _RestoredFunction:
    """A restored tf.function: calls the first of its concrete functions whose input
    signature takes the arguments."""

    def __init__(self, concretes):
        self.concrete_functions = concretes

    def __call__(self, *args, **kwargs):
        flat = [v for v in nest.flatten((args, kwargs))
                if not isinstance(v, (bool, int, float, str, type(None)))]
        for concrete in self.concrete_functions:
            if concrete.matches(flat):
                return concrete.call_flat(flat)
        raise ValueError(
            "Could not find matching concrete function to call loaded from the SavedModel. Got "
            f"positional arguments {args!r} and keyword arguments {kwargs!r}; expected one of "
            f"{[c.structured_input_signature for c in self.concrete_functions]}.")

    def get_concrete_function(self, *args, **kwargs):
        if not args and not kwargs and len(self.concrete_functions) == 1:
            return self.concrete_functions[0]
        flat = [v if isinstance(v, TensorSpec) else _ops.convert_to_tensor(v)
                for v in nest.flatten((args, kwargs))]
        for concrete in self.concrete_functions:
            if len(flat) == len(concrete._specs) and all(
                    s.is_compatible_with(v if isinstance(v, TensorSpec) else
                                         TensorSpec(v.shape, v.dtype))
                    for v, s in zip(flat, concrete._specs)):
                return concrete
        raise ValueError("No concrete function of this restored function matches the "
                         "arguments.")


class RestoredObject:
    """A restored object of a SavedModel: its children are its attributes."""

    def __call__(self, *args, **kwargs):
        function = self.__dict__.get("__call__")
        if function is None:
            raise TypeError(f"'{type(self).__name__}' object is not callable")
        return function(*args, **kwargs)


def revive(meta, variables_prefix):
    """The root object of the SavedModel's object graph (MetaGraphDef `meta`), its variables
    restored from the checkpoint at `variables_prefix`; None without an object graph."""
    proto = meta.object_graph_def
    if not proto.nodes:
        return None
    reader = _saver.NewCheckpointReader(variables_prefix)
    checkpoint_graph = _object_checkpoint.parse_object_graph(
        reader.get_tensor(_object_checkpoint.OBJECT_GRAPH_KEY))
    constants = {node.name: node for node in meta.graph_def.node if node.op == "Const"}
    objects = [None] * len(proto.nodes)
    # Values first: variables and constants are what functions are bound to.
    for node_id, node in enumerate(proto.nodes):
        kind = node.WhichOneof("kind")
        if kind == "variable":
            objects[node_id] = _restore_variable(node.variable, node_id, checkpoint_graph,
                                                 reader)
        elif kind == "constant":
            objects[node_id] = _restore_constant(constants[node.constant.operation])
        elif kind == "user_object" and node.user_object.identifier in (
                "trackable_list_wrapper", "trackable_tuple_wrapper"):
            objects[node_id] = []
        elif kind == "user_object" and node.user_object.identifier == "trackable_dict_wrapper":
            objects[node_id] = {}
    library = meta.graph_def.library
    _check_references(proto, {f.signature.name for f in library.function})
    concretes = {}

    def concrete(name, keywords=None):
        key = (name, None if keywords is None else tuple(keywords))
        if key not in concretes:
            saved = proto.concrete_functions[name]
            for node_id in saved.bound_inputs:
                if not isinstance(objects[node_id], (_variables.Variable, _ops.Tensor)):
                    kind = proto.nodes[node_id].WhichOneof("kind")
                    raise NotImplementedError(
                        f"Function {name!r} is bound to node {node_id}, a {kind} that Flowstone "
                        "cannot restore as a tensor (variables and constants only).")
            concretes[key] = _RestoredConcreteFunction(
                name, library, saved, [objects[i] for i in saved.bound_inputs], keywords)
        return concretes[key]

    for node_id, node in enumerate(proto.nodes):
        if objects[node_id] is not None:
            continue
        kind = node.WhichOneof("kind")
        if kind == "function":
            objects[node_id] = _RestoredFunction(
                [concrete(name) for name in node.function.concrete_functions])
        elif kind == "bare_concrete_function":
            bare = node.bare_concrete_function
            objects[node_id] = concrete(bare.concrete_function_name,
                                        list(bare.argument_keywords))
        else:
            objects[node_id] = RestoredObject()
    for node_id, node in enumerate(proto.nodes):
        parent = objects[node_id]
        for child in node.children:
            value = objects[child.node_id]
            if isinstance(parent, list):
                parent.append(value)
            elif isinstance(parent, dict):
                parent[child.local_name] = value
            elif isinstance(parent, RestoredObject):
                setattr(parent, child.local_name, value)
    root = objects[0]
    if isinstance(root, RestoredObject) and isinstance(getattr(root, "signatures", None),
                                                       RestoredObject):
        root.signatures = dict(vars(root.signatures))
    return root


def _check_references(proto, library_names):
    """InvalidArgument-style ValueErrors for an object graph whose references dangle (node ids
    out of range, functions the library lacks): untrusted input never indexes past a list."""
    count = len(proto.nodes)

    def check_node(node_id, what):
        if not 0 <= node_id < count:
            raise ValueError(f"The SavedModel's object graph is invalid: {what} refers to node "
                             f"{node_id}, but the graph has {count} nodes.")

    def check_function(name, what):
        if name not in proto.concrete_functions or name not in library_names:
            raise ValueError(f"The SavedModel's object graph is invalid: {what} names the "
                             f"function {name!r}, which its function library lacks.")

    for node_id, node in enumerate(proto.nodes):
        for child in node.children:
            check_node(child.node_id, f"a child of node {node_id}")
        kind = node.WhichOneof("kind")
        if kind == "function":
            for name in node.function.concrete_functions:
                check_function(name, f"function node {node_id}")
        elif kind == "bare_concrete_function":
            check_function(node.bare_concrete_function.concrete_function_name,
                           f"concrete function node {node_id}")
    for name, saved in proto.concrete_functions.items():
        for node_id in saved.bound_inputs:
            check_node(node_id, f"a bound input of function {name!r}")


def _restore_variable(saved, node_id, checkpoint_graph, reader):
    attributes = checkpoint_graph.nodes[node_id].attributes
    key = next((a.checkpoint_key for a in attributes
                if a.name == _object_checkpoint._VARIABLE_VALUE), None)
    if key is None or not reader.has_tensor(key):
        raise ValueError(f"The SavedModel's checkpoint has no value for variable {saved.name!r} "
                         f"(object graph node {node_id}).")
    value = np.asarray(reader.get_tensor(key))
    return _variables.Variable(value, trainable=saved.trainable,
                               name=saved.name or "Variable",
                               dtype=_dtypes.as_dtype(saved.dtype))


def _restore_constant(node):
    return _eager.to_eager(_tensor_util.make_ndarray(node.attr["value"].tensor))
