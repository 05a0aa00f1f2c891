"""tf.saved_model.loader.load: a SavedModel's graph and variables into a session (TensorFlow 1's
API; TensorFlow 2's SavedModels load too, their variables restored by their own restore
function); and tf.saved_model.load(export_dir), TensorFlow 2's form, whose signatures are
callables over a private session."""

import os

from google.protobuf import message as _message
from google.protobuf import text_format

from flowstone import errors as _errors
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos
from flowstone.platform import tf_logging as _logging
from flowstone.saved_model import constants
from flowstone.saved_model import revive
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


def _run_restore_op(sess, saver_def, import_scope, variables_prefix):
    def scoped(name):
        return f"{import_scope}/{name}" if import_scope else name
    graph = _ops.get_default_graph()
    restore = graph.as_graph_element(scoped(saver_def.restore_op_name))
    filename = graph.as_graph_element(scoped(saver_def.filename_tensor_name))
    sess.run(restore, {filename: variables_prefix})


@tf_export("saved_model.loader.load", "saved_model.load")
def load(sess, tags=None, export_dir=None, import_scope=None, **saver_kwargs):
    """Imports the MetaGraphDef tagged exactly `tags` into `sess`'s graph, restores its
    variables and runs its init op; returns the MetaGraphDef. Called as TensorFlow 2's
    `tf.saved_model.load(export_dir)` (a path first), it is load_v2."""
    del saver_kwargs
    if isinstance(sess, (str, bytes)) or hasattr(sess, "__fspath__"):
        return load_v2(sess, tags)
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
        elif meta.saver_def.restore_op_name:
            # TensorFlow 2's SavedModels keep no variable collections: their own restore
            # function (RestoreV2 into each variable) runs, fed the checkpoint's prefix.
            _run_restore_op(sess, meta.saver_def, import_scope, variables_prefix)
        init_name = _init_op_name(meta)
        if init_name:
            if import_scope:
                init_name = f"{import_scope}/{init_name}"
            sess.run(_ops.get_default_graph().as_graph_element(init_name),
                     _asset_feeds(meta, export_dir, import_scope))
    return meta


def _asset_feeds(meta, export_dir, import_scope):
    """{asset tensor name: path of the file in export_dir/assets}: what the init op (lookup
    tables from vocabulary files) is fed, as TensorFlow's loader feeds it."""
    feeds = {}
    for asset in meta.asset_file_def:
        name = asset.tensor_info.name
        if import_scope:
            name = f"{import_scope}/{name}"
        feeds[name] = os.path.join(export_dir, constants.ASSETS_DIRECTORY, asset.filename)
    return feeds


class _SignatureFunction:
    """A SavedModel signature, called with its inputs by keyword: returns {output key: value},
    EagerTensors when executing eagerly and numpy arrays otherwise."""

    def __init__(self, session, key, signature_def):
        self._session = session
        self._key = key
        self._inputs = {k: v.name for k, v in signature_def.inputs.items()}
        self._outputs = {k: v.name for k, v in signature_def.outputs.items()}
        self.structured_input_signature = ((), dict(self._inputs))
        self.structured_outputs = dict(self._outputs)

    def __call__(self, *args, **kwargs):
        if args:
            raise TypeError(f"Signature '{self._key}' takes its inputs by keyword "
                            f"({sorted(self._inputs)}), got {len(args)} positional arguments")
        missing = sorted(set(self._inputs) - set(kwargs))
        unexpected = sorted(set(kwargs) - set(self._inputs))
        if missing or unexpected:
            raise TypeError(f"Signature '{self._key}' takes the inputs {sorted(self._inputs)}; "
                            f"missing {missing}, unexpected {unexpected}")
        feed = {self._inputs[k]: (v.numpy() if hasattr(v, "numpy") else v)
                for k, v in kwargs.items()}
        values = self._session.run(self._outputs, feed)
        if _ops.executing_eagerly():
            from flowstone.framework import eager as _eager
            return {k: _eager.to_eager(v) for k, v in values.items()}
        return values


class _LoadedSavedModel:
    """What tf.saved_model.load(export_dir) returns: `.signatures[key](**inputs)`."""

    def __init__(self, session, meta):
        self._session = session
        self.graph = session.graph
        self.tensorflow_version = meta.meta_info_def.tensorflow_version
        self.signatures = {key: _SignatureFunction(session, key, signature)
                           for key, signature in meta.signature_def.items()
                           if not key.startswith("__")}


@tf_export("saved_model.load_v2")
def load_v2(export_dir, tags=None, options=None):
    """TensorFlow 2's tf.saved_model.load: the SavedModel at `export_dir` (its "serve"
    MetaGraphDef, or the one tagged `tags`). Executing eagerly, a SavedModel with an object
    graph (tf.saved_model.save's) comes back as its objects: variables with their values,
    tf.functions and `.signatures` that call its functions (saved_model/revive.py). Otherwise
    it is restored into a session of its own, with its signatures as callables."""
    del options
    from flowstone.client import session as _session
    export_dir = os.fspath(export_dir)
    saved_model = _read_saved_model(export_dir)
    if tags is None:
        tag_sets = [list(m.meta_info_def.tags) for m in saved_model.meta_graphs]
        tags = ["serve"] if ["serve"] in tag_sets or not tag_sets else tag_sets[0]
    elif isinstance(tags, str):
        tags = [tags]
    meta = next((m for m in saved_model.meta_graphs if set(m.meta_info_def.tags) == set(tags)),
                None)
    if meta is not None and meta.object_graph_def.nodes and _ops.executing_eagerly():
        root = _revived(meta, export_dir)
        if root is not None:
            return root
    graph = _ops.Graph()
    sess = _session.Session(graph=graph)
    meta = load(sess, tags, export_dir)
    return _LoadedSavedModel(sess, meta)


def _revived(meta, export_dir):
    """The SavedModel's root object, or None (with a warning) when an object kind it holds
    cannot be rebuilt yet: its signatures still load through a session."""
    prefix = os.path.join(export_dir, constants.VARIABLES_DIRECTORY, constants.VARIABLES_FILENAME)
    try:
        root = revive.revive(meta, prefix)
    except (ValueError, KeyError, NotImplementedError, _errors.OpError) as e:
        _logging.warning("The objects of the SavedModel at %s cannot be restored (%s); only its "
                         "signatures are loaded.", export_dir, e)
        return None
    if isinstance(root, revive.RestoredObject):
        root.tensorflow_version = meta.meta_info_def.tensorflow_version
        if not isinstance(getattr(root, "signatures", None), dict):
            root.signatures = {}
    return root
