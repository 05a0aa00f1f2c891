"""tf.summary.scalar/histogram/image/audio/text/tensor_summary/merge/merge_all: thin wrappers
over the summary ops of src/ops/summary/summary_ops.cc. The tag of a summary is its scoped name
(with `family` in front), as TensorFlow 1.15 makes it, and each summary joins
GraphKeys.SUMMARIES unless `collections` says otherwise. The shared names also take TensorFlow
2's form (a step, or a default writer): see summary_v2.py."""

import contextlib
import re

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework import tf_protos as _protos
from flowstone.platform import tf_logging as _logging
from flowstone.summary import summary_v2 as _summary_v2
from flowstone.util.tf_export import tf_export

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def _clean_tag(name):
    """`name` with characters TensorBoard cannot show replaced by '_' and no leading '/'."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        _logging.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextlib.contextmanager
def _summary_scope(name, family=None, default_name=None, values=None):
    """Yields (tag, scope): the op is named by the scope and tagged by it, prefixed by the family
    (which also prefixes the scope, so that the family's tags stay unique)."""
    name = _clean_tag(name)
    family = _clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    with _ops.name_scope(base, default_name, values) as scope:
        tag = scope.rstrip("/")
        if family is not None:
            tag = f"{family}/{tag}"
        yield tag, scope


def _collect(value, collections, default_collections):
    for key in default_collections if collections is None else collections:
        _ops.add_to_collection(key, value)


def _summary(op_type, name, family, collections, inputs, attrs=None):
    """Builds one summary op under its summary scope and collects it."""
    with _summary_scope(name, family, values=[x for x in inputs if _ops.is_tensor(x)]) as (tag,
                                                                                          scope):
        tag_tensor = _ops.convert_to_tensor(
            tag, dtype=_dtypes.string, name="tags" if op_type == "ScalarSummary" else "tag")
        value = _ops.apply_op(op_type, [tag_tensor] + list(inputs), attrs or {},
                              name=scope).outputs[0]
        _collect(value, collections, [_ops.GraphKeys.SUMMARIES])
    return value


def _v2_call(collections, step, data, tensor, v2_keywords):
    """(whether the call is TensorFlow 2's, its data, its step): a third positional argument
    that is not a list of collections is v2's step (`scalar("loss", loss, epoch)`)."""
    if collections is not None and not isinstance(collections, (list, tuple, set)):
        step, collections = collections, None
    data = tensor if data is None else data
    return _summary_v2.uses_v2(step, v2_keywords), data, step


@tf_export("summary.scalar")
def scalar(name, tensor=None, collections=None, family=None, *, data=None, step=None,
           description=None):
    """TF1: a Summary op with the value of the real scalar `tensor`, tagged by the scoped
    `name`. TF2 (a step, a default writer, or eager): writes `data` at `step`."""
    v2, data, step = _v2_call(collections, step, data, tensor, description is not None)
    if v2:
        return _summary_v2.scalar_v2(name, data, step, description)
    tensor = _ops.convert_to_tensor(tensor)
    shape = tensor.shape
    if shape.ndims is not None and shape.ndims != 0:
        raise ValueError(f"tf.summary.scalar '{name}' takes a scalar, got shape {shape}; reduce "
                         "it first (tf.reduce_mean) or use tf.summary.histogram")
    return _summary("ScalarSummary", name, family, collections, [tensor])


@tf_export("summary.histogram")
def histogram(name, values=None, collections=None, family=None, *, data=None, step=None,
              buckets=None, description=None):
    """A Summary with a histogram of `values` (any shape) over TensorFlow's default buckets
    (TF2: written at `step`, see scalar)."""
    v2, data, step = _v2_call(collections, step, data, values,
                              description is not None or buckets is not None)
    if v2:
        return _summary_v2.histogram_v2(name, data, step, buckets, description)
    return _summary("HistogramSummary", name, family, collections,
                    [_ops.convert_to_tensor(values)])


@tf_export("summary.image")
def image(name, tensor=None, max_outputs=3, collections=None, family=None, *, data=None,
          step=None, description=None):
    """A Summary with up to `max_outputs` PNG images of a [batch, height, width, 1|3|4] uint8 or
    float tensor (floats are scaled into [0, 255] as TensorFlow does); TF2: written at `step`."""
    if not isinstance(max_outputs, int) and step is None and data is None:
        step, max_outputs = max_outputs, 3  # TF2's image(name, data, step, max_outputs)
    v2, data, step = _v2_call(collections, step, data, tensor, description is not None)
    if v2:
        return _summary_v2.image_v2(name, data, step, max_outputs, description)
    return _summary("ImageSummary", name, family, collections, [_ops.convert_to_tensor(tensor)],
                    {"max_images": max_outputs})


@tf_export("summary.audio")
def audio(name, tensor=None, sample_rate=None, max_outputs=3, collections=None, family=None, *,
          data=None, step=None, encoding=None, description=None):
    """A Summary with up to `max_outputs` WAV clips of a [batch, frames(, channels)] float
    tensor with values in [-1, 1]; TF2: written at `step`."""
    v2, data, step = _v2_call(collections, step, data, tensor, description is not None)
    if v2:
        return _summary_v2.audio_v2(name, data, sample_rate, step, max_outputs, encoding,
                                    description)
    tensor = _ops.convert_to_tensor(tensor, dtype=_dtypes.float32)
    rate = _ops.convert_to_tensor(sample_rate, dtype=_dtypes.float32, name="sample_rate")
    return _summary("AudioSummaryV2", name, family, collections, [tensor, rate],
                    {"max_outputs": max_outputs})


@tf_export("summary.tensor_summary")
def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """A Summary holding the whole `tensor` as a TensorProto, with `summary_metadata` (a
    SummaryMetadata) naming the TensorBoard plugin that reads it."""
    metadata = _protos.SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    serialized = _ops.convert_to_tensor(metadata.SerializeToString(), dtype=_dtypes.string)
    return _summary("TensorSummaryV2", name, family, collections,
                    [_ops.convert_to_tensor(tensor), serialized])


@tf_export("summary.text")
def text(name, tensor=None, collections=None, *, data=None, step=None, description=None):
    """A Summary of a string tensor for TensorBoard's text plugin; TF2: written at `step`."""
    v2, data, step = _v2_call(collections, step, data, tensor, description is not None)
    if v2:
        return _summary_v2.text_v2(name, data, step, description)
    tensor = _ops.convert_to_tensor(tensor)
    if tensor.dtype != _dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got "
                         f"{tensor.dtype.name}")
    metadata = _protos.SummaryMetadata(
        plugin_data=_protos.SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, summary_metadata=metadata, collections=collections)


