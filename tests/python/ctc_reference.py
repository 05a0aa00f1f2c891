"""CTC in numpy, written from the definitions (Graves et al., 2006) for the tests: the loss by
summing over every frame-level path, and the best-path decoding."""

import itertools

import numpy as np


def log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def collapse(path, blank, merge_repeated):
    """The labels a frame-level path stands for: runs merged (when merge_repeated), blanks
    dropped."""
    out, previous = [], None
    for c in path:
        if c != blank and not (merge_repeated and c == previous):
            out.append(c)
        previous = c
    return out


def ctc_loss_brute_force(logits, labels, merge_repeated=True):
    """-log sum over all paths of one entry's frames [time, classes] that collapse to `labels`
    (exponential in time: for a handful of frames)."""
    time, classes = logits.shape
    log_probs = log_softmax(logits)
    total = -np.inf
    for path in itertools.product(range(classes), repeat=time):
        if collapse(path, classes - 1, merge_repeated) == list(labels):
            total = np.logaddexp(total, sum(log_probs[t, c] for t, c in enumerate(path)))
    return -total


def greedy_decode(logits, length, merge_repeated, blank):
    best = logits[:length].argmax(axis=-1)
    return collapse(best, blank, merge_repeated), -logits[:length].max(axis=-1).sum()
