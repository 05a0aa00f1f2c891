"""tf.keras.preprocessing.text: splitting text into words, hashing words, and the Tokenizer that
maps words to indices by frequency (Keras 2's behaviour, including its quirks: index 0 is never
a word, and ties in frequency keep the order words were first seen)."""

import collections
import hashlib
import json

import numpy as np

from flowstone.util.tf_export import tf_export

_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


@tf_export("keras.preprocessing.text.text_to_word_sequence")
def text_to_word_sequence(input_text, filters=_FILTERS, lower=True, split=" "):
    """The words of `input_text`: each character of `filters` becomes a separator."""
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [word for word in input_text.split(split) if word]


@tf_export("keras.preprocessing.text.hashing_trick")
def hashing_trick(text, n, hash_function=None, filters=_FILTERS, lower=True, split=" ",
                  analyzer=None):
    """Each word hashed into 1..n-1 (0 stays free for padding). `hash_function` is Python's
    `hash` by default (salted per process, as in Keras), or 'md5' for stable indices."""
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(word):
            return int(hashlib.md5(word.encode()).hexdigest(), 16)
    words = analyzer(text) if analyzer is not None else text_to_word_sequence(
        text, filters=filters, lower=lower, split=split)
    return [hash_function(word) % (n - 1) + 1 for word in words]


@tf_export("keras.preprocessing.text.one_hot")
def one_hot(input_text, n, filters=_FILTERS, lower=True, split=" ", analyzer=None):
    return hashing_trick(input_text, n, hash_function=hash, filters=filters, lower=lower,
                         split=split, analyzer=analyzer)


@tf_export("keras.preprocessing.text.Tokenizer")
class Tokenizer:
    """Indices 1, 2, ... for words in order of falling frequency (`word_index`); with `num_words`
    only indices below it are used, the rest dropped or mapped to `oov_token`'s index (1)."""

    def __init__(self, num_words=None, filters=_FILTERS, lower=True, split=" ",
                 char_level=False, oov_token=None, analyzer=None, **kwargs):
        if "nb_words" in kwargs:   # Keras 1's name
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
        self.num_words = num_words
        self.filters = filters
        self.lower = lower
        self.split = split
        self.char_level = char_level
        self.oov_token = oov_token
        self.analyzer = analyzer
        self.document_count = document_count
        self.word_counts = collections.OrderedDict()
        self.word_docs = collections.defaultdict(int)
        self.index_docs = collections.defaultdict(int)
        self.word_index = {}
        self.index_word = {}

    def _tokens(self, text):
        """A text's tokens: its characters (char_level) or the items of a list as given,
        lower-cased when `lower`; otherwise its words."""
        if self.char_level or isinstance(text, list):
            if not self.lower:
                return text
            return [item.lower() for item in text] if isinstance(text, list) else text.lower()
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, filters=self.filters, lower=self.lower,
                                     split=self.split)

    def fit_on_texts(self, texts):
        for text in texts:
            self.document_count += 1
            tokens = self._tokens(text)
            for token in tokens:
                self.word_counts[token] = self.word_counts.get(token, 0) + 1
            for token in set(tokens):
                self.word_docs[token] += 1
        # sorted() is stable: equally frequent words keep the order they were first seen in.
        by_count = sorted(self.word_counts, key=self.word_counts.get, reverse=True)
        vocabulary = ([] if self.oov_token is None else [self.oov_token]) + by_count
        self.word_index = {word: index for index, word in enumerate(vocabulary, start=1)}
        self.index_word = {index: word for word, index in self.word_index.items()}
        for word, count in self.word_docs.items():
            self.index_docs[self.word_index[word]] = count

    def fit_on_sequences(self, sequences):
        """Document frequencies of indices, for `sequences_to_matrix(mode='tfidf')`."""
        self.document_count += len(sequences)
        for sequence in sequences:
            for index in set(sequence):
                self.index_docs[index] += 1

    def _in_vocabulary(self, index):
        return not self.num_words or index < self.num_words

    def texts_to_sequences_generator(self, texts):
        oov_index = self.word_index.get(self.oov_token)
        for text in texts:
            sequence = []
            for token in self._tokens(text):
                index = self.word_index.get(token)
                if index is not None and self._in_vocabulary(index):
                    sequence.append(index)
                elif oov_index is not None:
                    sequence.append(oov_index)
            yield sequence

    def texts_to_sequences(self, texts):
        return list(self.texts_to_sequences_generator(texts))

    def sequences_to_texts_generator(self, sequences):
        oov_index = self.word_index.get(self.oov_token)
        for sequence in sequences:
            words = []
            for index in sequence:
                word = self.index_word.get(index)
                if word is not None and self._in_vocabulary(index):
                    words.append(word)
                elif oov_index is not None:
                    words.append(self.index_word[oov_index])
            yield " ".join(words)

    def sequences_to_texts(self, sequences):
        return list(self.sequences_to_texts_generator(sequences))

    def texts_to_matrix(self, texts, mode="binary"):
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """[len(sequences), num_words] float64: per index, 'binary' presence, 'count', 'freq'
        (count / sequence length) or 'tfidf' ((1 + log count) * log(1 + docs / (1 + df)))."""
        if mode not in ("binary", "count", "freq", "tfidf"):
            raise ValueError(f"Unknown vectorization mode: {mode}. Use 'binary', 'count', "
                             "'freq' or 'tfidf'.")
        width = self.num_words
        if not width:
            if not self.word_index:
                raise ValueError("Specify a dimension (`num_words` argument), or fit on some "
                                 "text data first.")
            width = len(self.word_index) + 1
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        matrix = np.zeros((len(sequences), width))
        for row, sequence in enumerate(sequences):
            counts = collections.Counter(index for index in sequence if index < width)
            for index, count in counts.items():
                if mode == "binary":
                    matrix[row, index] = 1
                elif mode == "count":
                    matrix[row, index] = count
                elif mode == "freq":
                    matrix[row, index] = count / len(sequence)
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(index, 0)))
                    matrix[row, index] = (1 + np.log(count)) * idf
        return matrix

    def get_config(self):
        """The settings and the fitted tables (the tables as JSON text, as Keras writes them)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower,
                "split": self.split, "char_level": self.char_level,
                "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs):
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)


@tf_export("keras.preprocessing.text.tokenizer_from_json")
def tokenizer_from_json(json_string):
    """The Tokenizer that `to_json` (Flowstone's or Keras's) wrote."""
    config = dict(json.loads(json_string)["config"])
    tables = {name: json.loads(config.pop(name))
              for name in ("word_counts", "word_docs", "index_docs", "index_word",
                           "word_index")}
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts = tables["word_counts"]
    tokenizer.word_docs = tables["word_docs"]
    # JSON keys are strings; the index tables are keyed by int.
    tokenizer.index_docs = {int(k): v for k, v in tables["index_docs"].items()}
    tokenizer.index_word = {int(k): v for k, v in tables["index_word"].items()}
    tokenizer.word_index = tables["word_index"]
    return tokenizer
