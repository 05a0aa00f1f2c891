"""tf.nn.ctc_loss, tf.nn.ctc_greedy_decoder and tf.nn.ctc_beam_search_decoder on the CTCLoss,
CTCGreedyDecoder (src/ops/nn/ctc_ops.cc) and CTCBeamSearchDecoder (ctc_beam_search_ops.cc) ops."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.framework.sparse_tensor import SparseTensor
from flowstone.ops import array_ops, math_ops
from flowstone.util.tf_export import tf_export


@tf_export("nn.ctc_loss")
def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True,
             logits=None):
    """The negative log likelihood of each label sequence (an int32 SparseTensor [batch,
    max_label_length]) under the per-frame logits ([max_time, batch, num_classes], or
    [batch, max_time, num_classes] when not time_major; the last class is the blank): a [batch]
    vector."""
    if inputs is not None and logits is not None:
        raise ValueError("Cannot specify both 'logits' and 'inputs'")
    inputs = logits if inputs is None else inputs
    if not isinstance(labels, SparseTensor):
        raise TypeError("Expected labels (first argument) to be a SparseTensor")
    inputs = _ops.convert_to_tensor(inputs, name="inputs")
    if not time_major:
        inputs = array_ops.transpose(inputs, [1, 0, 2])
    values = labels.values
    if values.dtype != _dtypes.int32:
        values = math_ops.cast(values, _dtypes.int32)
    sequence_length = _ops.convert_to_tensor(sequence_length, dtype=_dtypes.int32,
                                             name="sequence_length")
    op = _ops.apply_op("CTCLoss", [inputs, labels.indices, values, sequence_length], {
        "preprocess_collapse_repeated": bool(preprocess_collapse_repeated),
        "ctc_merge_repeated": bool(ctc_merge_repeated),
        "ignore_longer_outputs_than_inputs": bool(ignore_longer_outputs_than_inputs)},
        name="CTCLoss")
    return op.outputs[0]


@tf_export("nn.ctc_greedy_decoder")
def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """Best-path decoding: ([SparseTensor of int64 labels [batch, max_decoded_length]],
    log_probability [batch, 1], minus the sum of each frame's largest logit). blank_index
    defaults to the last class; a negative one counts from the end."""
    inputs = _ops.convert_to_tensor(inputs, name="inputs")
    sequence_length = _ops.convert_to_tensor(sequence_length, dtype=_dtypes.int32,
                                             name="sequence_length")
    op = _ops.apply_op("CTCGreedyDecoder", [inputs, sequence_length], {
        "merge_repeated": bool(merge_repeated),
        "blank_index": -1 if blank_index is None else int(blank_index)},
        name="CTCGreedyDecoder")
    indices, values, shape, log_probability = op.outputs
    return [SparseTensor(indices, values, shape)], log_probability


@tf_export("nn.ctc_beam_search_decoder")
def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1,
                            merge_repeated=True):
    """Prefix beam search over logits [max_time, batch, num_classes] (the last class is the
    blank): (a list of top_paths SparseTensors of int64 labels [batch, max_decoded_length], the
    best first; log_probability [batch, top_paths]). merge_repeated merges runs of one label in
    the returned paths."""
    inputs = _ops.convert_to_tensor(inputs, name="inputs")
    sequence_length = _ops.convert_to_tensor(sequence_length, dtype=_dtypes.int32,
                                             name="sequence_length")
    top_paths = int(top_paths)
    op = _ops.apply_op("CTCBeamSearchDecoder", [inputs, sequence_length], {
        "beam_width": int(beam_width), "top_paths": top_paths,
        "merge_repeated": bool(merge_repeated)}, name="CTCBeamSearchDecoder")
    outputs = op.outputs
    decoded = [SparseTensor(outputs[p], outputs[top_paths + p], outputs[2 * top_paths + p])
               for p in range(top_paths)]
    return decoded, outputs[3 * top_paths]


@tf_export("nn.ctc_beam_search_decoder_v2")
def ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    """tf.nn.ctc_beam_search_decoder without merging repeated labels (TF2's form)."""
    return ctc_beam_search_decoder(inputs, sequence_length, beam_width=beam_width,
                                   top_paths=top_paths, merge_repeated=False)

