"""tf.keras.optimizers: Keras's optimizer API over Flowstone's update ops.

Each hyperparameter that callbacks change while training (the learning rate) is a variable, so
changing it is an assignment and never a rebuild of the training step. The update rules are the
ResourceApply* kernels, reached through flowstone.train's optimizers; where Keras 2's rule differs
from those kernels, docs/COMPAT.md says so.

A `LearningRateSchedule` as the learning rate is evaluated in the training step on the step's
`iterations` (the count before this step, as in tf-keras); the `learning_rate` variable then
records the rate the last step used, for callbacks and logs, and cannot be set.
"""

import flowstone as tf
from flowstone.framework import ops as _ops
from flowstone.keras import backend as K
from flowstone.keras import learning_rate_schedule
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.train import optimizer as train_optimizer
from flowstone.util.tf_export import tf_export

_ALLOWED_KWARGS = {"clipnorm", "clipvalue", "global_clipnorm", "lr", "decay", "name",
                   "jit_compile", "is_legacy_optimizer", "weight_decay", "use_ema",
                   "ema_momentum", "ema_overwrite_frequency"}


@tf_export("keras.optimizers.Optimizer")
class Optimizer:
    """Base class: subclasses list their hyperparameters and make the update optimizer."""

    _HYPER = ()   # (name, default) of the float hyperparameters, learning_rate first

    def __init__(self, name, **kwargs):
        unknown = set(kwargs) - _ALLOWED_KWARGS - {h for h, _ in self._HYPER}
        if unknown:
            raise TypeError(f"{sorted(unknown)[0]} is not a valid argument, kwargs should be "
                            f"empty for `optimizer_experimental.Optimizer`.")
        if "lr" in kwargs:
            kwargs.setdefault("learning_rate", kwargs.pop("lr"))
        self._name = kwargs.pop("name", None) or name
        self.clipnorm = kwargs.pop("clipnorm", None)
        self.clipvalue = kwargs.pop("clipvalue", None)
        self.global_clipnorm = kwargs.pop("global_clipnorm", None)
        self._hyper = {}
        for hyper, default in self._HYPER:
            self._hyper[hyper] = kwargs.get(hyper, default)
        self._schedule = self._hyper.get("learning_rate")
        if isinstance(self._schedule, dict):   # a schedule's config, from a saved optimizer
            self._schedule = learning_rate_schedule.deserialize(self._schedule)
        if not isinstance(self._schedule, learning_rate_schedule.LearningRateSchedule):
            self._schedule = None
        self._step_rate = None   # the scheduled rate of the step being built
        self._variables = {}   # hyperparameter name -> variable, once built in a graph
        self._iterations = None
        self._update_optimizer = None
        self._tracked_slots = set()

    name = property(lambda self: self._name)

    def _hyper_variable(self, hyper):
        variable = self._variables.get(hyper)
        if variable is None:
            graph = tf.get_default_graph()
            with graph.name_scope(None), graph.control_dependencies(None):
                if hyper == "learning_rate" and self._schedule is not None:
                    initial = tf.cast(self._schedule(tf.constant(0, tf.int64)), tf.float32)
                else:
                    initial = float(self._hyper[hyper])
                variable = tf.Variable(initial, name=f"{self._name}/{hyper}",
                                       trainable=False, dtype=tf.float32)
            K.track_variable(variable)
            self._variables[hyper] = variable
        return variable

    def _get_hyper(self, hyper):
        variable = self._variables.get(hyper)
        return self._hyper[hyper] if variable is None else float(K.get_value(variable))

    def _set_hyper(self, hyper, value):
        self._hyper[hyper] = value
        variable = self._variables.get(hyper)
        if variable is not None:
            K.set_value(variable, value)

    @property
    def learning_rate(self):
        return self._hyper_variable("learning_rate")

    @learning_rate.setter
    def learning_rate(self, value):
        if self._schedule is not None:
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as "
                            "its `learning_rate` constructor argument, hence its learning rate "
                            "is not settable. If you need the learning rate to be settable, you "
                            "should instantiate the optimizer with a float `learning_rate` "
                            "argument.")
        self._set_hyper("learning_rate", value)

    lr = learning_rate

    @property
    def iterations(self):
        if self._iterations is None:
            graph = tf.get_default_graph()
            with graph.name_scope(None), graph.control_dependencies(None):
                self._iterations = tf.Variable(0, name=f"{self._name}/iter", trainable=False,
                                               dtype=tf.int64)
            K.track_variable(self._iterations)
        return self._iterations

    def _clip(self, grads):
        if self.clipvalue is not None:
            grads = [None if g is None else tf.clip_by_value(g, -self.clipvalue, self.clipvalue)
                     for g in grads]
        if self.clipnorm is not None:
            grads = [None if g is None else tf.clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm is not None:
            present = [g for g in grads if g is not None]
            clipped, _ = tf.clip_by_global_norm(present, self.global_clipnorm)
            clipped = iter(clipped)
            grads = [None if g is None else next(clipped) for g in grads]
        return grads

    def get_updates(self, loss, params):
        """The op that takes one step on `params` down the gradient of `loss`."""
        params = list(params)
        grads = tf.gradients(loss, params)
        missing = [p.name for p, g in zip(params, grads) if g is None]
        if len(missing) == len(params):
            raise ValueError(f"No gradients provided for any variable: {missing}.")
        grads = self._clip(grads)
        return self.apply_gradients(zip(grads, params))

    def apply_gradients(self, grads_and_vars, name=None):
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if self._update_optimizer is None:
            self._update_optimizer = self._make_update_optimizer()
        with tf.name_scope(self._name):
            record = self._schedule_step()
            step = self._update_optimizer.apply_gradients(pairs)
            if record is not None:
                step = tf.group(step, record)
        # The update optimizer's slots (Adam's m and v...) are Keras's to initialize.
        for variable in self._update_optimizer.variables():
            if id(variable) not in self._tracked_slots:
                self._tracked_slots.add(id(variable))
                K.track_variable(variable)
        with tf.name_scope(self._name):
            with tf.control_dependencies([step]):
                return self.iterations.assign_add(tf.constant(1, tf.int64), read_value=False)

    def _schedule_step(self):
        """With a schedule: this step's rate (read by the update rules through `_lr`) and the
        op recording it in the `learning_rate` variable; None otherwise."""
        if self._schedule is None:
            return None
        with tf.name_scope("learning_rate_schedule"):
            self._step_rate = tf.cast(self._schedule(self.iterations.read_value()), tf.float32)
        return self._hyper_variable("learning_rate").assign(self._step_rate, read_value=False)

    def minimize(self, loss, var_list, tape=None):
        if callable(loss):
            loss = loss()
        return self.get_updates(loss, var_list() if callable(var_list) else var_list)

    def variables(self):
        return list(self._variables.values()) + (
            self._update_optimizer.variables() if self._update_optimizer else [])

    def get_config(self):
        config = {"name": self._name}
        for hyper, _ in self._HYPER:
            config[hyper] = self._get_hyper(hyper)
        if self._schedule is not None:
            config["learning_rate"] = learning_rate_schedule.serialize(self._schedule)
        for key in ("clipnorm", "clipvalue", "global_clipnorm"):
            config[key] = getattr(self, key)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        for key in ("is_legacy_optimizer", "jit_compile", "use_ema", "ema_momentum",
                    "ema_overwrite_frequency", "weight_decay", "decay"):
            config.pop(key, None)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        return cls(**config)

    def _make_update_optimizer(self):
        raise NotImplementedError


def _lr(optimizer):
    """The learning rate the update rules read: the variable, or with a schedule a function
    giving the rate of the step being built (the update optimizers call functions)."""
    if optimizer._schedule is not None:
        return lambda: optimizer._step_rate
    return optimizer._hyper_variable("learning_rate")


@tf_export("keras.optimizers.SGD")
class SGD(Optimizer):
    _HYPER = (("learning_rate", 0.01), ("momentum", 0.0))

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        if isinstance(momentum, (int, float)) and (momentum < 0 or momentum > 1):
            raise ValueError(f"`momentum` must be between [0, 1]. Received: "
                             f"momentum={momentum} (of type {type(momentum)}).")
        super().__init__(name, learning_rate=learning_rate, momentum=momentum, **kwargs)
        self.nesterov = bool(nesterov)

    def _make_update_optimizer(self):
        # Keras's v = m*v - lr*g; w += v equals the kernel's a = m*a + g; w -= lr*a while the
        # learning rate is constant (docs/COMPAT.md); a schedule needs Keras's own form.
        if self._hyper["momentum"] == 0 and not self.nesterov:
            return train_optimizer.GradientDescentOptimizer(_lr(self), name=self._name)
        if self._schedule is not None:
            return _KerasMomentumUpdate(self, ["momentum"])
        return train_optimizer.MomentumOptimizer(_lr(self), self._hyper["momentum"],
                                                 use_nesterov=self.nesterov, name=self._name)

    def get_config(self):
        return {**super().get_config(), "nesterov": self.nesterov}


@tf_export("keras.optimizers.Adam")
class Adam(Optimizer):
    _HYPER = (("learning_rate", 0.001), ("beta_1", 0.9), ("beta_2", 0.999), ("epsilon", 1e-7))

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        if amsgrad:
            raise NotImplementedError("Adam(amsgrad=True) is not supported.")
        super().__init__(name, learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, **kwargs)
        self.amsgrad = False

    def _make_update_optimizer(self):
        h = self._hyper
        return train_optimizer.AdamOptimizer(_lr(self), h["beta_1"], h["beta_2"], h["epsilon"],
                                             name=self._name)

    def get_config(self):
        return {**super().get_config(), "amsgrad": self.amsgrad}


@tf_export("keras.optimizers.RMSprop")
class RMSprop(Optimizer):
    _HYPER = (("learning_rate", 0.001), ("rho", 0.9), ("momentum", 0.0), ("epsilon", 1e-7))

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        super().__init__(name, learning_rate=learning_rate, rho=rho, momentum=momentum,
                         epsilon=epsilon, **kwargs)
        self.centered = bool(centered)

    def _make_update_optimizer(self):
        h = self._hyper
        return _ZeroStartRMSProp(_lr(self), decay=h["rho"], momentum=h["momentum"],
                                 epsilon=h["epsilon"], centered=self.centered, name=self._name)

    def get_config(self):
        return {**super().get_config(), "centered": self.centered}


class _ZeroStartRMSProp(train_optimizer.RMSPropOptimizer):
    """Keras starts the mean square at 0 where tf.train's RMSProp starts it at 1."""

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "rms", self._name)
            self._zeros_slot(v, "momentum", self._name + "_1")
            if self._centered:
                self._zeros_slot(v, "mg", self._name + "_2")


