"""Where the Keras data sets live: ~/.keras/datasets (or $KERAS_HOME/datasets).

A missing file is downloaded from Keras's URL when the network allows; otherwise the error names
the exact file to place and the URL to fetch it from.
"""

import os
import shutil
import tempfile
import urllib.request


def datasets_dir():
    base = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(base, "datasets")


def get_file(fname, origin):
    """The local path of `fname` in the data sets folder, fetched from `origin` if absent."""
    path = os.path.join(datasets_dir(), fname)
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with urllib.request.urlopen(origin, timeout=30) as response, \
                tempfile.NamedTemporaryFile(dir=os.path.dirname(path), delete=False) as out:
            shutil.copyfileobj(response, out)
        os.replace(out.name, path)
    except Exception as e:  # noqa: BLE001 - any failure means "fetch it yourself"
        raise OSError(f"The data set file {path} is missing and could not be downloaded "
                      f"({type(e).__name__}: {e}). Download {origin} and place it at "
                      f"{path}.") from None
    return path
