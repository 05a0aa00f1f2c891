"""tf.io.gfile and TF1's tf.gfile: file access with TensorFlow's errors.

Local paths and `file://` URLs are served by the operating system. Other schemes (`gs://`,
`hdfs://`, `s3://`, ...) have no file system here and raise UnimplementedError with
TensorFlow's message. An operating-system failure becomes the tf.errors class of its errno
(NotFoundError for a missing file, ...) with TensorFlow's text ("<path>; No such file or
directory").
"""

import errno as _errno
import glob as _glob
import os as _os
import shutil as _shutil

from flowstone import errors as _errors
from flowstone.util.tf_export import tf_export

_LOCAL_SCHEMES = ("", "file")

_ERRNO_CLASSES = {
    _errno.ENOENT: _errors.NotFoundError,
    _errno.EEXIST: _errors.AlreadyExistsError,
    _errno.EACCES: _errors.PermissionDeniedError,
    _errno.EPERM: _errors.PermissionDeniedError,
    _errno.EISDIR: _errors.FailedPreconditionError,
    _errno.ENOTDIR: _errors.FailedPreconditionError,
    _errno.ENOTEMPTY: _errors.FailedPreconditionError,
    _errno.ENOSPC: _errors.ResourceExhaustedError,
}


def _local_path(path):
    """The operating-system path of `path`, or UnimplementedError for a remote scheme."""
    path = _os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode()
    scheme, sep, rest = path.partition("://")
    if not sep:
        return path
    if scheme not in _LOCAL_SCHEMES:
        raise _errors.UnimplementedError(
            None, None, f"File system scheme '{scheme}' not implemented (file: '{path}')")
    return rest


def _os_error(error, path):
    """The tf.errors exception for an OSError on `path`."""
    cls = _ERRNO_CLASSES.get(error.errno, _errors.UnknownError)
    return cls(None, None, f"{path}; {_os.strerror(error.errno) if error.errno else error}")


def _not_found(message):
    return _errors.NotFoundError(None, None, message)


class FileStatistics:
    """What stat() reports: `length` in bytes, `mtime_nsec`, `is_directory`."""

    def __init__(self, length, mtime_nsec, is_directory):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory

    def __repr__(self):
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


_MODES = ("r", "w", "a", "r+", "w+", "a+")


