"""tf.distribute with one replica: a TF2 program written for MirroredStrategy trains as it would
on one device, and strategies over several devices or workers fail with UnimplementedError
naming flowstone.horovod."""

import json

import numpy as np
import pytest

import flowstone as tf
from peers import requires_tensorflow, run_tensorflow


def test_mirrored_strategy_custom_training_loop_equals_the_plain_loop():
    rng = np.random.RandomState(0)
    x = rng.randn(64, 5).astype(np.float32)
    y = (x @ rng.randn(5, 1)).astype(np.float32)
    w0 = rng.randn(5, 1).astype(np.float32)

    def train(strategy):
        global_batch = 16
        if strategy is None:
            w = tf.Variable(w0)
            dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
        else:
            with strategy.scope():
                w = tf.Variable(w0)
            dataset = strategy.experimental_distribute_dataset(
                tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch))
        opt = tf.train.GradientDescentOptimizer(0.1)

        def step(features, labels):
            with tf.GradientTape() as tape:
                per_example = tf.reduce_sum((tf.matmul(features, w) - labels) ** 2, axis=1)
                loss = tf.reduce_sum(per_example) / global_batch
            opt.apply_gradients([(tape.gradient(loss, w), w)])
            return loss

        losses = []
        for features, labels in dataset:
            if strategy is None:
                losses.append(float(step(features, labels).numpy()))
            else:
                per_replica = strategy.run(step, args=(features, labels))
                losses.append(float(strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica,
                                                    axis=None).numpy()))
        return losses, w.numpy()

    plain_losses, plain_w = train(None)
    for strategy in (tf.distribute.MirroredStrategy(),
                     tf.distribute.OneDeviceStrategy("/cpu:0"),
                     tf.distribute.get_strategy()):
        losses, w = train(strategy)
        np.testing.assert_array_equal(losses, plain_losses)
        np.testing.assert_array_equal(w, plain_w)


def test_contexts_and_reductions():
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 1
    assert not tf.distribute.has_strategy()
    assert tf.distribute.get_replica_context() is not None  # the default replica context
    assert not tf.distribute.in_cross_replica_context()
    with strategy.scope():
        assert tf.distribute.get_strategy() is strategy
        assert tf.distribute.has_strategy()
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None

        def replica_fn(value):
            context = tf.distribute.get_replica_context()
            assert context.num_replicas_in_sync == 1
            assert int(context.replica_id_in_sync_group.numpy()) == 0
            assert not tf.distribute.in_cross_replica_context()
            return context.all_reduce("sum", value) * 2.0

        doubled = strategy.run(replica_fn, args=(tf.constant([[1.0, 2.0], [3.0, 4.0]]),))
    assert tf.distribute.get_strategy() is not strategy
    np.testing.assert_array_equal(doubled.numpy(), [[2.0, 4.0], [6.0, 8.0]])
    np.testing.assert_array_equal(
        strategy.reduce(tf.distribute.ReduceOp.SUM, doubled, axis=0).numpy(), [8.0, 12.0])
    np.testing.assert_array_equal(
        strategy.reduce(tf.distribute.ReduceOp.MEAN, doubled, axis=1).numpy(), [3.0, 7.0])
    assert strategy.experimental_local_results(doubled) == (doubled,)
    context = tf.distribute.InputContext()
    assert context.get_per_replica_batch_size(64) == 64
    dataset = strategy.distribute_datasets_from_function(
        lambda ctx: tf.data.Dataset.range(ctx.get_per_replica_batch_size(3)))
    assert [int(v) for v in dataset] == [0, 1, 2]
    with pytest.raises(ValueError, match="ReduceOp"):
        strategy.reduce("MAX", doubled, axis=None)


def test_strategies_over_several_devices_or_workers_name_horovod():
    with pytest.raises(tf.errors.UnimplementedError, match="flowstone.horovod"):
        tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1"])
    for make in (tf.distribute.MultiWorkerMirroredStrategy,
                 tf.distribute.experimental.ParameterServerStrategy,
                 tf.distribute.experimental.CentralStorageStrategy,
                 tf.distribute.TPUStrategy):
        with pytest.raises(tf.errors.UnimplementedError, match="hvd.DistributedOptimizer"):
            make()


def test_nested_scopes_of_two_strategies_raise_as_in_tensorflow():
    first, second = tf.distribute.MirroredStrategy(), tf.distribute.OneDeviceStrategy("/cpu:0")
    with first.scope():
        with first.scope():
            assert tf.distribute.get_strategy() is first
        with pytest.raises(ValueError, match="Mixing different tf.distribute.Strategy"):
            with second.scope():
                pass


# Run by Flowstone here and by TensorFlow in its venv: a TF2 custom training loop under
# MirroredStrategy on one device, and the strategy's contexts and reductions.
STRATEGY_PROGRAM = """
import json
import numpy as np


def run(tf):
    rng = np.random.RandomState(0)
    x = rng.randn(32, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    strategy = tf.distribute.MirroredStrategy(devices=["/cpu:0"])
    out = {"replicas": strategy.num_replicas_in_sync,
           "cross_outside": tf.distribute.in_cross_replica_context(),
           "has_outside": tf.distribute.has_strategy()}
    with strategy.scope():
        w = tf.Variable(np.zeros([3, 1], np.float32))
        out["cross_in_scope"] = tf.distribute.in_cross_replica_context()
        out["replica_ctx_in_scope"] = tf.distribute.get_replica_context() is None
    opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    dataset = strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensor_slices((x, y)).batch(8))

    def step(features, labels):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((tf.matmul(features, w) - labels) ** 2) / 8.0
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        context = tf.distribute.get_replica_context()
        return loss, context.num_replicas_in_sync

    losses = []
    for features, labels in dataset:
        loss, replicas = strategy.run(step, args=(features, labels))
        losses.append(float(strategy.reduce(tf.distribute.ReduceOp.SUM, loss,
                                            axis=None).numpy()))
    out["losses"] = losses
    out["w"] = w.numpy().ravel().tolist()
    value = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    out["sum_axis0"] = strategy.reduce("SUM", value, axis=0).numpy().tolist()
    out["mean_axis1"] = strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=1).numpy().tolist()
    out["local"] = len(strategy.experimental_local_results(value))
    out["per_replica_batch"] = tf.distribute.InputContext().get_per_replica_batch_size(64)
    return out
"""


@requires_tensorflow
def test_one_replica_strategy_matches_tensorflow():
    namespace = {}
    exec(STRATEGY_PROGRAM, namespace)  # noqa: S102 - the test's own program
    ours = namespace["run"](tf)
    theirs = json.loads(run_tensorflow(
        STRATEGY_PROGRAM + "\nimport tensorflow as tf\nprint(json.dumps(run(tf)))"
    ).strip().splitlines()[-1])
    assert set(ours) == set(theirs)
    for key in theirs:
        if key in ("losses", "w"):
            np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6,
                                       err_msg=key)
        else:
            assert ours[key] == theirs[key], key
