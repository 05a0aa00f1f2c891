"""Conformance cases for the CTC beam search decoder, fractional pooling and CheckNumericsV2.

The beam search cases have a beam wider than the number of label prefixes, so the search is
exhaustive and its paths are the most probable label sequences of a brute-force sum over every
frame-level path. The fractional
pooling ops pool by a ratio that divides the image (the one case whose regions are not random);
their gradient ops take the regions as inputs and are checked on uneven ones."""

import itertools

import numpy as np

from fractional_pool_reference import avg_pool_grad_reference, max_pool_grad_reference, pool
from op_cases import Case

RNG = np.random.default_rng(77)


# --- CTCBeamSearchDecoder ------------------------------------------------------------------------

def _sequence_log_probs(logits):
    """{labels: log P(labels)} for one entry's logits [time, classes] (the last is the blank),
    summed over every frame-level path (repeats merge unless a blank separates them)."""
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    blank = logits.shape[1] - 1
    totals = {}
    for path in itertools.product(range(logits.shape[1]), repeat=logits.shape[0]):
        labels = tuple(c for i, c in enumerate(path)
                       if c != blank and (i == 0 or path[i - 1] != c))
        p = np.exp(sum(log_p[t, c] for t, c in enumerate(path)))
        totals[labels] = totals.get(labels, 0.0) + p
    return {labels: np.log(p) for labels, p in totals.items()}


def beam_search_reference(top_paths, merge_repeated):
    def ref(logits, lengths):
        batch = logits.shape[1]
        best = []
        for b in range(batch):
            scores = _sequence_log_probs(logits[:lengths[b], b])
            best.append(sorted(scores.items(), key=lambda kv: -kv[1])[:top_paths])
        outputs = []
        paths = []
        for p in range(top_paths):
            rows = []
            for b in range(batch):
                labels = list(best[b][p][0])
                if merge_repeated:
                    labels = [c for i, c in enumerate(labels) if i == 0 or labels[i - 1] != c]
                rows.append(labels)
            paths.append(rows)
        for rows in paths:
            outputs.append(np.array([[b, i] for b, r in enumerate(rows) for i in range(len(r))],
                                    np.int64).reshape(-1, 2))
        for rows in paths:
            outputs.append(np.array([c for r in rows for c in r], np.int64))
        for rows in paths:
            outputs.append(np.array([batch, max(len(r) for r in rows)], np.int64))
        outputs.append(np.array([[best[b][p][1] for p in range(top_paths)]
                                 for b in range(batch)]))
        return tuple(outputs)
    return ref


def _logits(time, batch, classes):
    return RNG.normal(size=(time, batch, classes))


# --- fractional pooling --------------------------------------------------------------------------

def fractional_pool_reference(reduce, overlapping):
    def ref(x):
        rows = np.arange(0, x.shape[1] + 1, 2, dtype=np.int64)
        cols = np.arange(0, x.shape[2] + 1, 2, dtype=np.int64)
        return pool(x, rows, cols, overlapping, reduce), rows, cols
    return ref


def _max_pool_grad_case(overlapping):
    x = RNG.permutation(2 * 4 * 5 * 2).reshape(2, 4, 5, 2).astype(np.float64)
    rows = np.array([0, 1, 3, 4], np.int64)
    cols = np.array([0, 2, 3, 5], np.int64)
    y = pool(x, rows, cols, overlapping, np.max)
    dy = RNG.normal(size=y.shape)
    return Case("FractionalMaxPoolGrad", [x, y, dy, rows, cols],
                max_pool_grad_reference(overlapping), attrs={"overlapping": overlapping})


def _avg_pool_grad_case(overlapping):
    rows = np.array([0, 2, 3, 5], np.int64)
    cols = np.array([0, 1, 3], np.int64)
    dy = RNG.normal(size=(2, 3, 2, 3))
    return Case("FractionalAvgPoolGrad", [np.array([2, 5, 4, 3], np.int64), dy, rows, cols],
                avg_pool_grad_reference(overlapping), attrs={"overlapping": overlapping})


def _pool_case(op, reduce, overlapping):
    x = RNG.permutation(2 * 4 * 6 * 3).reshape(2, 4, 6, 3).astype(np.float64) / 10
    return Case(op, [x], fractional_pool_reference(reduce, overlapping),
                attrs={"pooling_ratio": [1.0, 2.0, 2.0, 1.0], "overlapping": overlapping},
                grad=[0], outputs=3)


CASES = [
    Case("CTCBeamSearchDecoder",
         [_logits(4, 2, 4), np.array([4, 3], np.int32)],
         beam_search_reference(3, False),
         attrs={"beam_width": 200, "top_paths": 3, "merge_repeated": False}, outputs=10,
         rtol=1e-9),
    Case("CTCBeamSearchDecoder",
         [_logits(3, 2, 3), np.array([3, 0], np.int32)],
         beam_search_reference(1, True),
         attrs={"beam_width": 50, "top_paths": 1, "merge_repeated": True}, outputs=4,
         rtol=1e-9),
    _pool_case("FractionalMaxPool", np.max, False),
    _pool_case("FractionalMaxPool", np.max, True),
    _pool_case("FractionalAvgPool", np.mean, False),
    _pool_case("FractionalAvgPool", np.mean, True),
    _max_pool_grad_case(False),
    _max_pool_grad_case(True),
    _avg_pool_grad_case(False),
    _avg_pool_grad_case(True),
    Case("CheckNumericsV2", [RNG.uniform(-1, 1, size=(2, 3))], lambda x: x,
         attrs={"message": "checked"}, grad=[0]),
]
