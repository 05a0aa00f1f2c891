"""keras.datasets: loading from ~/.keras/datasets (files the tests write), and the error that
names the file and URL when there is no file and no network."""

import gzip
import pickle
import socket

import numpy as np
import pytest

import flowstone as tf

keras = tf.keras


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    folder = tmp_path / "datasets"
    folder.mkdir()
    return folder


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network is unreachable")
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_mnist_loads_the_npz(keras_home):
    rng = np.random.RandomState(0)
    arrays = {"x_train": rng.randint(0, 255, (5, 28, 28)).astype(np.uint8),
              "y_train": np.arange(5, dtype=np.uint8),
              "x_test": rng.randint(0, 255, (2, 28, 28)).astype(np.uint8),
              "y_test": np.array([7, 1], np.uint8)}
    np.savez(keras_home / "mnist.npz", **arrays)
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, [7, 1])
    assert x_test.shape == (2, 28, 28)


def test_missing_file_without_network_names_file_and_url(keras_home, no_network):
    with pytest.raises(OSError) as info:
        keras.datasets.mnist.load_data()
    message = str(info.value)
    assert f"The data set file {keras_home / 'mnist.npz'} is missing" in message
    assert ("Download https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz "
            f"and place it at {keras_home / 'mnist.npz'}.") in message


def test_fashion_mnist_reads_idx_files(keras_home):
    folder = keras_home / "fashion-mnist"
    folder.mkdir()
    images = np.arange(3 * 28 * 28, dtype=np.uint32).astype(np.uint8).reshape(3, 28, 28)
    for prefix, count in (("train", 3), ("t10k", 3)):
        with gzip.open(folder / f"{prefix}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(b"\0" * 8 + bytes([1, 2, 3][:count]))
        with gzip.open(folder / f"{prefix}-images-idx3-ubyte.gz", "wb") as f:
            f.write(b"\0" * 16 + images.tobytes())
    (x_train, y_train), (x_test, _) = keras.datasets.fashion_mnist.load_data()
    np.testing.assert_array_equal(x_train, images)
    np.testing.assert_array_equal(y_train, [1, 2, 3])


def test_cifar10_reads_python_batches_channels_last(keras_home):
    folder = keras_home / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.RandomState(1)
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.randint(0, 255, (2, 3072)).astype(np.uint8)
        batches[name] = data
        with open(folder / name, "wb") as f:
            pickle.dump({b"data": data, b"labels": [3, 4]}, f)
    (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    assert x_train.shape == (10, 32, 32, 3) and y_train.shape == (10, 1)
    np.testing.assert_array_equal(x_test[1], batches["test_batch"][1].reshape(3, 32, 32)
                                  .transpose(1, 2, 0))


def test_imdb_preprocessing(keras_home):
    x_train = np.empty(2, dtype=object)
    x_train[:] = [[1, 5, 9], [2, 3]]
    x_test = np.empty(1, dtype=object)
    x_test[:] = [[4, 8, 1, 1]]
    np.savez(keras_home / "imdb.npz", x_train=x_train, y_train=np.array([1, 0]),
             x_test=x_test, y_test=np.array([1]))
    (xs, ys), (xt, yt) = keras.datasets.imdb.load_data(num_words=10, seed=0)
    # Start char 1, indices + 3, words >= num_words become the oov char 2.
    assert sorted(map(tuple, xs)) == sorted([(1, 4, 8, 2), (1, 5, 6)])
    assert list(xt[0]) == [1, 7, 2, 4, 4] and list(yt) == [1]
    (xs, _), _ = keras.datasets.imdb.load_data(maxlen=4, seed=0)
    # Only [1, 5, 6] is shorter than 4; without num_words Keras takes the largest index as
    # num_words, so that word itself becomes the oov char (Keras's own quirk, kept).
    assert [list(x) for x in xs] == [[1, 5, 2]]


def test_to_categorical():
    np.testing.assert_array_equal(keras.utils.to_categorical([0, 2, 1], 3),
                                  np.eye(3)[[0, 2, 1]])
    assert keras.utils.to_categorical(np.array([[1], [0]])).shape == (2, 2)
