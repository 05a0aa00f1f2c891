"""tf.keras.optimizers.schedules: values per step, configs and (de)serialization against
tf-keras; optimizers taking a schedule compute the rate in the training step from their
`iterations`, and fit() trains as tf-keras does from the same weights."""

import json

import numpy as np
import pytest

import flowstone as tf

import test_keras_vs_tf_keras as vs
import tf_keras_peer

keras = tf.keras
schedules = keras.optimizers.schedules
needs_tf_keras = pytest.mark.skipif(not tf_keras_peer.available(),
                                    reason=tf_keras_peer.SKIP_REASON)

# Each schedule as code that both implementations evaluate unchanged.
SCHEDULES = [
    "ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)",
    "ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True)",
    "PiecewiseConstantDecay([5, 20], [1.0, 0.5, 0.1])",
    "InverseTimeDecay(0.2, decay_steps=4, decay_rate=0.3)",
    "InverseTimeDecay(0.2, decay_steps=4, decay_rate=0.3, staircase=True)",
    "PolynomialDecay(0.1, decay_steps=30, end_learning_rate=0.01, power=2.0)",
    "PolynomialDecay(0.1, decay_steps=30, power=0.5, cycle=True)",
    "CosineDecay(0.1, decay_steps=40, alpha=0.1)",
    "CosineDecay(0.0, decay_steps=40, warmup_target=0.2, warmup_steps=8)",
    "CosineDecayRestarts(0.1, first_decay_steps=7, t_mul=2.0, m_mul=0.8, alpha=0.05)",
    "CosineDecayRestarts(0.1, first_decay_steps=7, t_mul=1.0)",
]
STEPS = [0, 1, 3, 5, 6, 7, 8, 12, 20, 21, 30, 37, 45, 60, 100]


@pytest.fixture(scope="module")
def tf_keras_schedules():
    """tf-keras's values at STEPS and serialized form, per schedule."""
    script = ("import json\nout = []\n"
              f"for code in {SCHEDULES!r}:\n"
              "    s = eval('keras.optimizers.schedules.' + code)\n"
              f"    values = [float(s(tf.constant(step, tf.int64))) for step in {STEPS!r}]\n"
              "    out.append({'values': values,"
              " 'serialized': keras.optimizers.schedules.serialize(s)})\n"
              "print(json.dumps(out))\n")
    return json.loads(tf_keras_peer.run(script, cwd=None).strip().splitlines()[-1])


def values(schedule):
    step = tf.placeholder(tf.int64, [])
    rate = schedule(step)
    with tf.Session() as session:
        return [float(session.run(rate, {step: s})) for s in STEPS]


@needs_tf_keras
@pytest.mark.parametrize("index", range(len(SCHEDULES)), ids=SCHEDULES)
def test_values_and_config_match_tf_keras(index, tf_keras_schedules):
    theirs = tf_keras_schedules[index]
    schedule = eval("schedules." + SCHEDULES[index])  # noqa: S307 - the test's own table
    np.testing.assert_allclose(values(schedule), theirs["values"], rtol=1e-6, atol=1e-9)
    serialized = json.loads(json.dumps(schedules.serialize(schedule)))
    assert serialized == theirs["serialized"]
    # Round trips: through from_config and through deserialize of tf-keras's form.
    again = type(schedule).from_config(schedule.get_config())
    assert again.get_config() == schedule.get_config()
    restored = schedules.deserialize(theirs["serialized"])
    assert type(restored) is type(schedule)
    np.testing.assert_allclose(values(restored), theirs["values"], rtol=1e-6, atol=1e-9)


def test_values_match_the_formulas():
    steps = np.array(STEPS, np.float64)
    np.testing.assert_allclose(values(schedules.ExponentialDecay(0.1, 10, 0.5)),
                               0.1 * 0.5 ** (steps / 10), rtol=1e-6)
    np.testing.assert_allclose(
        values(schedules.PiecewiseConstantDecay([5, 20], [1.0, 0.5, 0.1])),
        np.where(steps <= 5, 1.0, np.where(steps <= 20, 0.5, 0.1)))
    clipped = np.minimum(steps, 40)
    np.testing.assert_allclose(values(schedules.CosineDecay(0.1, 40)),
                               0.1 * 0.5 * (1 + np.cos(np.pi * clipped / 40)), rtol=1e-5,
                               atol=1e-8)


def test_deserialize_takes_the_legacy_form_and_custom_objects():
    legacy = {"class_name": "PolynomialDecay",
              "config": {"initial_learning_rate": 0.1, "decay_steps": 10,
                         "end_learning_rate": 0.01, "power": 0.5, "cycle": False,
                         "name": None}}
    schedule = schedules.deserialize(legacy)
    assert isinstance(schedule, schedules.PolynomialDecay)
    assert schedule.get_config() == legacy["config"]

    class Halving(schedules.LearningRateSchedule):
        def __call__(self, step):
            return 1.0 / tf.pow(2.0, tf.cast(step, tf.float32))

        def get_config(self):
            return {}

    custom = schedules.deserialize({"class_name": "Halving", "config": {}},
                                   custom_objects={"Halving": Halving})
    assert values(custom)[:3] == [1.0, 0.5, 0.125]
    with pytest.raises(ValueError, match="Unknown decay: 'Halving'"):
        schedules.deserialize({"class_name": "Halving", "config": {}})


