"""Keras 2's HDF5 layout, read and written with h5py (an optional dependency):

    /                      attrs: keras_version, backend, model_config (JSON), training_config
    /model_weights         attrs: layer_names, backend, keras_version
    /model_weights/<layer> attrs: weight_names ("dense/kernel:0", ...)
    /model_weights/<layer>/<weight name>   one dataset per weight

`save_weights` writes the /model_weights part at the root of its file. Weights load by order:
the n-th layer that has weights in the file goes to the n-th such layer of the model (or by
layer name with by_name=True).
"""

import json

import numpy as np

from flowstone.keras import backend as K

KERAS_VERSION = "2.15.0"


def import_h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("`save_model()` and `load_model()` in HDF5 (.h5) format need h5py, "
                          "which is not installed. Install it with `pip install h5py`, or "
                          "save weights in the TensorFlow checkpoint format "
                          "(`model.save_weights('ckpt')`).") from None
    return h5py


def _text(value):
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def layers_with_weights(model):
    return [layer for layer in model.layers if layer.weights]


def save_weights_to_group(group, model):
    layers = model.layers
    group.attrs["layer_names"] = np.array([layer.name.encode("utf8") for layer in layers])
    group.attrs["backend"] = "tensorflow".encode("utf8")
    group.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    all_weights = [layer.weights for layer in layers]
    values = iter(K.batch_get_value([w for weights in all_weights for w in weights]))
    for layer, weights in zip(layers, all_weights):
        layer_group = group.create_group(layer.name)
        names = [_weight_name(w) for w in weights]
        layer_group.attrs["weight_names"] = np.array([n.encode("utf8") for n in names])
        for name, weight in zip(names, weights):
            value = next(values)
            dataset = layer_group.create_dataset(name, value.shape, dtype=value.dtype)
            dataset[()] = value


def _weight_name(weight):
    return weight.name


def _read_layer_weights(group, name):
    layer_group = group[name]
    names = [_text(n) for n in layer_group.attrs.get("weight_names", [])]
    return [np.asarray(layer_group[n]) for n in names]


def load_weights_from_group(group, model, by_name=False, skip_mismatch=False):
    names = [_text(n) for n in group.attrs["layer_names"]]
    stored = [(name, _read_layer_weights(group, name)) for name in names]
    stored = [(name, values) for name, values in stored if values]
    pairs = []
    if by_name:
        by_layer_name = dict(stored)
        for layer in model.layers:
            values = by_layer_name.get(layer.name)
            if values is None:
                continue
            if not _matches(layer, values, skip_mismatch):
                continue
            pairs += list(zip(layer.weights, values))
    else:
        layers = layers_with_weights(model)
        if len(layers) != len(stored):
            raise ValueError(f"Layer count mismatch when loading weights from file. Model "
                             f"expected {len(layers)} layers, found {len(stored)} saved "
                             "layers.")
        for layer, (_, values) in zip(layers, stored):
            _matches(layer, values, False)
            pairs += list(zip(layer.weights, values))
    K.batch_set_value(pairs)


def _matches(layer, values, skip_mismatch):
    weights = layer.weights
    problem = None
    if len(weights) != len(values):
        problem = (f"Weight count mismatch for layer {layer.name}: the layer expects "
                   f"{len(weights)} weight(s), the file has {len(values)}.")
    else:
        for weight, value in zip(weights, values):
            if tuple(weight.shape.as_list()) != value.shape:
                problem = (f"Shape mismatch in layer {layer.name} for weight {weight.name}. "
                           f"Weight expects shape {tuple(weight.shape.as_list())}. Received "
                           f"saved weight with shape {value.shape}")
                break
    if problem is None:
        return True
    if skip_mismatch:
        return False
    raise ValueError(problem)


def training_config(model):
    from flowstone.keras import losses, metrics, optimizers

    def loss_spec(loss):
        if isinstance(loss, dict):
            return {k: loss_spec(v) for k, v in loss.items()}
        if isinstance(loss, (list, tuple)):
            return [loss_spec(v) for v in loss]
        if isinstance(loss, str) or loss is None:
            return loss
        return losses.serialize(loss)

    def metric_spec(metric):
        if isinstance(metric, (list, tuple)):
            return [metric_spec(m) for m in metric]
        if isinstance(metric, dict):
            return {k: metric_spec(v) for k, v in metric.items()}
        if isinstance(metric, str) or metric is None:
            return metric
        return metrics.serialize(metric)

    return {"loss": loss_spec(model.loss),
            "metrics": metric_spec(model.compiled_metrics_spec),
            "weighted_metrics": None, "loss_weights": model.loss_weights,
            "optimizer_config": optimizers.serialize(model.optimizer)}


def write_model(h5file, model, include_optimizer=True):
    h5file.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    h5file.attrs["backend"] = "tensorflow".encode("utf8")
    config = {"class_name": type(model).__name__, "config": model.get_config()}
    h5file.attrs["model_config"] = json.dumps(config).encode("utf8")
    if include_optimizer and getattr(model, "optimizer", None) is not None and \
            getattr(model, "_compiled", False):
        h5file.attrs["training_config"] = json.dumps(training_config(model)).encode("utf8")
    save_weights_to_group(h5file.create_group("model_weights"), model)


def compile_args(config, custom_objects):
    """compile() arguments from a training_config (ours or one tf-keras wrote)."""
    from flowstone.keras import optimizers

    def metric(spec):
        if isinstance(spec, list):
            return [metric(s) for s in spec]
        if isinstance(spec, dict) and spec.get("class_name") == "MeanMetricWrapper":
            return spec["config"].get("name") or spec["config"].get("fn")
        return spec

    optimizer_config = config["optimizer_config"]
    if isinstance(optimizer_config, dict) and "config" in optimizer_config:
        optimizer_config = {"class_name": optimizer_config["class_name"],
                            "config": optimizer_config["config"]}
    metrics = metric(config.get("metrics"))
    if isinstance(metrics, list) and len(metrics) == 1 and isinstance(metrics[0], list):
        metrics = metrics[0]
    return {"optimizer": optimizers.deserialize(optimizer_config, custom_objects),
            "loss": config.get("loss"), "metrics": metrics,
            "loss_weights": config.get("loss_weights")}


def read_model(h5file, custom_objects=None, compile=True):  # noqa: A002 - Keras's name
    from flowstone.keras.layers import deserialize
    raw = h5file.attrs.get("model_config")
    if raw is None:
        raise ValueError("No model config found in the file at "
                         f"{h5file.filename}. It holds weights only: build the model and "
                         "call `model.load_weights(path)`.")
    model = deserialize(json.loads(_text(raw)), custom_objects=custom_objects)
    load_weights_from_group(h5file["model_weights"], model)
    raw_training = h5file.attrs.get("training_config")
    if compile and raw_training is not None:
        model.compile(**compile_args(json.loads(_text(raw_training)), custom_objects))
    return model
