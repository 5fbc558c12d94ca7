"""Type stubs for cuda.core._linker."""
from dataclasses import dataclass
from typing import Union

import cuda.bindings.driver
import cuda.bindings.nvjitlink

from cuda.core._module import ObjectCode
from cuda.core.typing import CompilerBackendType, ObjectCodeFormatType

__all__ = ['Linker', 'LinkerOptions']

LinkerHandleT = Union['cuda.bindings.nvjitlink.nvJitLinkHandle', 'cuda.bindings.driver.CUlinkState']
_driver = None


def _loaded_nvjitlink_version() -> tuple[int, int]: ...
_inited: bool
_use_nvjitlink_backend: bool | None
_nvjitlink_input_types: dict[str, int] | None
_driver_input_types: dict[str, int] | None


class Linker:
    def __init__(self, *object_codes: ObjectCode, options: LinkerOptions | None = None) -> None: ...
    @property
    def is_closed(self) -> bool: ...
    def link(self, target_type: ObjectCodeFormatType | str) -> ObjectCode: ...
    def get_error_log(self) -> str: ...
    def get_info_log(self) -> str: ...
    def close(self) -> None: ...
    @property
    def handle(self) -> LinkerHandleT: ...
    @classmethod
    def which_backend(cls) -> CompilerBackendType: ...


@dataclass
class LinkerOptions:
    name: str | None = '<default linker>'
    arch: str | None = None
    max_register_count: int | None = None
    time: bool | None = None
    verbose: bool | None = None
    link_time_optimization: bool | None = None
    ptx: bool | None = None
    optimization_level: int | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    ftz: bool | None = None
    prec_div: bool | None = None
    prec_sqrt: bool | None = None
    fma: bool | None = None
    kernels_used: str | tuple[str] | list[str] | None = None
    variables_used: str | tuple[str] | list[str] | None = None
    optimize_unused_variables: bool | None = None
    ptxas_options: str | tuple[str] | list[str] | None = None
    split_compile: int | None = None
    split_compile_extended: int | None = None
    no_cache: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self) -> None: ...
    def _prepare_nvjitlink_options(self, as_bytes: bool = False) -> list[bytes] | list[str]: ...
    def _prepare_driver_options(self) -> tuple[list[object], list[object]]: ...
    def as_bytes(self, backend: str = 'nvjitlink') -> list[bytes]: ...


def _nvjitlink_has_version_symbol(nvjitlink) -> bool: ...
def _decide_nvjitlink_or_driver() -> bool: ...
def _lazy_init() -> None: ...
