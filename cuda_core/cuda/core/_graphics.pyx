# cython: language_level=3
# distutils: language = c++
"""GraphicsResource: an OpenGL buffer or image registered with CUDA
(upstream module path ``cuda.core._graphics``).

The registration is a C++ handle (cpp/graphics.hpp) whose deleter
unregisters; mapping yields a :class:`~cuda.core.Buffer` whose close unmaps.
The OpenGL entry points are optional driver entries: without a current GL
context (or a driver without them) registration raises the driver's CUDAError.
"""
from libc.stdint cimport uintptr_t

from cuda.core._memory._buffer cimport Buffer, MemoryResource
from cuda.core._resource_handles cimport (
    CU_GRAPHICS_REGISTER_FLAGS_NONE, CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY, CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST,
    CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER, CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD, ContextHandle, CUdeviceptr,
    CUgraphicsResource, CUresult, CUstream, GraphicsResourceHandle, check, create_gl_buffer_graphics_handle,
    create_gl_image_graphics_handle, current_device_ordinal, driver, primary_context, raise_last_error,
    require_driver,
)
from cuda.core._stream cimport Stream, as_stream

__all__ = ["GraphicsResource"]

_REGISTER_FLAGS = {
    "none": int(CU_GRAPHICS_REGISTER_FLAGS_NONE),
    "read_only": int(CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY),
    "write_discard": int(CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD),
    "surface_load_store": int(CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST),
    "texture_gather": int(CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER),
}
_NOT_DIRECTLY = ("GraphicsResource objects cannot be instantiated directly. Use GraphicsResource.from_gl_buffer() "
                 "or GraphicsResource.from_gl_image().")


def _parse_register_flags(flags):
    """`flags` (None, a flag name, or a sequence of names) as the
    CU_GRAPHICS_REGISTER_FLAGS_* bits; ValueError names an unknown flag."""
    if flags is None:
        return 0
    if isinstance(flags, str):
        flags = (flags,)
    value = 0
    for flag in flags:
        if flag not in _REGISTER_FLAGS:
            raise ValueError(f"Unknown register flag {flag!r}. Valid flags: {', '.join(sorted(_REGISTER_FLAGS))}")
        value |= _REGISTER_FLAGS[flag]
    return value


cdef unsigned int _gl_name(str what, object value) except? 0:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int (a GLuint), got {type(value).__name__}")
    if not 0 <= value < (1 << 32):
        raise ValueError(f"{what} must be in [0, 2**32), got {value}")
    return value


# The context a registration is made in: the current device's primary context
# (empty when no context is current: the factory reports CUDA_ERROR_INVALID_CONTEXT).
cdef ContextHandle _registration_context() except *:
    cdef ContextHandle none
    cdef int ordinal = current_device_ordinal()
    if ordinal < 0:
        return none
    return primary_context(ordinal)


cdef class _GraphicsMapping(MemoryResource):
    """The memory resource of a mapped buffer: releasing the buffer unmaps the
    graphics resource on the release stream."""
    cdef object _resource     # the GraphicsResource this mapping unmaps
    cdef int _device_id

    def allocate(self, size, *, stream):
        """Not supported: a mapping is made by :meth:`GraphicsResource.map`."""
        raise TypeError("a graphics mapping cannot allocate; use GraphicsResource.map()")

    def deallocate(self, ptr, size, *, stream):
        """Unmap the graphics resource, ordered on `stream`."""
        self._resource._unmap_on(stream)

    @property
    def is_device_accessible(self):
        """True: a mapped graphics resource is device memory."""
        return True

    @property
    def is_host_accessible(self):
        """False: a mapped graphics resource is device memory only."""
        return False

    @property
    def device_id(self):
        """The device the resource was registered on."""
        return self._device_id


