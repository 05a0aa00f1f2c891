"""tf.saved_model.save: a tf.Module (or any object tf.train.Checkpoint tracks) as a TensorFlow 2
SavedModel that TensorFlow's `tf.saved_model.load` restores:

    export_dir/saved_model.pb     one MetaGraphDef tagged "serve":
        graph_def.library         the traced tf.functions (FunctionDefs) and one signature
                                  wrapper per signature (keyword inputs, a dict of outputs)
        graph_def.node            a VarHandleOp per variable, the signatures' Placeholders and
                                  calls, and a restore / save subgraph (saver_def) for TF 1's
                                  loader.load
        object_graph_def          the SavedObjectGraph: the objects, variables, functions (with
                                  their concrete functions' signatures) and the signature map
        signature_def             "serving_default" and the other signatures
    export_dir/variables/         the values, as tf.train.Checkpoint writes them, with a
                                  TrackableObjectGraph whose node ids are the SavedObjectGraph's

The objects and checkpoint keys come from object_checkpoint's one walk (`_ObjectGraph`); the
functions and the signature map are nodes appended after the tracked objects.
"""

import inspect
import itertools
import os
import re

import numpy as np

from flowstone import _C
from flowstone import dtypes as _dtypes
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.ops import def_function as _def_function
from flowstone.ops import variables as _variables
from flowstone.saved_model import constants
from flowstone.saved_model import nested_structure_coder as _coder
from flowstone.train import object_checkpoint as _object_checkpoint
from flowstone.util.tf_export import tf_export

_SavedObjectGraph = tf_protos.message_class("SavedObjectGraph")
_FunctionDef = tf_protos.message_class("FunctionDef")
_SIGNATURE_MAP = "signatures"
# TensorFlow's revived types: list, tuple and dict attributes come back as its wrappers.
_WRAPPER_IDENTIFIERS = {list: "trackable_list_wrapper", tuple: "trackable_tuple_wrapper",
                        dict: "trackable_dict_wrapper"}


# --- the objects -----------------------------------------------------------------------------

def _function_attributes(obj):
    """[(attribute name, tf.function)] of an object: its class's decorated methods (bound to
    it) and tf.functions assigned to its attributes."""
    if isinstance(obj, (_variables.Variable, list, tuple, dict)) or not hasattr(obj, "__dict__"):
        return []
    out = []
    for name in sorted(dir(type(obj))):
        if isinstance(inspect.getattr_static(type(obj), name, None), _def_function.Function):
            out.append((name, getattr(obj, name)))
    for name, value in sorted((k, v) for k, v in vars(obj).items() if isinstance(k, str)):
        if isinstance(value, (_def_function.Function, _def_function.ConcreteFunction)):
            out.append((name, value))
    return out


def _concrete_functions(function):
    """The traces a tf.function is saved with: its input signature's, else those made so far."""
    if isinstance(function, _def_function.ConcreteFunction):
        return [function]
    if function.input_signature is not None:
        return [function.get_concrete_function()]
    return list(function._traces.values())


def _signature_concrete(key, function):
    if isinstance(function, _def_function.ConcreteFunction):
        return function
    if isinstance(function, _def_function.Function) and function.input_signature is not None:
        return function.get_concrete_function()
    raise ValueError(f"Expected a TensorFlow function for which to generate a signature, but got "
                     f"{function}. Only `tf.functions` with an input signature or concrete "
                     "functions can be used as a signature.")


def _signature_outputs(key, concrete):
    """{output key: flat output index} of a signature (TensorFlow's keys: a dict's own, else
    output_N)."""
    structure = concrete._structure
    if isinstance(structure, dict):
        order = sorted(structure)  # nest.flatten's order
        items = [(k, structure[k], order.index(k)) for k in structure]
    elif isinstance(structure, (list, tuple)):
        items = [(f"output_{i}", v, i) for i, v in enumerate(structure)]
    else:
        items = [("output_0", structure, 0)]
    outputs = {}
    for name, value, index in items:
        if not isinstance(value, (_ops.Tensor, _variables.Variable)) or not isinstance(name, str):
            raise ValueError(
                f"Got a non-Tensor value {value!r} for key '{name}' in the output of the function "
                f"{concrete.graph.name} used to generate the SavedModel signature '{key}'. "
                "Outputs for functions used as signatures must be a single Tensor, a sequence of "
                "Tensors, or a dictionary from string to Tensor.")
        outputs[name] = index
    return outputs