@tf_export("io.gfile.GFile", "gfile.GFile", "gfile.Open")
class GFile:
    """A file opened lazily on first use: reading a missing file raises NotFoundError then, as
    in TensorFlow. Text modes give `str`, modes with "b" give `bytes`; `write` takes either."""

    def __init__(self, name, mode="r"):
        self._name = name
        self._mode = mode
        base = mode.replace("b", "")
        if base not in _MODES:
            raise _errors.InvalidArgumentError(
                None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._path = _local_path(name)
        self._binary = "b" in mode
        self._readable = base.startswith("r") or "+" in base
        self._writable = not base.startswith("r") or "+" in base
        self._file = None

    name = property(lambda self: self._name)
    mode = property(lambda self: self._mode)

    def _open(self):
        if self._file is None:
            try:
                self._file = open(self._path, self._mode.replace("b", "") + "b")
            except OSError as e:
                raise _os_error(e, self._name) from None
        return self._file

    def _for_reading(self):
        if not self._readable:
            raise _errors.PermissionDeniedError(None, None, "File isn't open for reading")
        return self._open()

    def _decode(self, data):
        return data if self._binary else data.decode("utf-8")

    def size(self):
        return stat(self._name).length

    def read(self, n=-1):
        return self._decode(self._for_reading().read(n))

    def readline(self):
        return self._decode(self._for_reading().readline())

    def readlines(self):
        return [self._decode(line) for line in self._for_reading().readlines()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, file_content):
        if not self._writable:
            raise _errors.PermissionDeniedError(None, None, "File isn't open for writing")
        data = file_content.encode("utf-8") if isinstance(file_content, str) else file_content
        self._open().write(data)

    def seek(self, offset=None, whence=0, position=None):
        if position is not None:
            offset = position
        self._open().seek(offset, whence)

    def tell(self):
        return self._open().tell()

    def seekable(self):
        return True

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@tf_export("gfile.FastGFile")
class FastGFile(GFile):
    """TF1's deprecated GFile without thread locking; the same class here."""


@tf_export("io.gfile.exists", "gfile.Exists")
def exists(path):
    return _os.path.exists(_local_path(path))


@tf_export("io.gfile.isdir", "gfile.IsDirectory")
def isdir(path):
    return _os.path.isdir(_local_path(path))


@tf_export("io.gfile.glob", "gfile.Glob")
def glob(pattern):
    """The paths matching `pattern` (a string or a list of them), sorted."""
    patterns = [pattern] if isinstance(pattern, (str, bytes)) else pattern
    matches = []
    for item in patterns:
        path = _local_path(item)
        prefix = item[:len(item) - len(path)] if isinstance(item, str) else ""
        matches.extend(prefix + match for match in _glob.glob(path))
    return sorted(matches)


@tf_export("io.gfile.listdir", "gfile.ListDirectory")
def listdir(path):
    """The names of the entries of directory `path` (sorted), without "." and ".."."""
    local = _local_path(path)
    if not _os.path.isdir(local):
        raise _not_found(f"Could not find directory {path}")
    return sorted(_os.listdir(local))


@tf_export("io.gfile.makedirs", "gfile.MakeDirs")
def makedirs(path):
    """Creates `path` and its missing parents; an existing directory is fine, an existing file
    is FailedPreconditionError, as in TensorFlow."""
    local = _local_path(path)
    if _os.path.exists(local) and not _os.path.isdir(local):
        raise _errors.FailedPreconditionError(None, None, f"{path} is not a directory")
    try:
        _os.makedirs(local, exist_ok=True)
    except OSError as e:
        raise _os_error(e, path) from None


@tf_export("io.gfile.mkdir", "gfile.MkDir")
def mkdir(path):
    """Creates directory `path`, whose parent must exist; an existing directory is fine, as in
    TensorFlow."""
    local = _local_path(path)
    if _os.path.isdir(local):
        return
    try:
        _os.mkdir(local)
    except OSError as e:
        raise _os_error(e, path) from None


@tf_export("io.gfile.remove", "gfile.Remove")
def remove(path):
    """Deletes file `path` (FailedPreconditionError for a directory)."""
    local = _local_path(path)
    if _os.path.isdir(local):
        raise _errors.FailedPreconditionError(None, None, f"{path}; Is a directory")
    try:
        _os.remove(local)
    except OSError as e:
        raise _os_error(e, path) from None


def _check_target(path, overwrite):
    if not overwrite and _os.path.exists(_local_path(path)):
        raise _errors.AlreadyExistsError(None, None, "file already exists")


@tf_export("io.gfile.rename", "gfile.Rename")
def rename(src, dst, overwrite=False):
    """Moves `src` to `dst`; AlreadyExistsError when `dst` exists unless overwrite."""
    local = _local_path(src)
    if not _os.path.exists(local):
        raise _not_found(f"{src}; No such file or directory")
    _check_target(dst, overwrite)
    try:
        _os.replace(local, _local_path(dst))
    except OSError as e:
        raise _os_error(e, src) from None


@tf_export("io.gfile.copy", "gfile.Copy")
def copy(src, dst, overwrite=False):
    """Copies file `src` to `dst`; AlreadyExistsError when `dst` exists unless overwrite."""
    local = _local_path(src)
    if not _os.path.exists(local):
        raise _not_found(f"{src}; No such file or directory")
    _check_target(dst, overwrite)
    try:
        _shutil.copyfile(local, _local_path(dst))
    except OSError as e:
        raise _os_error(e, src) from None


@tf_export("io.gfile.rmtree", "gfile.DeleteRecursively")
def rmtree(path):
    """Deletes `path` and everything below it (a file is deleted too)."""
    local = _local_path(path)
    if not _os.path.exists(local):
        raise _not_found(f"{path} not found")
    try:
        if _os.path.isdir(local) and not _os.path.islink(local):
            _shutil.rmtree(local)
        else:
            _os.remove(local)
    except OSError as e:
        raise _os_error(e, path) from None


@tf_export("io.gfile.stat", "gfile.Stat")
def stat(path):
    try:
        result = _os.stat(_local_path(path))
    except OSError as e:
        raise _os_error(e, path) from None
    return FileStatistics(result.st_size, result.st_mtime_ns, _os.path.isdir(_local_path(path)))


@tf_export("io.gfile.walk")
def walk(top, topdown=True, onerror=None):
    """(directory, subdirectory names, file names) for `top` and every directory below it;
    nothing when `top` is not a directory. `onerror` receives listing errors."""
    try:
        names = listdir(top)
    except _errors.NotFoundError as e:
        if onerror is not None:
            onerror(e)
        return
    subdirs = [n for n in names if isdir(join(top, n))]
    files = [n for n in names if n not in subdirs]
    if topdown:
        yield top, subdirs, files
    for subdir in subdirs:
        yield from walk(join(top, subdir), topdown, onerror)
    if not topdown:
        yield top, subdirs, files


@tf_export("gfile.Walk")
def Walk(top, in_order=True):  # noqa: N802 - TensorFlow's name
    return walk(top, topdown=in_order)


@tf_export("io.gfile.join")
def join(path, *paths):
    return _os.path.join(path, *paths)


@tf_export("io.gfile.get_registered_schemes")
def get_registered_schemes():
    return list(_LOCAL_SCHEMES)
