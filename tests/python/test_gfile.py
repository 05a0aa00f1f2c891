"""tf.io.gfile and TF1's tf.gfile on local files, with TensorFlow's errors and messages."""

import os
import re

import pytest

import flowstone as tf

gfile = tf.io.gfile


def _error(cls, message):
    return pytest.raises(cls, match="^" + re.escape(message) + "$")


def test_write_read_append_and_iterate(tmp_path):
    path = str(tmp_path / "a.txt")
    with gfile.GFile(path, "w") as f:
        f.write("hello\n")
        f.write(b"world\n")
    assert gfile.GFile(path).read() == "hello\nworld\n"
    assert gfile.GFile(path, "rb").read() == b"hello\nworld\n"
    assert gfile.GFile(path).readlines() == ["hello\n", "world\n"]
    assert list(gfile.GFile(path)) == ["hello\n", "world\n"]
    f = gfile.GFile(path)
    assert (f.readline(), f.readline(), f.readline()) == ("hello\n", "world\n", "")
    f.seek(3)
    assert (f.read(2), f.tell()) == ("lo", 5)
    assert gfile.GFile(path).size() == 12
    with gfile.GFile(path, "a") as f:
        f.write("more")
    assert gfile.GFile(path).read() == "hello\nworld\nmore"
    assert (f.name, f.mode) == (path, "a")


def test_file_errors_are_tensorflows(tmp_path):
    missing = str(tmp_path / "missing")
    reader = gfile.GFile(missing)  # opened lazily, as in TensorFlow
    with _error(tf.errors.NotFoundError, f"{missing}; No such file or directory"):
        reader.read()
    with _error(tf.errors.NotFoundError, f"{missing}; No such file or directory"):
        gfile.remove(missing)
    with _error(tf.errors.NotFoundError, f"{missing}; No such file or directory"):
        gfile.stat(missing)
    with _error(tf.errors.NotFoundError, f"Could not find directory {missing}"):
        gfile.listdir(missing)
    with _error(tf.errors.NotFoundError, f"{missing} not found"):
        gfile.rmtree(missing)
    with _error(tf.errors.NotFoundError, f"{missing}/q.txt; No such file or directory"):
        gfile.GFile(missing + "/q.txt", "w").write("x")
    with _error(tf.errors.InvalidArgumentError,
                "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'"):
        gfile.GFile(missing, "x")
    path = str(tmp_path / "f.txt")
    gfile.GFile(path, "w").write("data")
    with _error(tf.errors.PermissionDeniedError, "File isn't open for writing"):
        gfile.GFile(path, "r").write("x")
    with _error(tf.errors.PermissionDeniedError, "File isn't open for reading"):
        gfile.GFile(path, "w").read()
    with _error(tf.errors.FailedPreconditionError, f"{tmp_path}; Is a directory"):
        gfile.remove(str(tmp_path))


def test_directories(tmp_path):
    root = str(tmp_path)
    gfile.mkdir(root + "/d")
    gfile.mkdir(root + "/d")  # an existing directory is fine, as in TensorFlow
    with _error(tf.errors.NotFoundError, f"{root}/x/y; No such file or directory"):
        gfile.mkdir(root + "/x/y")
    gfile.makedirs(root + "/d/e/f")
    gfile.makedirs(root + "/d/e/f")
    gfile.GFile(root + "/a.txt", "w").write("a")
    gfile.GFile(root + "/b.txt", "w").write("bb")
    assert gfile.listdir(root) == ["a.txt", "b.txt", "d"]
    assert gfile.glob(root + "/*.txt") == [root + "/a.txt", root + "/b.txt"]
    assert gfile.isdir(root + "/d") and not gfile.isdir(root + "/a.txt")
    assert gfile.exists(root + "/a.txt") and not gfile.exists(root + "/zz")
    assert list(gfile.walk(root)) == [(root, ["d"], ["a.txt", "b.txt"]),
                                      (root + "/d", ["e"], []), (root + "/d/e", ["f"], []),
                                      (root + "/d/e/f", [], [])]
    assert [top for top, _, _ in gfile.walk(root, topdown=False)][-1] == root
    assert list(gfile.walk(root + "/zz")) == []
    stat = gfile.stat(root + "/b.txt")
    assert (stat.length, stat.is_directory) == (2, False)
    assert stat.mtime_nsec == os.stat(root + "/b.txt").st_mtime_ns
    assert gfile.stat(root + "/d").is_directory
    gfile.rmtree(root + "/d")
    assert not gfile.exists(root + "/d")


def test_copy_and_rename(tmp_path):
    a, b, c = (str(tmp_path / n) for n in ("a", "b", "c"))
    gfile.GFile(a, "w").write("A")
    gfile.copy(a, b)
    with _error(tf.errors.AlreadyExistsError, "file already exists"):
        gfile.copy(a, b)
    gfile.GFile(a, "w").write("A2")
    gfile.copy(a, b, overwrite=True)
    assert gfile.GFile(b).read() == "A2"
    with _error(tf.errors.AlreadyExistsError, "file already exists"):
        gfile.rename(a, b)
    gfile.rename(a, c)
    assert not gfile.exists(a) and gfile.GFile(c).read() == "A2"
    with _error(tf.errors.NotFoundError, f"{a}; No such file or directory"):
        gfile.rename(a, c, overwrite=True)
    gfile.rename(c, b, overwrite=True)
    assert gfile.GFile(b).read() == "A2"


def test_schemes(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("s")
    assert gfile.exists(f"file://{path}")
    assert gfile.GFile(f"file://{path}").read() == "s"
    for url in ("gs://bucket/x", "hdfs://namenode/x", "s3://bucket/x"):
        scheme = url.split(":")[0]
        with _error(tf.errors.UnimplementedError,
                    f"File system scheme '{scheme}' not implemented (file: '{url}')"):
            gfile.exists(url)
    with pytest.raises(tf.errors.UnimplementedError, match="scheme 'gs'"):
        gfile.GFile("gs://bucket/model.ckpt", "w")
    assert "file" in gfile.get_registered_schemes()
    assert gfile.join("a", "b", "c") == "a/b/c"


def test_tf1_names(tmp_path):
    root = str(tmp_path)
    assert tf.gfile.Open is tf.gfile.GFile and issubclass(tf.gfile.FastGFile, tf.gfile.GFile)
    tf.gfile.MakeDirs(root + "/m/n")
    tf.gfile.MkDir(root + "/k")
    with tf.gfile.Open(root + "/m/f", "w") as f:
        f.write("x")
    tf.gfile.Copy(root + "/m/f", root + "/m/g")
    tf.gfile.Rename(root + "/m/g", root + "/m/h")
    assert tf.gfile.Exists(root + "/m/h") and tf.gfile.IsDirectory(root + "/k")
    assert tf.gfile.ListDirectory(root + "/m") == ["f", "h", "n"]
    assert tf.gfile.Glob(root + "/m/?") == [root + "/m/f", root + "/m/h", root + "/m/n"]
    assert tf.gfile.Stat(root + "/m/f").length == 1
    assert [d for d, _, _ in tf.gfile.Walk(root + "/m")] == [root + "/m", root + "/m/n"]
    tf.gfile.Remove(root + "/m/h")
    tf.gfile.DeleteRecursively(root + "/m")
    assert tf.gfile.ListDirectory(root) == ["k"]
    assert tf.gfile.FastGFile(root + "/k/z", "w") is not None
