"""Model: a layer made of layers, with compile / fit / evaluate / predict.

Training is a compiled plan per (model, kind, input signature): the first step of a signature
builds one graph fragment (loss, gradients, optimizer updates, metric updates and their reads)
and a session callable for it; every step after that is one call of that callable, with no
per-op Python. In eager mode the same step ops are traced by tf.function instead (`_EagerPlan`),
and each step is one call of the compiled trace. Plans are cached until the next compile.
"""

import numpy as np

import flowstone as tf
from flowstone.keras import backend as K
from flowstone.keras import callbacks as callbacks_module
from flowstone.keras import losses as losses_module
from flowstone.keras import metrics as metrics_module
from flowstone.keras import optimizers
from flowstone.keras.engine import data_adapter
from flowstone.keras.engine import functional
from flowstone.keras.engine import node as node_module
from flowstone.keras.engine.base_layer import Layer
from flowstone.keras.engine.input_layer import InputLayer
from flowstone.keras.engine.input_spec import assert_input_compatibility
from flowstone.util.tf_export import tf_export


@tf_export("keras.Model", "keras.models.Model")
class Model(Layer):
    """`Model(inputs, outputs)` (functional) or a subclass that defines `call`."""

    def __init__(self, *args, **kwargs):
        inputs = kwargs.pop("inputs", args[0] if len(args) > 0 else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        name = kwargs.pop("name", None)
        trainable = kwargs.pop("trainable", True)
        super().__init__(name=name, trainable=trainable, **kwargs)
        self._is_graph_network = False
        self.inputs, self.outputs = [], []
        self._nodes_by_depth = {}
        self._nested_outputs = False
        self.optimizer = None
        self.compiled_loss = None
        self._plans = {}
        self.run_eagerly = False
        self._compiled = False
        self.stop_training = False
        self.history = None
        if inputs is not None or outputs is not None:
            self._init_graph_network(inputs, outputs)

    # --- the functional graph -----------------------------------------------------------------
    def _init_graph_network(self, inputs, outputs):
        # A one-element list of outputs behaves as that output (predict returns one array).
        self._nested_outputs = isinstance(outputs, (list, tuple)) and len(outputs) > 1
        self._nested_inputs = isinstance(inputs, (list, tuple))
        self.inputs = node_module.flatten(inputs)
        self.outputs = node_module.flatten(outputs)
        for tensor in self.inputs:
            h = node_module.history(tensor)
            if h is None or not isinstance(h.layer, InputLayer):
                raise ValueError("Input tensors to a Functional must come from "
                                 f"`tf.keras.Input`. Received: {tensor} (missing previous "
                                 "layer metadata).")
        self._nodes_by_depth, layers = functional.map_graph_network(self.outputs)
        known_inputs = {id(t) for t in self.inputs}
        for layer in layers:
            if isinstance(layer, InputLayer):
                tensor = layer._inbound_nodes[0].output_tensors[0]
                if id(tensor) not in known_inputs:
                    accessed = [lay.name for lay in layers
                                if not isinstance(lay, InputLayer)]
                    raise ValueError(
                        f"Graph disconnected: cannot obtain value for tensor {tensor} at layer "
                        f'"{layer.name}". The following previous layers were accessed without '
                        f"issue: {accessed}")
        self._layers = layers
        self._tracked_layers[:] = [layer for layer in layers]
        self.input_names = [node_module.history(t).layer.name for t in self.inputs]
        self.output_names = [node_module.history(t).layer.name for t in self.outputs]
        self._is_graph_network = True
        self.built = True

    @property
    def weights(self):
        """Layer by layer, each layer's weights in its own order (Keras's Model.weights and
        get_weights order), then the model's own."""
        weights = []
        for layer in self.layers:
            weights += [w for w in layer.weights if all(w is not o for o in weights)]
        return weights + [w for w in self._trainable_weights + self._non_trainable_weights
                          if all(w is not o for o in weights)]

    @property
    def layers(self):
        if self._is_graph_network:
            return list(self._layers)
        return [layer for layer in self._tracked_layers]

    def get_layer(self, name=None, index=None):
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(self.layers)} layers.")
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in self.layers]}.")

    def call(self, inputs, training=None, mask=None):
        if not self._is_graph_network:
            raise NotImplementedError("Unimplemented `tf.keras.Model.call()`: if you intend "
                                      "to create a `Model` with the Functional API, please "
                                      "provide `inputs` and `outputs` arguments. Otherwise, "
                                      "subclass `Model` with an overridden `call()` method.")
        return functional.run_internal_graph(self, inputs)

    @property
    def input(self):
        if not self.inputs:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return.")
        return self.inputs if self._nested_inputs else self.inputs[0]

    @property
    def output(self):
        if not self.outputs:
            raise AttributeError(f"Layer {self.name} has no inbound nodes.")
        return self.outputs if self._nested_outputs else self.outputs[0]

    @property
    def input_shape(self):
        shapes = [tuple(t.shape.as_list()) for t in self.inputs]
        return shapes if self._nested_inputs and len(shapes) != 1 else shapes[0]

    @property
    def output_shape(self):
        if not self.outputs:
            raise AttributeError("The model has not yet been built.")
        shapes = [tuple(t.shape.as_list()) for t in self.outputs]
        return shapes if self._nested_outputs else shapes[0]

    def get_config(self):
        if not self._is_graph_network:
            raise NotImplementedError(f"Model {type(self).__name__} is a subclassed model: "
                                      "override get_config() to serialize it.")
        return functional.network_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from flowstone.keras.layers import deserialize as deserialize_layer
        inputs, outputs, name = functional.reconstruct_from_config(
            config, lambda data: deserialize_layer(data, custom_objects=custom_objects))
        return cls(inputs=inputs, outputs=outputs, name=name)

    def to_json(self, **kwargs):
        import json
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config(),
                           "keras_version": "2.15.0", "backend": "tensorflow"}, **kwargs)

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None):
        from flowstone.keras.utils import layer_utils
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        layer_utils.print_summary(self, line_length, positions, print_fn)

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None, **kw):
        from flowstone.keras.saving import save
        save.save_model(self, filepath, overwrite, include_optimizer, save_format)

    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        from flowstone.keras.saving import save
        save.save_weights(self, filepath, overwrite, save_format)

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, options=None):
        from flowstone.keras.saving import save
        return save.load_weights(self, filepath, by_name, skip_mismatch)

    # --- compile --------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                sample_weight_mode=None, **kwargs):
        if kwargs:
            raise TypeError(f"Invalid keyword argument(s) in `compile()`: {tuple(kwargs)}. "
                            "Valid keyword arguments include \"cloning\", \"experimental_run_"
                            "tf_function\", \"distribute\", \"target_tensors\", or "
                            "\"sample_weight_mode\".")
        self.optimizer = optimizers.get(optimizer)
        self.loss = loss
        self.compiled_metrics_spec = metrics
        self.compiled_weighted_metrics_spec = weighted_metrics
        self.loss_weights = loss_weights
        self.run_eagerly = bool(run_eagerly)
        self._plans = {}
        self._metric_objects = None
        self._compiled = True

    def _per_output(self, spec, what):
        """`spec` as one entry per output (a single value, a list, or a dict by name)."""
        names = self.output_names
        if isinstance(spec, dict):
            unknown = [k for k in spec if k not in names]
            if unknown:
                raise ValueError(f"Found unexpected {what} key(s) {unknown}. Expected: {names}")
            return [spec.get(n) for n in names]
        if isinstance(spec, (list, tuple)) and not (what == "metrics" and len(names) == 1):
            if len(spec) != len(names):
                raise ValueError(f"When passing a list as {what}, it should have one entry "
                                 f"per model output. The model has {len(names)} outputs, but "
                                 f"you passed {what}={spec}")
            return list(spec)
        return [spec] * len(names)

    def _resolve_metric(self, metric, y_true, y_pred, loss_fn, prefix):
        if metric in ("accuracy", "acc"):
            fn = _resolve_accuracy(y_true, y_pred, loss_fn)
            return metrics_module.MeanMetricWrapper(fn, name=prefix + metric)
        if metric in ("crossentropy", "ce"):
            fn = (losses_module.sparse_categorical_crossentropy
                  if _sparse_targets(y_true, y_pred) else
                  losses_module.binary_crossentropy if y_pred.shape.as_list()[-1] == 1 else
                  losses_module.categorical_crossentropy)
            return metrics_module.MeanMetricWrapper(fn, name=prefix + metric)
        obj = metrics_module.get(metric)
        if isinstance(obj, type) and issubclass(obj, metrics_module.Metric):
            obj = obj()
        if isinstance(obj, metrics_module.Metric):
            if prefix:
                obj.name = prefix + obj.name
            return obj
        name = metric if isinstance(metric, str) else getattr(obj, "__name__", "metric")
        return metrics_module.MeanMetricWrapper(obj, name=prefix + name)

    # --- plans ----------------------------------------------------------------------------------
    def _ensure_built(self, xs):
        if self.built and self.outputs:
            return
        if self._is_graph_network:
            return
        self._build_from_arrays(xs)

    def _build_from_arrays(self, xs):
        """A subclassed or deferred model meets data: placeholders of the data's shapes (in
        eager mode, in Keras's own graph: see backend.get_graph)."""
        graph = K.get_graph()
        with graph.as_default():
            placeholders = []
            for i, array in enumerate(xs):
                dtype = K.floatx() if array.dtype.kind == "f" else tf.as_dtype(array.dtype)
                placeholders.append(tf.placeholder(dtype, [None] + list(array.shape[1:]),
                                                   name=f"input_{i + 1}"))
            outputs = self(placeholders if len(placeholders) > 1 else placeholders[0])
        self.inputs = placeholders
        self.outputs = node_module.flatten(outputs)
        self._nested_outputs = isinstance(outputs, (list, tuple))
        self._nested_inputs = len(placeholders) > 1
        self.input_names = [f"input_{i + 1}" for i in range(len(placeholders))]
        self.output_names = [f"output_{i + 1}" for i in range(len(self.outputs))]
        self.built = True

    def _check_data_shapes(self, xs):
        """Keras's ValueError for data that cannot fit the inputs, before any step runs."""
        if len(xs) != len(self.inputs):
            raise ValueError(f'Layer "{self.name}" expects {len(self.inputs)} input(s), but it '
                             f"received {len(xs)} input tensors.")
        for index, (array, tensor) in enumerate(zip(xs, self.inputs)):
            expected = tensor.shape.as_list()
            actual = [None] + list(array.shape[1:])
            if len(expected) == len(actual) and all(
                    e is None or a is None or e == a for e, a in zip(expected, actual)):
                continue
            for layer, _ in self._consumers(tensor):
                assert_input_compatibility(layer.input_spec, tf.TensorShape(actual), layer.name)
            raise ValueError(f'Input {index} of layer "{self.name}" is incompatible with the '
                             f"layer: expected shape={tuple(expected)}, found "
                             f"shape={tuple(actual)}")

    def _consumers(self, tensor):
        h = node_module.history(tensor)
        if h is None:
            return []
        return [(n.outbound_layer, n) for n in h.layer._outbound_nodes
                if any(t is tensor for t in n.input_tensors)]

    def _metric_objects_for(self, targets, loss_fns):
        if self._metric_objects is not None:
            return self._metric_objects
        multi = len(self.outputs) > 1
        specs = self._per_output(self.compiled_metrics_spec, "metrics")
        objects = []
        for i, (target, output) in enumerate(zip(targets, self.outputs)):
            prefix = f"{self.output_names[i]}_" if multi else ""
            entries = specs[i] or []
            if not isinstance(entries, (list, tuple)):
                entries = [entries]
            objects.append([self._resolve_metric(m, target, output, loss_fns[i], prefix)
                            for m in entries])
        loss_metrics = [metrics_module.Mean(name="loss")]
        if multi:
            loss_metrics += [metrics_module.Mean(name=f"{n}_loss") for n in self.output_names]
        self._metric_objects = (loss_metrics, objects)
        return self._metric_objects

    def _plan(self, kind, xs, ys, with_sample_weights):
        signature = (kind, tuple((a.shape[1:], a.dtype.kind) for a in xs),
                     tuple((a.shape[1:], a.dtype.kind) for a in ys or []), with_sample_weights)
        plan = self._plans.get(signature)
        if plan is None and tf.executing_eagerly():
            plan = self._plans[signature] = _EagerPlan(self, kind, xs, ys, with_sample_weights)
        elif plan is None:
            graph = self.inputs[0].graph
            start = len(K.created_variables(graph))
            with graph.as_default():
                plan = self._make_plan(kind, ys, with_sample_weights)
            # What this step needs initialized: the model's weights and whatever building the
            # step made (optimizer slots, metric state), not every variable of the graph.
            plan.variables = (self.weights + K.created_variables(graph, start) +
                              [v for m in self.metrics for v in m.variables])
            self._plans[signature] = plan
        return plan

    def _make_plan(self, kind, ys, with_sample_weights):
        feeds = list(self.inputs)
        learning_phase = K.symbolic_learning_phase()
        if kind == "predict":
            return _Plan(feeds, list(self.outputs), [], learning_phase, False)
        self._check_compiled(ys)
        with tf.name_scope(None):
            targets, weights = [], []
            for name, array, output in zip(self.output_names, ys, self.outputs):
                dtype = _target_dtype(array, output)
                targets.append(tf.placeholder(dtype, [None] + list(array.shape[1:]),
                                              name=f"{name}_target"))
                weights.append(tf.placeholder(K.floatx(), [None], name=f"{name}_sample_weights")
                               if with_sample_weights else None)
        total, updates, metrics = self._losses_and_metrics(self.outputs, targets, weights)
        if kind == "train":
            trainable = self._trainable_for_step()
            with tf.name_scope("training"):
                updates.append(self.optimizer.get_updates(total, trainable))
            updates += self.updates
        results, names = _results_after(updates, metrics)
        feeds += targets + [w for w in weights if w is not None]
        return _Plan(feeds, results, names, learning_phase, kind == "train", metrics)

    def _check_compiled(self, ys):
        if not self._compiled:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")
        if len(ys) != len(self.outputs):
            raise ValueError(f"Expected {len(self.outputs)} targets, got {len(ys)}: the model "
                             f"has outputs {self.output_names}.")

    def _trainable_for_step(self):
        trainable = self.trainable_weights
        if not trainable:
            raise ValueError("No trainable weights to train: every layer of the model is "
                             "frozen (trainable=False).")
        return trainable

    def _losses_and_metrics(self, outputs, targets, weights):
        """The total loss of one batch, the metric updates, and the metrics in Keras's order
        (loss first): one step's ops, for a graph-mode plan or a traced eager step alike."""
        loss_fns = [_as_loss_object(spec) for spec in self._per_output(self.loss, "loss")]
        if any(fn is None for fn in loss_fns):
            raise ValueError("No loss found. You may have forgotten to provide a `loss` "
                             "argument in the `compile()` method.")
        loss_weights = self._per_output(self.loss_weights, "loss_weights") \
            if self.loss_weights is not None else [1.0] * len(outputs)
        loss_metrics, metric_objects = self._metric_objects_for(targets, loss_fns)
        with tf.name_scope("loss"):
            per_output = [fn(t, o, w) for fn, t, o, w in zip(loss_fns, targets, outputs,
                                                             weights)]
            total = tf.add_n([tf.cast(lw, o.dtype) * loss if lw != 1.0 else loss
                              for lw, loss, o in zip(loss_weights, per_output, outputs)])
            regularization = _losses_in_this_graph(self.losses)
            if regularization:
                total = total + tf.add_n([tf.cast(r, total.dtype) for r in regularization])
        batch = tf.cast(tf.shape(outputs[0])[0], K.floatx())
        updates = [loss_metrics[0].update_state(total, batch)]
        updates += [m.update_state(v, batch) for m, v in zip(loss_metrics[1:], per_output)]
        for target, output, weight, objects in zip(targets, outputs, weights, metric_objects):
            updates += [m.update_state(target, output, sample_weight=weight) for m in objects]
        return total, updates, loss_metrics + [m for group in metric_objects for m in group]

    @property
    def metrics(self):
        if not getattr(self, "_metric_objects", None):
            return []
        loss_metrics, objects = self._metric_objects
        return loss_metrics + [m for group in objects for m in group]

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        variables = [v for m in self.metrics for v in m.variables]
        if not variables:
            return
        K.batch_set_value([(v, np.zeros(v.shape.as_list(), v.dtype.as_numpy_dtype))
                           for v in variables])

    # --- data -----------------------------------------------------------------------------------
    def _prepare_arrays(self, x, y=None, sample_weight=None, class_weight=None):
        input_names = getattr(self, "input_names", None) or []
        xs = data_adapter.as_list(x, input_names, "input")
        if not self.outputs and not self._is_graph_network:
            self._ensure_built(xs)
        ys = data_adapter.as_list(y, self.output_names, "output") if y is not None else None
        sws = None
        if sample_weight is not None:
            sws = data_adapter.as_list(sample_weight, self.output_names, "sample_weight")
            if len(sws) == 1 and len(self.outputs) > 1:
                sws = sws * len(self.outputs)
        if class_weight is not None and ys is not None:
            if isinstance(class_weight, dict) and class_weight and \
                    all(isinstance(v, dict) for v in class_weight.values()):
                per_output = [class_weight.get(n) for n in self.output_names]
            else:
                per_output = [class_weight] * len(ys)
            derived = [None if cw is None else data_adapter.class_weights_for(y_i, cw)
                       for cw, y_i in zip(per_output, ys)]
            if sws is None:
                sws = [d if d is not None else np.ones(len(y_i), np.float32)
                       for d, y_i in zip(derived, ys)]
            else:
                sws = [s if d is None else s * d for s, d in zip(sws, derived)]
        if sws is not None:
            sws = [np.asarray(s, dtype=np.float32).reshape(len(s), -1)[:, 0]
                   if np.ndim(s) > 1 else np.asarray(s, np.float32) for s in sws]
        data_adapter.num_samples(xs, ys, sws)
        return xs, ys, sws

    def _run_plan(self, kind, xs, ys, sws):
        self._ensure_built(xs)
        self._check_data_shapes(xs)
        plan = self._plan(kind, xs, ys, sws is not None)
        return plan.run(xs + (ys or []) + (sws or []))

    # --- fit ------------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, max_queue_size=10, workers=1,
            use_multiprocessing=False):
        verbose = 1 if verbose == "auto" else verbose
        batch_size = batch_size or 32
        source = _BatchSource.from_fit(self, x, y, sample_weight, class_weight, batch_size,
                                       shuffle, validation_split, steps_per_epoch)
        val_source = None
        if validation_data is not None:
            val_source = _BatchSource.from_validation(self, validation_data,
                                                      validation_batch_size or batch_size,
                                                      validation_steps)
        elif source.validation is not None:
            val_source = source.validation
        history = callbacks_module.History()
        callback_list = callbacks_module.CallbackList(
            list(callbacks or []) + [history], add_progbar=verbose != 0, model=self,
            verbose=verbose, epochs=epochs, steps=source.steps)
        self.stop_training = False
        callback_list.on_train_begin()
        logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            logs = {}
            for step, (xs, ys, sws) in enumerate(source.epoch()):
                callback_list.on_train_batch_begin(step)
                logs = self._run_plan("train", xs, ys, sws)
                callback_list.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            if source.exhausted:
                self.stop_training = True
            logs = dict(logs)
            if val_source is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate_source(val_source, None)
                logs.update({"val_" + k: v for k, v in val_logs.items()})
            callback_list.on_epoch_end(epoch, logs)
            if self.stop_training:
                break
        callback_list.on_train_end(logs)
        self.history = history
        return history

    def _evaluate_source(self, source, callback_list):
        self.reset_metrics()
        logs = {}
        for step, (xs, ys, sws) in enumerate(source.epoch()):
            if callback_list is not None:
                callback_list.on_test_batch_begin(step)
            logs = self._run_plan("test", xs, ys, sws)
            if callback_list is not None:
                callback_list.on_test_batch_end(step, logs)
        return dict(logs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, max_queue_size=10, workers=1,
                 use_multiprocessing=False, return_dict=False, **kwargs):
        verbose = 1 if verbose == "auto" else verbose
        source = _BatchSource.from_fit(self, x, y, sample_weight, None, batch_size or 32,
                                       False, 0.0, steps)
        callback_list = callbacks_module.CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=1,
            steps=source.steps)
        callback_list.on_test_begin()
        logs = self._evaluate_source(source, callback_list)
        callback_list.on_test_end(logs)
        if return_dict:
            return logs
        values = [logs[n] for n in self.metrics_names]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None,
                max_queue_size=10, workers=1, use_multiprocessing=False):
        verbose = 1 if verbose == "auto" else verbose
        source = _BatchSource.from_fit(self, x, None, None, None, batch_size or 32, False,
                                       0.0, steps)
        callback_list = callbacks_module.CallbackList(
            callbacks, add_progbar=verbose != 0, model=self, verbose=verbose, epochs=1,
            steps=source.steps)
        callback_list.on_predict_begin()
        chunks = None
        for step, (xs, _, _) in enumerate(source.epoch()):
            callback_list.on_predict_batch_begin(step)
            outputs = self._run_plan("predict", xs, None, None)
            chunks = [[] for _ in outputs] if chunks is None else chunks
            for chunk, value in zip(chunks, outputs):
                chunk.append(value)
            callback_list.on_predict_batch_end(step, {"outputs": outputs})
        callback_list.on_predict_end()
        if chunks is None:
            raise ValueError("Unexpected result of `predict_function` (Empty batch_outputs). "
                             "Please use `Model.compile(..., run_eagerly=True)`, or "
                             "`tf.config.run_functions_eagerly(True)` for more information "
                             "of where went wrong, or file a issue/bug to `tf.keras`.")
        results = [np.concatenate(chunk) for chunk in chunks]
        return results if self._nested_outputs else results[0]

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        xs, ys, sws = self._prepare_arrays(x, y, sample_weight, class_weight)
        if reset_metrics:
            self._ensure_built(xs)
            self._plan("train", xs, ys, sws is not None)
            self.reset_metrics()
        logs = self._run_plan("train", xs, ys, sws)
        return self._batch_result(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True,
                      return_dict=False):
        xs, ys, sws = self._prepare_arrays(x, y, sample_weight)
        if reset_metrics:
            self._ensure_built(xs)
            self._plan("test", xs, ys, sws is not None)
            self.reset_metrics()
        logs = self._run_plan("test", xs, ys, sws)
        return self._batch_result(logs, return_dict)

    def predict_on_batch(self, x):
        xs, _, _ = self._prepare_arrays(x)
        outputs = self._run_plan("predict", xs, None, None)
        return outputs if self._nested_outputs else outputs[0]

    def _batch_result(self, logs, return_dict):
        if return_dict:
            return logs
        values = [logs[n] for n in self.metrics_names]
        return values[0] if len(values) == 1 else values


