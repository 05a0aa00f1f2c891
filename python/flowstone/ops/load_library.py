"""tf.load_op_library and tf.load_library: custom ops and kernels from shared libraries.

A library built against Flowstone's headers (`tf.sysconfig.get_compile_flags()` and
`get_link_flags()`) registers its ops with FS_REGISTER_OP as it loads; the C++ loader
(flowstone/op_library.h) turns its mistakes into errors instead of aborting. The module returned
has one Python function per new op, named as TensorFlow names generated wrappers (`ZeroOut` ->
`zero_out`), taking the op's inputs positionally and its attrs as keywords.
"""

import glob
import inspect
import os
import re
import types

from flowstone import _C
from flowstone import errors as _errors
from flowstone.ops import raw_ops as _raw_ops
from flowstone.util.tf_export import tf_export

_loaded = {}  # real path -> module


def _snake_case(op_type):
    """TensorFlow's wrapper name for an op: `ZeroOut` -> `zero_out`, `Conv2D` -> `conv2d`,
    `BatchMatMulV2` -> `batch_mat_mul_v2`."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op_type).lower()


def _wrapper(op_type):
    """A function taking the op's inputs positionally, then its attrs, as generated wrappers do."""
    raw_op = getattr(_raw_ops, op_type)
    params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
              for p in inspect.signature(raw_op).parameters.values()]
    signature = inspect.Signature(params)

    def op_wrapper(*args, **kwargs):
        return raw_op(**signature.bind(*args, **kwargs).arguments)

    op_wrapper.__name__ = op_wrapper.__qualname__ = _snake_case(op_type)
    op_wrapper.__signature__ = signature
    op_wrapper.__doc__ = f"Adds (or runs eagerly) the custom op {op_type}."
    return op_wrapper


def _load(path):
    try:
        return _C.load_op_library(path)
    except _C.StatusError as e:
        raise _errors.from_status_error(e) from None


@tf_export("load_op_library")
def load_op_library(library_filename):
    """Loads a custom op library and returns a module with a function per op it registered.
    Loading the same file again returns the same module."""
    path = os.path.realpath(library_filename)
    module = _loaded.get(path)
    if module is not None:
        return module
    if not os.path.exists(path):
        raise _errors.NotFoundError(
            None, None, f"{library_filename}: cannot open shared object file: No such file or "
            "directory")
    op_names = _load(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = types.ModuleType(name, f"The ops of the custom op library {path}.")
    for op_type in op_names:
        setattr(module, _snake_case(op_type), _wrapper(op_type))
    module.LIB_HANDLE = path
    _loaded[path] = module
    return module


@tf_export("load_library", "load_file_system_library")
def load_library(library_location):
    """Loads a library of kernels (and ops), or every `.so` file in a directory; returns None.
    The ops are reachable through tf.raw_ops."""
    if os.path.isdir(library_location):
        paths = sorted(glob.glob(os.path.join(library_location, "*.so")))
    elif os.path.exists(library_location):
        paths = [library_location]
    else:
        raise OSError(f"The file or folder to load kernel libraries from does not exist: "
                      f"{library_location}")
    for path in paths:
        load_op_library(path)
