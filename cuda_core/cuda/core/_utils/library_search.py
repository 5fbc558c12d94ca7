"""Where the CUDA toolkit libraries that this package dlopen()s (NVRTC, nvJitLink) are looked for."""
import importlib.util
import os

__all__ = ["toolkit_library_candidates"]


def toolkit_library_candidates(override_variable, sonames, wheel_paths):
    """The files to try, in order: only ``$override_variable`` when it is set; else
    ``$CUDA_HOME`` / ``$CUDA_PATH`` ``lib64``/``lib``, the ``nvidia`` wheels'
    `wheel_paths` (relative to each ``nvidia`` package root), the bare `sonames`
    (the system library path) and ``/usr/local/cuda/lib64``. Duplicates and
    absolute paths that do not exist are dropped."""
    explicit = os.environ.get(override_variable)
    if explicit:
        return [explicit]
    out = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        base = os.environ.get(var)
        if base:
            out += [os.path.join(base, sub, so) for sub in ("lib64", "lib") for so in sonames]
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    for root in (list(spec.submodule_search_locations or ()) if spec is not None else ()):
        out += [os.path.join(root, *path) for path in wheel_paths]
    out += list(sonames)
    out += [os.path.join("/usr/local/cuda", "lib64", so) for so in sonames]
    seen = set()
    return [p for p in out if not (p in seen or seen.add(p))
            and (os.sep not in p or os.path.exists(p))]
