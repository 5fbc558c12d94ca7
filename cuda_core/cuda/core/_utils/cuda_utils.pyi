"""Type stubs for cuda.core._utils.cuda_utils."""
from types import ModuleType
import sys
from typing import Any, Dict, Iterable, NamedTuple, Optional, Tuple

__all__ = ["CUDAError", "CUDAWarning", "ComputeCapability", "IPCImportError", "NVJitLinkError", "NVRTCError", "driver", "handle_return"]

driver: ModuleType
nvrtc: ModuleType
runtime: ModuleType


class CUDAError(Exception):
    code: Optional[int]
    def __init__(self, message: str, code: Optional[int] = ...) -> None: ...


class NVRTCError(CUDAError): ...
class NVJitLinkError(CUDAError): ...


class CUDAWarning(RuntimeWarning): ...


if sys.version_info >= (3, 11):
    class IPCImportError(ExceptionGroup[Exception]):
        def __new__(cls, message: str, exceptions: Iterable[Exception]) -> "IPCImportError": ...
        def derive(self, excs: Iterable[Exception]) -> "IPCImportError": ...  # type: ignore[override]
        @property
        def errors(self) -> Dict[int, Exception]: ...
else:
    class IPCImportError(Exception):
        message: str
        exceptions: Tuple[Exception, ...]
        def __init__(self, message: str, exceptions: Iterable[Exception]) -> None: ...
        @property
        def errors(self) -> Dict[int, Exception]: ...


class ComputeCapability(NamedTuple):
    major: int
    minor: int


def cast_to_3_tuple(label: str, cfg: int | Tuple[int, ...]) -> Tuple[int, int, int]: ...
def handle_return(result: Tuple[Any, ...], handle: Any = ...) -> Any: ...
def check_or_create_options(cls: type, options: object, options_description: str = ..., keep_none: bool = ...) -> object: ...
