"""Where cuda.core's on-disk caches live by default (the per-user cache root)."""
import os
from pathlib import Path

# Read once; tests flip it to exercise the other platform's rule.
_IS_WINDOWS = os.name == "nt"


def _user_cache_root(windows: bool) -> Path:
    """The platform's per-user cache directory (without the ``cuda-python`` leaf)."""
    if windows:
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) if base else Path.home() / "AppData" / "Local"
    base = os.environ.get("XDG_CACHE_HOME")
    return Path(base) if base else Path.home() / ".cache"


def _default_cache_dir() -> Path:
    """The per-user cache root shared by cuda.core's caches, ending in ``cuda-python``.

    Linux: ``$XDG_CACHE_HOME/cuda-python``, or ``~/.cache/cuda-python`` when the
    variable is unset or empty. Windows: ``%LOCALAPPDATA%\\cuda-python``, or
    ``~/AppData/Local/cuda-python``. Each cache adds its own leaf directory.
    """
    return _user_cache_root(_IS_WINDOWS) / "cuda-python"
