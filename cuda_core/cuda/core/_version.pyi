"""Type stubs for cuda.core._version."""
__all__ = ["__version__", "__version_tuple__", "version", "version_tuple"]

__version__: str
version: str
__version_tuple__: tuple[int | str, ...]
version_tuple: tuple[int | str, ...]
