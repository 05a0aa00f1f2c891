"""tf.keras.models: Model, Sequential, and loading and cloning models."""

import json

from flowstone.keras.engine.sequential import Sequential
from flowstone.keras.engine.training import Model
from flowstone.keras.saving.save import load_model, save_model
from flowstone.util.tf_export import tf_export

__all__ = ["Model", "Sequential", "load_model", "save_model", "model_from_json",
           "model_from_config", "clone_model"]


@tf_export("keras.models.model_from_config")
def model_from_config(config, custom_objects=None):
    from flowstone.keras.layers import deserialize
    return deserialize(config, custom_objects=custom_objects)


@tf_export("keras.models.model_from_json")
def model_from_json(json_string, custom_objects=None):
    return model_from_config(json.loads(json_string), custom_objects=custom_objects)


@tf_export("keras.models.clone_model")
def clone_model(model, input_tensors=None, clone_function=None):
    """A new model with the same architecture and fresh weights."""
    if input_tensors is not None or clone_function is not None:
        raise NotImplementedError("clone_model(input_tensors=..., clone_function=...) is not "
                                  "supported.")
    return model_from_config({"class_name": type(model).__name__,
                              "config": model.get_config()})
