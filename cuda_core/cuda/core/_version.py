"""The upstream cuda-core release this package's API matches (upstream's module path;
the value is cuda.core._ipcsafe.UPSTREAM_API_VERSION, see README "Versions")."""
from cuda.core._ipcsafe import UPSTREAM_API_VERSION as __version__

version = __version__
__version_tuple__ = version_tuple = tuple(int(part) for part in __version__.split("."))

__all__ = ["__version__", "__version_tuple__", "version", "version_tuple"]