cdef class GraphicsResource:
    """RAII wrapper for a CUDA graphics resource (``CUgraphicsResource``).

    A :class:`GraphicsResource` represents an OpenGL buffer or image that has
    been registered for access by CUDA. This enables zero-copy sharing of GPU
    data between CUDA compute kernels and graphics renderers.

    Mapping the resource returns a :class:`~cuda.core.Buffer` whose lifetime
    controls when the graphics resource is unmapped. The resource is
    unregistered when :meth:`close` is called or when the object is collected.

    Not instantiated directly: use :meth:`from_gl_buffer` or :meth:`from_gl_image`.

    Examples
    --------
    .. code-block:: python

        with GraphicsResource.from_gl_buffer(vbo) as resource:
            with resource.map(stream=s) as buf:
                ...  # launch kernels using buf.handle, buf.size
    """
    cdef GraphicsResourceHandle _h
    cdef object _mapped_buffer      # the Buffer of the current mapping, or None
    cdef object _enter_stream       # from_gl_buffer(stream=...): entering maps on it
    cdef object _entered_buffer
    cdef int _device_id
    cdef object __weakref__

    def __init__(self):
        raise RuntimeError(_NOT_DIRECTLY)

    @staticmethod
    cdef GraphicsResource _wrap(GraphicsResourceHandle h, object stream):
        cdef GraphicsResource r = GraphicsResource.__new__(GraphicsResource)
        if not h:
            raise_last_error()
        r._h = h
        r._device_id = h.get().context.get().device_ordinal
        r._enter_stream = stream
        return r

    @classmethod
    def from_gl_buffer(cls, gl_buffer, *, flags=None, stream=None):
        """Register an OpenGL buffer object for CUDA access.

        Parameters
        ----------
        gl_buffer : int
            The OpenGL buffer name (``GLuint``) to register.
        flags : str or sequence of str, optional
            Registration flags: ``"none"``, ``"read_only"``,
            ``"write_discard"``, ``"surface_load_store"``,
            ``"texture_gather"`` (a sequence combines them).
        stream : :class:`~cuda.core.Stream`, optional
            If given, using the resource as a context manager maps it on
            entry (yielding the :class:`~cuda.core.Buffer`); otherwise entering
            yields the resource. Either way it is closed on exit.

        Raises
        ------
        CUDAError
            If the registration fails (no current GL context, an invalid
            buffer name, no CUDA context current).
        ValueError
            If an unknown flag string is provided.
        """
        cdef unsigned int name = _gl_name("gl_buffer", gl_buffer)
        cdef unsigned int bits = _parse_register_flags(flags)
        if stream is not None:
            stream = as_stream(stream)
        require_driver()
        return GraphicsResource._wrap(create_gl_buffer_graphics_handle(_registration_context(), name, bits), stream)

    @classmethod
    def from_gl_image(cls, image, target, *, flags=None):
        """Register an OpenGL texture or renderbuffer for CUDA access.

        Parameters
        ----------
        image : int
            The OpenGL texture or renderbuffer name (``GLuint``) to register.
        target : int
            The OpenGL target type (e.g., ``GL_TEXTURE_2D``).
        flags : str or sequence of str, optional
            As for :meth:`from_gl_buffer`.

        Raises
        ------
        CUDAError
            If the registration fails.
        ValueError
            If an unknown flag string is provided.
        """
        cdef unsigned int name = _gl_name("image", image)
        cdef unsigned int gl_target = _gl_name("target", target)
        cdef unsigned int bits = _parse_register_flags(flags)
        require_driver()
        return GraphicsResource._wrap(
            create_gl_image_graphics_handle(_registration_context(), name, gl_target, bits), None)

    cdef int _check_open(self) except -1:
        if not self._h:
            raise RuntimeError("GraphicsResource has been closed")
        return 0

    def _get_mapped_buffer(self):
        """The Buffer of the current mapping, or None."""
        return self._mapped_buffer

    def map(self, *, stream):
        """Map this graphics resource for CUDA access.

        After mapping, a CUDA device pointer into the underlying graphics
        memory is available as a :class:`~cuda.core.Buffer`; closing that
        buffer (or leaving its ``with`` block) unmaps the resource.

        Parameters
        ----------
        stream : :class:`~cuda.core.Stream`
            Keyword-only and required: the stream the mapping is ordered on.

        Raises
        ------
        RuntimeError
            If the resource is already mapped or has been closed.
        CUDAError
            If the mapping fails.
        """
        cdef Stream s
        cdef CUgraphicsResource res
        cdef CUdeviceptr ptr = 0
        cdef size_t size = 0
        cdef _GraphicsMapping mapping
        cdef CUresult rc
        if stream is None:
            raise TypeError("stream is required and must not be None; pass device.default_stream "
                            "explicitly to use the default stream.")
        s = as_stream(stream)
        self._check_open()
        if self._mapped_buffer is not None:
            raise RuntimeError("GraphicsResource is already mapped")
        res = self._h.get().resource
        require_driver()
        check(driver().cuGraphicsMapResources_(1, &res, s._raw()))
        rc = driver().cuGraphicsResourceGetMappedPointer_(&ptr, &size, res)
        if rc != 0:
            driver().cuGraphicsUnmapResources_(1, &res, s._raw())
            check(rc)
        mapping = _GraphicsMapping.__new__(_GraphicsMapping)
        mapping._resource = self
        mapping._device_id = self._device_id
        self._mapped_buffer = Buffer.from_handle(<uintptr_t>ptr, size, mapping, stream=s)
        return self._mapped_buffer

    def _unmap_on(self, stream):
        """Internal: unmap on `stream` (None: the legacy default stream); called
        by the mapped Buffer's release."""
        cdef CUgraphicsResource res
        cdef CUstream raw = NULL
        self._mapped_buffer = None
        if not self._h:
            return
        res = self._h.get().resource
        if stream is not None:
            raw = (<Stream>as_stream(stream))._raw()
        check(driver().cuGraphicsUnmapResources_(1, &res, raw))

    def unmap(self, *, stream=None):
        """Unmap this graphics resource, releasing it back to the graphics API.

        The :class:`~cuda.core.Buffer` returned by :meth:`map` is closed and
        must not be used afterwards.

        Parameters
        ----------
        stream : :class:`~cuda.core.Stream`, optional
            The stream the unmap is ordered on; by default the mapping's.

        Raises
        ------
        RuntimeError
            If the resource is not currently mapped or has been closed.
        CUDAError
            If the unmapping fails.
        """
        self._check_open()
        if self._mapped_buffer is None:
            raise RuntimeError("GraphicsResource is not mapped")
        self._mapped_buffer.close(stream)

    def __enter__(self):
        if self._enter_stream is not None:
            self._entered_buffer = self.map(stream=self._enter_stream)
            return self._entered_buffer
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self._entered_buffer = None
        self.close()
        return False

    def close(self, stream=None):
        """Unregister this graphics resource from CUDA (unmapping it first if
        it is mapped, on `stream` if given). Idempotent."""
        if self._mapped_buffer is not None:
            self._mapped_buffer.close(stream)
        self._mapped_buffer = None
        self._h.reset()

    @property
    def is_mapped(self):
        """Whether the resource is currently mapped for CUDA access."""
        return self._mapped_buffer is not None

    @property
    def handle(self):
        """The raw ``CUgraphicsResource`` handle as a Python int (0 once closed)."""
        return <uintptr_t>self._h.get().resource if self._h else 0

    @property
    def is_closed(self):
        """Whether this graphics resource has been closed."""
        return not self._h

    @property
    def resource_handle(self):
        """Alias for :attr:`handle`."""
        return self.handle

    def __repr__(self):
        if not self._h:
            return "<GraphicsResource (closed)>"
        return f"<GraphicsResource handle={self.handle:#x} mapped={self.is_mapped}>"
