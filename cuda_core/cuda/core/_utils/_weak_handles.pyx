# cython: language_level=3
# distutils: language = c++
"""cuda.core._utils._weak_handles: weak handles that observe when the last
strong owner of a resource is gone (upstream 1.2.2's private module, which its
tests import to check lifetimes without relying on driver side effects).

A :class:`WeakHandle` is a ``std::weak_ptr`` to the handle behind a
:class:`~cuda.core.Buffer` (its allocation) or a
:class:`~cuda.core.graph.GraphDefinition` (the root graph of its hierarchy):
truthy while some strong owner remains (a graph node's attachment, a view, the
object itself), falsy once every one is released. Not public API.
"""
from cuda.core._memory._buffer cimport Buffer
from cuda.core._resource_handles cimport DevicePtrHandle, GraphHandle
from cuda.core.graph._graph_definition cimport GraphDefinition

__all__ = ["WeakHandle", "weak_handle"]


cdef extern from *:
    """
    #include <memory>
    // A weak observer of any handle's control block (std::weak_ptr<const void>).
    struct WeakAnyHandle {
        std::weak_ptr<const void> ref;
        bool expired() const noexcept { return ref.expired(); }
        long use_count() const noexcept { return ref.use_count(); }
    };
    template <class T>
    WeakAnyHandle weak_any_handle(const std::shared_ptr<T>& strong) noexcept { return WeakAnyHandle{strong}; }
    """
    cppclass WeakAnyHandle:
        bint expired() noexcept
        long use_count() noexcept
    WeakAnyHandle weak_of_allocation "weak_any_handle"(const DevicePtrHandle& strong) noexcept
    WeakAnyHandle weak_of_graph "weak_any_handle"(const GraphHandle& strong) noexcept


cdef class WeakHandle:
    """Non-owning weak handle of a resource's shared control block: truthy while
    some strong owner of the handle remains, falsy once the last is released.
    Made by :func:`weak_handle`."""

    cdef WeakAnyHandle _ref

    def __bool__(self):
        return not self._ref.expired()

    def expired(self):
        """``True`` once every strong owner of the handle is gone."""
        return self._ref.expired()

    def use_count(self):
        """The number of strong owners sharing the handle now."""
        return self._ref.use_count()

    def __repr__(self):
        return f"<WeakHandle use_count={self._ref.use_count()}>"


def weak_handle(obj):
    """A :class:`WeakHandle` observing the resource behind `obj`: a
    :class:`~cuda.core.Buffer` (its allocation handle) or a
    :class:`~cuda.core.graph.GraphDefinition` (its hierarchy's root graph).

    Raises :class:`ValueError` for a Buffer with no active allocation (closed,
    or one whose memory is owned elsewhere), :class:`TypeError` for another type.
    """
    cdef WeakHandle w = WeakHandle.__new__(WeakHandle)
    cdef GraphHandle graph
    if isinstance(obj, Buffer):
        if not (<Buffer>obj)._h:
            raise ValueError("Buffer has no active allocation")
        w._ref = weak_of_allocation((<Buffer>obj)._h)
        return w
    if isinstance(obj, GraphDefinition):
        graph = (<GraphDefinition>obj)._h
        if not graph:
            raise ValueError("GraphDefinition is no longer valid")
        while graph.get().parent:
            graph = graph.get().parent
        w._ref = weak_of_graph(graph)
        return w
    raise TypeError(f"weak_handle() supports Buffer and GraphDefinition, not {type(obj).__name__}")
