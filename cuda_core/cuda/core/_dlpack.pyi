"""Type stubs for cuda.core._dlpack (DLPack export; its C API is cimported by _memory._buffer)."""
from enum import IntEnum

__all__: list[str]


class DLDeviceType(IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13


def classify_dl_device(buf: object) -> tuple[int, int]: ...
def make_py_capsule(buf: object, versioned: bool) -> object: ...
