"""model.save / load_model / save_weights / load_weights.

HDF5 files are written crash-safely, as Saver writes checkpoints: into a temporary file beside
the destination, synced, then renamed over it, so a crash leaves the old file or none.
"""

import json
import os
import shutil
import uuid

from flowstone import errors
from flowstone.keras import backend as K
from flowstone.keras.saving import hdf5_format
from flowstone.keras.utils.generic_utils import CustomObjectScope
from flowstone.util.tf_export import tf_export

_H5_SUFFIXES = (".h5", ".hdf5", ".keras")

# In a SavedModel directory that model.save wrote: the model's config, its training config and
# the checkpoint names of its weights in model.weights order, so that load_model rebuilds it.
_KERAS_MODEL_FILE = "keras_model.json"


def _is_h5(filepath, save_format):
    if save_format is not None:
        if save_format not in ("h5", "tf", "keras"):
            raise ValueError(f"Unknown format. Received: `save_format`={save_format}. Supported "
                             "values are 'tf', 'h5' and 'keras'.")
        return save_format in ("h5", "keras")
    return str(filepath).endswith(_H5_SUFFIXES)


def _atomic_h5(filepath, overwrite, write):
    h5py = hdf5_format.import_h5py()
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} already exists; pass overwrite=True to replace it.")
    directory = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(directory, exist_ok=True)
    temp = os.path.join(directory, f".{os.path.basename(filepath)}.tmp-{uuid.uuid4().hex}")
    try:
        with h5py.File(temp, "w") as f:
            write(f)
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, filepath)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        if os.path.exists(temp):
            os.remove(temp)


@tf_export("keras.models.save_model")
def save_model(model, filepath, overwrite=True, include_optimizer=True, save_format=None,
               **kwargs):
    if not _is_h5(filepath, save_format):
        _save_saved_model(model, os.fspath(filepath), overwrite)
        return
    _atomic_h5(filepath, overwrite,
               lambda f: hdf5_format.write_model(f, model, include_optimizer))


