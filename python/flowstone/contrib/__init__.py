"""tf.contrib: the parts of TF1's contrib that programs use most.

Provided: layers, framework, rnn, seq2seq, training (HParams, evaluate_once), crf, opt, metrics,
distributions, lookup and eager (the last filled by tf_export from the eager modules). Any other
tf.contrib module raises an AttributeError (ImportError when imported) that says it is not
provided and names its replacement, from UNPROVIDED below.
"""

from flowstone.contrib import (crf, distributions, framework, layers, lookup,  # noqa: F401
                               metrics, opt, rnn, seq2seq, training)

# Modules of TF 1.15's tf.contrib that Flowstone does not provide, with where their users should
# go instead (None: no replacement in Flowstone).
UNPROVIDED = {
    "slim": "the tf_slim package (pip install tf-slim), which runs on Flowstone under "
            "`python -m flowstone run` or flowstone.install_as_tensorflow()",
    "learn": "tf.estimator", "estimator": "tf.estimator", "keras": "tf.keras",
    "data": "tf.data", "summary": "tf.summary", "tensorboard": "tf.summary",
    "losses": "tf.losses", "image": "tf.image", "signal": "tf.signal",
    "nn": "tf.nn", "distribute": "tf.distribute", "checkpoint": "tf.train.Checkpoint",
    "autograph": "tf.function", "cudnn_rnn": "tf.contrib.rnn or tf.keras.layers.LSTM",
    "legacy_seq2seq": "tf.contrib.seq2seq.sequence_loss and tf.nn.dynamic_rnn",
    "bayesflow": "the tensorflow_probability package",
    "lite": None, "tpu": None, "quantize": None,
    "factorization": None, "tensor_forest": None, "boosted_trees": None,
    "graph_editor": None, "predictor": "tf.saved_model.loader.load", "text": None,
    "timeseries": None, "util": None, "compiler": None, "memory_stats": None, "ffmpeg": None,
    "labeled_tensor": None, "linear_optimizer": None, "stateless": "tf.random.stateless_*",
    "integrate": None, "recurrent": None, "gan": None, "input_pipeline": "tf.data",
    "kernel_methods": None, "mixed_precision": None, "model_pruning": None,
    "proto": None, "resampler": None, "rpc": None, "session_bundle": "tf.saved_model",
    "solvers": None, "sparsemax": None, "specs": None, "staging": None, "tfprof": None,
    "hooks": "tf.train hooks", "cluster_resolver": None, "constrained_optimization": None,
    "copy_graph": None, "deprecated": "tf.summary", "framework_ops": None, "grid_rnn": None,
    "hadoop": None, "layers_impl": None, "meta_graph_transform": None, "nccl": None,
    "periodic_resample": None, "receptive_field": None, "reduce_slice_ops": None,
    "seq2seq_impl": None, "testing": None,
}


def not_provided_message(name):
    """Why tf.contrib.<name> is missing and what to use instead."""
    provided = ("layers, framework, rnn, seq2seq, training, crf, opt, metrics, distributions, "
                "lookup, eager")
    if name in UNPROVIDED:
        replacement = UNPROVIDED[name]
        instead = f"; use {replacement} instead" if replacement else ""
        return f"tf.contrib.{name} is not provided by Flowstone{instead}"
    return (f"tf.contrib has no module '{name}' in Flowstone (it provides {provided})")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(not_provided_message(name))
