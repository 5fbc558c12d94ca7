"""Optional imports of CUDA library modules, with upstream's rules (cuda-pathfinder's
``_optional_cuda_import``, which upstream's ``_program`` and ``_linker`` call through
module globals that its tests replace).

A module this package binds itself (it dlopen()s the library, see
:mod:`cuda.core._utils.library_search`) is registered with :func:`bind_here` under
the name upstream imports (cuda-bindings' ``cuda.bindings.nvjitlink``), so the
upstream code path resolves to this package's binding whether or not cuda-bindings
is installed."""
import importlib

__all__ = ["LibraryNotFoundError", "bind_here", "_optional_cuda_import"]


class LibraryNotFoundError(RuntimeError):
    """A CUDA library could not be loaded: raised by a probe of a binding of this
    package; :func:`_optional_cuda_import` reports such a module as unavailable."""


# module name (as upstream imports it) -> this package's binding of that library
_bound_here = {}


def bind_here(fully_qualified_modname, binding):
    """Makes :func:`_optional_cuda_import` of ``fully_qualified_modname`` give ``binding``."""
    _bound_here[fully_qualified_modname] = binding


def _library_not_found_errors():
    """The probe errors that mean "the library is absent": this package's, and
    cuda-pathfinder's DynamicLibNotFoundError (cuda-bindings' modules raise it) when installed."""
    try:
        from cuda.pathfinder import DynamicLibNotFoundError
    except ImportError:
        return (LibraryNotFoundError,)
    return (LibraryNotFoundError, DynamicLibNotFoundError)


def _optional_cuda_import(fully_qualified_modname, *, probe_function=None):
    """The module named ``fully_qualified_modname`` (this package's binding when one is
    registered), or ``None`` when that module does not exist or ``probe_function(module)``
    finds its library absent.

    Raises ModuleNotFoundError when the import fails on another missing module (a
    dependency of the named one), and whatever else ``probe_function`` raises."""
    module = _bound_here.get(fully_qualified_modname)
    if module is None:
        try:
            module = importlib.import_module(fully_qualified_modname)
        except ModuleNotFoundError as err:
            if err.name != fully_qualified_modname:
                raise
            return None
    if probe_function is not None:
        try:
            probe_function(module)
        except _library_not_found_errors():
            return None
    return module