def test_errors():
    with pytest.raises(ValueError, match="length of boundaries should be 1 less than the "
                                         "length of values"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0])
    with pytest.raises(NotImplementedError, match="must override `get_config"):
        schedules.LearningRateSchedule().get_config()
    optimizer = keras.optimizers.Adam(schedules.ExponentialDecay(0.1, 10, 0.5))
    with pytest.raises(TypeError, match="its learning rate is not settable"):
        optimizer.learning_rate = 0.01


def test_rate_is_computed_in_the_step_from_iterations():
    """The optimizer's learning_rate variable records the rate each step used: schedule(n)
    at the step that starts with iterations == n."""
    schedule = schedules.PiecewiseConstantDecay([1, 3], [0.5, 0.25, 0.125])
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(2,), use_bias=False,
                                                 kernel_initializer="zeros")])
    model.compile(keras.optimizers.SGD(schedule), "mse")
    x, y = np.ones((1, 2), np.float32), np.ones((1, 1), np.float32)
    kernel, used = 0.0, []
    for _ in range(5):
        model.train_on_batch(x, y)
        used.append(float(keras.backend.get_value(model.optimizer.learning_rate)))
        # Both entries stay equal: d/dw_i (w_1 + w_2 - 1)^2 = 2 (2w - 1).
        kernel -= used[-1] * 2 * (2 * kernel - 1)
        np.testing.assert_allclose(model.get_weights()[0], [[kernel], [kernel]], rtol=1e-6)
    assert used == [0.5, 0.5, 0.25, 0.25, 0.125]
    assert int(keras.backend.get_value(model.optimizer.iterations)) == 5


def test_optimizer_config_round_trip_and_h5(tmp_path):
    schedule = schedules.InverseTimeDecay(0.2, 4, 0.3)
    optimizer = keras.optimizers.RMSprop(schedule, rho=0.8)
    config = optimizer.get_config()
    assert config["learning_rate"] == schedules.serialize(schedule)
    again = keras.optimizers.RMSprop.from_config(json.loads(json.dumps(config)))
    assert again.get_config() == config
    model = keras.Sequential([keras.layers.Dense(2, input_shape=(3,))])
    model.compile(keras.optimizers.deserialize(keras.optimizers.serialize(optimizer)), "mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    model.save(str(tmp_path / "m.h5"))
    loaded = keras.models.load_model(str(tmp_path / "m.h5"))
    assert isinstance(loaded.optimizer.get_config()["learning_rate"], dict)
    assert loaded.optimizer.get_config()["learning_rate"]["class_name"] == "InverseTimeDecay"


# fit() from the same weights and data as tf-keras, with each kind of update rule.
FIT_CASES = {
    "sgd_momentum_exponential": (
        "keras.Sequential([keras.layers.Dense(8, activation='tanh', input_shape=(6,)),"
        " keras.layers.Dense(2)])",
        "optimizer=keras.optimizers.SGD(keras.optimizers.schedules.ExponentialDecay("
        "0.1, 3, 0.5), momentum=0.9), loss='mse'", "regression"),
    "sgd_nesterov_piecewise": (
        "keras.Sequential([keras.layers.Dense(8, activation='relu', input_shape=(6,)),"
        " keras.layers.Dense(2)])",
        "optimizer=keras.optimizers.SGD(keras.optimizers.schedules.PiecewiseConstantDecay("
        "[4, 9], [0.1, 0.02, 0.005]), momentum=0.8, nesterov=True), loss='mse'",
        "regression"),
    "adam_cosine_warmup": (
        "keras.Sequential([keras.layers.Dense(16, activation='relu', input_shape=(6,)),"
        " keras.layers.Dense(3, activation='softmax')])",
        "optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay("
        "0.001, 12, warmup_target=0.02, warmup_steps=4)),"
        " loss='sparse_categorical_crossentropy', metrics=['accuracy']", "classes"),
    "rmsprop_polynomial": (
        "keras.Sequential([keras.layers.Dense(8, activation='elu', input_shape=(6,)),"
        " keras.layers.Dense(2)])",
        "optimizer=keras.optimizers.RMSprop(keras.optimizers.schedules.PolynomialDecay("
        "0.01, 10, end_learning_rate=0.001)), loss='mae'", "regression"),
    "adagrad_inverse_time": (
        "keras.Sequential([keras.layers.Dense(4, activation='sigmoid', input_shape=(6,)),"
        " keras.layers.Dense(2)])",
        "optimizer=keras.optimizers.Adagrad(keras.optimizers.schedules.InverseTimeDecay("
        "0.2, 4, 0.5)), loss='mse'", "regression"),
}


@needs_tf_keras
@pytest.mark.parametrize("case", sorted(FIT_CASES))
def test_fit_with_a_schedule_matches_tf_keras(case, tmp_path):
    vs.compare_training(*FIT_CASES[case], tmp_path, seed=2, rtol=1e-4, atol=1e-5, label=case)
