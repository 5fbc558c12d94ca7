"""Where cuda.core's on-disk caches live by default (the per-user cache root)."""
import os
from pathlib import Path

# Read once; tests flip it to exercise the other platform's rule.
_IS_WINDOWS = os.name == "nt"


def _default_cache_dir() -> Path:
    """The per-user cache root shared by cuda.core's caches, ending in ``cuda-python``.

    Linux: ``$XDG_CACHE_HOME/cuda-python``, or ``~/.cache/cuda-python`` when the
    variable is unset or empty. Windows: ``%LOCALAPPDATA%\\cuda-python``, or
    ``~/AppData/Local/cuda-python``. Each cache adds its own leaf directory.
    """
    if _IS_WINDOWS:
        base = os.environ.get("LOCALAPPDATA")
        root = Path(base) if base else Path.home() / "AppData" / "Local"
    else:
        base = os.environ.get("XDG_CACHE_HOME")
        root = Path(base) if base else Path.home() / ".cache"
    return root / "cuda-python"
