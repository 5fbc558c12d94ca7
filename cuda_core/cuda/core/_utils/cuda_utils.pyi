"""Type stubs for cuda.core._utils.cuda_utils."""
from typing import Any, Optional, Tuple

__all__ = ["CUDAError", "CUDAWarning", "handle_return"]


class CUDAError(Exception):
    code: Optional[int]
    def __init__(self, message: str, code: Optional[int] = ...) -> None: ...


class CUDAWarning(RuntimeWarning): ...


def handle_return(result: Tuple[Any, ...], handle: Any = ...) -> Any: ...