@tf_export("keras.optimizers.Adagrad")
class Adagrad(Optimizer):
    _HYPER = (("learning_rate", 0.001), ("initial_accumulator_value", 0.1), ("epsilon", 1e-7))

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        super().__init__(name, learning_rate=learning_rate,
                         initial_accumulator_value=initial_accumulator_value, epsilon=epsilon,
                         **kwargs)

    def _make_update_optimizer(self):
        return train_optimizer.AdagradOptimizer(
            _lr(self), initial_accumulator_value=self._hyper["initial_accumulator_value"],
            name=self._name)


class _KerasUpdate(train_optimizer.Optimizer):
    """A tf.train-style optimizer for the Keras rules tf.train lacks: slots made by the base
    class, hyperparameters read from the Keras optimizer at graph-building time."""

    def __init__(self, keras_optimizer, slots):
        super().__init__(False, keras_optimizer.name)
        self._keras = keras_optimizer
        self._slot_names = slots

    def _create_slots(self, var_list):
        for v in var_list:
            for index, slot in enumerate(self._slot_names):
                self._zeros_slot(v, slot, self._name if index == 0 else f"{self._name}_{index}")

    def _hyper(self, name, var):
        return self._scalar(self._keras._hyper[name], var.dtype, name)


class _KerasMomentumUpdate(_KerasUpdate):
    """tf-keras's SGD momentum, v = m*v - lr*g; w += v (Nesterov: w += m*v - lr*g), composed
    from assignments: the rate is inside the velocity, so a scheduled rate changes only new
    steps' contributions."""

    def _apply_dense(self, grad, var):
        velocity = self.get_slot(var, "momentum")
        momentum = self._hyper("momentum", var)
        scaled = grad * self._scalar(_lr(self._keras), var.dtype, "lr")
        new_velocity = velocity.value() * momentum - scaled
        delta = new_velocity * momentum - scaled if self._keras.nesterov else new_velocity
        return tf.group(velocity.assign(new_velocity, read_value=False),
                        var.assign_add(delta, read_value=False))


