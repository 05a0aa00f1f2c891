"""Sampled losses over many classes: the candidate samplers (tf.nn.log_uniform_candidate_sampler,
uniform_candidate_sampler, learned_unigram_candidate_sampler, fixed_unigram_candidate_sampler,
all_candidate_sampler, compute_accidental_hits) and tf.nn.nce_loss and
tf.nn.sampled_softmax_loss, which build on them as TensorFlow's do."""

import numpy as np

from flowstone import dtypes as _dtypes
from flowstone.framework import ops as _ops
from flowstone.ops import array_ops, math_ops
from flowstone.ops.gradients import stop_gradient
from flowstone.ops.matmul_ops import matmul
from flowstone.ops.nn_impl import (embedding_lookup, sigmoid_cross_entropy_with_logits,
                                   softmax_cross_entropy_with_logits_v2)
from flowstone.ops.random_ops import get_seed
from flowstone.util.tf_export import tf_export


def _sampler(op_type, true_classes, num_true, num_sampled, unique, range_max, seed, name,
             extra_attrs=None):
    seed1, seed2 = get_seed(seed)
    true_classes = _ops.convert_to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")
    attrs = {"num_true": int(num_true), "num_sampled": int(num_sampled), "unique": bool(unique),
             "range_max": int(range_max), "seed": seed1 or 0, "seed2": seed2 or 0}
    attrs.update(extra_attrs or {})
    return tuple(_ops.apply_op(op_type, [true_classes], attrs, name=name or op_type).outputs)


@tf_export("nn.log_uniform_candidate_sampler", "random.log_uniform_candidate_sampler")
def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """Samples `num_sampled` classes from [0, range_max) with P(k) = log((k + 2) / (k + 1)) /
    log(range_max + 1) (classes sorted by decreasing frequency). Returns (sampled_candidates,
    true_expected_count, sampled_expected_count)."""
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


@tf_export("nn.uniform_candidate_sampler", "random.uniform_candidate_sampler")
def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None,
                              name=None):
    """Samples `num_sampled` classes uniformly from [0, range_max). Returns (sampled_candidates,
    true_expected_count, sampled_expected_count)."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name)


@tf_export("nn.learned_unigram_candidate_sampler", "random.learned_unigram_candidate_sampler")
def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                      seed=None, name=None):
    """Samples classes from [0, range_max) with probabilities proportional to 1 + the number of
    times each was a true class in this op's earlier runs (in this session)."""
    return _sampler("LearnedUnigramCandidateSampler", true_classes, num_true, num_sampled,
                    unique, range_max, seed, name)


@tf_export("nn.fixed_unigram_candidate_sampler", "random.fixed_unigram_candidate_sampler")
def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                    vocab_file="", distortion=1.0, num_reserved_ids=0,
                                    num_shards=1, shard=0, unigrams=(), seed=None, name=None):
    """Samples classes from [0, range_max) with probabilities proportional to
    count ** distortion, the counts given as `unigrams` or as the last comma-separated field of
    each line of `vocab_file`, after `num_reserved_ids` classes of probability 0; with
    num_shards > 1, only the classes of `shard` (id % num_shards == shard)."""
    extra = {"vocab_file": vocab_file, "distortion": float(distortion),
             "num_reserved_ids": int(num_reserved_ids), "num_shards": int(num_shards),
             "shard": int(shard), "unigrams": [float(u) for u in unigrams]}
    return _sampler("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique,
                    range_max, seed, name, extra)


@tf_export("nn.all_candidate_sampler", "random.all_candidate_sampler")
def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """The classes [0, num_sampled) themselves, each with expected count 1 (for testing a
    sampled loss against the full one). Returns (sampled_candidates, true_expected_count,
    sampled_expected_count)."""
    seed1, seed2 = get_seed(seed)
    true_classes = _ops.convert_to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")
    attrs = {"num_true": int(num_true), "num_sampled": int(num_sampled), "unique": bool(unique),
             "seed": seed1 or 0, "seed2": seed2 or 0}
    return tuple(_ops.apply_op("AllCandidateSampler", [true_classes], attrs,
                               name=name or "AllCandidateSampler").outputs)


@tf_export("nn.compute_accidental_hits")
def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """(indices, ids, weights): for each row i and sampled position j whose candidate is one of
    row i's true classes, i, j and -FLT_MAX, the weight that removes the hit from the logits."""
    seed1, seed2 = get_seed(seed)
    true_classes = _ops.convert_to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")
    sampled = _ops.convert_to_tensor(sampled_candidates, dtype=_dtypes.int64,
                                     name="sampled_candidates")
    attrs = {"num_true": int(num_true), "seed": seed1 or 0, "seed2": seed2 or 0}
    return tuple(_ops.apply_op("ComputeAccidentalHits", [true_classes, sampled], attrs,
                               name=name or "ComputeAccidentalHits").outputs)


