"""`import tensorflow` resolving to Flowstone: `python -m flowstone run` and
flowstone.install_as_tensorflow(), the public and internal module paths it answers for, its
errors, and tf_slim (an unmodified third-party TF1 library) building and training a network.
Each case runs in a subprocess, so the import hook never reaches the other tests."""

import json
import subprocess
import sys
import textwrap

import pytest

from layers_net_oracle import assert_same_run, run_net
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON
NOTICE = "flowstone: `import tensorflow` resolves to Flowstone"


def _run(tmp_path, code, *args, via_run=True):
    """Runs `code` as a script (through `python -m flowstone run` or plain python) and returns
    the completed process."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    command = ([sys.executable, "-m", "flowstone", "run", str(script)] if via_run
               else [sys.executable, str(script)])
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)


def _ok(done):
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_run_gives_the_script_tensorflow_its_argv_and_one_notice(tmp_path):
    done = _run(tmp_path, """
        import sys
        import tensorflow as tf
        import tensorflow.compat.v1 as v1
        import flowstone
        assert tf is flowstone and v1 is flowstone, (tf, v1)
        print(sys.argv[1:], __name__, tf.__version__ == flowstone.__version__)
        print(tf.Session().run(tf.constant(2.0) * 3))
    """, "--steps", "3")
    assert _ok(done).splitlines() == ["['--steps', '3'] __main__ True", "6.0"]
    assert done.stderr.count(NOTICE) == 1, done.stderr


def test_run_module_and_errors(tmp_path):
    (tmp_path / "trainer.py").write_text("import sys, tensorflow\nprint(sys.argv[1:])\n")
    done = subprocess.run([sys.executable, "-m", "flowstone", "run", "-m", "trainer", "x"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert _ok(done).strip() == "['x']"
    done = subprocess.run([sys.executable, "-m", "flowstone", "run", "missing.py"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 2 and "can't open file 'missing.py'" in done.stderr


def test_public_internal_and_contrib_paths(tmp_path):
    _ok(_run(tmp_path, """
        import flowstone
        flowstone.install_as_tensorflow()
        flowstone.install_as_tensorflow()  # a second call changes nothing
        import tensorflow.compat.v1.layers
        import tensorflow.nn
        from tensorflow.contrib import layers, framework
        from tensorflow.contrib.layers import fully_connected
        from tensorflow.python.framework import ops, dtypes
        from tensorflow.python.ops import array_ops, math_ops, variable_scope, init_ops
        from tensorflow.python.layers import convolutional
        from tensorflow.python.training import training_util
        from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
        import tensorflow as tf
        assert tensorflow.compat.v1.layers is flowstone.layers
        assert tensorflow.nn is flowstone.nn
        assert layers is flowstone.contrib.layers and fully_connected is layers.fully_connected
        assert framework.arg_scope is flowstone.contrib.framework.arg_scope
        assert ops.GraphKeys is tf.GraphKeys and dtypes.float32 is tf.float32
        assert array_ops.reshape is tf.reshape and math_ops.reduce_sum is tf.reduce_sum
        assert variable_scope.get_variable is tf.get_variable
        assert convolutional.Convolution2D is tf.layers.Conv2D
        assert training_util.get_or_create_global_step is tf.train.get_or_create_global_step
        assert config_pb2.ConfigProto is tf.ConfigProto
        assert rewriter_config_pb2.RewriterConfig.OFF == 2
        assert tf.__spec__.name == "flowstone"
    """, via_run=False))


def test_missing_paths_say_what_flowstone_lacks(tmp_path):
    out = _ok(_run(tmp_path, """
        import flowstone
        flowstone.install_as_tensorflow()
        for statement in ("from tensorflow.contrib import slim",
                          "import tensorflow.contrib.learn",
                          "from tensorflow.python.distribute import mirrored_strategy",
                          "import tensorflow.no_such_thing"):
            try:
                exec(statement)
            except ImportError as e:
                print(type(e).__name__, "|", e)
        from tensorflow.python.ops import array_ops
        try:
            array_ops.no_such_op
        except AttributeError as e:
            print("AttributeError |", e)
    """, via_run=False)).splitlines()
    assert "use the tf_slim package" in out[0]
    assert "tf.contrib.learn is not provided by Flowstone; use tf.estimator" in out[1]
    assert ("tensorflow.python.distribute is TensorFlow-internal and Flowstone does not "
            "provide it") in out[2]
    assert "No module named 'tensorflow.no_such_thing'" in out[3]
    assert ("module 'tensorflow.python.ops.array_ops' has no attribute 'no_such_op'" in out[4]
            and "flowstone.ops.array_ops" in out[4])


def test_install_refuses_when_tensorflow_is_already_imported(tmp_path):
    out = _ok(_run(tmp_path, """
        import sys, types
        sys.modules["tensorflow"] = types.ModuleType("tensorflow")
        import flowstone
        try:
            flowstone.install_as_tensorflow()
        except RuntimeError as e:
            print(e)
    """, via_run=False))
    assert "TensorFlow is already imported in this process" in out


def test_importing_flowstone_installs_nothing(tmp_path):
    out = _ok(_run(tmp_path, """
        import flowstone
        try:
            import tensorflow
            print("imported", tensorflow.__file__)
        except ImportError:
            print("no tensorflow")
    """, via_run=False))
    # Flowstone's own venv has no TensorFlow, and importing flowstone must not add one.
    assert out.strip() == "no tensorflow"


# --- tf_slim, unmodified, on Flowstone ----------------------------------------------------------

def _have_tf_slim():
    import importlib.util
    return importlib.util.find_spec("tf_slim") is not None


needs_tf_slim = pytest.mark.skipif(not _have_tf_slim(),
                                   reason="tf-slim is not installed (requirements-dev.txt)")


@needs_tf_slim
def test_tf_slim_builds_and_trains(tmp_path):
    out = _ok(_run(tmp_path, """
        import json
        import numpy as np
        import tensorflow.compat.v1 as tf
        import tf_slim as slim

        images = tf.placeholder(tf.float32, [8, 6, 6, 1])
        labels = tf.placeholder(tf.int64, [8])
        with slim.arg_scope([slim.conv2d, slim.fully_connected],
                            weights_regularizer=slim.l2_regularizer(1e-3)):
            net = slim.conv2d(images, 4, [3, 3], normalizer_fn=slim.batch_norm)
            net = slim.max_pool2d(net, [2, 2])
            net = slim.flatten(net)
            net = slim.fully_connected(net, 16)
            net = slim.dropout(net, 0.9)
            logits = slim.fully_connected(net, 2, activation_fn=None, scope="logits")
        slim.losses.softmax_cross_entropy(logits, tf.one_hot(labels, 2))
        total = tf.losses.get_total_loss()
        train_op = slim.learning.create_train_op(total, tf.train.AdamOptimizer(0.05))
        rng = np.random.RandomState(0)
        x = rng.normal(size=(8, 6, 6, 1)).astype(np.float32)
        y = (x.mean(axis=(1, 2, 3)) > 0).astype(np.int64)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [float(sess.run(train_op, {images: x, labels: y})) for _ in range(40)]
        print(json.dumps({"losses": losses,
                          "variables": [v.op.name for v in slim.get_model_variables()]}))
    """)).splitlines()[-1]
    result = json.loads(out)
    assert result["variables"] == [
        "Conv/weights", "Conv/BatchNorm/beta", "Conv/BatchNorm/moving_mean",
        "Conv/BatchNorm/moving_variance", "fully_connected/weights", "fully_connected/biases",
        "logits/weights", "logits/biases"]
    assert result["losses"][-1] < 0.5 * result["losses"][0]


@needs_tf_slim
@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
def test_tf_slim_on_flowstone_matches_tf_slim_on_tensorflow():
    assert_same_run(run_net(None, "slim"), run_net(PEER_PYTHON, "slim"))
