"""tf.sysconfig: how this Flowstone was built, and where its headers and library are."""

import os

from flowstone import _C

__all__ = ["get_build_info", "get_compile_flags", "get_include", "get_lib", "get_link_flags"]

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


def get_compile_flags():
    """The compiler flags for a custom op library (see tf.load_op_library): the headers, and the
    C++ standard and ABI the core was built with."""
    info = _C.build_info()
    return [f"-I{get_include()}", f"-D_GLIBCXX_USE_CXX11_ABI={info['cxx11_abi']}",
            f"-std=c++{str(info['cxx_version'])[2:4]}"]


def get_link_flags():
    """The linker flags for a custom op library: libflowstone.so, found at run time as the one
    the Python package has already loaded (its soname)."""
    return [f"-L{get_lib()}", "-l:libflowstone.so"]