class _AdadeltaUpdate(_KerasUpdate):
    def _apply_dense(self, grad, var):
        return _ops.apply_op("ResourceApplyAdadelta", [
            var.handle, self.get_slot(var, "accum").handle,
            self.get_slot(var, "accum_update").handle,
            self._scalar(_lr(self._keras), var.dtype, "lr"), self._hyper("rho", var),
            self._hyper("epsilon", var), grad], name="ResourceApplyAdadelta")


class _AdamaxUpdate(_KerasUpdate):
    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        self._non_slot("beta1_power", self._keras._hyper["beta_1"], var_list[0].dtype)

    def _apply_dense(self, grad, var):
        beta1_power = self._scalar(self._non_slots["beta1_power"], var.dtype, "beta1_power")
        return _ops.apply_op("ResourceApplyAdaMax", [
            var.handle, self.get_slot(var, "m").handle, self.get_slot(var, "v").handle,
            beta1_power, self._scalar(_lr(self._keras), var.dtype, "lr"),
            self._hyper("beta_1", var), self._hyper("beta_2", var),
            self._hyper("epsilon", var), grad], name="ResourceApplyAdaMax")

    def _finish(self, update_ops, name_scope):
        power = self._non_slots["beta1_power"]
        with tf.control_dependencies(update_ops):
            step = power.assign(power.read_value() * self._keras._hyper["beta_1"],
                                read_value=False)
        return tf.group(*update_ops, step, name=name_scope.rstrip("/").split("/")[-1])


