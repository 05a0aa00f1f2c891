"""tf.keras.datasets.imdb: movie reviews as word-index sequences, labelled by sentiment."""

import numpy as np

from flowstone.keras.datasets._files import get_file
from flowstone.util.tf_export import tf_export

ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb.npz"


@tf_export("keras.datasets.imdb.load_data")
def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3, **kwargs):
    """Keras's preprocessing: shuffled with `seed`, indices offset by `index_from`, each
    review prefixed with `start_char`, rare (or top `skip_top`) words as `oov_char`."""
    with np.load(get_file(path, ORIGIN), allow_pickle=True) as f:
        x_train, labels_train = f["x_train"], f["y_train"]
        x_test, labels_test = f["x_test"], f["y_test"]
    rng = np.random.RandomState(seed)
    order = np.arange(len(x_train))
    rng.shuffle(order)
    x_train, labels_train = x_train[order], labels_train[order]
    order = np.arange(len(x_test))
    rng.shuffle(order)
    x_test, labels_test = x_test[order], labels_test[order]

    def prepare(sequences, labels):
        out = []
        for sequence in sequences:
            words = [w + index_from for w in sequence]
            out.append(([start_char] if start_char is not None else []) + words)
        if maxlen:
            kept = [i for i, x in enumerate(out) if len(x) < maxlen]
            out, labels = [out[i] for i in kept], labels[kept]
        return out, labels

    train, labels_train = prepare(x_train, labels_train)
    test, labels_test = prepare(x_test, labels_test)
    if not train + test:
        raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no "
                         "sequence was kept. Increase maxlen.")
    if not num_words:
        num_words = max(max(x) for x in train + test)

    def clip(sequences):
        array = np.empty(len(sequences), dtype=object)
        array[:] = [[w if skip_top <= w < num_words else oov_char for w in x]
                    for x in sequences]
        return array

    return (clip(train), labels_train), (clip(test), labels_test)
