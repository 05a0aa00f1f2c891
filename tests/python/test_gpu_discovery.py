"""GPU discovery on this machine as it is: when the CUDA driver is missing, discovery must say so
by name and the program must carry on with the CPU. Each case is its own program, since
discovery runs once per process."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from build_tree import find_built

import flowstone as tf

DRIVER_PRESENT = any(lib["name"] == "CUDA driver" and lib["loaded"]
                     for lib in tf._C.gpu_discovery()["libraries"])
needs_no_driver = pytest.mark.skipif(DRIVER_PRESENT, reason="this machine has a CUDA driver")


def run(code, env=None):
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("CUDA_VISIBLE_DEVICES", "FLOWSTONE_GPU_PLUGIN",
                             "TF_CPP_MIN_LOG_LEVEL")}
    full_env.update(env or {})
    program = "import flowstone as tf\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=full_env)
    assert proc.returncode == 0, proc.stderr
    return proc


@needs_no_driver
def test_missing_driver_is_logged_by_name_and_work_falls_back_to_the_cpu():
    proc = run("""
        print(tf.config.list_physical_devices("GPU"))
        with tf.Session() as sess:
            print(sess.run(tf.constant(2.0) * 3.0))
    """)
    assert proc.stdout.splitlines() == ["[]", "6.0"]
    err = proc.stderr
    assert "Could not load dynamic library 'libcuda.so.1' (CUDA driver); dlerror: " \
           "libcuda.so.1: cannot open shared object file" in err
    assert "LD_LIBRARY_PATH: " in err and "also searched: " in err
    assert "Cannot use a GPU: no CUDA driver: libcuda.so.1 not found. Skipping GPU devices: " \
           "every op runs on the CPU. To fix: install the NVIDIA driver" in err
    # Said once per process, not once per session or per library.
    assert err.count("Could not load dynamic library") == 1
    assert err.count("Cannot use a GPU") == 1


@needs_no_driver
def test_gpu_pin_error_names_the_missing_driver():
    proc = run("""
        with tf.device("/gpu:0"):
            a = tf.constant([1.0, 2.0], name="a")
        try:
            tf.Session().run(a)
        except tf.errors.InvalidArgumentError as e:
            print(e.message)
    """)
    assert "Cannot assign a device for operation a: {{node a}} was explicitly assigned to " \
           "/device:GPU:0 but available devices are [ " \
           "/job:localhost/replica:0/task:0/device:CPU:0 ]" in proc.stdout
    assert "no GPU is available: no CUDA driver: libcuda.so.1 not found" in proc.stdout
    assert "allow_soft_placement=True" in proc.stdout


def test_discovery_is_lazy_so_cuda_visible_devices_set_in_the_program_counts():
    proc = run("""
        import os
        os.environ["CUDA_VISIBLE_DEVICES"] = "-1"   # after import, before the first session
        print(tf.config.list_physical_devices("GPU"))
        print(tf._C.gpu_discovery()["reason"])
    """)
    assert proc.stdout.splitlines() == ["[]", 'CUDA_VISIBLE_DEVICES="-1" hides every GPU']
    assert "Could not load dynamic library" not in proc.stderr


def test_tf_cpp_min_log_level_silences_discovery():
    proc = run("""
        print(tf.config.list_physical_devices("GPU") == [] or "gpu")
    """, env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    assert "flowstone/gpu]" not in proc.stderr


def test_discovery_report_shape():
    report = tf._C.gpu_discovery()
    json.dumps(report)
    assert [lib["name"] for lib in report["libraries"]][:2] in (
        ["CUDA driver", "CUDA runtime"], [])
    for lib in report["libraries"]:
        assert lib["file"].startswith("lib") and ".so." in lib["file"]
        assert lib["loaded"] == (lib["error"] == "")
    if not report["devices"]:
        assert report["reason"]


def _stand_in_driver_dir():
    found = find_built(os.path.join("tests", "fake_gpu", "fake_driver", "libcuda.so.1"))
    return os.path.dirname(found) if found else None


@needs_no_driver
@pytest.mark.skipif(not tf.test.is_built_with_cuda(), reason="this build has no CUDA backend")
@pytest.mark.skipif(_stand_in_driver_dir() is None, reason="the stand-in libcuda.so.1 is not "
                    "built (configure with -DFLOWSTONE_BUILD_TESTS=ON, as `make test` does)")
def test_the_real_cuda_backend_loads_and_reports_no_gpu_behind_a_driver_without_gpus():
    # A libcuda.so.1 that answers like a driver with no GPUs: discovery loads the real CUDA
    # runtime and libflowstone_cuda.so, whose static registrars add every GPU kernel (a kernel
    # registered for an op that does not exist would abort here), and the program goes on with
    # the CPU.
    proc = run("""
        import json
        report = tf._C.gpu_discovery()
        loaded = {lib["name"]: lib["loaded"] for lib in report["libraries"]}
        print(json.dumps({"backend": report["backend"], "reason": report["reason"],
                          "platform": report["platform"], "loaded": loaded}))
        gpu_kernels = [n for n in tf._C.op_names() if "GPU" in tf._C.op_def(n)["kernels"]]
        print(len(gpu_kernels), "MatMul" in gpu_kernels, "Conv2D" in gpu_kernels)
        with tf.Session() as sess:
            print(sess.run(tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))).tolist())
    """, env={"LD_LIBRARY_PATH": _stand_in_driver_dir()})
    lines = proc.stdout.splitlines()
    report = json.loads(lines[0])
    assert report["backend"]["loaded"], report
    assert report["platform"] == "CUDA"
    assert report["reason"].startswith("the CUDA driver")
    assert "reports no usable GPU" in report["reason"]
    count, has_matmul, has_conv = lines[1].split()
    assert int(count) > 50
    # Kernels that need a missing vendor library are not registered: those ops stay on the CPU.
    assert has_matmul == str(report["loaded"]["cuBLAS"])
    assert has_conv == str(report["loaded"]["cuDNN"])
    if not report["loaded"]["cuDNN"]:
        assert "cuDNN is not usable, so these ops run on the CPU: Conv2D, Conv2DBackpropInput, " \
               "Conv2DBackpropFilter." in proc.stderr
    assert lines[2] == "[[2.0, 2.0], [2.0, 2.0]]"
    assert "Cannot use a GPU: the CUDA driver" in proc.stderr


@needs_no_driver
@pytest.mark.skipif(not tf.test.is_built_with_cuda(), reason="this build has no CUDA backend")
@pytest.mark.skipif(_stand_in_driver_dir() is None, reason="the stand-in libcuda.so.1 is not "
                    "built (configure with -DFLOWSTONE_BUILD_TESTS=ON, as `make test` does)")
def test_a_driver_older_than_the_build_is_named_with_the_fix():
    proc = run("""
        print(tf._C.gpu_discovery()["reason"])
        print(tf.config.list_physical_devices("GPU"))
    """, env={"LD_LIBRARY_PATH": _stand_in_driver_dir(),
              "FLOWSTONE_FAKE_DRIVER_VERSION": "12020"})
    built = tf.sysconfig.get_build_info()["cuda_version"]
    assert proc.stdout.splitlines() == [
        f"the NVIDIA driver supports CUDA up to 12.2 but this build needs CUDA {built}", "[]"]
    assert f"To fix: update the NVIDIA driver to one for CUDA {built} or newer" in proc.stderr
