"""tf.graph_util: extract_sub_graph and convert_variables_to_constants (freezing), working on
GraphDef messages as TensorFlow's do."""

import logging

from flowstone.framework import tf_protos
from flowstone.util.tf_export import tf_export

_logger = logging.getLogger(__name__)


def _node_name(input_name):
    return input_name.lstrip("^").split(":")[0]


def _check_graph_def(graph_def):
    if not hasattr(graph_def, "node") or not hasattr(graph_def, "SerializeToString"):
        raise TypeError("graph_def must be a graph_pb2.GraphDef proto, but got "
                        f"type {type(graph_def)}.")


@tf_export("graph_util.extract_sub_graph")
def extract_sub_graph(graph_def, dest_nodes):
    """The GraphDef of the nodes `dest_nodes` need (through data and control inputs), in their
    original order, with the library and versions kept."""
    _check_graph_def(graph_def)
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be an iterable of strings.")
    by_name = {node.name: node for node in graph_def.node}
    for name in dest_nodes:
        if name not in by_name:
            raise AssertionError(f"{name} is not in graph")
    needed = set()
    pending = list(dest_nodes)
    while pending:
        name = pending.pop()
        if name in needed:
            continue
        needed.add(name)
        for input_name in by_name[name].input:
            source = _node_name(input_name)
            if source not in by_name:
                raise ValueError(f"Node '{name}': Unknown input node '{source}'")
            pending.append(source)
    out = tf_protos.GraphDef()
    out.node.extend(node for node in graph_def.node if node.name in needed)
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    return out


def _variable_reads(sess, handle_names):
    """{VarHandleOp name: a tensor of the session's graph reading that variable}."""
    graph = sess.graph
    reads = {}
    for op in graph.get_operations():
        if op.type == "ReadVariableOp" and op.inputs[0].op.name in handle_names:
            reads.setdefault(op.inputs[0].op.name, op.outputs[0])
    missing = sorted(set(handle_names) - set(reads))
    if missing:
        raise ValueError(f"Cannot read variables {missing} in the session's graph: no "
                         "ReadVariableOp reads them.")
    return reads


@tf_export("graph_util.convert_variables_to_constants")
def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None,
                                   variable_names_blacklist=None):
    """Freezes the subgraph that `output_node_names` need: each variable (VarHandleOp) becomes
    a Const holding its value in `sess`, and each ReadVariableOp of it an Identity."""
    _check_graph_def(input_graph_def)
    graph_def = extract_sub_graph(input_graph_def, output_node_names)
    handles = [node.name for node in graph_def.node if node.op == "VarHandleOp"
               and (variable_names_whitelist is None or node.name in variable_names_whitelist)
               and (variable_names_blacklist is None or node.name not in variable_names_blacklist)]
    reads = _variable_reads(sess, handles)
    values = dict(zip(reads, sess.run([reads[name] for name in reads]))) if reads else {}
    frozen = set(values)
    out = tf_protos.GraphDef()
    for node in graph_def.node:
        new = out.node.add()
        if node.name in frozen:
            value = values[node.name]
            new.name, new.op, new.device = node.name, "Const", node.device
            new.attr["dtype"].type = node.attr["dtype"].type
            tensor = new.attr["value"].tensor
            tensor.dtype = node.attr["dtype"].type
            for dim in value.shape:
                tensor.tensor_shape.dim.add().size = dim
            tensor.tensor_content = value.tobytes()
            continue
        new.CopyFrom(node)
        sources = {_node_name(i) for i in node.input if not i.startswith("^")}
        if node.op == "ReadVariableOp" and sources & frozen:
            new.op = "Identity"
            dtype = node.attr["dtype"].type
            new.attr.clear()
            new.attr["T"].type = dtype
        elif sources & frozen:
            raise ValueError(f"Cannot freeze variable {sorted(sources & frozen)[0]}: node "
                             f"'{node.name}' ({node.op}) uses its handle; only ReadVariableOp "
                             "can read a frozen variable.")
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    _logger.info("Froze %d variables.", len(frozen))
    return out


