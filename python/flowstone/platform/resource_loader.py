"""tf.resource_loader: paths of data files that sit beside the calling Python file."""

import inspect
import os

from flowstone.util.tf_export import tf_export


def _caller_directory():
    """The directory of the file that called the public function calling this."""
    frame = inspect.stack()[2]
    return os.path.dirname(os.path.abspath(frame.filename))


@tf_export("resource_loader.get_data_files_path")
def get_data_files_path():
    """The directory of the calling Python file, where its data files are."""
    return _caller_directory()


@tf_export("resource_loader.get_root_dir_with_all_resources")
def get_root_dir_with_all_resources():
    """The directory holding the caller's data files (no Bazel runfiles tree here: the
    caller's own directory)."""
    return _caller_directory()


@tf_export("resource_loader.get_path_to_datafile")
def get_path_to_datafile(path):
    """`path` relative to the calling Python file's directory."""
    return os.path.join(_caller_directory(), path)


@tf_export("resource_loader.load_resource")
def load_resource(path):
    """The bytes of the file at `path`, relative to the flowstone package's directory (as
    TensorFlow's is relative to the tensorflow package)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(package, path), "rb") as f:
        return f.read()


@tf_export("resource_loader.readahead_file_path")
def readahead_file_path(path, readahead="128M"):
    """`path` itself: reading ahead is a remote-file-system optimization local files need not."""
    del readahead
    return path
