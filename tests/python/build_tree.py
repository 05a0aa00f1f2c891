"""Finds test-only artifacts (the fake GPU plugin, the stand-in libcuda.so.1) in the CMake build
trees under build/. Sanitizer trees (build/asan, build/tsan) are skipped: their libraries need a
sanitizer runtime that a plain Python does not load."""

import glob
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SANITIZER_TREES = ("asan", "tsan")


def find_built(relative_path, env_override=None):
    """The newest build/<tree>/<relative_path>, or the path in $env_override, or None."""
    if env_override and os.environ.get(env_override):
        return os.environ[env_override]
    candidates = [path for tree in glob.glob(os.path.join(REPO, "build", "*"))
                  if os.path.basename(tree) not in SANITIZER_TREES
                  for path in [os.path.join(tree, relative_path)] if os.path.exists(path)]
    return max(candidates, key=os.path.getmtime) if candidates else None
