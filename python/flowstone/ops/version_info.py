"""tf.version and the build constants TensorFlow also puts at the top level and in tf.sysconfig:
the GraphDef versions this build writes and reads, and the C++ ABI an extension must match."""

from flowstone import _C
from flowstone.util.tf_export import export_value

_BUILD = _C.build_info()

_VERSION_CONSTANTS = {
    "VERSION": _BUILD["version"],
    "GIT_VERSION": "v" + _BUILD["version"],
    "COMPILER_VERSION": f"{_BUILD['compiler']} {_BUILD['compiler_version']}",
    "GRAPH_DEF_VERSION": _BUILD["graph_def_version"],
    "GRAPH_DEF_VERSION_MIN_CONSUMER": _BUILD["graph_def_min_consumer"],
    "GRAPH_DEF_VERSION_MIN_PRODUCER": _BUILD["graph_def_min_producer"],
}
for _name, _value in _VERSION_CONSTANTS.items():
    export_value(f"version.{_name}", _value)
for _name in ("GRAPH_DEF_VERSION", "GRAPH_DEF_VERSION_MIN_CONSUMER",
              "GRAPH_DEF_VERSION_MIN_PRODUCER"):
    export_value(_name, _VERSION_CONSTANTS[_name])

_SYSCONFIG_CONSTANTS = {
    "CXX11_ABI_FLAG": _BUILD["cxx11_abi"],
    "CXX_VERSION": _BUILD["cxx_version"],
    # libflowstone is one shared library with its ops inside; the CUDA plugin is separate but
    # no op library has to be linked beside it.
    "MONOLITHIC_BUILD": 0,
}
for _name, _value in _SYSCONFIG_CONSTANTS.items():
    export_value(f"sysconfig.{_name}", _value)
    export_value(_name, _value)
