"""Type stubs for cuda.core._dlpack (DLPack export; its C API is cimported by _memory._buffer)."""

__all__: list[str]