def _tensor_output_indices(concrete):
    """Flat output index -> index among the function's returned tensors."""
    index, out = 0, {}
    for position, kind in enumerate(concrete._out_kinds):
        if kind == "tensor":
            out[position] = index
            index += 1
        elif kind is not None:  # a composite, returned as its component tensors
            index += len(kind._component_specs)
    return out


def _input_keys(concrete):
    """The signature's input names: the input_signature's TensorSpec names, else the Python
    function's argument names."""
    _, _, names = _coder.argspec(concrete._python_function)
    args, kwargs = concrete.structured_input_signature
    if kwargs or any(isinstance(a, (list, tuple, dict)) for a in args):
        raise ValueError(f"The signature function {concrete.graph.name} takes nested or keyword "
                         "arguments; Flowstone saves signatures over flat positional tensors.")
    keys = []
    for index, arg in enumerate(args):
        name = getattr(arg, "name", None) or (names[index] if index < len(names)
                                              else f"input_{index}")
        keys.append(name.split(":")[0])
    return keys


class _Saver:
    """One tf.saved_model.save call: assigns node ids, exports the functions, and writes."""

    def __init__(self, root, signatures):
        self.root = root
        self.objects = _object_checkpoint._ObjectGraph(root)
        self.ids = {id(obj): node for node, obj in enumerate(self.objects.nodes)}
        for obj in self.objects.nodes:
            if isinstance(obj, _variables.Variable) and not obj._eager:
                raise ValueError(
                    f"tf.saved_model.save saves eager variables; {obj.name} was made in a graph. "
                    "Build the object while executing eagerly, or save the graph with "
                    "tf.compat.v1.saved_model.Builder.")
        self.functions = []  # (node id, Function or ConcreteFunction)
        for node, obj in list(enumerate(self.objects.nodes)):
            for name, function in _function_attributes(obj):
                child = self._add_node(function, self.objects.paths[node] + (name,))
                self.objects.children[node].append((name, child))
                if child == len(self.objects.nodes) - 1:
                    self.functions.append((child, function))
        self.signatures = self._signature_functions(signatures)
        self.signature_node = self._add_node(object(), (_SIGNATURE_MAP,))
        self.objects.children[0].append((_SIGNATURE_MAP, self.signature_node))
        self.signature_nodes = {}
        for key in self.signatures:
            child = self._add_node(object(), (_SIGNATURE_MAP, key))
            self.objects.children[self.signature_node].append((key, child))
            self.signature_nodes[key] = child
        self.constants = {}  # id(eager tensor) -> (node id, Const name)
        self.names = {}  # id(ConcreteFunction) -> its FunctionDef's name in the SavedModel
        self.library = []
        self.counter = itertools.count()

    def _add_node(self, obj, path):
        if id(obj) in self.ids:
            return self.ids[id(obj)]
        node = self.ids[id(obj)] = len(self.objects.nodes)
        self.objects.nodes.append(obj)
        self.objects.paths.append(path)
        self.objects.children.append([])
        return node

    def _signature_functions(self, signatures):
        if signatures is None:
            # TensorFlow's default: the root's one tf.function with an input signature.
            found = [f for _, f in _function_attributes(self.root)
                     if isinstance(f, _def_function.Function) and f.input_signature is not None]
            signatures = found[0] if len(found) == 1 else {}
        if not isinstance(signatures, dict):
            signatures = {constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signatures}
        return {key: _signature_concrete(key, f) for key, f in signatures.items()}

    # --- functions ---

    def bound_inputs(self, concrete):
        nodes = []
        for tensor in concrete._captured:
            variable = _variables.eager_variables_by_handle_id.get(tensor._handle.id)
            if variable is not None:
                if id(variable) not in self.ids:
                    raise AssertionError(
                        "Tried to export a function which references an 'untracked' resource. "
                        "TensorFlow objects (e.g. tf.Variable) captured by functions must be "
                        "'tracked' by assigning them to an attribute of a tracked object or "
                        "assigned to an attribute of the main object directly.\n"
                        f"\tFunction name = {concrete.graph.name}\n"
                        f"\tCaptured variable = {variable.name}")
                nodes.append(self.ids[id(variable)])
            else:
                if id(tensor) not in self.constants:
                    node = self._add_node(tensor, ("constant",))
                    self.constants[id(tensor)] = (node, f"Const_{len(self.constants)}")
                nodes.append(self.constants[id(tensor)][0])
        return nodes

    def export_function(self, concrete):
        """Adds a trace's FunctionDefs (under names unique in the SavedModel) to the library."""
        if id(concrete) in self.names:
            return self.names[id(concrete)]
        library = concrete._outer.as_graph_def().library
        renamed = {f.signature.name: f"__inference_{f.signature.name}_{next(self.counter)}"
                   for f in library.function}
        for function in library.function:
            function.signature.name = renamed[function.signature.name]
            for node in function.node_def:
                for attr in node.attr.values():
                    _rename_functions(attr, renamed)
            self.library.append(function)
        self.names[id(concrete)] = renamed[concrete.graph.name]
        return self.names[id(concrete)]

    def signature_wrapper(self, key, concrete, outputs):
        """A function with the signature's inputs in argument order (then the captures)
        returning its outputs in sorted key order: one call of the trace."""
        callee = self.export_function(concrete)
        wrapper = _FunctionDef()
        safe_key = re.sub(r"[^A-Za-z0-9_]", "_", key)  # a FunctionDef name
        wrapper.signature.name = f"__inference_signature_wrapper_{safe_key}_{next(self.counter)}"
        wrapper.signature.is_stateful = True
        call = wrapper.node_def.add(name="StatefulPartitionedCall", op="StatefulPartitionedCall")
        arg_types = [t.dtype.as_datatype_enum for t in concrete.graph.inputs]
        for index, dtype in enumerate(arg_types):
            wrapper.signature.input_arg.add(name=f"arg_{index}", type=dtype)
            call.input.append(f"arg_{index}")
        for index, tensor in enumerate(concrete._captured):
            wrapper.signature.input_arg.add(name=f"capture_{index}",
                                            type=tensor.dtype.as_datatype_enum)
            call.input.append(f"capture_{index}")
        returned = [t.dtype.as_datatype_enum for t in concrete.graph.outputs]
        call.attr["Tin"].list.type.extend(arg_types + [t.dtype.as_datatype_enum
                                                       for t in concrete._captured])
        call.attr["Tout"].list.type.extend(returned)
        call.attr["f"].func.name = callee
        for name in ("config", "config_proto", "executor_type"):
            call.attr[name].s = b""
        tensor_index = _tensor_output_indices(concrete)
        for position, name in enumerate(sorted(outputs)):
            index = tensor_index[outputs[name]]
            wrapper.signature.output_arg.add(name=f"output_{position}", type=returned[index])
            wrapper.ret[f"output_{position}"] = f"StatefulPartitionedCall:output:{index}"
        self.library.append(wrapper)
        return wrapper.signature.name


