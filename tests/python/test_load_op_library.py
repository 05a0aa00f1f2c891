"""tf.load_op_library: custom ops compiled against Flowstone's headers with
tf.sysconfig.get_compile_flags() / get_link_flags(), loaded at run time, run in graph and eager
mode, differentiated, and a library's mistakes reported as errors rather than aborts."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import flowstone as tf

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPILER = shutil.which(os.environ.get("CXX", "g++"))
needs_compiler = pytest.mark.skipif(COMPILER is None, reason="no C++ compiler (g++) to build a "
                                    "custom op library with")


def build(source, out_dir, name):
    """Compiles `source` into `out_dir/name` the way the README's custom-op recipe does."""
    out = os.path.join(out_dir, name)
    subprocess.run([COMPILER, "-shared", "-fPIC", "-O1", source, "-o", out,
                    *tf.sysconfig.get_compile_flags(), *tf.sysconfig.get_link_flags()],
                   check=True, capture_output=True, text=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    # The good libraries in one directory (for tf.load_library), the faulty one apart.
    good = str(tmp_path_factory.mktemp("kernels"))
    faulty = str(tmp_path_factory.mktemp("faulty"))
    return {
        "zero_out": build(os.path.join(ROOT, "examples", "custom_op", "zero_out.cc"), good,
                          "zero_out.so"),
        "cube": build(os.path.join(HERE, "data", "custom_ops", "cube_op.cc"), good, "cube.so"),
        "no_shape": build(os.path.join(HERE, "data", "custom_ops", "no_shape_op.cc"), faulty,
                          "no_shape.so"),
        "kernels": good,
    }


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_flags_name_the_headers_the_abi_and_the_library():
    compile_flags = tf.sysconfig.get_compile_flags()
    assert compile_flags[0] == "-I" + tf.sysconfig.get_include()
    assert os.path.isfile(os.path.join(tf.sysconfig.get_include(), "flowstone", "op_library.h"))
    assert f"-D_GLIBCXX_USE_CXX11_ABI={tf.sysconfig.CXX11_ABI_FLAG}" in compile_flags
    assert "-std=c++20" in compile_flags
    link_flags = tf.sysconfig.get_link_flags()
    assert link_flags[0] == "-L" + tf.sysconfig.get_lib()
    assert os.path.isfile(os.path.join(tf.sysconfig.get_lib(), "libflowstone.so"))


@needs_compiler
def test_tensorflows_zero_out_example_runs(libraries):
    module = tf.load_op_library(libraries["zero_out"])
    assert tf.load_op_library(libraries["zero_out"]) is module
    zeroed = module.zero_out([[1, 2], [3, 4]], name="zeroed")
    assert zeroed.op.type == "ZeroOut" and zeroed.name == "zeroed:0"
    assert zeroed.shape.as_list() == [2, 2]  # the library's shape function ran
    fed = tf.compat.v1.placeholder(tf.int32, [None])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(zeroed), [[1, 0], [0, 0]])
        np.testing.assert_array_equal(sess.run(module.zero_out(fed), {fed: [7, 8, 9]}), [7, 0, 0])
        np.testing.assert_array_equal(sess.run(tf.raw_ops.ZeroOut(to_zero=[5, 5])), [5, 0])
    with pytest.raises(TypeError):
        module.zero_out([1.5, 2.5])  # the op takes int32 only


@needs_compiler
def test_a_custom_op_has_kernels_per_dtype_and_a_gradient(libraries):
    cube = tf.load_op_library(libraries["cube"]).cube
    x = tf.constant([1.0, -2.0, 0.5], dtype=tf.float64)
    y = cube(x)
    (grad,) = tf.gradients(tf.reduce_sum(y), [x])
    with tf.Session() as sess:
        value, dx = sess.run([y, grad])
    np.testing.assert_allclose(value, [1.0, -8.0, 0.125])
    np.testing.assert_allclose(dx, [3.0, 12.0, 0.75])
    # Against a finite difference, in float32 too.
    x32 = tf.compat.v1.placeholder(tf.float32, [3])
    point = np.array([0.3, -1.1, 2.0], np.float32)
    with tf.Session() as sess:
        (analytic,) = sess.run(tf.gradients(tf.reduce_sum(cube(x32)), [x32]), {x32: point})
        eps = 1e-3
        numeric = [(sess.run(tf.reduce_sum(cube(x32)), {x32: point + eps * e})
                    - sess.run(tf.reduce_sum(cube(x32)), {x32: point - eps * e})) / (2 * eps)
                   for e in np.eye(3, dtype=np.float32)]
    np.testing.assert_allclose(analytic, numeric, rtol=1e-2)


@needs_compiler
def test_a_custom_op_runs_eagerly(libraries):
    script = textwrap.dedent(f"""
        import flowstone as tf
        tf.enable_eager_execution()
        cube = tf.load_op_library({libraries["cube"]!r}).cube
        x = tf.constant([2.0, 3.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = cube(x)
        print(y.numpy().tolist(), tape.gradient(y, x).numpy().tolist())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[8.0, 27.0] [12.0, 27.0]"


@needs_compiler
def test_library_mistakes_are_errors_and_the_process_goes_on(libraries, tmp_path):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="declares ops without a shape function: 'CustomOpWithoutShapeFn'"):
        tf.load_op_library(libraries["no_shape"])
    assert not hasattr(tf.raw_ops, "CustomOpWithoutShapeFn")
    tf.load_op_library(libraries["zero_out"])
    copy = str(tmp_path / "zero_out_again.so")
    shutil.copy(libraries["zero_out"], copy)
    with pytest.raises(tf.errors.AlreadyExistsError,
                       match="registers ops whose names are already registered: 'ZeroOut'"):
        tf.load_op_library(copy)
    with pytest.raises(tf.errors.NotFoundError, match="cannot open shared object file"):
        tf.load_op_library(str(tmp_path / "missing.so"))
    not_a_library = tmp_path / "garbage.so"
    not_a_library.write_bytes(b"not an ELF file")
    with pytest.raises(tf.errors.NotFoundError, match="garbage.so"):
        tf.load_op_library(str(not_a_library))
    with tf.Session() as sess:  # the registry and sessions still work
        assert sess.run(tf.add(1, 2)) == 3


@needs_compiler
def test_load_library_loads_a_directory_of_kernels(libraries, tmp_path):
    assert tf.load_library(libraries["kernels"]) is None
    with tf.Session() as sess:
        assert sess.run(tf.raw_ops.Cube(x=2.0)) == 8.0
    with pytest.raises(OSError, match="does not exist"):
        tf.load_library(str(tmp_path / "nowhere"))


def test_wrapper_names_follow_tensorflows_convention():
    from flowstone.ops.load_library import _snake_case
    assert [_snake_case(n) for n in ("ZeroOut", "Conv2D", "BatchMatMulV2", "MatMul", "HTTPGet")] \
        == ["zero_out", "conv2d", "batch_mat_mul_v2", "mat_mul", "http_get"]
