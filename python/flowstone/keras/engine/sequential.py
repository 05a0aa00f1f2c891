"""Sequential: a linear stack of layers, built as a functional graph once its input shape is
known (from the first layer's `input_shape`, from `build`, or from the first data it sees)."""

import flowstone as tf
from flowstone.keras.engine import node as node_module
from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_layer import Input, InputLayer
from flowstone.keras.engine.training import Model
from flowstone.util.tf_export import tf_export


@tf_export("keras.Sequential", "keras.models.Sequential")
class Sequential(Model):
    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self._stack = []
        self._input_layer = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self):
        return list(self._stack)

    def add(self, layer):
        if isinstance(layer, InputLayer) or (isinstance(layer, tf.Tensor) and
                                             node_module.history(layer) is not None):
            if isinstance(layer, tf.Tensor):
                layer = node_module.history(layer).layer
            self._input_layer = layer
            self._rebuild()
            return
        if not isinstance(layer, Layer):
            raise TypeError("The added layer must be an instance of class Layer. Received: "
                            f"layer={layer} of type {type(layer)}.")
        if any(existing.name == layer.name for existing in self._stack):
            raise ValueError(f'All layers added to a Sequential model should have unique names. '
                             f'Name "{layer.name}" is already the name of a layer in this '
                             "model. Update the `name` argument to pass a unique name.")
        self._stack.append(layer)
        self._tracked_layers.append(layer)
        if not self._stack[:-1] and self._input_layer is None and \
                hasattr(layer, "_batch_input_shape"):
            with tf.get_default_graph().as_default():
                self._input_layer = node_module.history(Input(
                    batch_shape=layer._batch_input_shape, dtype=layer.dtype,
                    name=f"{layer.name}_input")).layer
        if self._is_graph_network and self.outputs and len(self._stack) > 1:
            self._append_to_graph(layer)
        else:
            self._rebuild()

    def _append_to_graph(self, layer):
        """Calls only the new layer on the current output, as tf-keras does: re-calling the
        earlier layers would add their ops (and names: `dense_1_1`) to the graph again."""
        self._plans = {}
        try:
            output = layer(self.outputs[0])
        except Exception:
            self._stack.pop()
            self._tracked_layers[:] = list(self._stack)
            raise
        self._init_graph_network(self.inputs[0], output)
        self._tracked_layers[:] = list(self._stack)

    def pop(self):
        if not self._stack:
            raise TypeError("There are no layers in the model.")
        layer = self._stack.pop()
        self._tracked_layers.remove(layer)
        self._is_graph_network = False
        self.outputs = []
        self.built = False
        self._rebuild()

    def _rebuild(self):
        """Chains the layers from the input layer (if there is one yet) into a graph."""
        self._plans = {}
        if self._input_layer is None or not self._stack:
            return
        x = self._input_layer._inbound_nodes[0].output_tensors[0]
        inputs = x
        for layer in self._stack:
            x = layer(x)
        self._init_graph_network(inputs, x)
        self._tracked_layers[:] = list(self._stack)

    def build(self, input_shape=None):
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        input_shape = tuple(tf.TensorShape(input_shape).as_list())
        self._input_layer = node_module.history(Input(batch_shape=input_shape,
                                                      dtype=self._stack[0].dtype if self._stack
                                                      else None)).layer
        self._rebuild()

    def _build_from_arrays(self, xs):
        array = xs[0]
        dtype = "float32" if array.dtype.kind == "f" else tf.as_dtype(array.dtype).name
        first = self._stack[0].name if self._stack else "sequential"
        self._input_layer = node_module.history(Input(
            batch_shape=(None,) + tuple(array.shape[1:]), dtype=dtype,
            name=f"{first}_input")).layer
        self._rebuild()

    def call(self, inputs, training=None, mask=None):
        if self._is_graph_network:
            return super().call(inputs)
        x = inputs
        for layer in self._stack:
            x = layer(x)
        return x

    def get_config(self):
        layers = []
        if self._input_layer is not None:
            layers.append({"class_name": "InputLayer", "config": self._input_layer.get_config()})
        layers += [{"class_name": type(layer).__name__, "config": layer.get_config()}
                   for layer in self._stack]
        return {"name": self.name, "layers": layers}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from flowstone.keras.layers import deserialize as deserialize_layer
        if isinstance(config, list):
            config = {"layers": config}
        model = cls(name=config.get("name"))
        for layer_config in config["layers"]:
            if layer_config["class_name"] == "InputLayer":
                input_config = dict(layer_config["config"])
                model.add(InputLayer(batch_input_shape=input_config.get("batch_input_shape"),
                                     dtype=input_config.get("dtype"),
                                     name=input_config.get("name")))
                continue
            model.add(deserialize_layer(layer_config, custom_objects=custom_objects))
        return model