def _rename_functions(attr, renamed):
    if attr.HasField("func") and attr.func.name in renamed:
        attr.func.name = renamed[attr.func.name]
    for func in attr.list.func:
        if func.name in renamed:
            func.name = renamed[func.name]


# --- the SavedModel --------------------------------------------------------------------------

def _user_object(proto, identifier):
    proto.user_object.identifier = identifier
    proto.user_object.version.producer = 1
    proto.user_object.version.min_consumer = 1


def _concrete_signature(saver, concrete, graph):
    name = saver.export_function(concrete)
    saved = graph.concrete_functions[name]
    saved.bound_inputs.extend(saver.bound_inputs(concrete))
    _, _, names = _coder.argspec(concrete._python_function)
    args, kwargs = concrete.structured_input_signature
    named = tuple(_coder.encode(a, names[i] if i < len(names) else f"arg_{i}")
                  for i, a in enumerate(args))
    signature = _coder.StructuredValue()
    pair = signature.tuple_value.values
    pair.add().tuple_value.values.extend(named)
    pair.add().CopyFrom(_coder.encode(dict(kwargs)))
    saved.canonicalized_input_signature.CopyFrom(signature)
    saved.output_signature.CopyFrom(_coder.encode(concrete._structure))
    return name


def _function_spec(proto, function):
    python_function = function.python_function
    fullargspec, is_method, _ = _coder.argspec(python_function)
    proto.fullargspec.CopyFrom(fullargspec)
    proto.is_method = is_method
    proto.input_signature.CopyFrom(_coder.encode(
        None if function.input_signature is None else tuple(function.input_signature)))


