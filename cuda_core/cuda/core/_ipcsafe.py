"""This distribution's identity, and the check that refuses an install mixed with NVIDIA's cuda-core.

Versions (README, "Versions"):

* ``cuda.core.__version__`` is ``UPSTREAM_API_VERSION``, the upstream cuda-core
  release whose API shapes this package provides, so code written for upstream
  that gates on ``cuda.core.__version__`` takes its 1.2 branch.
* ``cuda.core.__ipcsafe_version__`` is this distribution's own version (also
  ``importlib.metadata.version("cuda-core-ipcsafe")``; pyproject.toml reads it
  from here).

Mixed installs: this distribution and NVIDIA's ``cuda-core`` both install
``cuda/core/__init__.py`` (and, with upstream's layout, more files of the same
names), so pip lets the one installed last overwrite the other's files, and
uninstalling either deletes files the other needs. When this package's
``__init__`` runs and NVIDIA's ``cuda-core`` is installed in the same directory,
``import cuda.core`` raises ImportError naming both and the command that fixes it.
The check costs one listing of that directory: importlib.metadata (whose own
import costs more than the rest of ``import cuda.core``) is imported only when
the listing shows upstream's metadata, to read the versions for the message.
"""
import json
import os
import sys

__ipcsafe_version__ = "0.1.0"
UPSTREAM_API_VERSION = "1.2.2"

DIST_NAME = "cuda-core-ipcsafe"
UPSTREAM_DIST_NAME = "cuda-core"

# <site>/cuda/core/_ipcsafe.py -> <site>
_SITE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _install_source(dist):
    """What `pip install` should be given to reinstall `dist`: the file or
    directory it came from (pip's direct_url.json), else its name (an index)."""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except (OSError, ValueError):
        direct = {}
    url = direct.get("url", "")
    if url.startswith("file://"):
        return url[len("file://"):]
    return url or DIST_NAME


def _lists_upstream_metadata(site_dir):
    """Whether `site_dir` holds cuda-core's *.dist-info (or *.egg-info): one listing."""
    try:
        entries = os.listdir(site_dir)
    except OSError:
        return False
    wanted = UPSTREAM_DIST_NAME.replace("-", "_")
    for entry in entries:
        stem, dot, suffix = entry.rpartition(".")
        # <name>-<version>.dist-info, <name>[-<version>...].egg-info; <name> escaped with "_"
        if dot and suffix in ("dist-info", "egg-info") and stem.split("-", 1)[0].lower().replace(".", "_") == wanted:
            return True
    return False


def mixed_install_message(site_dir=_SITE_DIR, python=sys.executable):
    """The ImportError text when both cuda-core-ipcsafe and NVIDIA's cuda-core
    are installed in `site_dir`; None when they are not."""
    if not _lists_upstream_metadata(site_dir):
        return None
    from importlib import metadata  # only now: its import is the costly part (module docstring)

    upstream = list(metadata.distributions(name=UPSTREAM_DIST_NAME, path=[site_dir]))
    if not upstream:
        return None
    ours = list(metadata.distributions(name=DIST_NAME, path=[site_dir]))
    ours_version = ours[0].version if ours else __ipcsafe_version__
    source = _install_source(ours[0]) if ours else DIST_NAME
    theirs_version = upstream[0].version
    where = os.path.join(site_dir, "cuda", "core")
    return (
        f"cuda.core: two distributions are installed into {where}: {DIST_NAME} {ours_version} (this "
        f"package, whose files are in use) and NVIDIA's {UPSTREAM_DIST_NAME} {theirs_version}. Both own "
        f"cuda/core/__init__.py, so their files are mixed and uninstalling either one deletes files of the "
        f"other. Keep one; to keep {DIST_NAME}, run:\n"
        f"    {python} -m pip uninstall -y {UPSTREAM_DIST_NAME} {DIST_NAME} && "
        f"{python} -m pip install '{source}'\n"
        f"(to keep NVIDIA's instead: {python} -m pip uninstall -y {DIST_NAME} {UPSTREAM_DIST_NAME} && "
        f"{python} -m pip install '{UPSTREAM_DIST_NAME}[cu13]=={theirs_version}', or [cu12] for CUDA 12)"
    )


def check_not_mixed_with_upstream():
    """Raise ImportError (see mixed_install_message) when NVIDIA's cuda-core is
    installed beside this package in the same directory."""
    message = mixed_install_message()
    if message is not None:
        raise ImportError(message, name="cuda.core")