def _require_graph(what):
    if _ops.executing_eagerly():
        raise RuntimeError(f"Merging tf.summary.* ops is not compatible with eager execution "
                           f"({what}). Build the summaries in a graph, or write scalars from "
                           "Python with tf.summary.FileWriter.add_summary.")


@tf_export("summary.merge")
def merge(inputs, collections=None, name=None):
    """One Summary holding the values of all `inputs` (serialized Summary tensors). A tag that
    occurs twice is InvalidArgumentError when it runs."""
    _require_graph("tf.summary.merge")
    name = _clean_tag(name)
    with _ops.name_scope(name, "Merge", inputs):
        value = _ops.apply_op("MergeSummary",
                              [[_ops.convert_to_tensor(x, dtype=_dtypes.string) for x in inputs]],
                              name="MergeSummary" if name is None else name).outputs[0]
        _collect(value, collections, [])
    return value


@tf_export("summary.merge_all")
def merge_all(key=_ops.GraphKeys.SUMMARIES, scope=None, name=None):
    """merge() of every summary in collection `key` (whose names match `scope`), or None when
    there is none."""
    _require_graph("tf.summary.merge_all")
    summaries = _ops.get_collection(key, scope=scope)
    if not summaries:
        return None
    return merge(summaries, name=name)


@tf_export("summary.get_summary_description")
def get_summary_description(node_def):
    """The SummaryDescription of a TensorSummary node's `description` attr (empty when unset)."""
    description = _protos.SummaryDescription()
    if "description" in node_def.attr:
        description.ParseFromString(node_def.attr["description"].s)
    return description


@tf_export("summary.all_v2_summary_ops")
def all_v2_summary_ops():
    """The TF2-style summary writes of the graph (summary_v2.py), None when executing
    eagerly, as TensorFlow's."""
    if _ops.executing_eagerly():
        return None
    return _ops.get_collection("_SUMMARY_V2")