def _object_graph(saver):
    graph = _SavedObjectGraph()
    objects = saver.objects
    signature_functions = {}
    for key, concrete in saver.signatures.items():
        input_keys = _input_keys(concrete)
        outputs = _signature_outputs(key, concrete)
        name = saver.signature_wrapper(key, concrete, outputs)
        saved = graph.concrete_functions[name]
        saved.bound_inputs.extend(saver.bound_inputs(concrete))
        inputs = _coder.StructuredValue()
        inputs.tuple_value.values.add().tuple_value.SetInParent()
        fields = inputs.tuple_value.values.add().dict_value
        fields.SetInParent()
        for input_key, tensor in zip(input_keys, concrete.graph.inputs):
            fields.fields[input_key].CopyFrom(
                _coder.spec_value(input_key, tensor.shape, tensor.dtype))
        saved.canonicalized_input_signature.CopyFrom(inputs)
        out = _coder.StructuredValue()
        out.dict_value.SetInParent()
        for output_key, index in outputs.items():
            tensor = concrete._flat_out[index]
            out.dict_value.fields[output_key].CopyFrom(
                _coder.spec_value(output_key, tensor.shape, tensor.dtype))
        saved.output_signature.CopyFrom(out)
        signature_functions[key] = (name, input_keys, outputs)
    for node, function in saver.functions:
        for concrete in _concrete_functions(function):
            _concrete_signature(saver, concrete, graph)
    nodes = []
    for node, obj in enumerate(objects.nodes):
        proto = graph.nodes.add()
        for name, child in objects.children[node]:
            proto.children.add(node_id=child, local_name=name)
        nodes.append(proto)
    for node, obj in enumerate(objects.nodes):
        proto = nodes[node]
        if isinstance(obj, _variables.Variable):
            variable = proto.variable
            variable.dtype = obj.dtype.base_dtype.as_datatype_enum
            _coder.shape_into(variable.shape, obj.shape)
            variable.trainable = bool(obj.trainable)
            variable.name = _object_checkpoint._full_name(obj)
        elif isinstance(obj, _def_function.Function):
            saved = proto.function
            saved.concrete_functions.extend(saver.names[id(c)] for c in _concrete_functions(obj))
            _function_spec(saved.function_spec, obj)
        elif isinstance(obj, _def_function.ConcreteFunction):
            bare = proto.bare_concrete_function
            bare.concrete_function_name = saver.names[id(obj)]
            keys = _coder.argspec(obj._python_function)[2]
            bare.argument_keywords.extend(keys)
            bare.allowed_positional_arguments = len(keys)
        elif node == saver.signature_node:
            _user_object(proto, "signature_map")
        elif node in saver.signature_nodes.values():
            key = next(k for k, n in saver.signature_nodes.items() if n == node)
            name, input_keys, _ = signature_functions[key]
            bare = proto.bare_concrete_function
            bare.concrete_function_name = name
            bare.argument_keywords.extend(input_keys)
            bare.allowed_positional_arguments = len(input_keys)
        elif id(obj) in saver.constants:
            proto.constant.operation = saver.constants[id(obj)][1]
        else:
            _user_object(proto, _WRAPPER_IDENTIFIERS.get(type(obj), "_generic_user_object"))
    return graph, signature_functions


