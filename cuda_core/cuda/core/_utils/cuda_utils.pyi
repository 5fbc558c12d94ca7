"""Type stubs for cuda.core._utils.cuda_utils."""
from types import ModuleType
from typing import Any, NamedTuple, Optional, Tuple

__all__ = ["CUDAError", "CUDAWarning", "ComputeCapability", "NVRTCError", "driver", "handle_return"]

driver: ModuleType


class CUDAError(Exception):
    code: Optional[int]
    def __init__(self, message: str, code: Optional[int] = ...) -> None: ...


class NVRTCError(CUDAError): ...


class CUDAWarning(RuntimeWarning): ...


class ComputeCapability(NamedTuple):
    major: int
    minor: int


def handle_return(result: Tuple[Any, ...], handle: Any = ...) -> Any: ...