def _colocation_targets(graph_def):
    """Names the `_class` colocation attrs point at (`loc:@name`)."""
    targets = set()
    for node in graph_def.node:
        if "_class" in node.attr:
            for entry in node.attr["_class"].list.s:
                text = entry.decode() if isinstance(entry, bytes) else entry
                if text.startswith("loc:@"):
                    targets.add(text[len("loc:@"):])
    return targets


def _rewired(graph_def, skipped, forward):
    """A GraphDef without the nodes in `skipped`, every input naming a node in `forward` moved
    to what that node forwards (followed through chains), inputs from dropped nodes removed."""
    out = tf_protos.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        if node.name in skipped:
            continue
        copy = out.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        for input_name in node.input:
            while _node_name(input_name) in forward:
                input_name = forward[_node_name(input_name)]
            if _node_name(input_name) in skipped and _node_name(input_name) not in forward:
                continue
            copy.input.append(input_name)
    return out


@tf_export("graph_util.remove_training_nodes")
def remove_training_nodes(input_graph, protected_nodes=None):
    """The GraphDef without what only training needs, as TensorFlow prunes it before inference:
    CheckNumerics nodes are dropped (and the inputs naming them), and Identity nodes are spliced
    out (their consumers read the Identity's input), except protected ones, those with or used as
    control inputs, and those other nodes are colocated with."""
    _check_graph_def(input_graph)
    protected = set(protected_nodes or [])
    dropped = {n.name for n in input_graph.node
               if n.op == "CheckNumerics" and n.name not in protected}
    graph = _rewired(input_graph, dropped, {})
    with_control_inputs = {n.name for n in graph.node if any(i.startswith("^") for i in n.input)}
    control_sources = {_node_name(i) for n in graph.node for i in n.input if i.startswith("^")}
    colocated = _colocation_targets(graph)
    splice = {n.name: n.input[0] for n in graph.node
              if n.op == "Identity" and n.input and n.name not in protected
              and n.name not in with_control_inputs and n.name not in control_sources
              and n.name not in colocated}
    return _rewired(graph, set(splice), splice)


@tf_export("graph_util.tensor_shape_from_node_def_name")
def tensor_shape_from_node_def_name(graph, input_name):
    """The static shape of the tensor `input_name` ("node" means "node:0") in `graph`."""
    name = input_name if ":" in input_name else input_name + ":0"
    return graph.get_tensor_by_name(name).get_shape()


# TensorFlow's DataType numbers (types.proto) for the placement rule below.
_DT_INT32 = 3
_DT_STRING = 7
_VARIABLE_OPS = {"Variable", "VariableV2", "AutoReloadVariable", "VarHandleOp",
                 "MutableHashTable", "MutableHashTableV2", "MutableHashTableOfTensors",
                 "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                 "MutableDenseHashTableV2"}


@tf_export("graph_util.must_run_on_cpu")
def must_run_on_cpu(node, pin_variables_on_cpu=False):
    """Whether TensorFlow's placement rule keeps `node` (an Operation or NodeDef) on the CPU:
    string and int32 constants, int32 DynamicStitch and casts from int32 (shape arithmetic), and
    variables when `pin_variables_on_cpu`."""
    if hasattr(node, "get_attr"):  # an Operation
        op_type = node.type

        def dtype_attr(name):
            return node.get_attr(name).as_datatype_enum
    else:  # a NodeDef message
        op_type = node.op

        def dtype_attr(name):
            return node.attr[name].type
    if pin_variables_on_cpu and op_type in _VARIABLE_OPS:
        return True
    if op_type == "Const":
        return dtype_attr("dtype") in (_DT_STRING, _DT_INT32)
    if op_type in ("DynamicStitch", "ParallelDynamicStitch"):
        return dtype_attr("T") == _DT_INT32
    if op_type == "Cast":
        return dtype_attr("SrcT") == _DT_INT32
    return False