def _variable_nodes(saver):
    return [(node, obj) for node, obj in enumerate(saver.objects.nodes)
            if isinstance(obj, _variables.Variable)]


def _graph(saver, signature_functions):
    """The MetaGraphDef's graph: variable handles, signature calls, restore and save ops."""
    graph = _ops.Graph()
    handles = {}
    keys, dtypes, reads = [], [], []
    with graph.as_default():
        for node, variable in _variable_nodes(saver):
            name = _object_checkpoint._full_name(variable) or "Variable"
            handle = _ops.apply_op("VarHandleOp", [], {
                "dtype": variable.dtype.base_dtype, "shape": variable.shape,
                "shared_name": f"{name}_{node}", "container": ""}, name=name).outputs[0]
            handles[node] = handle
            keys.append(saver.objects.key(node, _object_checkpoint._VARIABLE_VALUE))
            dtypes.append(variable.dtype.base_dtype)
            reads.append(handle)
        for tensor_id, (node, name) in saver.constants.items():
            value = saver.objects.nodes[node]
            handles[node] = _ops.constant(value.numpy(), name=name)
        filename = _ops.apply_op("Placeholder", [], {"dtype": _dtypes.string, "shape": []},
                                 name="saver_filename").outputs[0]
        names = _ops.constant(np.array(keys or [""], dtype=object), name="save/tensor_names")
        slices = _ops.constant(np.array([""] * max(len(keys), 1), dtype=object),
                               name="save/shape_and_slices")
        restore_ops = []
        if keys:
            restored = _ops.apply_op("RestoreV2", [filename, names, slices],
                                     {"dtypes": dtypes}, name="save/RestoreV2").outputs
            for handle, value, dtype in zip(reads, restored, dtypes):
                restore_ops.append(_ops.apply_op("AssignVariableOp", [handle, value],
                                                 {"dtype": dtype}, name="save/Assign"))
            values = [_ops.apply_op("ReadVariableOp", [h], {"dtype": d}, name="save/Read")
                      .outputs[0] for h, d in zip(reads, dtypes)]
            saves = [_ops.apply_op("SaveV2", [filename, names, slices, values],
                                   {"dtypes": dtypes}, name="save/SaveV2")]
        else:
            saves = []
        with graph.control_dependencies(restore_ops):
            restore = _ops.apply_op("NoOp", [], {}, name="save/restore_all")
        with graph.control_dependencies(saves):
            saved = _ops.apply_op("Identity", [filename], {"T": _dtypes.string},
                                  name="save/control_dependency").outputs[0]
        _ops.apply_op("NoOp", [], {}, name="NoOp")
        placeholders = {}
        for key, concrete in saver.signatures.items():
            for input_key, tensor in zip(signature_functions[key][1], concrete.graph.inputs):
                placeholders[key, input_key] = _ops.apply_op(
                    "Placeholder", [], {"dtype": tensor.dtype, "shape": tensor.shape},
                    name=f"{key}_{input_key}").outputs[0]
    graph_def = graph.as_graph_def()
    call_names = {}
    for number, (key, concrete) in enumerate(saver.signatures.items()):
        name, input_keys, outputs = signature_functions[key]
        call = graph_def.node.add(op="StatefulPartitionedCall",
                                  name="StatefulPartitionedCall" + (f"_{number}" if number else ""))
        call.input.extend(placeholders[key, k].op.name for k in input_keys)
        call.input.extend(handles[node].op.name for node in saver.bound_inputs(concrete))
        call.attr["Tin"].list.type.extend(
            [t.dtype.as_datatype_enum for t in concrete.graph.inputs] +
            [t.dtype.as_datatype_enum for t in concrete._captured])
        call.attr["Tout"].list.type.extend(
            concrete._flat_out[outputs[k]].dtype.as_datatype_enum for k in sorted(outputs))
        call.attr["f"].func.name = name
        for attr in ("config", "config_proto", "executor_type"):
            call.attr[attr].s = b""
        call_names[key] = call.name
    graph_def.library.function.extend(saver.library)
    saver_def = tf_protos.SaverDef(filename_tensor_name=filename.name,
                                   save_tensor_name=saved.name,
                                   restore_op_name=restore.name, version=2)
    return graph_def, saver_def, placeholders, call_names


