# cython: language_level=3
# distutils: language = c++
"""SurfaceObject (upstream module path ``cuda.core.texture._surface``).

A surface object (``CUsurfObject``) is a 64-bit kernel argument for typed
loads and stores into an array created with ``is_surface_load_store=True``.
Its C++ handle (cpp/texture.hpp) owns the array.
"""
from cuda.core._resource_handles cimport (
    ContextHandle, SurfObjectHandle, create_surf_object_handle, primary_context, raise_last_error,
)
from cuda.core.texture._array cimport OpaqueArray, OpaqueArray_check_open, _device_or_current

from cuda.core.texture._texture import ResourceDescriptor

__all__ = ["SurfaceObject"]


cdef class SurfaceObject:
    """A bindless surface handle for kernel-side typed load/store.

    Wraps ``cuSurfObjectCreate``. Unlike a :class:`~cuda.core.texture.TextureObject`,
    a surface has no sampling state (no filtering, no addressing modes, no
    normalization); kernels read and write through it using integer pixel
    coordinates (x in bytes).

    The backing :class:`~cuda.core.texture.OpaqueArray` must have been created
    with ``is_surface_load_store=True`` and is kept alive for the lifetime of
    this object to prevent dangling handles.

    Construct via :meth:`cuda.core.Device.create_surface_object`. Passes to
    kernels as a 64-bit handle (via the ``handle`` property).

    .. versionadded:: 1.1.0
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("SurfaceObject cannot be instantiated directly. Use Device.create_surface_object().")

    @property
    def handle(self):
        """The underlying ``CUsurfObject`` as an integer (64-bit kernel arg; 0 once closed)."""
        if not self._handle:
            return 0
        return self._handle.get().surface

    @property
    def is_closed(self) -> bool:
        """Whether this surface object has been closed."""
        return not self._handle

    @property
    def resource(self):
        """The :class:`~cuda.core.texture.ResourceDescriptor` this surface was built from (None once closed)."""
        return self._source_ref

    @property
    def device(self):
        """The :class:`~cuda.core.Device` this surface object was created on."""
        from cuda.core._device import Device
        return Device(self._device_id)

    cpdef close(self):
        """Release this object's reference to the underlying ``CUsurfObject``.

        Destruction (``cuSurfObjectDestroy``) and release of the backing array
        happen via the handle's deleter when the last reference is dropped.
        Idempotent; :attr:`resource` is None afterwards.
        """
        self._handle.reset()
        self._source_ref = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __repr__(self):
        return f"SurfaceObject(handle={self.handle:#x})"


def _create_surface_object(resource, *, device_id=None):
    """Create a :class:`SurfaceObject`.

    Backs :meth:`cuda.core.Device.create_surface_object`. ``resource`` must be a
    :class:`~cuda.core.texture.ResourceDescriptor` wrapping an OpaqueArray
    allocated with ``is_surface_load_store=True``; linear/pitch2d resources are
    not valid surface backings. The object is created in the primary context
    of ``device_id`` (None: the current device).
    """
    if not isinstance(resource, ResourceDescriptor):
        raise TypeError(f"resource must be a ResourceDescriptor, got {type(resource).__name__}")
    if resource.kind != "array":
        raise ValueError(f"SurfaceObject requires an array-backed ResourceDescriptor, got kind={resource.kind!r}")
    cdef OpaqueArray arr = <OpaqueArray?>resource.source
    OpaqueArray_check_open(arr)
    if not arr._surface_load_store:
        raise ValueError("OpaqueArray must be created with is_surface_load_store=True to be bound as a SurfaceObject")
    cdef int dev = _device_or_current(device_id)
    cdef ContextHandle ctx = primary_context(dev)
    cdef SurfObjectHandle h = create_surf_object_handle(ctx, arr._handle)
    if not h:
        raise_last_error()
    cdef SurfaceObject self = SurfaceObject.__new__(SurfaceObject)
    self._handle = h
    self._source_ref = resource
    self._device_id = dev
    return self
