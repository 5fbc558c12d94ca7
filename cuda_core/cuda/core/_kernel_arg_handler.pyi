"""Type stubs for cuda.core._kernel_arg_handler."""
from typing import Any, Sequence

__all__ = ['ParamHolder']


class ParamHolder:
    ptr: int

    def __init__(self, kernel_args: Sequence[Any]) -> None: ...
