"""Conformance cases for the candidate-sampling ops (see op_cases.py). The samplers draw random
numbers, so their distributions and seeding are tested in test_candidate_sampling.py."""

import numpy as np

from op_cases import Case


def _accidental_hits_ref(true_classes, sampled):
    position = {c: j for j, c in enumerate(sampled)}
    hits = [(i, position[c]) for i, row in enumerate(true_classes) for c in row if c in position]
    rows = np.array([i for i, _ in hits], np.int32)
    ids = np.array([j for _, j in hits], np.int64)
    return rows, ids, np.full(len(hits), -np.finfo(np.float32).max, np.float32)


CASES = [
    Case("ComputeAccidentalHits",
         [np.array([[3, 7], [1, 2], [7, 5]], np.int64), np.array([7, 0, 5, 2], np.int64)],
         _accidental_hits_ref, {"num_true": 2}, outputs=3),
    Case("AllCandidateSampler", [np.array([[3, 4], [1, 2]], np.int64)],
         lambda t: (np.arange(5, dtype=np.int64), np.ones((2, 2), np.float32),
                    np.ones(5, np.float32)),
         {"num_true": 2, "num_sampled": 5, "unique": True}, outputs=3),
]

EXEMPT = {
    "LogUniformCandidateSampler": "tests/python/test_candidate_sampling.py (seeds, "
                                  "distribution, expected counts)",
    "UniformCandidateSampler": "tests/python/test_candidate_sampling.py",
    "LearnedUnigramCandidateSampler": "tests/python/test_candidate_sampling.py",
    "FixedUnigramCandidateSampler": "tests/python/test_candidate_sampling.py",
}