def _save_saved_model(model, filepath, overwrite):
    """The model as a SavedModel directory: its graph and weights (TensorFlow 1's layout, see
    docs/COMPAT.md) with a "serving_default" signature from the model's inputs to its outputs,
    keyed by their layers' names as tf-keras keys them. Written into a temporary directory
    beside `filepath`, whose entries then replace those of the same names."""
    from flowstone.framework import ops as _ops
    from flowstone.saved_model import builder, constants, signature_def_utils
    if _ops.executing_eagerly():
        _save_eager_model(model, filepath, overwrite)
        return
    if os.path.exists(filepath) and not os.path.isdir(filepath):
        raise errors.FailedPreconditionError(None, None, f"{filepath} is not a directory")
    if not getattr(model, "inputs", None) or not getattr(model, "outputs", None):
        raise ValueError(f"Model {model} cannot be saved because the input shape is not "
                         "available. Build the model with an input shape, or call it on data "
                         "first.")
    if os.path.isdir(filepath) and os.listdir(filepath) and not overwrite:
        raise FileExistsError(f"{filepath} already exists; pass overwrite=True to replace it.")
    signature = signature_def_utils.predict_signature_def(
        dict(zip(model.input_names, model.inputs)), dict(zip(model.output_names, model.outputs)))
    parent = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(parent, exist_ok=True)
    temp = os.path.join(parent, f".{os.path.basename(filepath)}.tmp-{uuid.uuid4().hex}")
    session = K.get_session()
    try:
        with session.graph.as_default():
            saved = builder.SavedModelBuilder(temp)
            saved.add_meta_graph_and_variables(
                session, [constants.SERVING],
                signature_def_map={constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signature},
                clear_devices=True)
            saved.save()
        with open(os.path.join(temp, _KERAS_MODEL_FILE), "w") as f:
            json.dump(_keras_model_record(model), f)
        os.makedirs(filepath, exist_ok=True)
        for name in os.listdir(temp):
            target = os.path.join(filepath, name)
            if os.path.isdir(target):
                shutil.rmtree(target)
            os.replace(os.path.join(temp, name), target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _save_eager_model(model, filepath, overwrite):
    """An eager model as a SavedModel: a SavedModel holds a graph, so the model is rebuilt from
    its config in a graph of its own, given the eager model's weights, and saved from there."""
    from flowstone.framework import ops as _ops
    from flowstone.keras.layers import deserialize
    try:
        config = {"class_name": type(model).__name__, "config": model.get_config()}
    except NotImplementedError:
        raise NotImplementedError(
            f"Saving the subclassed model {model.name!r} as a SavedModel while executing "
            "eagerly needs its get_config() (to rebuild it in a graph); implement get_config, "
            "or save its weights with model.save_weights(path).") from None
    weights = model.get_weights()
    compiled = getattr(model, "optimizer", None) is not None and getattr(model, "_compiled",
                                                                         False)
    training = hdf5_format.training_config(model) if compiled else None
    with _ops.Graph().as_default():
        clone = deserialize(config)
        clone.set_weights(weights)
        if training is not None:
            clone.compile(**hdf5_format.compile_args(training, None))
        _save_saved_model(clone, filepath, overwrite)


def _keras_model_record(model):
    record = {"model_config": {"class_name": type(model).__name__, "config": model.get_config()},
              "weights": [w.name.split(":")[0] for w in model.weights]}
    if getattr(model, "optimizer", None) is not None and getattr(model, "_compiled", False):
        record["training_config"] = hdf5_format.training_config(model)
    return record


def _load_saved_model_directory(path, custom_objects, compile):  # noqa: A002 - Keras's name
    """A model from a SavedModel directory that model.save wrote: rebuilt from its config, its
    weights read from the directory's checkpoint."""
    from flowstone.keras.layers import deserialize
    from flowstone.train import saver
    record_path = os.path.join(path, _KERAS_MODEL_FILE)
    if not os.path.exists(record_path):
        if os.path.exists(os.path.join(path, "keras_metadata.pb")):
            raise errors.UnimplementedError(
                None, None,
                f"{path!r} is a SavedModel that tf-keras wrote; Flowstone's load_model reads "
                "those models from HDF5: save it in tf-keras with model.save('model.h5'), or "
                f"load it for inference with tf.saved_model.load({path!r})"
                ".signatures['serving_default'].")
        raise errors.UnimplementedError(
            None, None,
            f"{path!r} holds no Keras model (no {_KERAS_MODEL_FILE} or keras_metadata.pb); load "
            "a SavedModel for inference with tf.saved_model.load.")
    with open(record_path) as f:
        record = json.load(f)
    model = deserialize(record["model_config"], custom_objects=custom_objects)
    reader = saver.NewCheckpointReader(os.path.join(path, "variables", "variables"))
    model.set_weights([reader.get_tensor(name) for name in record["weights"]])
    if compile and "training_config" in record:
        model.compile(**hdf5_format.compile_args(record["training_config"], custom_objects))
    return model


@tf_export("keras.models.load_model")
def load_model(filepath, custom_objects=None, compile=True, **kwargs):  # noqa: A002
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise OSError(f"No file or directory found at {filepath}")
    if os.path.isdir(filepath):
        with CustomObjectScope(custom_objects or {}):
            return _load_saved_model_directory(filepath, custom_objects, compile)
    h5py = hdf5_format.import_h5py()
    if not h5py.is_hdf5(filepath):
        raise errors.UnimplementedError(
            None, None,
            f"{filepath!r} is not an HDF5 file; Flowstone loads Keras models from HDF5 "
            "(.h5) files and from the SavedModel directories its model.save writes.")
    with CustomObjectScope(custom_objects or {}), h5py.File(filepath, "r") as f:
        return hdf5_format.read_model(f, custom_objects, compile)


def _checkpoint_keys(model):
    """Keras's object-based names for each weight: layer_with_weights-N/<weight>/... (how
    checkpoints without an object graph, written by earlier Flowstone versions, name them)."""
    keyed = {}
    for index, layer in enumerate(hdf5_format.layers_with_weights(model)):
        for weight in layer.weights:
            short = weight.name.split(":")[0].split("/")[-1]
            keyed[f"layer_with_weights-{index}/{short}/.ATTRIBUTES/VARIABLE_VALUE"] = weight
    return keyed


def save_weights(model, filepath, overwrite=True, save_format=None):
    """HDF5, or TensorFlow's format: an object-based checkpoint with the model as its root (the
    optimizer too once compiled), recorded in the directory's "checkpoint" file, as
    TensorFlow's save_weights writes it."""
    filepath = os.fspath(filepath)
    if _is_h5(filepath, save_format):
        _atomic_h5(filepath, overwrite,
                   lambda f: hdf5_format.save_weights_to_group(f, model))
        return
    from flowstone.train import object_checkpoint, saver
    object_checkpoint.Checkpoint(root=model).write(filepath, session=K.get_session())
    saver.update_checkpoint_state(os.path.dirname(filepath) or os.curdir, filepath, [filepath],
                                  save_relative_paths=True)


def load_weights(model, filepath, by_name=False, skip_mismatch=False):
    """From HDF5, or from a checkpoint in TensorFlow's format (then the restore status is
    returned, as TensorFlow returns it)."""
    filepath = os.fspath(filepath)
    h5py = None
    if filepath.endswith(_H5_SUFFIXES) or (os.path.isfile(filepath) and _is_hdf5(filepath)):
        h5py = hdf5_format.import_h5py()
    if h5py is not None:
        with h5py.File(filepath, "r") as f:
            group = f["model_weights"] if "model_weights" in f else f
            hdf5_format.load_weights_from_group(group, model, by_name, skip_mismatch)
        return None
    from flowstone.train import object_checkpoint, saver
    if os.path.isdir(filepath):
        filepath = saver.latest_checkpoint(filepath) or filepath
    session = K.session_with([])
    if object_checkpoint.OBJECT_GRAPH_KEY not in dict(saver.list_variables(filepath)):
        saver.Saver(var_list=_checkpoint_keys(model)).restore(session, filepath)
        K._mark_initialized(model.weights)
        return None
    status = object_checkpoint.Checkpoint(root=model).read(filepath)
    status.run_restore_ops(session)
    K._mark_initialized(model.weights)
    return status


def _is_hdf5(filepath):
    with open(filepath, "rb") as f:
        return f.read(8) == b"\x89HDF\r\n\x1a\n"
