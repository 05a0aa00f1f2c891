"""tf.train.export_meta_graph: a graph with its collections in TensorFlow's MetaGraphDef format
(the `.meta` file next to a checkpoint). Saver.save writes one through it."""

import logging
import numbers

from google.protobuf import text_format

from flowstone import _C
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.ops import variables as _variables
from flowstone.util.tf_export import tf_export

_logger = logging.getLogger(__name__)

# Collections of Variables, stored as VariableDefs (bytes_list): those TensorFlow registers a
# VariableDef proto function for.
VARIABLE_COLLECTIONS = {
    _ops.GraphKeys.GLOBAL_VARIABLES, _ops.GraphKeys.TRAINABLE_VARIABLES,
    _ops.GraphKeys.LOCAL_VARIABLES, _ops.GraphKeys.MODEL_VARIABLES,
    _ops.GraphKeys.MOVING_AVERAGE_VARIABLES, _ops.GraphKeys.GLOBAL_STEP,
    _ops.GraphKeys.METRIC_VARIABLES,
}


def _variable_def(var):
    proto = tf_protos.VariableDef(
        variable_name=var.handle.name, initializer_name=var.initializer.name,
        snapshot_name=var.value().name, is_resource=True, trainable=var.trainable)
    if var.initial_value is not None:
        proto.initial_value_name = var.initial_value.name
    return proto


def _collection_def(key, values):
    """The CollectionDef of a collection, or None (with a warning, as TensorFlow does) when its
    values are of a kind a MetaGraphDef cannot hold."""
    collection = tf_protos.CollectionDef()
    if key in VARIABLE_COLLECTIONS and all(isinstance(v, _variables.Variable) for v in values):
        collection.bytes_list.value.extend(_variable_def(v).SerializeToString() for v in values)
    elif all(isinstance(v, (_ops.Tensor, _ops.Operation)) for v in values):
        collection.node_list.value.extend(v.name for v in values)
    elif all(isinstance(v, bytes) for v in values):
        collection.bytes_list.value.extend(values)
    elif all(isinstance(v, str) for v in values):
        collection.bytes_list.value.extend(v.encode() for v in values)
    elif all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        collection.int64_list.value.extend(values)
    elif all(isinstance(v, numbers.Real) for v in values):
        collection.float_list.value.extend(values)
    else:
        _logger.warning("Issue encountered when serializing %s: its values cannot be stored in "
                        "a MetaGraphDef; the collection is left out.", key)
        return None
    return collection


@tf_export("train.export_meta_graph")
def export_meta_graph(filename=None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text=False, graph=None, export_scope=None,
                      clear_devices=False, clear_extraneous_savers=False,
                      strip_default_attrs=False, save_debug_info=False, **kwargs):
    """Returns the MetaGraphDef of `graph` (default: the default graph) with its collections
    (all, or `collection_list`), and writes it to `filename` when given (binary, or text with
    `as_text`). `clear_extraneous_savers`, `strip_default_attrs` and `save_debug_info` are
    accepted for compatibility."""
    del clear_extraneous_savers, strip_default_attrs, save_debug_info, kwargs
    if export_scope is not None:
        raise NotImplementedError("export_meta_graph(export_scope=...) is not supported; export "
                                  "the whole graph.")
    graph = graph or _ops.get_default_graph()
    meta = tf_protos.MetaGraphDef()
    if meta_info_def is not None:
        meta.meta_info_def.CopyFrom(meta_info_def)
    # tensorflow_version stays empty: TensorFlow parses it as its own version number (and then
    # trusts VariableDef.trainable, as it does for an empty one).
    meta.graph_def.CopyFrom(graph_def if graph_def is not None
                            else graph.as_graph_def(add_shapes=True))
    if clear_devices:
        for node in meta.graph_def.node:
            node.device = ""
    if saver_def is not None:
        meta.saver_def.CopyFrom(saver_def)
    keys = graph.get_all_collection_keys() if collection_list is None else collection_list
    for key in sorted(keys):
        values = graph.get_collection(key)
        if not values:
            continue
        collection = _collection_def(key, values)
        if collection is not None:
            meta.collection_def[key].CopyFrom(collection)
    if filename:
        contents = (text_format.MessageToString(meta).encode() if as_text
                    else meta.SerializeToString(deterministic=True))
        _C.write_file_atomically(str(filename), contents)
    return meta
