"""tf.sysconfig: the build's CUDA/cuDNN versions and compiler, and where headers and library are."""

import os

import flowstone as tf
from flowstone import _C


def test_build_info_has_tensorflows_keys_and_this_builds_values():
    info = tf.sysconfig.get_build_info()
    assert set(info) == {"is_cuda_build", "is_rocm_build", "cuda_version", "cudnn_version",
                         "cpu_compiler", "baseline_isa", "flowstone_version"}
    assert info["is_rocm_build"] is False
    assert info["flowstone_version"] == tf.__version__
    built = _C.build_info()
    assert info["is_cuda_build"] == built["built_with_cuda"]
    if info["is_cuda_build"]:
        assert info["cuda_version"] == built["cuda_version"]
        assert info["cuda_version"].split(".")[0].isdigit()
        assert info["cudnn_version"] == built["cudnn_major"]
    else:
        assert info["cuda_version"] is None and info["cudnn_version"] is None
    assert info["cpu_compiler"].startswith(("gcc ", "clang "))


def test_include_and_lib_directories_hold_the_headers_and_the_core():
    assert os.path.isfile(os.path.join(tf.sysconfig.get_include(), "flowstone", "graph.h"))
    assert any(name.startswith("libflowstone.so") for name in os.listdir(tf.sysconfig.get_lib()))
