"""tf.saved_model.loader.load: a TensorFlow 1 SavedModel's graph and variables into a session."""

import os

from google.protobuf import message as _message
from google.protobuf import text_format

from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.saved_model import constants
from flowstone.train import meta_graph
from flowstone.util.tf_export import tf_export


def _read_saved_model(export_dir):
    pb = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PB)
    pbtxt = os.path.join(export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
    saved_model = tf_protos.SavedModel()
    if os.path.isfile(pb):
        with open(pb, "rb") as f:
            data = f.read()
        try:
            saved_model.ParseFromString(data)
        except _message.DecodeError as e:
            raise IOError(f"Cannot parse file {pb}: {e}.") from None
    elif os.path.isfile(pbtxt):
        with open(pbtxt, encoding="utf-8") as f:
            try:
                text_format.Merge(f.read(), saved_model)
            except text_format.ParseError as e:
                raise IOError(f"Cannot parse file {pbtxt}: {e}.") from None
    else:
        raise IOError(f"SavedModel file does not exist at: {export_dir}{os.sep}"
                      f"{{{constants.SAVED_MODEL_FILENAME_PBTXT}|"
                      f"{constants.SAVED_MODEL_FILENAME_PB}}}")
    return saved_model


@tf_export("saved_model.loader.maybe_saved_model_directory",
           "saved_model.maybe_saved_model_directory", "saved_model.contains_saved_model")
def maybe_saved_model_directory(export_dir):
    """Whether `export_dir` holds a saved_model.pb or saved_model.pbtxt."""
    export_dir = os.fspath(export_dir)
    return any(os.path.isfile(os.path.join(export_dir, name))
               for name in (constants.SAVED_MODEL_FILENAME_PB,
                            constants.SAVED_MODEL_FILENAME_PBTXT))


def _init_op_name(meta):
    """The op to run after restoring: the init signature, else the main op, else the legacy
    init op (TensorFlow's order)."""
    if constants.INIT_OP_SIGNATURE_KEY in meta.signature_def:
        outputs = meta.signature_def[constants.INIT_OP_SIGNATURE_KEY].outputs
        return outputs[constants.INIT_OP_SIGNATURE_KEY].name
    for key in (constants.MAIN_OP_KEY, constants.LEGACY_INIT_OP_KEY):
        if key in meta.collection_def:
            names = meta.collection_def[key].node_list.value
            if len(names) != 1:
                raise RuntimeError(f"Expected exactly one SavedModel init op, found {len(names)}")
            return names[0]
    return None


@tf_export("saved_model.loader.load")
def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Imports the MetaGraphDef tagged exactly `tags` into `sess`'s graph, restores its
    variables and runs its init op; returns the MetaGraphDef."""
    del saver_kwargs
    export_dir = os.fspath(export_dir)
    saved_model = _read_saved_model(export_dir)
    wanted = set(tags)
    found = [m for m in saved_model.meta_graphs if set(m.meta_info_def.tags) == wanted]
    if not found:
        available = [list(m.meta_info_def.tags) for m in saved_model.meta_graphs]
        raise RuntimeError(
            f"MetaGraphDef associated with tags {sorted(wanted)!r} could not be found in "
            f"SavedModel, with available tags '{available}'. To inspect available tag-sets in "
            "the SavedModel, please use the SavedModel CLI: `saved_model_cli`.")
    meta = found[0]
    with sess.graph.as_default():
        saver = meta_graph.import_meta_graph(meta, import_scope=import_scope)
        variables_prefix = os.path.join(export_dir, constants.VARIABLES_DIRECTORY,
                                        constants.VARIABLES_FILENAME)
        if saver is not None:
            saver.restore(sess, variables_prefix)
        init_name = _init_op_name(meta)
        if init_name:
            if import_scope:
                init_name = f"{import_scope}/{init_name}"
            sess.run(_ops.get_default_graph().as_graph_element(init_name))
    return meta
