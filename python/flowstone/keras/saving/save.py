"""model.save / load_model / save_weights / load_weights.

HDF5 files are written crash-safely, as Saver writes checkpoints: into a temporary file beside
the destination, synced, then renamed over it, so a crash leaves the old file or none.
"""

import os
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
        raise errors.UnimplementedError(
            None, None,
            f"Saving {filepath!r} in the SavedModel format is not supported by Flowstone. "
            "Save to an HDF5 file instead: model.save('model.h5').")
    _atomic_h5(filepath, overwrite,
               lambda f: hdf5_format.write_model(f, model, include_optimizer))


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
    """Keras's object-based names for each weight: layer_with_weights-N/<weight>/..."""
    keyed = {}
    for index, layer in enumerate(hdf5_format.layers_with_weights(model)):
        for weight in layer.weights:
            short = weight.name.split(":")[0].split("/")[-1]
            keyed[f"layer_with_weights-{index}/{short}/.ATTRIBUTES/VARIABLE_VALUE"] = weight
    return keyed


def save_weights(model, filepath, overwrite=True, save_format=None):
    filepath = os.fspath(filepath)
    if _is_h5(filepath, save_format):
        _atomic_h5(filepath, overwrite,
                   lambda f: hdf5_format.save_weights_to_group(f, model))
        return
    from flowstone.train.saver import Saver
    Saver(var_list=_checkpoint_keys(model), max_to_keep=None).save(
        K.session_with(model.weights), filepath, write_meta_graph=False)


def load_weights(model, filepath, by_name=False, skip_mismatch=False):
    filepath = os.fspath(filepath)
    h5py = None
    if filepath.endswith(_H5_SUFFIXES) or (os.path.isfile(filepath) and _is_hdf5(filepath)):
        h5py = hdf5_format.import_h5py()
    if h5py is not None:
        with h5py.File(filepath, "r") as f:
            group = f["model_weights"] if "model_weights" in f else f
            hdf5_format.load_weights_from_group(group, model, by_name, skip_mismatch)
        return None
    from flowstone.train.saver import Saver
    Saver(var_list=_checkpoint_keys(model)).restore(K.session_with([]), filepath)
    K._mark_initialized(model.weights)
    return None


def _is_hdf5(filepath):
    with open(filepath, "rb") as f:
        return f.read(8) == b"\x89HDF\r\n\x1a\n"
