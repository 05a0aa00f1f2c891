"""Flowstone: a small dataflow runtime that speaks TensorFlow's API.

    import flowstone as tf
"""

__version__ = "0.1.0"
VERSION = __version__
GIT_VERSION = "v" + __version__
COMPILER_VERSION = "gcc"

import importlib as _importlib
import types as _types

# Before anything loads the compiled extension: a CPU without the build's instruction sets gets an
# ImportError that says so, not a crash on an illegal instruction.
from flowstone import _cpu_check

_cpu_check.check_this_build()

from flowstone import dtypes
from flowstone import errors
from flowstone.dtypes import *  # noqa: F401,F403 - every dtype name (tf.float32, tf.qint8, ...)
from flowstone.framework.ops import (Graph, GraphKeys, Operation, Tensor, add_to_collection,
                                     add_to_collections, colocate_with, control_dependencies,
                                     convert_to_tensor, device, get_collection, get_collection_ref,
                                     get_default_graph, is_tensor, name_scope,
                                     reset_default_graph, set_random_seed)
from flowstone.framework.tensor_shape import Dimension, TensorShape
from flowstone.framework import device_spec as _device_spec  # tf.DeviceSpec, by tf_export
from flowstone.framework import indexed_slices as _indexed_slices  # tf.IndexedSlices, by tf_export
from flowstone.framework import sparse_tensor as _sparse_tensor  # tf.SparseTensor, by tf_export
from flowstone.client.session import InteractiveSession, Session, get_default_session
from flowstone.protos import (ConfigProto, GPUOptions, GraphOptions, OptimizerOptions,
                              RunMetadata, RunOptions)
from flowstone.ops.basic_ops import (constant, group, identity, no_op, placeholder,
                                     placeholder_with_default, tuple)  # noqa: A004
from flowstone.ops.variables import *  # noqa: F401,F403
from flowstone.ops import init_ops as _init_ops
from flowstone import tf_config as config
from flowstone import tf_test as test
from flowstone import sysconfig
from flowstone import train
from flowstone import saved_model
from flowstone import summary
from flowstone import layers, losses, nn
from flowstone import math  # noqa: A004 - TensorFlow's name
from flowstone import profiler

# Op families (flowstone/ops) and the process utilities (flowstone/platform: tf.logging,
# tf.flags, tf.app, tf.gfile): every module in these packages is imported, so a new one needs no
# edit here. The older op modules in _TOP_LEVEL_ALL list their top-level names in __all__; every
# other module says where each of its names goes with flowstone.util.tf_export, applied by
# _tf_export.populate at the end of this file.
import pkgutil as _pkgutil  # noqa: E402

from flowstone import ops as _ops_package  # noqa: E402
from flowstone import platform as _platform_package  # noqa: E402
from flowstone.util import tf_export as _tf_export  # noqa: E402

_TOP_LEVEL_ALL = {"math_ops", "array_ops", "reduction_ops", "matmul_ops", "nn_ops", "random_ops",
                  "gradients", "conv_ops"}
for _package in (_ops_package, _platform_package):
    for _info in sorted(_pkgutil.iter_modules(_package.__path__), key=lambda m: m.name):
        _module = _importlib.import_module(f"{_package.__name__}.{_info.name}")
        if _package is _ops_package and _info.name in _TOP_LEVEL_ALL:
            for _symbol in _module.__all__:
                globals()[_symbol] = getattr(_module, _symbol)

# tf.initializers: a module placed by the export table.
for _symbol, _value in dict(
    zeros=_init_ops.Zeros, ones=_init_ops.Ones, constant=_init_ops.Constant,
    random_normal=_init_ops.RandomNormal, random_uniform=_init_ops.RandomUniform,
    truncated_normal=_init_ops.TruncatedNormal, variance_scaling=_init_ops.VarianceScaling,
    glorot_uniform=_init_ops.GlorotUniform, glorot_normal=_init_ops.GlorotNormal,
    he_normal=_init_ops.he_normal, he_uniform=_init_ops.he_uniform,
    lecun_normal=_init_ops.lecun_normal, lecun_uniform=_init_ops.lecun_uniform,
    global_variables=global_variables_initializer,  # noqa: F405
    local_variables=local_variables_initializer,  # noqa: F405
    variables=variables_initializer,  # noqa: F405
).items():
    _tf_export.export_value(f"initializers.{_symbol}", _value)
for _symbol in _init_ops.__all__:
    globals()[_symbol] = getattr(_init_ops, _symbol)


# tf.compat.v1 is this same namespace: TF1 programs run unchanged.
import sys as _sys  # noqa: E402

compat = _types.ModuleType("flowstone.compat")
compat.v1 = _sys.modules[__name__]
compat.v2 = _sys.modules[__name__]
_sys.modules["flowstone.compat"] = compat
_sys.modules["flowstone.compat.v1"] = compat.v1


# `import tensorflow` resolving to Flowstone in this process (python -m flowstone run).
from flowstone.tensorflow_import import install as install_as_tensorflow  # noqa: E402

# tf.contrib's modules sit on the op modules above; tf.contrib.eager is filled by tf_export.
from flowstone import contrib  # noqa: E402

_tf_export.populate(_sys.modules[__name__])


# Packages built on the whole namespace, loaded on first use so that `import flowstone` stays
# as fast without them.
_LAZY_PACKAGES = ("keras", "estimator", "feature_column", "distributions", "distribute",
                  "autograph")


def __getattr__(name):
    """tf.keras, tf.estimator, tf.feature_column, tf.distributions, tf.distribute and tf.autograph
    load on first use."""
    if name in _LAZY_PACKAGES:
        return _importlib.import_module(f"flowstone.{name}")
    raise AttributeError(f"module 'flowstone' has no attribute '{name}'")
