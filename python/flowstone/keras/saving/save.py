"""model.save / load_model / save_weights / load_weights.

HDF5 files are written crash-safely, as Saver writes checkpoints: into a temporary file beside
the destination, synced, then renamed over it, so a crash leaves the old file or none.
"""

import os
import shutil
import uuid

from flowstone import errors
from flowstone.keras import backend as K
from flowstone.keras.saving import hdf5_format
from flowstone.keras.utils.generic_utils import CustomObjectScope
from flowstone.util.tf_export import tf_export

_H5_SUFFIXES = (".h5", ".hdf5", ".keras")


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
    from flowstone.saved_model import builder, constants, signature_def_utils
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
        os.makedirs(filepath, exist_ok=True)
        for name in os.listdir(temp):
            target = os.path.join(filepath, name)
            if os.path.isdir(target):
                shutil.rmtree(target)
            os.replace(os.path.join(temp, name), target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


@tf_export("keras.models.load_model")
def load_model(filepath, custom_objects=None, compile=True, **kwargs):  # noqa: A002
    h5py = hdf5_format.import_h5py()
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise OSError(f"No file or directory found at {filepath}")
    if not h5py.is_hdf5(filepath):
        raise errors.UnimplementedError(
            None, None,
            f"{filepath!r} is not an HDF5 file; Flowstone loads Keras models from HDF5 "
            "(.h5) files only.")
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
