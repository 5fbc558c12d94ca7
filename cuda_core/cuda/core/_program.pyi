"""Type stubs for cuda.core._program."""
from dataclasses import dataclass
from typing import Any

from cuda.bindings import nvrtc   # the handle types (an int without cuda-bindings)

from cuda.core._linker import LinkerHandleT
from cuda.core._module import ObjectCode
from cuda.core.typing import CompilerBackendType, PCHStatusType
from cuda.core.utils._program_cache import ProgramCacheResource

__all__ = ['Program', 'ProgramOptions']


def _can_load_generated_ptx() -> bool: ...
def _nvrtc_version() -> tuple[int, int]: ...
_nvvm_module: object
_nvvm_import_attempted: bool

def _get_nvvm_module() -> object: ...
def _program_compile_uncached(program: Program, target_type: str, name_expressions: Any, logs: Any) -> ObjectCode: ...
def _nvvm_candidates() -> list[str]: ...
def _find_libdevice_path() -> str: ...
def _unsupported_nvvm_options(names: list[str]) -> Exception: ...
def _assert_single_dashed_nvvm_options(options: list[str]) -> None: ...
def _extra_sources_bytes(extra_sources: Any) -> list[tuple[bytes, bytes]]: ...

class Program:
    def __init__(self, code: str | bytes | bytearray, code_type: str,
                 options: ProgramOptions | dict | None = None) -> None: ...
    def close(self) -> None: ...
    @property
    def is_closed(self) -> bool: ...
    def compile(self, target_type: str, name_expressions: tuple[str, ...] | list[str] = (),
                logs: object | None = None, *, cache: ProgramCacheResource | None = None) -> ObjectCode: ...
    @property
    def pch_status(self) -> PCHStatusType | None: ...
    @property
    def backend(self) -> CompilerBackendType: ...
    @property
    def handle(self) -> nvrtc.nvrtcProgram | int | LinkerHandleT | None: ...
    def __repr__(self) -> str: ...


@dataclass
class ProgramOptions:
    name: str | None = "default_program"
    arch: str | None = None
    relocatable_device_code: bool | None = None
    extensible_whole_program: bool | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    device_code_optimize: bool | None = None
    ptxas_options: str | list[str] | tuple[str] | None = None
    max_register_count: int | None = None
    ftz: bool | None = None
    prec_sqrt: bool | None = None
    prec_div: bool | None = None
    fma: bool | None = None
    use_fast_math: bool | None = None
    extra_device_vectorization: bool | None = None
    link_time_optimization: bool | None = None
    gen_opt_lto: bool | None = None
    define_macro: str | tuple[str, str] | list[str | tuple[str, str]] | tuple[str | tuple[str, str], ...] | None = None
    undefine_macro: str | list[str] | tuple[str] | None = None
    include_path: str | list[str] | tuple[str] | None = None
    use_bundled_headers: bool | None = None
    pre_include: str | list[str] | tuple[str] | None = None
    no_source_include: bool | None = None
    std: str | None = None
    builtin_move_forward: bool | None = None
    builtin_initializer_list: bool | None = None
    disable_warnings: bool | None = None
    restrict: bool | None = None
    device_as_default_execution_space: bool | None = None
    device_int128: bool | None = None
    optimization_info: str | None = None
    no_display_error_number: bool | None = None
    diag_error: int | list[int] | tuple[int] | None = None
    diag_suppress: int | list[int] | tuple[int] | None = None
    diag_warn: int | list[int] | tuple[int] | None = None
    brief_diagnostics: bool | None = None
    time: str | None = None
    split_compile: int | None = None
    fdevice_syntax_only: bool | None = None
    minimal: bool | None = None
    no_cache: bool | None = None
    fdevice_time_trace: str | None = None
    device_float128: bool | None = None
    frandom_seed: str | None = None
    ofast_compile: str | None = None
    pch: bool | None = None
    create_pch: str | None = None
    use_pch: str | None = None
    pch_dir: str | None = None
    pch_verbose: bool | None = None
    pch_messages: bool | None = None
    instantiate_templates_in_pch: bool | None = None
    extra_sources: list[tuple[str, str | bytes | bytearray]] | tuple[tuple[str, str | bytes | bytearray], ...] | None = None
    use_libdevice: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self) -> None: ...
    def as_bytes(self, backend: str, target_type: str | None = None) -> list[bytes]: ...
    def _nvvm_args(self) -> list[str]: ...
    def _prepare_nvrtc_options(self) -> list[bytes]: ...
    def _prepare_nvvm_options(self, as_bytes: bool = True) -> list[bytes] | list[str]: ...
    def _prepare_extra_sources_bytes(self) -> list[tuple[bytes, bytes]] | None: ...
    def __repr__(self) -> str: ...