class _Plan:
    """One compiled step: the session callable for (feeds + learning phase) -> fetches."""

    def __init__(self, feeds, fetches, names, learning_phase, training, metrics=()):
        self.feeds, self.fetches, self.names = feeds, fetches, names
        self.learning_phase, self.training = learning_phase, training
        self.metrics = list(metrics)
        self.variables = []
        self._callable = None
        self._session = None

    def run(self, arrays):
        session = K.session_with(self.variables)
        if self._callable is None or self._session is not session:
            self._callable = session.make_callable(self.fetches,
                                                   self.feeds + [self.learning_phase])
            self._session = session
        values = self._callable(*arrays, self.training)
        if not self.names:
            return values
        return {name: float(v) for name, v in zip(self.names, values)}


class _EagerPlan:
    """One step in eager mode: the same step ops as a graph-mode plan (`_losses_and_metrics`),
    traced once by tf.function for inputs of any batch size, so that each batch is one call of
    the compiled trace. With `compile(run_eagerly=True)` the step runs op by op instead."""

    def __init__(self, model, kind, xs, ys, with_sample_weights):
        self.model, self.kind = model, kind
        ys = ys or []
        if kind != "predict":
            model._check_compiled(ys)
        outputs = model.outputs or [None] * len(ys)
        inputs = model.inputs if len(model.inputs) == len(xs) else [None] * len(xs)
        self.dtypes = ([_input_dtype(a, i) for a, i in zip(xs, inputs)] +
                       [_target_dtype(a, o) for a, o in zip(ys, outputs)] +
                       [tf.as_dtype(K.floatx())] * (len(ys) if with_sample_weights else 0))
        shapes = [[None] + list(a.shape[1:]) for a in xs + ys] + \
            [[None]] * (len(ys) if with_sample_weights else 0)
        self.counts = (len(xs), len(ys))
        self.names = None
        if model.run_eagerly:
            self.function = self._step
        else:
            specs = [tf.TensorSpec(shape, dtype) for shape, dtype in zip(shapes, self.dtypes)]
            self.function = tf.function(self._step, input_signature=specs)

    def _step(self, *tensors):
        model, (num_x, num_y) = self.model, self.counts
        inputs = list(tensors[:num_x])
        x = inputs if model._nested_inputs or num_x > 1 else inputs[0]
        if self.kind == "predict":
            return node_module.flatten(model(x, training=False))
        targets = list(tensors[num_x:num_x + num_y])
        weights = list(tensors[num_x + num_y:]) or [None] * num_y
        training = self.kind == "train"
        with tf.GradientTape() as tape:
            outputs = node_module.flatten(model(x, training=training))
            total, updates, metrics = model._losses_and_metrics(outputs, targets, weights)
        if training:
            trainable = model._trainable_for_step()
            grads = model.optimizer._clip(tape.gradient(total, trainable))
            if all(g is None for g in grads):
                raise ValueError("No gradients provided for any variable: "
                                 f"{[v.name for v in trainable]}.")
            updates.append(model.optimizer.apply_gradients(zip(grads, trainable)))
        results, self.names = _results_after(updates, metrics)
        return results

    def run(self, arrays):
        values = self.function(*[tf.convert_to_tensor(np.asarray(a, dtype.as_numpy_dtype))
                                 for a, dtype in zip(arrays, self.dtypes)])
        if self.kind == "predict":
            return [v.numpy() for v in values]
        return {name: float(v.numpy()) for name, v in zip(self.names, values)}


