"""tf.import_graph_def and tf.io.write_graph: graphs in TensorFlow's GraphDef format.

The conversion is C++ (src/graph/graph_def.cc); this module passes serialized bytes and wraps
the results. `Graph.as_graph_def()` (framework/ops.py) is the other direction.
"""

import os

from google.protobuf import text_format

from flowstone import _C
from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.platform import gfile as _gfile
from flowstone.util.tf_export import tf_export


def _serialized_graph_def(graph_def):
    # Any GraphDef message (Flowstone's or TensorFlow's own class) serializes to the same bytes.
    if isinstance(graph_def, (bytes, bytearray)) or not hasattr(graph_def, "SerializeToString"):
        raise TypeError(f"graph_def must be a GraphDef proto, got {type(graph_def).__name__}.")
    return graph_def.SerializeToString()


def _input_map_entries(graph, input_map):
    entries = []
    for key, value in input_map.items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be strings, got {key!r}.")
        if key.startswith("^"):
            op = graph.as_graph_element(value, allow_tensor=False, allow_operation=True)
            entries.append((key, op._node, -1))
            continue
        tensor = _ops.convert_to_tensor(value)
        if tensor.graph is not graph:
            raise ValueError(f"input_map['{key}'] must be a tensor of the default graph.")
        entries.append((key, tensor.op._node, tensor.value_index))
    return entries


@tf_export("graph_util.import_graph_def", "import_graph_def")
def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """Imports the nodes of `graph_def` into the default graph, under the name scope `name`
    ("import" by default). `input_map` replaces GraphDef tensors ("name:0") by tensors of the
    default graph; `return_elements` names the Operations ("name") and Tensors ("name:0") to
    return. `op_dict` and `producer_op_list` are accepted for compatibility and ignored, as in
    TensorFlow 1.x's later versions."""
    del op_dict, producer_op_list
    serialized = _serialized_graph_def(graph_def)
    input_map = dict(input_map or {})
    if return_elements is not None and isinstance(return_elements, str):
        raise TypeError("return_elements must be a list of strings.")
    graph = _ops.get_default_graph()
    with _ops.name_scope(name, "import", list(v for v in input_map.values()
                                               if isinstance(v, _ops.Tensor))) as scope:
        prefix = scope[:-1] if scope else ""
        entries = _input_map_entries(graph, input_map)
        try:
            with graph._lock:
                results = _C.import_graph_def(graph._c, serialized, prefix, entries,
                                              list(return_elements or []))
                graph._sync_ops()
        except _C.StatusError as e:
            # tf.errors classes, doubled with ValueError/TypeError where TensorFlow's importer
            # raises those (a malformed node), NotFoundError for ops Flowstone lacks.
            raise _errors.from_status_error(e, graph) from None
    if return_elements is None:
        return None
    out = []
    for node, index in results:
        op = graph._ops[node.id]
        out.append(op if index < 0 else op.outputs[index])
    return out


@tf_export("io.write_graph", "train.write_graph")
def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes a graph (or a GraphDef) to `logdir/name` as a text or binary GraphDef, replacing
    the file atomically; returns the path."""
    if isinstance(graph_or_graph_def, _ops.Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    else:
        graph_def = graph_or_graph_def
    if not _gfile.exists(logdir):
        _gfile.makedirs(logdir)
    path = os.path.join(logdir, name)
    if as_text:
        contents = text_format.MessageToString(graph_def, float_format="").encode()
    else:
        contents = graph_def.SerializeToString(deterministic=True)
    _C.write_file_atomically(path, contents)
    return path

