"""Conformance cases for the summary ops (see op_cases.py): each output is a serialized Summary,
compared byte for byte with the message built here from numpy and the protos of
framework/tf_protos.py. tests/python/test_summary.py decodes the bytes by hand, compares
histograms and images with TensorFlow, and reads event files with TensorBoard."""

import struct

import numpy as np

import flowstone as tf
from flowstone.framework import tf_protos
from flowstone.framework.ops import apply_op
from op_cases import Case


def _tag(value):
    return np.array(value, dtype=object)


def _summary(*values):
    """The serialized Summary of Summary.Value keyword dicts, as a 1-element vector (see
    _as_vector)."""
    return np.array([tf_protos.Summary(value=[tf_protos.Summary.Value(**v) for v in values])
                     .SerializeToString()], dtype=object)


def _as_vector(op, attrs=None):
    """Builds `op` and reshapes its scalar string to shape [1]: a session returns a fetched
    scalar string as bytes, which the conformance check compares as an array."""
    def build(*inputs):
        inputs = [list(inputs)] if op == "MergeSummary" else list(inputs)
        return tf.reshape(apply_op(op, inputs, attrs).outputs[0], [1]).op
    return build


def _png(pixels):
    """PNG bytes of uint8 [h, w, c] pixels from Flowstone's EncodePng (the encoder ImageSummary
    shares), so the case checks tags, sizes and scaling."""
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(tf.image.encode_png(tf.constant(pixels)))


def _image_value(tag, pixels):
    h, w, c = pixels.shape
    return dict(tag=tag, image=tf_protos.Summary.Image(height=h, width=w, colorspace=c,
                                                       encoded_image_string=_png(pixels)))


def _scaled(image):
    """TensorFlow's float-image rule for finite images: by 255/max when no value is negative,
    else by 127/max|v| around 128; truncated to uint8."""
    image = image.astype(np.float32)
    if image.min() < 0:
        scale, offset = np.float32(127.0) / np.abs(image).max(), np.float32(128.0)
    else:
        scale, offset = np.float32(255.0) / image.max(), np.float32(0.0)
    return (image * scale + offset).astype(np.uint8)


def _wav(samples, rate):
    """16-bit PCM WAV of a [frames, channels] float array, as TensorFlow encodes it."""
    frames, channels = samples.shape
    pcm = np.clip(np.round(samples * 32768.0), -32768, 32767).astype("<i2").tobytes()
    header = (b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt " +
              struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * channels * 2, channels * 2,
                          16) + b"data" + struct.pack("<I", len(pcm)))
    return header + pcm


def _histogram_value(tag, values):
    """TensorFlow's histogram of `values`, computed here: edges ±1e-12 * 1.1^k up to 1e20,
    ±DBL_MAX and 0; a run of empty buckets is one entry with the run's last edge."""
    edges = []
    v = 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    edges.append(np.finfo(np.float64).max)
    limits = [-e for e in reversed(edges)] + [0.0] + edges
    counts = np.zeros(len(limits))
    for x in values:
        counts[np.searchsorted(limits, x, side="right")] += 1
    bucket_limit, bucket = [], []
    i = 0
    while i < len(counts):
        end, count, j = limits[i], counts[i], i + 1
        while count <= 0 and j < len(counts) and counts[j] <= 0:
            end, count, j = limits[j], counts[j], j + 1
        bucket_limit.append(end)
        bucket.append(count)
        i = j
    values = np.asarray(values, np.float64)
    return dict(tag=tag, histo=tf_protos.HistogramProto(
        min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
        sum_squares=(values * values).sum(), bucket_limit=bucket_limit, bucket=bucket))


SCALARS = np.array([1.5, -2.0], np.float32)
HIST = np.array([[0.5, -3.0, 0.0], [2.5, 2.5, 100.0]], np.float64)
UINT8_IMAGES = (np.arange(2 * 3 * 4 * 3) * 7 % 256).astype(np.uint8).reshape(2, 3, 4, 3)
FLOAT_IMAGE = np.array([[[[-1.0], [0.5]], [[2.0], [0.25]]]], np.float32)
AUDIO = np.array([[[0.5, -1.0], [1.0, 0.25], [-0.75, 0.0]]], np.float32)


def _merged(a, b):
    return np.array([tf_protos.Summary.FromString(a).SerializeToString() +
                     tf_protos.Summary.FromString(b).SerializeToString()], dtype=object)


CASES = [
    Case("ScalarSummary", [np.array([b"a", b"b/c"], dtype=object), SCALARS],
         lambda t, v: _summary(dict(tag="a", simple_value=1.5), dict(tag="b/c",
                                                                     simple_value=-2.0)),
         build=_as_vector("ScalarSummary")),
    Case("HistogramSummary", [_tag(b"h"), HIST],
         lambda t, v: _summary(_histogram_value("h", HIST.ravel())),
         build=_as_vector("HistogramSummary")),
    Case("ImageSummary", [_tag(b"im"), UINT8_IMAGES],
         lambda t, x: _summary(_image_value("im/image/0", x[0]), _image_value("im/image/1", x[1])),
         build=_as_vector("ImageSummary", {"max_images": 3})),
    Case("ImageSummary", [_tag(b"im"), FLOAT_IMAGE],
         lambda t, x: _summary(_image_value("im/image", _scaled(x[0]))),
         build=_as_vector("ImageSummary", {"max_images": 1})),
    Case("AudioSummaryV2", [_tag(b"au"), AUDIO, np.array(8000.0, np.float32)],
         lambda t, x, r: _summary(dict(tag="au/audio/0", audio=tf_protos.Summary.Audio(
             sample_rate=8000.0, num_channels=2, length_frames=3,
             encoded_audio_string=_wav(x[0], 8000), content_type="audio/wav"))),
         build=_as_vector("AudioSummaryV2")),
    Case("TensorSummaryV2",
         [_tag(b"t"), np.array([1.0, 2.0], np.float32),
          np.array(tf_protos.SummaryMetadata(display_name="d").SerializeToString(), object)],
         lambda t, x, m: _summary(dict(
             tag="t", metadata=tf_protos.SummaryMetadata(display_name="d"),
             tensor=tf_protos.TensorProto(
                 dtype=1, tensor_shape=tf_protos.TensorShapeProto(
                     dim=[tf_protos.TensorShapeProto.Dim(size=2)]),
                 tensor_content=x.tobytes()))),
         build=_as_vector("TensorSummaryV2")),
    Case("MergeSummary",
         [_summary(dict(tag="a", simple_value=1.0)), _summary(dict(tag="b", simple_value=2.0))],
         lambda a, b: _merged(a[0], b[0]), build=_as_vector("MergeSummary")),
]

_WRITERS = ("tests/python/test_summary_v2.py (a writer needs a log directory: the test writes "
            "eagerly, in tf.function and in a graph, and reads the events back)")
EXEMPT = {op: _WRITERS for op in ("SummaryWriter", "CreateSummaryFileWriter", "WriteSummary",
                                  "WriteScalarSummary", "WriteRawProtoSummary",
                                  "FlushSummaryWriter", "CloseSummaryWriter")}
