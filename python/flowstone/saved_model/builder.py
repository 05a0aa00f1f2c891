"""tf.saved_model.builder.SavedModelBuilder and tf.saved_model.simple_save: TensorFlow 1's
SavedModel layout,

    export_dir/saved_model.pb            a SavedModel proto: one MetaGraphDef per tag set
    export_dir/variables/variables.index + variables.data-00000-of-00001   (a V2 checkpoint)
"""

import os

from google.protobuf import text_format

from flowstone import _C
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.saved_model import constants
from flowstone.saved_model import signature_def_utils
from flowstone.train import meta_graph_export
from flowstone.train import saver as _saver
from flowstone.util.tf_export import tf_export


@tf_export("saved_model.builder.SavedModelBuilder", "saved_model.Builder")
class SavedModelBuilder:
    """Builds a SavedModel in `export_dir`, which must not exist or be empty."""

    def __init__(self, export_dir):
        self._export_dir = os.fspath(export_dir)
        if os.path.exists(self._export_dir):
            if os.listdir(self._export_dir):
                raise AssertionError(
                    "Export directory already exists, and isn't empty. Please choose a different "
                    f"export directory, or delete all the contents of the specified directory: "
                    f"{self._export_dir}")
        else:
            os.makedirs(self._export_dir)
        self._saved_model = tf_protos.SavedModel(
            saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._has_saved_variables = False

    def _add_meta_graph(self, tags, signature_def_map, init_op, clear_devices):
        graph = _ops.get_default_graph()
        meta = meta_graph_export.export_meta_graph(graph=graph, clear_devices=clear_devices)
        meta.meta_info_def.tags.extend(tags)
        for key, signature in (signature_def_map or {}).items():
            meta.signature_def[key].CopyFrom(signature)
        if init_op is not None:
            meta.collection_def[constants.MAIN_OP_KEY].node_list.value.append(init_op.name)
        self._saved_model.meta_graphs.add().CopyFrom(meta)

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None, train_op=None,
                                     init_op=None):
        """Saves the session's variables and the graph tagged with `tags`."""
        del strip_default_attrs, train_op
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already been "
                                 "saved. Please invoke `add_meta_graph()` instead.")
        if assets_collection:
            raise NotImplementedError("SavedModel assets are not supported.")
        variables_dir = os.path.join(self._export_dir, constants.VARIABLES_DIRECTORY)
        os.makedirs(variables_dir, exist_ok=True)
        saver = saver or _saver.Saver(allow_empty=True)
        saver.save(sess, os.path.join(variables_dir, constants.VARIABLES_FILENAME),
                   write_meta_graph=False, write_state=False)
        self._add_meta_graph(tags, signature_def_map, init_op or main_op or legacy_init_op,
                             clear_devices)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None, init_op=None):
        """Adds the graph tagged with `tags`, sharing the variables saved before."""
        del strip_default_attrs, saver
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been saved "
                                 "yet. Please invoke `add_meta_graph_and_variables()` first.")
        if assets_collection:
            raise NotImplementedError("SavedModel assets are not supported.")
        self._add_meta_graph(tags, signature_def_map, init_op or main_op or legacy_init_op,
                             clear_devices)

    def save(self, as_text=False):
        """Writes saved_model.pb (or .pbtxt) and returns its path."""
        if as_text:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
            contents = text_format.MessageToString(self._saved_model).encode()
        else:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PB)
            contents = self._saved_model.SerializeToString(deterministic=True)
        _C.write_file_atomically(path, contents)
        return path.encode()


@tf_export("saved_model.simple_save")
def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Saves a serving SavedModel: tag "serve" and a predict signature "serving_default" over
    the {name: Tensor} `inputs` and `outputs`."""
    signature = signature_def_utils.predict_signature_def(inputs, outputs)
    builder = SavedModelBuilder(export_dir)
    builder.add_meta_graph_and_variables(
        session, [constants.SERVING],
        signature_def_map={constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signature},
        legacy_init_op=legacy_init_op, clear_devices=True)
    builder.save()
