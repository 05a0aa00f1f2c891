"""Small TF1 names: tf.initializers.identity / local_variables, tf.dtypes.as_string and the
tf.test helpers (StubOutForTesting, is_cpu_target_available, test_src_dir_path,
create_local_cluster)."""

import os
import platform

import numpy as np
import pytest

import flowstone as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_identity_initializer_and_local_variables_initializer():
    w = tf.compat.v1.get_variable("w", [3, 4], initializer=tf.initializers.identity(gain=2.0))
    local = tf.Variable(5.0, collections=[tf.GraphKeys.LOCAL_VARIABLES])
    with tf.Session() as sess:
        sess.run([w.initializer, tf.initializers.local_variables()])
        np.testing.assert_array_equal(sess.run(w), 2.0 * np.eye(3, 4))
        assert sess.run(local) == 5.0
    with pytest.raises(ValueError, match="only be used for 2D matrices"):
        tf.initializers.identity()([2, 2, 2])
    assert tf.dtypes.as_string is tf.strings.as_string


def test_stub_out_for_testing_restores_in_reverse_order():
    class Base:
        def greet(self):
            return "base"

        @staticmethod
        def number():
            return 1

    class Child(Base):
        pass

    stubs = tf.test.StubOutForTesting()
    stubs.SmartSet(Child, "greet", lambda self: "stubbed")
    stubs.Set(Base, "number", lambda: 2)
    stubs.SmartSet(os.path, "sep", "|")
    assert Child().greet() == "stubbed" and Base().greet() == "base"
    assert Base.number() == 2 and os.path.sep == "|"
    stubs.CleanUp()
    assert Child().greet() == "base" and "greet" not in vars(Child)
    assert Base.number() == 1 and isinstance(vars(Base)["number"], staticmethod)
    assert os.path.sep == "/"
    with pytest.raises(AttributeError, match="Attribute not found: nope"):
        stubs.SmartSet(Child, "nope", 1)


def test_machine_and_source_helpers():
    machine = platform.machine().lower()
    assert tf.test.is_cpu_target_available("x86") == (machine in ("x86_64", "amd64"))
    assert not tf.test.is_cpu_target_available("powerpc")
    header = tf.test.test_src_dir_path("flowstone/include/flowstone/op_registry.h")
    assert os.path.isfile(header)
    assert header == os.path.join(tf.sysconfig.get_include(), "flowstone", "op_registry.h")
    with pytest.raises(tf.errors.UnimplementedError, match="flowstone.horovod"):
        tf.test.create_local_cluster(1, 1)
