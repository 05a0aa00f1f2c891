"""Layer: the unit Keras models are made of.

A layer owns weights (Flowstone variables, made once by `build`) and a `call` that builds ops.
Calling a layer on Keras tensors builds it if needed, runs `call` under the layer's name scope
and records a Node, so that models can be traced from their outputs back to their inputs.
"""

import contextlib
import inspect
import threading

import numpy as np

import flowstone as tf
from flowstone.autograph import conversion as _autograph
from flowstone.framework.eager import EagerTensor
from flowstone.keras import backend as K
from flowstone.keras import constraints as constraints_module
from flowstone.keras import initializers as initializers_module
from flowstone.keras import regularizers as regularizers_module
from flowstone.keras.engine import node as node_module
from flowstone.keras.engine.input_spec import assert_input_compatibility
from flowstone.util.naming import to_snake_case
from flowstone.util.tf_export import tf_export

_LAYER_KWARGS = {"input_shape", "batch_input_shape", "batch_size", "weights",
                 "activity_regularizer", "input_dim", "autocast", "dynamic"}


class _CallContext(threading.local):
    """The `training` value of the outermost layer call that was given one: a model called with
    `training=True` passes it to the layers it calls (Dropout, BatchNormalization), as tf-keras
    does."""
    training = None
    depth = 0   # layer calls in progress on this thread


_CALL_CONTEXT = _CallContext()
_CALL_ACCEPTS = {}   # (layer class, argument) -> whether its `call` takes that argument


@contextlib.contextmanager
def _training_scope(training):
    previous = _CALL_CONTEXT.training
    _CALL_CONTEXT.training = training
    try:
        yield
    finally:
        _CALL_CONTEXT.training = previous


def _as_tensor_shape(shape):
    return tf.TensorShape(shape) if not isinstance(shape, tf.TensorShape) else shape


