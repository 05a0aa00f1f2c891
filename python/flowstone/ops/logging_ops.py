"""tf.Print (prints when its output is computed) and tf.print (an op that prints when it runs)."""

import os
import sys

from flowstone.framework import ops as _ops
from flowstone.ops.check_ops import split_string_data
from flowstone.util import nest
from flowstone.util.tf_export import tf_export


@tf_export("Print")
def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """`input_`, unchanged; computing it prints `message` and then each item of `data` as
    "[values]" (at most `summarize` values each, 3 by default) to stderr, only the first
    `first_n` times when it is given."""
    input_ = _ops.convert_to_tensor(input_)
    tensors, attrs = split_string_data(data)
    attrs.update({
        "message": message or "",
        "first_n": -1 if first_n is None else first_n,
        "summarize": 3 if summarize is None else summarize,
    })
    return _ops.apply_op("Print", [input_, tensors], attrs, name=name or "Print").outputs[0]


_LOG_LEVELS = {"info": "info", "warning": "warning", "warn": "warning", "error": "error"}


def _stream_name(output_stream):
    """tf.print's output_stream as the op's attr: "stderr", "stdout", "log(<level>)" for a logging
    function (tf.logging.info, logging.warning, ...) or a "file://" path."""
    if output_stream is None or output_stream in (sys.stderr, sys.__stderr__):
        return "stderr"
    if output_stream in (sys.stdout, sys.__stdout__):
        return "stdout"
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    level = _LOG_LEVELS.get(getattr(output_stream, "__name__", None))
    if callable(output_stream) and level and "logging" in getattr(output_stream, "__module__", ""):
        return f"log({level})"
    raise ValueError(f"Unsupported output stream, logging level, or file.{output_stream}. "
                     "Supported streams are sys.stdout, sys.stderr, tf.logging.info, "
                     "tf.logging.warning, tf.logging.error, or a 'file://' path.")


# Where each tensor goes in the printed text; no printed string contains NUL characters.
_PLACEHOLDER = "\0{}\0"


def _template_of(value, tensors):
    """The text printed for one input of tf.print, with a placeholder per tensor in it (which are
    appended to `tensors`)."""
    if isinstance(value, _ops.Tensor):
        tensors.append(value)
        return _PLACEHOLDER
    if isinstance(value, str):
        return value
    if nest.is_nested(value) and any(isinstance(v, _ops.Tensor) for v in nest.flatten(value)):
        replaced = nest.map_structure(
            lambda v: _PLACEHOLDER if isinstance(v, _ops.Tensor) else v, value)
        tensors.extend(v for v in nest.flatten(value) if isinstance(v, _ops.Tensor))
        return str(replaced).replace(repr(_PLACEHOLDER), _PLACEHOLDER)
    return str(value)


@tf_export("print")
def print_v2(*inputs, output_stream=None, summarize=3, sep=" ", end=os.linesep, name=None):
    """An op printing `inputs` (tensors, strings and structures holding tensors), separated by
    `sep` and followed by `end`, to `output_stream` (sys.stderr by default) when it runs; tensors show the first and last
    `summarize` entries of each dimension (all when summarize is -1). In a graph it prints only
    when run or depended on, as in TensorFlow 1."""
    stream = _stream_name(output_stream)
    tensors = []
    parts = [_template_of(value, tensors) for value in inputs]
    return _ops.apply_op("PrintFormatted", [tensors], {
        "template": sep.join(parts),
        "placeholder": _PLACEHOLDER,
        "summarize": -1 if summarize is None else summarize,
        "output_stream": stream,
        "end": end,
    }, name=name or "PrintV2")


@tf_export("strings.format")
def string_format(template, inputs, placeholder="{}", summarize=3, name=None):
    """A string scalar: `template` with each `placeholder` replaced by the next of `inputs` (a
    tensor or a list of them), shown as tf.print shows tensors (the first and last `summarize`
    entries of each dimension; all with -1)."""
    if isinstance(inputs, (list, tuple)):
        tensors = [_ops.convert_to_tensor(t) for t in inputs]
    else:
        tensors = [_ops.convert_to_tensor(inputs)]
    count = template.count(placeholder) if placeholder else 0
    if count != len(tensors):
        raise ValueError(f"num placeholders in template and num inputs must match: {count} vs. "
                         f"{len(tensors)}")
    return _ops.apply_op("StringFormat", [tensors], {
        "template": template, "placeholder": placeholder,
        "summarize": -1 if summarize is None else summarize,
    }, name=name or "StringFormat").outputs[0]
