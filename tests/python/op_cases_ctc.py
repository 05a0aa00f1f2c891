"""CTC ops: the loss needs a SparseTensor of labels and its second output (the gradient) is not
differentiated, so both ops are checked in tests/python/test_ctc.py against numpy references,
the loss's gradient against finite differences."""

EXEMPT = {
    "CTCLoss": "tests/python/test_ctc.py (brute-force path sums, finite-difference gradient)",
    "CTCGreedyDecoder": "tests/python/test_ctc.py (numpy best-path decoding)",
}
