"""Type stubs for cuda.core._utils.optional_import."""
from collections.abc import Callable
from types import ModuleType

__all__ = ["LibraryNotFoundError", "bind_here", "_optional_cuda_import"]


class LibraryNotFoundError(RuntimeError): ...

_bound_here: dict[str, object]

def bind_here(fully_qualified_modname: str, binding: object) -> None: ...
def _library_not_found_errors() -> tuple[type[BaseException], ...]: ...
def _optional_cuda_import(fully_qualified_modname: str, *,
                          probe_function: Callable[[ModuleType], object] | None = None) -> ModuleType | None: ...