def _sum_rows(x):
    """The sum of each row of a matrix, as a matrix product with ones (as TensorFlow does)."""
    cols = array_ops.shape(x)[1]
    ones = array_ops.ones(array_ops.stack([cols, 1]), x.dtype)
    return array_ops.reshape(matmul(x, ones), [-1])


def _remove_accidental_hits(sampled_logits, labels, sampled, num_true, num_sampled):
    """Adds -FLT_MAX to the sampled logits that are one of their row's true classes. Several
    hits at one place still give -FLT_MAX, never -inf, so no loss turns into NaN."""
    indices, ids, weights = compute_accidental_hits(labels, sampled, num_true=num_true)
    batch = array_ops.shape(labels)[0]
    flat = math_ops.add(math_ops.multiply(indices, num_sampled), math_ops.cast(ids, "int32"))
    weights = math_ops.cast(weights, sampled_logits.dtype)
    dense = array_ops.unsorted_segment_sum(weights, flat, math_ops.multiply(batch, num_sampled))
    lowest = _ops.convert_to_tensor(-np.finfo(np.float32).max, dtype=sampled_logits.dtype)
    dense = math_ops.maximum(dense, lowest)
    return math_ops.add(sampled_logits, array_ops.reshape(dense, array_ops.stack(
        [batch, num_sampled])))


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                            sampled_values, subtract_log_q, remove_accidental_hits,
                            partition_strategy, name, seed=None):
    """The logits of each example's true classes followed by those of the sampled classes, and
    the matching labels (1 / num_true for true classes, 0 for sampled ones), TensorFlow's
    _compute_sampled_logits."""
    if not isinstance(weights, (list, tuple)):
        weights = [weights]
    with _ops.name_scope(name, "compute_sampled_logits"):
        labels = _ops.convert_to_tensor(labels, name="labels")
        if labels.dtype != _dtypes.int64:
            labels = math_ops.cast(labels, _dtypes.int64)
        inputs = _ops.convert_to_tensor(inputs, name="inputs")
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                true_classes=labels, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        sampled, true_expected_count, sampled_expected_count = (
            stop_gradient(s) for s in sampled_values)
        sampled = math_ops.cast(sampled, _dtypes.int64)
        num_labels = array_ops.shape(labels_flat)[0]

        all_ids = array_ops.concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        if all_w.dtype != inputs.dtype:
            all_w = math_ops.cast(all_w, inputs.dtype)
        true_w = array_ops.slice(all_w, [0, 0], array_ops.stack([num_labels, -1]))
        sampled_w = array_ops.slice(all_w, array_ops.stack([num_labels, 0]), [-1, -1])
        sampled_logits = matmul(inputs, sampled_w, transpose_b=True)

        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        if all_b.dtype != inputs.dtype:
            all_b = math_ops.cast(all_b, inputs.dtype)
        true_b = array_ops.slice(all_b, [0], array_ops.stack([num_labels]))
        sampled_b = array_ops.slice(all_b, array_ops.stack([num_labels]), [-1])

        # The true logits: each example's input dotted with the weights of its num_true classes.
        dim = array_ops.shape(true_w)[1:2]
        true_w = array_ops.reshape(true_w, array_ops.concat([[-1, num_true], dim], 0))
        row_wise_dots = math_ops.multiply(array_ops.expand_dims(inputs, 1), true_w)
        dots = array_ops.reshape(row_wise_dots, array_ops.concat([[-1], dim], 0))
        true_logits = array_ops.reshape(_sum_rows(dots), [-1, num_true])
        true_logits = math_ops.add(true_logits, array_ops.reshape(true_b, [-1, num_true]))
        sampled_logits = math_ops.add(sampled_logits, sampled_b)

        if remove_accidental_hits:
            sampled_logits = _remove_accidental_hits(sampled_logits, labels, sampled, num_true,
                                                     num_sampled)
        if subtract_log_q:
            # Corrects for the sampler's bias towards likely classes.
            true_logits = math_ops.subtract(
                true_logits, math_ops.log(math_ops.cast(true_expected_count, inputs.dtype)))
            sampled_logits = math_ops.subtract(
                sampled_logits,
                math_ops.log(math_ops.cast(sampled_expected_count, inputs.dtype)))

        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat([
            math_ops.divide(array_ops.ones_like(true_logits),
                            _ops.convert_to_tensor(num_true, dtype=true_logits.dtype)),
            array_ops.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


@tf_export("nn.nce_loss")
def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation loss per example (Gutmann and Hyvarinen, 2010): logistic
    losses of the true classes against `num_sampled` sampled classes (log-uniform unless
    `sampled_values` is given). `weights` [num_classes, dim] may be a list of shards."""
    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       name="sampled_losses")
    return _sum_rows(sampled_losses)


@tf_export("nn.sampled_softmax_loss")
def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Softmax cross entropy per example over the true classes and `num_sampled` sampled
    classes (Jean et al., 2014), a fast training-time estimate of the full softmax loss."""
    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name, seed=seed)
    labels = stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)

