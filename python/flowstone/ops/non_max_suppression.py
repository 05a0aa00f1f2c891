"""tf.image's non-maximum suppressions over the C++ NonMaxSuppression ops (greedy NMS by
decreasing score): non_max_suppression, _padded, _with_scores (V5, soft NMS), _overlaps and
combined_non_max_suppression."""

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.util.tf_export import tf_export


def _inputs(boxes, scores, max_output_size, iou_threshold, score_threshold):
    return [_ops.convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes"),
            _ops.convert_to_tensor(scores, dtype=_dtypes.float32, name="scores"),
            _ops.convert_to_tensor(max_output_size, dtype=_dtypes.int32, name="max_output_size"),
            _ops.convert_to_tensor(iou_threshold, dtype=_dtypes.float32, name="iou_threshold"),
            _ops.convert_to_tensor(score_threshold, dtype=_dtypes.float32,
                                   name="score_threshold")]


@tf_export("image.non_max_suppression")
def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """The indices (int32) of at most max_output_size boxes ([y1, x1, y2, x2] rows), by
    decreasing score, skipping any box whose IoU with a kept one exceeds iou_threshold and
    any scoring at most score_threshold."""
    with _ops.name_scope(name, "non_max_suppression"):
        return _ops.apply_op("NonMaxSuppressionV3", _inputs(
            boxes, scores, max_output_size, iou_threshold, score_threshold)).outputs[0]


@tf_export("image.non_max_suppression_padded")
def non_max_suppression_padded(boxes, scores, max_output_size, iou_threshold=0.5,
                               score_threshold=float("-inf"), pad_to_max_output_size=False,
                               name=None, sorted_input=False, canonicalized_coordinates=False,
                               tile_size=512):
    """non_max_suppression, padded with zeros to max_output_size when asked, and the number
    of valid indices. Unbatched boxes [num_boxes, 4] only."""
    del sorted_input, canonicalized_coordinates, tile_size  # speed hints of TensorFlow's
    boxes = _ops.convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes")
    if boxes.shape.ndims is not None and boxes.shape.ndims != 2:
        raise NotImplementedError("Flowstone's non_max_suppression_padded takes unbatched "
                                  f"boxes [num_boxes, 4]; got shape {boxes.shape}")
    with _ops.name_scope(name, "non_max_suppression_padded"):
        outputs = _ops.apply_op("NonMaxSuppressionV4", _inputs(
            boxes, scores, max_output_size, iou_threshold, score_threshold),
            {"pad_to_max_output_size": bool(pad_to_max_output_size)}).outputs
    return outputs[0], outputs[1]


@tf_export("image.non_max_suppression_with_scores")
def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0,
                                    name=None):
    """(selected_indices, selected_scores): non_max_suppression with the kept boxes' scores,
    and with soft_nms_sigma > 0 Soft-NMS's Gaussian decay of overlapping boxes' scores instead
    of dropping them."""
    with _ops.name_scope(name, "non_max_suppression_with_scores"):
        inputs = _inputs(boxes, scores, max_output_size, iou_threshold, score_threshold)
        inputs.append(_ops.convert_to_tensor(soft_nms_sigma, dtype=_dtypes.float32,
                                             name="soft_nms_sigma"))
        outputs = _ops.apply_op("NonMaxSuppressionV5", inputs,
                                {"pad_to_max_output_size": False}).outputs
    return outputs[0], outputs[1]


@tf_export("image.non_max_suppression_overlaps")
def non_max_suppression_overlaps(overlaps, scores, max_output_size, overlap_threshold=0.5,
                                 score_threshold=float("-inf"), name=None):
    """non_max_suppression by a given [n, n] overlap matrix instead of the boxes' IoU."""
    with _ops.name_scope(name, "non_max_suppression_overlaps"):
        return _ops.apply_op("NonMaxSuppressionWithOverlaps", _inputs(
            overlaps, scores, max_output_size, overlap_threshold, score_threshold)).outputs[0]


@tf_export("image.combined_non_max_suppression")
def combined_non_max_suppression(boxes, scores, max_output_size_per_class, max_total_size,
                                 iou_threshold=0.5, score_threshold=float("-inf"),
                                 pad_per_class=False, clip_boxes=True, name=None):
    """Batched NMS per class, then across classes: (nmsed_boxes [batch, max_detections, 4],
    nmsed_scores, nmsed_classes [batch, max_detections], valid_detections [batch])."""
    with _ops.name_scope(name, "combined_non_max_suppression"):
        inputs = [_ops.convert_to_tensor(boxes, dtype=_dtypes.float32, name="boxes"),
                  _ops.convert_to_tensor(scores, dtype=_dtypes.float32, name="scores"),
                  _ops.convert_to_tensor(max_output_size_per_class, dtype=_dtypes.int32,
                                         name="max_output_size_per_class"),
                  _ops.convert_to_tensor(max_total_size, dtype=_dtypes.int32,
                                         name="max_total_size"),
                  _ops.convert_to_tensor(iou_threshold, dtype=_dtypes.float32,
                                         name="iou_threshold"),
                  _ops.convert_to_tensor(score_threshold, dtype=_dtypes.float32,
                                         name="score_threshold")]
        return tuple(_ops.apply_op("CombinedNonMaxSuppression", inputs, {
            "pad_per_class": bool(pad_per_class), "clip_boxes": bool(clip_boxes)}).outputs)