def _signature_defs(meta, saver, signature_functions, placeholders, call_names):
    for key, concrete in saver.signatures.items():
        _, input_keys, outputs = signature_functions[key]
        signature = meta.signature_def[key]
        signature.method_name = constants.PREDICT_METHOD_NAME
        for input_key in input_keys:
            tensor = placeholders[key, input_key]
            info = signature.inputs[input_key]
            info.name = tensor.name
            info.dtype = tensor.dtype.as_datatype_enum
            _coder.shape_into(info.tensor_shape, tensor.shape)
        for position, output_key in enumerate(sorted(outputs)):
            tensor = concrete._flat_out[outputs[output_key]]
            info = signature.outputs[output_key]
            info.name = f"{call_names[key]}:{position}"
            info.dtype = tensor.dtype.as_datatype_enum
            _coder.shape_into(info.tensor_shape, tensor.shape)
    init = meta.signature_def[constants.INIT_OP_SIGNATURE_KEY]
    init.outputs[constants.INIT_OP_SIGNATURE_KEY].name = "NoOp"
    init.outputs[constants.INIT_OP_SIGNATURE_KEY].tensor_shape.unknown_rank = True


def _write_checkpoint(saver, prefix):
    objects = saver.objects
    tracked = objects.proto()
    values = [(key, _object_checkpoint._as_array(value)) for key, value in objects.values()]
    values.append((_object_checkpoint.OBJECT_GRAPH_KEY,
                   np.array(tracked.SerializeToString(), dtype=object)))
    try:
        _C.write_tensor_bundle(values, prefix)
    except _C.StatusError as e:
        raise _errors.from_status_error(e, as_op_error=False) from None


def _is_saveable(obj):
    return (not isinstance(obj, (list, tuple, dict, str, bytes, int, float, bool, type(None)))
            and _object_checkpoint._is_trackable(obj))


@tf_export("saved_model.save")
def save(obj, export_dir, signatures=None, options=None):
    """Writes `obj` (a tf.Module, tf.train.Checkpoint or other tracked object) with its
    variables and tf.functions as a TensorFlow 2 SavedModel in `export_dir`. Of `options`
    (tf.saved_model.SaveOptions), `function_aliases` is written; the rest is ignored."""
    if not _is_saveable(obj):
        raise ValueError("Expected an object of type `Trackable`, such as `tf.Module` or a "
                         f"subclass of the `Trackable` class, for export. Got {obj} with type "
                         f"{type(obj)}.")
    export_dir = os.fspath(export_dir)
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise _errors.FailedPreconditionError(None, None, f"{export_dir} is not a directory")
    saver = _Saver(obj, signatures)
    object_graph, signature_functions = _object_graph(saver)
    aliases = {}
    for alias, function in ((options.function_aliases if options else None) or {}).items():
        for concrete in _concrete_functions(function):
            aliases[saver.export_function(concrete)] = alias
    graph_def, saver_def, placeholders, call_names = _graph(saver, signature_functions)
    meta = tf_protos.MetaGraphDef()
    meta.meta_info_def.tags.append(constants.SERVING)
    for name, alias in aliases.items():
        meta.meta_info_def.function_aliases[name] = alias
    meta.graph_def.CopyFrom(graph_def)
    meta.saver_def.CopyFrom(saver_def)
    meta.object_graph_def.CopyFrom(object_graph)
    _signature_defs(meta, saver, signature_functions, placeholders, call_names)
    variables_dir = os.path.join(export_dir, constants.VARIABLES_DIRECTORY)
    os.makedirs(variables_dir, exist_ok=True)
    os.makedirs(os.path.join(export_dir, constants.ASSETS_DIRECTORY), exist_ok=True)
    _write_checkpoint(saver, os.path.join(variables_dir, constants.VARIABLES_FILENAME))
    saved_model = tf_protos.SavedModel(
        saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
    saved_model.meta_graphs.add().CopyFrom(meta)
    _C.write_file_atomically(os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB),
                             saved_model.SerializeToString(deterministic=True))