@tf_export("keras.layers.Layer")
class Layer:
    """Base class of all layers (see the module docstring)."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        unknown = set(kwargs) - _LAYER_KWARGS
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]!r}")
        object.__setattr__(self, "_tracked_layers", [])
        self._trainable = bool(trainable)
        self._name = name or self._default_name()
        self._dtype = tf.as_dtype(dtype or K.floatx()).name
        self.built = False
        self.input_spec = None
        self.supports_masking = False
        self._trainable_weights = []
        self._non_trainable_weights = []
        self._losses = []
        self._call_losses = []   # eager mode: the losses added by the last outermost call
        self._updates = []
        self._inbound_nodes = []
        self._outbound_nodes = []
        self._initial_weights = kwargs.get("weights")
        self.activity_regularizer = regularizers_module.get(kwargs.get("activity_regularizer"))
        if "input_dim" in kwargs and "input_shape" not in kwargs:
            kwargs["input_shape"] = (kwargs["input_dim"],)
        if "batch_input_shape" in kwargs:
            self._batch_input_shape = tuple(kwargs["batch_input_shape"])
        elif "input_shape" in kwargs:
            self._batch_input_shape = (kwargs.get("batch_size"),) + tuple(kwargs["input_shape"])

    def _default_name(self):
        base = to_snake_case(type(self).__name__)
        uid = K.get_uid(base)
        return base if uid == 1 else f"{base}_{uid - 1}"

    # --- tracking of nested layers ----------------------------------------------------------
    def __setattr__(self, name, value):
        tracked = self.__dict__.get("_tracked_layers")
        if tracked is not None and not name.startswith("_tracked"):
            candidates = value if isinstance(value, (list, tuple)) else [value]
            for candidate in candidates:
                if isinstance(candidate, Layer) and candidate is not self and \
                        all(candidate is not t for t in tracked):
                    tracked.append(candidate)
        object.__setattr__(self, name, value)

    def _flatten_layers(self):
        return list(self._tracked_layers)

    # --- properties -------------------------------------------------------------------------
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for layer in self._flatten_layers():
            layer.trainable = value

    @property
    def trainable_weights(self):
        if not self._trainable:
            return []
        weights = list(self._trainable_weights)
        for layer in self._flatten_layers():
            weights += [w for w in layer.trainable_weights if all(w is not o for o in weights)]
        return weights

    @property
    def non_trainable_weights(self):
        if self._trainable:
            weights = list(self._non_trainable_weights)
            for layer in self._flatten_layers():
                weights += layer.non_trainable_weights
        else:
            weights = list(self._trainable_weights) + list(self._non_trainable_weights)
            for layer in self._flatten_layers():
                weights += layer.weights
        unique = []
        for w in weights:
            if all(w is not u for u in unique):
                unique.append(w)
        return unique

    @property
    def weights(self):
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = property(lambda self: self.trainable_weights)
    non_trainable_variables = property(lambda self: self.non_trainable_weights)
    variables = property(lambda self: self.weights)

    @property
    def losses(self):
        losses = [loss() if callable(loss) else loss for loss in self._losses]
        losses += self.__dict__.get("_call_losses", [])
        for layer in self._flatten_layers():
            losses += layer.losses
        return losses

    @property
    def updates(self):
        updates = list(self._updates) if self._trainable else []
        for layer in self._flatten_layers():
            updates += layer.updates
        return updates

    # --- weights ----------------------------------------------------------------------------
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, **kwargs):
        shape = tuple(int(d) for d in (shape or ()))
        dtype = tf.as_dtype(dtype or self._dtype)
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        initializer = initializers_module.get(initializer)
        regularizer = regularizers_module.get(regularizer)
        constraint = constraints_module.get(constraint)
        trainable = True if trainable is None else bool(trainable)
        variable = tf.Variable(lambda: initializer(shape, dtype=dtype), name=name, dtype=dtype,
                               trainable=trainable, constraint=constraint)
        K.track_variable(variable)
        if regularizer is not None and getattr(variable, "_eager", False):
            # An eager variable's penalty is computed where `losses` is read (eagerly, or in
            # the trace of a train step), from the variable's value then.
            self._losses.append(lambda: _regularization(regularizer, variable, name))
        elif regularizer is not None:
            self._losses.append(_regularization(regularizer, variable, name))
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        return variable

    def get_weights(self):
        return K.batch_get_value(self.weights)

    def set_weights(self, weights):
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f'You called `set_weights(weights)` on layer "{self.name}" with a '
                             f"weight list of length {len(weights)}, but the layer was expecting "
                             f"{len(params)} weights. Provided weights: {str(weights)[:50]}...")
        pairs = []
        for param, value in zip(params, weights):
            value = np.asarray(value)
            if not param.shape.is_compatible_with(value.shape):
                raise ValueError(f"Layer {self.name} weight shape "
                                 f"{tuple(param.shape.as_list())} is not compatible with "
                                 f"provided weight shape {value.shape}.")
            pairs.append((param, value))
        K.batch_set_value(pairs)

    def count_params(self):
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the "
                             "layer isn't built. You can build it manually via: "
                             f"`{self.name}.build(batch_input_shape)`.")
        return int(sum(np.prod(w.shape.as_list()) for w in self.weights))

    # --- losses and updates ----------------------------------------------------------------
    def add_loss(self, losses, inputs=None):
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            self._add_loss(loss)

    def _add_loss(self, loss):
        """A loss tensor computed by a call is that call's in eager mode, as in tf-keras: the
        next outermost call starts the list again (see __call__); callables stay."""
        if tf.executing_eagerly_outside_functions() and not callable(loss):
            self.__dict__.setdefault("_call_losses", []).append(loss)
        else:
            self._losses.append(loss)

    def _clear_call_losses(self):
        self._call_losses = []
        for layer in self._flatten_layers():
            layer._clear_call_losses()

    def add_update(self, updates, inputs=None):
        if tf.executing_eagerly_outside_functions():
            # Eager mode: an eager update has run already, and a traced step runs every
            # stateful op of its trace; there is no op to keep for later.
            return
        for update in updates if isinstance(updates, (list, tuple)) else [updates]:
            self._updates.append(update)

    # --- building and calling --------------------------------------------------------------
    def build(self, input_shape):
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    def compute_mask(self, inputs, mask=None):
        return mask if self.supports_masking else None

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(f"Please run in eager mode or implement the "
                                  f"compute_output_shape method on your layer "
                                  f"({type(self).__name__}).")

    def _call_accepts(self, argument):
        key = (type(self), argument)
        accepts = _CALL_ACCEPTS.get(key)
        if accepts is None:
            parameters = inspect.signature(self.call).parameters
            accepts = _CALL_ACCEPTS[key] = argument in parameters or any(
                p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        return accepts

    def _maybe_build(self, inputs):
        if self.built:
            return
        flat = node_module.flatten(inputs)
        shapes = [t.shape for t in flat]
        input_shape = shapes if isinstance(inputs, (list, tuple)) else shapes[0]
        self.build(input_shape)
        self.built = True
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)
            self._initial_weights = None

    def __call__(self, inputs, *args, **kwargs):
        flat = node_module.flatten(inputs)
        if not flat:
            raise ValueError(f"Layer {self.name} was called with no inputs.")
        converted = [x if isinstance(x, tf.Tensor) else
                     (x.value() if isinstance(x, tf.Variable) else
                      tf.convert_to_tensor(x, dtype=self._dtype)) for x in flat]
        if any(c is not x for c, x in zip(converted, flat)):
            inputs = _pack_like(inputs, converted)
        training = kwargs.get("training")
        inherited = False
        if training is None and self._call_accepts("training"):
            # tf-keras's rule: the enclosing call's `training`, else (in eager mode) the
            # learning phase, which is 0 (inference) unless set_learning_phase fixed it.
            training = _CALL_CONTEXT.training
            if training is None and tf.executing_eagerly_outside_functions():
                training = K.learning_phase_value()
            inherited = training is not None
            if inherited:
                kwargs["training"] = training
        # Eager tensors run the layer's ops at once (the same `call` graph mode builds with);
        # Keras tensors build into their own graph.
        eager = isinstance(converted[0], EagerTensor)
        if _CALL_CONTEXT.depth == 0 and tf.executing_eagerly_outside_functions():
            self._clear_call_losses()
        _CALL_CONTEXT.depth += 1
        try:
            return self._call_in_scope(inputs, converted, args, kwargs, training, inherited,
                                       eager)
        finally:
            _CALL_CONTEXT.depth -= 1

    def _call_function(self, eager):
        """`self.call`, converted by AutoGraph whenever it builds a graph (Keras's own, a
        tf.function's) unless a tf.function with autograph=False is tracing it, as tf.keras
        converts it: Python `if` on tensors then works in `call`."""
        if eager or _autograph.current_status() is _autograph.Status.DISABLED:
            return self.call
        return _autograph.callable_for(self.call)

    def _call_in_scope(self, inputs, converted, args, kwargs, training, inherited, eager):
        graph_scope = contextlib.nullcontext() if eager else converted[0].graph.as_default()
        with graph_scope, _training_scope(training if training is not None
                                          else _CALL_CONTEXT.training):
            assert_input_compatibility(self.input_spec, inputs, self.name)
            with tf.name_scope(self._name):
                if not self.built:
                    self._maybe_build(inputs)
                    assert_input_compatibility(self.input_spec, inputs, self.name)
                masks = [node_module.mask(x) for x in converted]
                if "mask" not in kwargs and self._call_accepts("mask") and \
                        any(m is not None for m in masks):
                    kwargs["mask"] = masks if isinstance(inputs, (list, tuple)) else masks[0]
                outputs = self._call_function(eager)(inputs, *args, **kwargs)
                flat_out = node_module.flatten(outputs)
                for i, out in enumerate(flat_out):
                    if any(out is x for x in converted):
                        flat_out[i] = tf.identity(out)
                outputs = _pack_like(outputs, flat_out)
                if self.activity_regularizer is not None:
                    with tf.name_scope("ActivityRegularizer"):
                        for out in flat_out:
                            batch = tf.cast(tf.shape(out)[0], out.dtype)
                            self._add_loss(self.activity_regularizer(out) / batch)
                previous_mask = kwargs.get("mask")
                if previous_mask is None:
                    previous_mask = masks if isinstance(inputs, (list, tuple)) else masks[0]
                output_mask = self.compute_mask(inputs, previous_mask)
                out_masks = output_mask if isinstance(output_mask, (list, tuple)) \
                    else [output_mask] * len(flat_out)
                for out, m in zip(flat_out, out_masks):
                    node_module.set_mask(out, m)
        if not eager and all(node_module.history(x) is not None for x in converted):
            arguments = {k: v for k, v in kwargs.items()
                         if k != "mask" and not (inherited and k == "training")}
            node_module.Node(self, inputs, outputs, arguments)
        return outputs

    # --- connectivity ------------------------------------------------------------------------
    def _only_node(self, attribute):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return.")
        if len(self._inbound_nodes) > 1:
            raise AttributeError(f"Layer {self.name} has multiple inbound nodes, hence the "
                                 f"notion of \"layer {attribute}\" is ill-defined. Use "
                                 f"`get_{attribute}_at(node_index)` instead.")
        return self._inbound_nodes[0]

    @property
    def input(self):
        node = self._only_node("input")
        return node.input_tensors if node.call_structure_is_list else node.input_tensors[0]

    @property
    def output(self):
        node = self._only_node("output")
        return node.output_tensors[0] if len(node.output_tensors) == 1 else node.output_tensors

    @property
    def input_shape(self):
        if not self._inbound_nodes:
            raise AttributeError(f'The layer "{self.name}" has never been called and thus has '
                                 "no defined input shape.")
        shapes = {str(n.input_shapes) for n in self._inbound_nodes}
        if len(shapes) > 1:
            raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with '
                                 "different input shapes. Hence the notion of \"input shape\" "
                                 "is ill-defined for the layer.")
        return self._inbound_nodes[0].input_shapes

    @property
    def output_shape(self):
        if not self._inbound_nodes:
            raise AttributeError(f'The layer "{self.name}" has never been called and thus has '
                                 "no defined output shape.")
        shapes = {str(n.output_shapes) for n in self._inbound_nodes}
        if len(shapes) > 1:
            raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with '
                                 "different output shapes. Hence the notion of \"output "
                                 "shape\" is ill-defined for the layer.")
        return self._inbound_nodes[0].output_shapes

    def get_input_at(self, node_index):
        node = self._inbound_nodes[node_index]
        return node.input_tensors if node.call_structure_is_list else node.input_tensors[0]

    def get_output_at(self, node_index):
        node = self._inbound_nodes[node_index]
        return node.output_tensors[0] if len(node.output_tensors) == 1 else node.output_tensors

    # --- configuration ----------------------------------------------------------------------
    def get_config(self):
        config = {"name": self._name, "trainable": self._trainable, "dtype": self._dtype}
        if hasattr(self, "_batch_input_shape"):
            config["batch_input_shape"] = list(self._batch_input_shape)
        own_init = type(self).__init__
        if own_init is not Layer.__init__ and type(self).get_config is Layer.get_config:
            extra = set(inspect.signature(own_init).parameters) - {"self", "trainable", "name",
                                                                   "dtype", "kwargs", "args"}
            if extra:
                raise NotImplementedError(
                    f"Layer {type(self).__name__} has arguments {sorted(extra)} in `__init__` "
                    "and therefore must override `get_config()`.")
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object named {self.name!r}>"


def _regularization(regularizer, variable, name):
    with tf.name_scope(f"{name}/Regularizer"):
        return regularizer(variable.value())


def _pack_like(structure, flat):
    if isinstance(structure, (list, tuple)):
        return list(flat)
    return flat[0]

