"""tf.keras.layers: every layer family, and (de)serialization of layers by config."""

from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_layer import Input, InputLayer
from flowstone.keras.engine.input_spec import InputSpec
from flowstone.keras.layers.advanced_activations import ELU, LeakyReLU, PReLU, ReLU, Softmax
from flowstone.keras.layers.attention import Attention, MultiHeadAttention
from flowstone.keras.layers.convolutional import (Conv1D, Conv2D, Conv2DTranspose, Cropping2D,
                                                  DepthwiseConv2D, SeparableConv2D,
                                                  UpSampling2D, ZeroPadding2D)
from flowstone.keras.layers.core import (Activation, ActivityRegularization, Dense, Dropout,
                                         Flatten, Lambda, Masking, Permute, RepeatVector,
                                         Reshape)
from flowstone.keras.layers.embeddings import Embedding
from flowstone.keras.layers.image_preprocessing import CenterCrop, Resizing
from flowstone.keras.layers.merge import (Add, Average, Concatenate, Dot, Maximum, Minimum,
                                          Multiply, Subtract, add, average, concatenate, dot,
                                          maximum, minimum, multiply, subtract)
from flowstone.keras.layers.normalization import BatchNormalization, LayerNormalization
from flowstone.keras.layers.preprocessing import Normalization, Rescaling
from flowstone.keras.layers.pooling import (AveragePooling1D, AveragePooling2D,
                                            GlobalAveragePooling1D, GlobalAveragePooling2D,
                                            GlobalMaxPooling1D, GlobalMaxPooling2D,
                                            MaxPooling1D, MaxPooling2D)
from flowstone.keras.layers.recurrent import (GRU, LSTM, RNN, Bidirectional, GRUCell, LSTMCell,
                                              SimpleRNN, SimpleRNNCell, TimeDistributed)
from flowstone.keras.utils.generic_utils import deserialize_keras_object
from flowstone.util.tf_export import tf_export

_LAYER_CLASSES = {name: value for name, value in dict(globals()).items()
                  if isinstance(value, type) and issubclass(value, Layer)}


@tf_export("keras.layers.serialize")
def serialize(layer):
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


@tf_export("keras.layers.deserialize")
def deserialize(config, custom_objects=None):
    """A layer (or model) from {'class_name': ..., 'config': ...}."""
    from flowstone.keras.engine.sequential import Sequential
    from flowstone.keras.engine.training import Model
    objects = dict(_LAYER_CLASSES)
    objects.update({"Sequential": Sequential, "Model": Model, "Functional": Model})
    return deserialize_keras_object(config, objects, custom_objects,
                                    printable_module_name="layer")