class _NadamUpdate(_KerasUpdate):
    """tf-keras's Nadam (Dozat's momentum schedule), composed from assignments: there is no
    fused kernel for it."""

    def _create_slots(self, var_list):
        super()._create_slots(var_list)
        self._non_slot("u_product", 1.0, var_list[0].dtype)
        self._non_slot("nadam_step", 0.0, var_list[0].dtype)

    def _prepare(self):
        h = self._keras._hyper
        beta_1, beta_2 = h["beta_1"], h["beta_2"]
        step = self._non_slots["nadam_step"].value() + 1.0
        # tf-keras 2.11+'s schedule (0.96 ** step; TF 1.15's legacy Nadam used 0.96 ** (0.004 t)).
        self._u_t = beta_1 * (1.0 - 0.5 * tf.pow(0.96, step))
        self._u_t_1 = beta_1 * (1.0 - 0.5 * tf.pow(0.96, step + 1.0))
        self._u_product_t = self._non_slots["u_product"].value() * self._u_t
        self._beta_2_power = tf.pow(beta_2, step)

    def _apply_dense(self, grad, var):
        h = self._keras._hyper
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        new_m = m.value() + (grad - m.value()) * (1.0 - h["beta_1"])
        new_v = v.value() + (tf.square(grad) - v.value()) * (1.0 - h["beta_2"])
        u_product_t_1 = self._u_product_t * self._u_t_1
        m_hat = (self._u_t_1 * new_m / (1.0 - u_product_t_1) +
                 (1.0 - self._u_t) * grad / (1.0 - self._u_product_t))
        v_hat = new_v / (1.0 - self._beta_2_power)
        lr = self._scalar(_lr(self._keras), var.dtype, "lr")
        return tf.group(m.assign(new_m, read_value=False), v.assign(new_v, read_value=False),
                        var.assign_sub(lr * m_hat / (tf.sqrt(v_hat) + h["epsilon"]),
                                       read_value=False))

    def _finish(self, update_ops, name_scope):
        u_product, step = self._non_slots["u_product"], self._non_slots["nadam_step"]
        with tf.control_dependencies(update_ops):
            advance = tf.group(u_product.assign(self._u_product_t, read_value=False),
                               step.assign_add(1.0, read_value=False))
        return tf.group(*update_ops, advance, name=name_scope.rstrip("/").split("/")[-1])


@tf_export("keras.optimizers.Adadelta")
class Adadelta(Optimizer):
    _HYPER = (("learning_rate", 0.001), ("rho", 0.95), ("epsilon", 1e-7))

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        super().__init__(name, learning_rate=learning_rate, rho=rho, epsilon=epsilon, **kwargs)

    def _make_update_optimizer(self):
        return _AdadeltaUpdate(self, ["accum", "accum_update"])


@tf_export("keras.optimizers.Adamax")
class Adamax(Optimizer):
    _HYPER = (("learning_rate", 0.001), ("beta_1", 0.9), ("beta_2", 0.999), ("epsilon", 1e-7))

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", **kwargs):
        super().__init__(name, learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, **kwargs)

    def _make_update_optimizer(self):
        return _AdamaxUpdate(self, ["m", "v"])


@tf_export("keras.optimizers.Nadam")
class Nadam(Optimizer):
    _HYPER = (("learning_rate", 0.001), ("beta_1", 0.9), ("beta_2", 0.999), ("epsilon", 1e-7))

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", **kwargs):
        super().__init__(name, learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, **kwargs)

    def _make_update_optimizer(self):
        return _NadamUpdate(self, ["m", "v"])


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad,
            "adadelta": Adadelta, "adamax": Adamax, "nadam": Nadam}
_CLASSES = {cls.__name__: cls for cls in _BY_NAME.values()}


@tf_export("keras.optimizers.serialize")
def serialize(optimizer):
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


@tf_export("keras.optimizers.deserialize")
def deserialize(config, custom_objects=None):
    objects = dict(_CLASSES)
    if isinstance(config, dict):
        # tf-keras 2.11+ registers its optimizers as "Custom>Adam".
        name = config.get("class_name", "").split(">")[-1]
        if name.lower() in _BY_NAME:
            name = _BY_NAME[name.lower()].__name__
        config = dict(config, class_name=name)
    return deserialize_keras_object(config, objects, custom_objects,
                                    printable_module_name="optimizer")


@tf_export("keras.optimizers.get")
def get(identifier):
    """'adam' (any case), a config dict, or an optimizer instance."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, train_optimizer.Optimizer):
        return _TrainOptimizerAdapter(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Could not interpret optimizer identifier: {identifier}")
        return cls()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")


class _TrainOptimizerAdapter(Optimizer):
    """A tf.train optimizer passed to compile (TF1 Keras accepts them)."""

    def __init__(self, optimizer):
        super().__init__(optimizer.get_name())
        self._update_optimizer = optimizer
