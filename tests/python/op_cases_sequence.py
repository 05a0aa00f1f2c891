"""Sequence ops: CTC and edit distance.

The CTC loss needs a SparseTensor of labels and its second output (the gradient) is not
differentiated, so both CTC ops are checked in tests/python/test_ctc.py against numpy references,
the loss's gradient against finite differences. EditDistance takes plain tensors and is checked
here against a numpy Levenshtein distance."""

import numpy as np

from op_cases import Case

EXEMPT = {
    "CTCLoss": "tests/python/test_ctc.py (brute-force path sums, finite-difference gradient)",
    "CTCGreedyDecoder": "tests/python/test_ctc.py (numpy best-path decoding)",
}


def levenshtein(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def edit_distance_reference(normalize):
    def ref(h_indices, h_values, h_shape, t_indices, t_values, t_shape):
        out = np.zeros(np.maximum(h_shape, t_shape)[:-1], np.float32)
        groups = {tuple(i[:-1]) for i in h_indices} | {tuple(i[:-1]) for i in t_indices}
        for g in groups:
            hyp = [v for i, v in sorted(zip(map(tuple, h_indices), h_values)) if i[:-1] == g]
            tru = [v for i, v in sorted(zip(map(tuple, t_indices), t_values)) if i[:-1] == g]
            d = levenshtein(hyp, tru)
            out[g] = (d / len(tru) if tru else np.inf) if normalize else d
        return out
    return ref


_H = [np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 0, 2]], np.int64),
      np.array([1, 2, 3, 4, 5, 6], np.int64), np.array([2, 2, 3], np.int64)]
_T = [np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2], [1, 0, 0], [1, 1, 0]], np.int64),
      np.array([1, 3, 2, 4, 7], np.int64), np.array([2, 3, 3], np.int64)]

CASES = [
    Case("EditDistance", _H + _T, edit_distance_reference(True)),
    Case("EditDistance", _H + _T, edit_distance_reference(False), attrs={"normalize": False}),
]


def gather_tree_reference(step_ids, parent_ids, lengths, end_token):
    """Backtracks each beam through its parents; end_token past the length and after the first
    end_token."""
    out = np.full_like(step_ids, end_token)
    for b in range(step_ids.shape[1]):
        n = min(step_ids.shape[0], max(0, int(lengths[b])))
        for k in range(step_ids.shape[2]):
            parent = k
            for t in range(n - 1, -1, -1):
                out[t, b, k] = step_ids[t, b, parent]
                parent = parent_ids[t, b, parent]
            ended = False
            for t in range(n):
                if ended:
                    out[t, b, k] = end_token
                ended = ended or out[t, b, k] == end_token
    return out


_STEP_IDS = np.array([[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]],
                      [[13, 14, 15], [16, 17, 18]]], np.int32)
_PARENTS = np.array([[[0, 0, 0], [0, 0, 0]], [[2, 1, 0], [1, 1, 2]],
                     [[0, 2, 1], [0, 0, 0]]], np.int32)
CASES.append(Case("GatherTree", [_STEP_IDS, _PARENTS, np.array([3, 2], np.int32),
                                 np.int32(10)], gather_tree_reference))
CASES.append(Case("GatherTree", [_STEP_IDS.astype(np.int64), _PARENTS.astype(np.int64),
                                 np.array([2, 0], np.int32), np.int64(5)],
                  gather_tree_reference))