def _results_after(updates, metrics):
    """Each metric's result, read after the step's updates; and the metrics' names."""
    with tf.control_dependencies([u for u in updates if u is not None]):
        results = [m.result() for m in metrics]
    return results, [m.name for m in metrics]


def _losses_in_this_graph(losses):
    """The losses a step can add: those computed in the graph being built (a Keras tensor of
    another graph, an activity penalty of the symbolic model, say, is not this step's)."""
    from flowstone.framework.eager import EagerTensor
    graph = None if tf.executing_eagerly() else tf.get_default_graph()
    kept = []
    for loss in losses:
        if isinstance(loss, EagerTensor):
            if graph is None:
                kept.append(loss)
        elif not isinstance(loss, tf.Tensor) or loss.graph is graph:
            kept.append(loss)
    return kept


def _input_dtype(array, model_input):
    if model_input is not None:
        return model_input.dtype
    return tf.as_dtype(K.floatx() if array.dtype.kind == "f" else array.dtype)


def _target_dtype(array, output):
    if array.dtype.kind in "fc":
        return output.dtype if output is not None else tf.as_dtype(K.floatx())
    return tf.as_dtype(array.dtype)


def _sparse_targets(y_true, y_pred):
    true_rank, pred_rank = y_true.shape.ndims, y_pred.shape.ndims
    true_last = y_true.shape.as_list()[-1] if true_rank else None
    return true_rank is not None and pred_rank is not None and (
        true_rank < pred_rank or (true_last == 1 and (y_pred.shape.as_list()[-1] or 0) > 1))


