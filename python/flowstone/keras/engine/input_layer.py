"""Input and InputLayer: the placeholder a functional or sequential model is fed through."""

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras.engine import node as node_module
from flowstone.keras.engine.base_layer import Layer
from flowstone.util.tf_export import tf_export


@tf_export("keras.layers.InputLayer")
class InputLayer(Layer):
    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=False, name=None, ragged=False, batch_input_shape=None, **kwargs):
        if sparse or ragged:
            raise NotImplementedError("Flowstone's Keras has no sparse or ragged inputs.")
        if not name:
            uid = K.get_uid("input")
            name = f"input_{uid}"
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        super().__init__(name=name, dtype=dtype or K.floatx())
        self.built = True
        self.is_placeholder = input_tensor is None
        if input_tensor is None:
            if batch_input_shape is None:
                raise ValueError("Please provide to Input a `shape` or a `tensor` or a "
                                 "`type_spec` argument. Note that `shape` does not include the "
                                 "batch dimension.")
            graph = K.get_graph()
            with graph.as_default(), graph.name_scope(None):
                input_tensor = tf.placeholder(self._dtype, shape=list(batch_input_shape),
                                              name=name)
        else:
            batch_input_shape = tuple(input_tensor.shape.as_list())
        self._batch_input_shape = tuple(batch_input_shape)
        self._dtype = input_tensor.dtype.name
        node_module.Node(self, [], [input_tensor])

    def get_config(self):
        return {"batch_input_shape": list(self._batch_input_shape), "dtype": self._dtype,
                "sparse": False, "ragged": False, "name": self._name}

    @property
    def output_shape(self):
        return [tuple(self._batch_input_shape)]


@tf_export("keras.Input", "keras.layers.Input")
def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,
          ragged=None, type_spec=None, batch_shape=None, **kwargs):
    """A Keras tensor: `x = tf.keras.Input(shape=(784,))` is a (None, 784) placeholder."""
    if kwargs.get("batch_input_shape") is not None:
        batch_shape = kwargs.pop("batch_input_shape")
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments: {list(kwargs)}")
    if shape is not None and batch_shape is not None:
        raise ValueError("Only provide the `shape` OR `batch_shape` argument to Input, not "
                         "both at the same time.")
    if shape is None and batch_shape is None and tensor is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` "
                         "argument. Note that `shape` does not include the batch dimension.")
    if shape is not None and not isinstance(shape, (list, tuple)):
        shape = (shape,)
    layer = InputLayer(input_shape=shape, batch_size=batch_size, name=name, dtype=dtype,
                       input_tensor=tensor, sparse=bool(sparse), ragged=bool(ragged),
                       batch_input_shape=batch_shape)
    return layer._inbound_nodes[0].output_tensors[0]
