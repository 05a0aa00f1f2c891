"""keras.preprocessing.text (Tokenizer, text_to_word_sequence, hashing_trick) against tf-keras:
vocabularies, sequences, matrices in every mode, JSON in both directions."""

import json

import numpy as np
import pytest

import flowstone as tf

import tf_keras_peer

keras = tf.keras
text = keras.preprocessing.text
needs_tf_keras = pytest.mark.skipif(not tf_keras_peer.available(),
                                    reason=tf_keras_peer.SKIP_REASON)

CORPUS = ["The cat sat on the mat.", "The dog ate my homework!", "Cats and dogs, cats & DOGS",
          "", "on-the-fly: mat, mat; MAT"]
QUERIES = ["the cat ate the unknown mat", "zebra", "dogs sat on cats"]

# Tokenizer arguments as code, evaluated unchanged by both implementations.
CASES = [
    "",
    "num_words=5",
    "num_words=5, oov_token='<OOV>'",
    "oov_token='<OOV>', lower=False",
    "char_level=True",
    "filters='', split=' '",
]

PEER_SCRIPT = """
import json
from tf_keras.preprocessing import text
out = []
for args in CASES:
    t = eval('text.Tokenizer(' + args + ')')
    t.fit_on_texts(CORPUS)
    sequences = t.texts_to_sequences(QUERIES + CORPUS)
    out.append({'word_index': t.word_index, 'sequences': sequences,
                'texts': t.sequences_to_texts(sequences),
                'matrices': {mode: t.texts_to_matrix(QUERIES, mode=mode).tolist()
                             for mode in ('binary', 'count', 'freq', 'tfidf')},
                'json': t.to_json()})
words = [text.text_to_word_sequence(s) for s in CORPUS]
hashed = [text.hashing_trick(s, 7, hash_function='md5') for s in CORPUS]
print(json.dumps({'tokenizers': out, 'words': words, 'hashed': hashed}))
"""


def decoded(json_string):
    """A tokenizer's JSON with its tables (JSON text inside) decoded: word_docs is filled from
    sets, so its key order differs between processes."""
    config = json.loads(json_string)["config"]
    return {key: json.loads(value) if key.startswith(("word_", "index_")) else value
            for key, value in config.items()}


@pytest.fixture(scope="module")
def tf_keras_results():
    script = f"CORPUS = {CORPUS!r}\nQUERIES = {QUERIES!r}\nCASES = {CASES!r}\n" + PEER_SCRIPT
    return json.loads(tf_keras_peer.run(script, cwd=None).strip().splitlines()[-1])


@needs_tf_keras
@pytest.mark.parametrize("index", range(len(CASES)), ids=CASES)
def test_tokenizer_matches_tf_keras(index, tf_keras_results):
    theirs = tf_keras_results["tokenizers"][index]
    tokenizer = eval(f"text.Tokenizer({CASES[index]})", {"text": text})  # noqa: S307
    tokenizer.fit_on_texts(CORPUS)
    assert tokenizer.word_index == theirs["word_index"]
    assert list(tokenizer.word_index) == list(theirs["word_index"])
    sequences = tokenizer.texts_to_sequences(QUERIES + CORPUS)
    assert sequences == theirs["sequences"]
    assert tokenizer.sequences_to_texts(sequences) == theirs["texts"]
    for mode, want in theirs["matrices"].items():
        np.testing.assert_allclose(tokenizer.texts_to_matrix(QUERIES, mode=mode),
                                   np.asarray(want), rtol=1e-12, err_msg=mode)
    assert decoded(tokenizer.to_json()) == decoded(theirs["json"])
    # tf-keras's JSON gives a tokenizer that behaves the same.
    loaded = text.tokenizer_from_json(theirs["json"])
    assert loaded.texts_to_sequences(QUERIES + CORPUS) == theirs["sequences"]
    np.testing.assert_allclose(loaded.texts_to_matrix(QUERIES, mode="tfidf"),
                               np.asarray(theirs["matrices"]["tfidf"]), rtol=1e-12)


@needs_tf_keras
def test_word_sequences_and_hashing_match_tf_keras(tf_keras_results):
    assert [text.text_to_word_sequence(s) for s in CORPUS] == tf_keras_results["words"]
    assert [text.hashing_trick(s, 7, hash_function="md5") for s in CORPUS] == \
        tf_keras_results["hashed"]


def test_tokenizer_values():
    tokenizer = text.Tokenizer(oov_token="?")
    tokenizer.fit_on_texts(["b a b", "c b"])
    assert tokenizer.word_index == {"?": 1, "b": 2, "a": 3, "c": 4}
    assert tokenizer.texts_to_sequences(["a b d"]) == [[3, 2, 1]]
    assert tokenizer.word_counts == {"b": 3, "a": 1, "c": 1}
    np.testing.assert_array_equal(tokenizer.texts_to_matrix(["b b c"], mode="count"),
                                  [[0, 0, 2, 0, 1]])
    assert all(1 <= i < 5 for i in text.one_hot("some words here", 5))


def test_errors():
    with pytest.raises(ValueError, match="Specify a dimension"):
        text.Tokenizer().texts_to_matrix(["a"])
    with pytest.raises(ValueError, match="Fit the Tokenizer on some data before using tfidf"):
        text.Tokenizer(num_words=3).sequences_to_matrix([[1]], mode="tfidf")
    with pytest.raises(ValueError, match="Unknown vectorization mode: bm25"):
        text.Tokenizer(num_words=3).sequences_to_matrix([[1]], mode="bm25")
    with pytest.raises(TypeError, match="Unrecognized keyword arguments"):
        text.Tokenizer(vocabulary=3)