def _resolve_accuracy(y_true, y_pred, loss_fn):
    """Keras's choice for 'accuracy': binary for one output unit (or a binary crossentropy
    loss), sparse categorical for integer labels, categorical for one-hot labels."""
    loss_name = getattr(getattr(loss_fn, "fn", loss_fn), "__name__", "")
    if y_pred.shape.as_list()[-1] == 1 or loss_name == "binary_crossentropy":
        return metrics_module.binary_accuracy
    if _sparse_targets(y_true, y_pred):
        return metrics_module.sparse_categorical_accuracy
    return metrics_module.categorical_accuracy


def _as_loss_object(spec):
    if spec is None:
        return None
    loss = losses_module.get(spec)
    if isinstance(loss, type) and issubclass(loss, losses_module.Loss):
        loss = loss()
    if isinstance(loss, losses_module.Loss):
        return loss
    return losses_module.LossFunctionWrapper(loss, name=getattr(loss, "__name__", "loss"))


class _BatchSource:
    """Batches for one epoch at a time, from arrays, a generator or a Sequence."""

    def __init__(self):
        self.validation = None
        self.steps = None
        self.exhausted = False

    @classmethod
    def from_fit(cls, model, x, y, sample_weight, class_weight, batch_size, shuffle,
                 validation_split, steps):
        source = cls()
        if data_adapter.is_dataset(x):
            source._dataset(model, x, steps, class_weight)
            return source
        if data_adapter.is_generator_like(x) and not isinstance(x, np.ndarray):
            source._generator(model, x, steps, class_weight)
            return source
        xs, ys, sws = model._prepare_arrays(x, y, sample_weight, class_weight)
        if validation_split:
            if not 0.0 < validation_split < 1.0:
                raise ValueError("`validation_split` must be in the range [0, 1). Received: "
                                 f"validation_split={validation_split}")
            n = data_adapter.num_samples(xs, ys, sws)
            split = int(n * (1.0 - validation_split))
            if split == 0 or split == n:
                raise ValueError(f"Training data contains {n} samples, which is not "
                                 "sufficient to split it into a validation and training set "
                                 f"as specified by `validation_split={validation_split}`. "
                                 "Either provide more data, or a different value for the "
                                 "`validation_split` argument.")
            val = cls()
            val._arrays(data_adapter.take(xs, slice(split, None)),
                        data_adapter.take(ys, slice(split, None)),
                        data_adapter.take(sws, slice(split, None)), batch_size, False, None)
            source.validation = val
            xs, ys = data_adapter.take(xs, slice(0, split)), data_adapter.take(ys, slice(0, split))
            sws = data_adapter.take(sws, slice(0, split))
        source._arrays(xs, ys, sws, batch_size, shuffle, steps)
        return source

    @classmethod
    def from_validation(cls, model, data, batch_size, steps):
        if data_adapter.is_dataset(data) or data_adapter.is_generator_like(data) and not isinstance(data, (tuple, list)):
            return cls.from_fit(model, data, None, None, None, batch_size, False, 0.0, steps)
        x, y, sw = data_adapter.unpack(tuple(data))
        return cls.from_fit(model, x, y, sw, None, batch_size, False, 0.0, None)

    def _arrays(self, xs, ys, sws, batch_size, shuffle, steps):
        n = data_adapter.num_samples(xs, ys, sws)
        self.steps = -(-n // batch_size) if steps is None else steps

        def epoch():
            for index in data_adapter.array_batches(n, batch_size, shuffle)[:self.steps]:
                yield (data_adapter.take(xs, index), data_adapter.take(ys, index),
                       data_adapter.take(sws, index))
        self.epoch = epoch

    def _generator(self, model, data, steps, class_weight):
        is_sequence = hasattr(data, "__getitem__") and hasattr(data, "__len__")
        if steps is None:
            if not is_sequence:
                raise ValueError("When using a generator as input, you must specify "
                                 "`steps_per_epoch` (or `steps` for evaluate and predict).")
            steps = len(data)
        self.steps = steps

        def epoch():
            iterator = iter(data) if is_sequence else data
            for step in range(steps):
                batch = data[step] if is_sequence else next(iterator)
                x, y, sw = data_adapter.unpack(batch)
                yield model._prepare_arrays(x, y, sw, class_weight)
            if is_sequence and hasattr(data, "on_epoch_end"):
                data.on_epoch_end()
        self.epoch = epoch

    def _dataset(self, model, dataset, steps, class_weight):
        """Batches of a tf.data dataset, as numpy arrays. Without `steps` an epoch is the whole
        dataset, from a fresh iterator; with `steps` one iterator runs on across epochs (an
        infinite dataset needs `steps`), and running out of data stops training, with
        Keras's warning."""
        self.steps = steps
        self.exhausted = False
        batches = None

        def epoch():
            nonlocal batches
            if batches is None:
                batches = data_adapter.DatasetBatches(dataset)
            elif steps is None:
                batches.restart()
            step = 0
            while steps is None or step < steps:
                batch = batches.next()
                if batch is None:
                    if steps is not None:
                        self.exhausted = True
                        print("WARNING: Your input ran out of data; interrupting training. "
                              "Make sure that your dataset or generator can generate at least "
                              "`steps_per_epoch * epochs` batches (in this case, "
                              f"{steps} batches). You may need to use the repeat() function "
                              "when building your dataset.")
                    return
                x, y, sw = data_adapter.unpack(batch)
                yield model._prepare_arrays(x, y, sw, class_weight)
                step += 1
        self.epoch = epoch
