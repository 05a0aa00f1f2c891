"""tf.sysconfig: how this Flowstone was built, and where its headers and library are."""

import os

from flowstone import _C

__all__ = ["get_build_info", "get_include", "get_lib"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def get_build_info():
    """What this build was compiled with, under TensorFlow's keys.

    `cuda_version` and `cudnn_version` are those the CUDA backend plugin was built against (None
    when it was not built); `flowstone doctor` compares them with the libraries found."""
    info = _C.build_info()
    cuda = info["built_with_cuda"]
    return {
        "is_cuda_build": cuda,
        "is_rocm_build": False,
        "cuda_version": info["cuda_version"] if cuda else None,
        "cudnn_version": info["cudnn_major"] if cuda else None,
        "cpu_compiler": f"{info['compiler']} {info['compiler_version']}",
        "baseline_isa": info["baseline_isa"],
        "flowstone_version": info["version"],
    }


def get_include():
    """The directory holding the C++ headers (`flowstone/graph.h`, ...): the installed package's
    include/, or the source tree's include/ for an in-place build."""
    for candidate in (os.path.join(_PACKAGE_DIR, "include"),
                      os.path.join(_PACKAGE_DIR, os.pardir, os.pardir, "include")):
        if os.path.isfile(os.path.join(candidate, "flowstone", "status.h")):
            return os.path.normpath(candidate)
    return os.path.join(_PACKAGE_DIR, "include")


def get_lib():
    """The directory holding libflowstone.so, to link C++ programs against the core."""
    return _PACKAGE_DIR
