"""tf.train.import_meta_graph: a MetaGraphDef (a `.meta` file) imported into the default graph,
with its collections and a Saver for its variables."""

import logging

from google.protobuf import message as _message
from google.protobuf import text_format

from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.ops import graph_io as _graph_io
from flowstone.ops import variables as _variables
from flowstone.train import saver as _saver
from flowstone.train.meta_graph_export import VARIABLE_COLLECTIONS
from flowstone.util.tf_export import tf_export

_logger = logging.getLogger(__name__)


def read_meta_graph_file(filename):
    """Parses a `.meta` file, binary or text, as TensorFlow does."""
    with open(filename, "rb") as f:
        data = f.read()
    meta = tf_protos.MetaGraphDef()
    try:
        meta.ParseFromString(data)
        return meta
    except _message.DecodeError:
        pass
    try:
        text_format.Merge(data.decode("utf-8"), meta)
    except (UnicodeDecodeError, text_format.ParseError) as e:
        raise IOError(f"Cannot parse file {filename}: {e}.") from None
    return meta


def _without_saver_nodes(graph_def, saver_def):
    """The GraphDef without the save/restore subgraph TensorFlow's Saver built (SaveV2,
    RestoreV2 and the string constants they read): Flowstone's Saver saves without graph ops."""
    name = saver_def.filename_tensor_name
    if "/" not in name:
        return graph_def
    scope = name.rsplit("/", 1)[0] + "/"
    kept = [node for node in graph_def.node if not node.name.startswith(scope)]
    pruned = tf_protos.GraphDef()
    pruned.CopyFrom(graph_def)
    del pruned.node[:]
    pruned.node.extend(kept)
    return pruned


def _restore_collection(graph, key, collection, import_scope):
    def scoped(name):
        return f"{import_scope}/{name}" if import_scope else name
    kind = collection.WhichOneof("kind")
    if kind == "node_list":
        for name in collection.node_list.value:
            graph.add_to_collection(key, graph.as_graph_element(scoped(name)))
    elif kind == "bytes_list" and key in VARIABLE_COLLECTIONS:
        existing = {v.op.name: v for k in VARIABLE_COLLECTIONS
                    for v in graph.get_collection(k) if isinstance(v, _variables.Variable)}
        for value in collection.bytes_list.value:
            variable_def = tf_protos.VariableDef.FromString(value)
            handle_name = scoped(variable_def.variable_name).rsplit(":", 1)[0]
            var = existing.get(handle_name)
            if var is None:
                with graph.as_default():
                    var = _variables.Variable(variable_def=variable_def,
                                              import_scope=import_scope)
                existing[handle_name] = var
            graph.add_to_collection(key, var)
    elif kind == "bytes_list":
        for value in collection.bytes_list.value:
            graph.add_to_collection(key, value)
    elif kind in ("int64_list", "float_list"):
        for value in getattr(collection, kind).value:
            graph.add_to_collection(key, value)
    else:
        _logger.warning("Cannot restore collection %s: Any values are not supported.", key)


@tf_export("train.import_meta_graph")
def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """Imports a MetaGraphDef (or a `.meta` file) into the default graph under `import_scope`,
    restores its collections (variables become Variables) and returns a Saver for its variables,
    or None when it has none. TensorFlow's save/restore nodes are left out: Flowstone's Saver
    reads and writes variables directly."""
    del kwargs
    meta = meta_graph_or_file
    if isinstance(meta_graph_or_file, (str, bytes)) or hasattr(meta_graph_or_file, "__fspath__"):
        meta = read_meta_graph_file(meta_graph_or_file)
    graph_def = meta.graph_def
    if meta.HasField("saver_def"):
        graph_def = _without_saver_nodes(graph_def, meta.saver_def)
    if clear_devices:
        cleared = tf_protos.GraphDef()
        cleared.CopyFrom(graph_def)
        for node in cleared.node:
            node.device = ""
        graph_def = cleared
    graph = _ops.get_default_graph()
    _graph_io.import_graph_def(graph_def, name=import_scope or "")
    for key in sorted(meta.collection_def):
        _restore_collection(graph, key, meta.collection_def[key], import_scope)
    if not graph.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES):
        return None
    with graph.as_default():
        return _saver.Saver()
