# cython: language_level=3
# distutils: language = c++
"""OpaqueArray, OpaqueArrayOptions (upstream module path ``cuda.core.texture._array``).

A CUDA array (``CUarray``) is an opaque, driver-laid-out allocation read and
written by kernels only through texture and surface objects; data moves in
and out by full-array 3D copies (``cuMemcpy3DAsync``). The C++ handle
(cpp/texture.hpp) owns the array and its context; a mipmap level's handle
owns the mipmapped array instead.
"""
from dataclasses import dataclass

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.string cimport memset

from cuda.core._memory._buffer cimport Buffer
from cuda.core._resource_handles cimport (
    CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST, CUDA_ARRAY3D_SURFACE_LDST, CUarray,
    CUarray_format, CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D, CUdeviceptr, CUresult, ContextHandle, DevicePtrHandle,
    OpaqueArrayHandle, StreamHandle,
    address_arg, array_copy_3d, array_descriptor, borrow_array_handle, check, create_array_handle,
    current_device_ordinal, primary_context, raise_last_error, size_arg,
)
from cuda.core._stream cimport Stream, as_stream

from cuda.core.typing import ArrayFormatType

__all__ = ["OpaqueArray", "OpaqueArrayOptions"]


# ArrayFormatType <-> the driver's CUarray_format (cuda.h's CU_AD_FORMAT_* values).
_ARRAYFORMAT_TO_CU = {
    ArrayFormatType.UINT8: 0x01,
    ArrayFormatType.UINT16: 0x02,
    ArrayFormatType.UINT32: 0x03,
    ArrayFormatType.INT8: 0x08,
    ArrayFormatType.INT16: 0x09,
    ArrayFormatType.INT32: 0x0A,
    ArrayFormatType.FLOAT16: 0x10,
    ArrayFormatType.FLOAT32: 0x20,
}
_CU_TO_ARRAYFORMAT = {cu: fmt for fmt, cu in _ARRAYFORMAT_TO_CU.items()}

# Bytes of one channel, keyed by the driver's CUarray_format.
_FORMAT_ELEM_SIZE = {
    0x01: 1, 0x08: 1,
    0x02: 2, 0x09: 2, 0x10: 2,
    0x03: 4, 0x0A: 4, 0x20: 4,
}

_VALID_FORMATS = ", ".join(repr(f.value) for f in ArrayFormatType)


def _normalize_array_format(format):
    """Coerce ``format`` to an :class:`~cuda.core.typing.ArrayFormatType`.

    Accepts, in order of preference:

    * an :class:`~cuda.core.typing.ArrayFormatType`;
    * a plain ``str`` naming one of its values (e.g. ``"float32"``);
    * a NumPy dtype object (or anything ``numpy.dtype()`` accepts, such as
      ``numpy.float32``) whose canonical dtype maps 1:1 to one of the eight
      supported formats (NumPy is imported only for this case).

    Raises :class:`ValueError` on anything else."""
    if isinstance(format, ArrayFormatType):
        return format
    if isinstance(format, str):
        try:
            return ArrayFormatType(format)
        except ValueError:
            raise ValueError(f"format must be an ArrayFormatType or one of {{{_VALID_FORMATS}}}, got {format!r}") \
                from None
    try:
        import numpy
        dtype = numpy.dtype(format)
    except (ImportError, TypeError):
        raise ValueError(f"format must be an ArrayFormatType, str, or NumPy dtype, got {format!r}") from None
    for fmt in ArrayFormatType:
        if dtype == numpy.dtype(fmt.value):   # native byte order only: '>f4' is not float32 here
            return fmt
    raise ValueError(f"NumPy dtype {dtype!r} has no ArrayFormatType equivalent; "
                     f"supported formats: {{{_VALID_FORMATS}}}")


def _validate_format_channels(format, num_channels):
    """Validate the ``(format, num_channels)`` pair shared by the array,
    mipmap, and texture factories. Returns the normalized
    :class:`~cuda.core.typing.ArrayFormatType`. Raises on an invalid combination."""
    fmt = _normalize_array_format(format)
    if isinstance(num_channels, bool) or num_channels not in (1, 2, 4):
        raise ValueError(f"num_channels must be 1, 2, or 4, got {num_channels!r}")
    return fmt


def _validate_array_shape(shape):
    """Coerce ``shape`` to a tuple of ints and validate rank (1-3) and that
    every extent is >= 1. Returns the normalized tuple."""
    try:
        shape_t = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of ints, got {type(shape).__name__}") from None
    if not 1 <= len(shape_t) <= 3:
        raise ValueError(f"shape rank must be 1, 2, or 3, got {len(shape_t)}")
    for i, dim in enumerate(shape_t):
        if dim < 1:
            raise ValueError(f"shape[{i}] must be >= 1, got {dim}")
    return shape_t


def _coerce_options(cls, options, what):
    """`options` as a `cls` (a dict gives ``cls(**options)``); upstream's TypeError otherwise."""
    if isinstance(options, cls):
        return options
    if isinstance(options, dict):
        return cls(**options)
    raise TypeError(f"The {what} must be provided as an object of type {cls.__name__} or as a dict with valid "
                    f"{what}. The provided object is '{options}'.")


@dataclass
class OpaqueArrayOptions:
    """Options for :meth:`cuda.core.Device.create_opaque_array`.

    Attributes
    ----------
    shape : tuple of int
        ``(width,)``, ``(width, height)``, or ``(width, height, depth)`` in
        elements.
    format : ArrayFormatType, str, or numpy.dtype
        Element format. Accepts an :class:`~cuda.core.typing.ArrayFormatType`,
        a plain string (e.g. ``"float32"``), or a NumPy dtype object.
    num_channels : int
        Channels per element. Must be 1, 2, or 4.
    is_surface_load_store : bool
        If True, allocate with ``CUDA_ARRAY3D_SURFACE_LDST`` so the array can be
        bound as a :class:`~cuda.core.texture.SurfaceObject` for kernel-side
        writes. Default False.

    .. versionadded:: 1.1.0
    """

    shape: tuple[int, ...]
    format: object
    num_channels: int
    is_surface_load_store: bool = False

    def __post_init__(self):
        self.format = _validate_format_channels(self.format, self.num_channels)
        self.shape = _validate_array_shape(self.shape)


# The CUDA_ARRAY3D_DESCRIPTOR of a validated shape (Height/Depth 0 below rank 2/3).
cdef CUDA_ARRAY3D_DESCRIPTOR _array_desc(tuple shape, object format, object num_channels,
                                         bint surface_load_store) except *:
    cdef CUDA_ARRAY3D_DESCRIPTOR desc
    memset(&desc, 0, sizeof(desc))
    dims = [size_arg(dim, f"shape[{i}]") for i, dim in enumerate(shape)]
    desc.Width = dims[0]
    desc.Height = dims[1] if len(dims) >= 2 else 0
    desc.Depth = dims[2] if len(dims) >= 3 else 0
    desc.Format = <CUarray_format>_ARRAYFORMAT_TO_CU[format]
    desc.NumChannels = <unsigned int>int(num_channels)
    desc.Flags = CUDA_ARRAY3D_SURFACE_LDST if surface_load_store else 0
    return desc


# The device ordinal of `device_id`, or the current context's device (0 without one).
cdef int _device_or_current(object device_id) except -2:
    if device_id is not None:
        return int(device_id)
    cdef int ordinal = current_device_ordinal()
    return 0 if ordinal < 0 else ordinal


# The Stream a copy runs on: a Stream, a GraphBuilder (its capturing stream),
# or (as every stream= argument here) an object with __cuda_stream__.
cdef Stream _copy_stream(object stream):
    if isinstance(stream, Stream):
        return as_stream(stream)
    if stream is None:
        raise TypeError("stream is required and must not be None; pass device.default_stream explicitly to use "
                        "the default stream.")
    # GraphBuilder belongs to cuda.core.graph; recognised by name so that this
    # module does not import that family.
    if type(stream).__name__ == "GraphBuilder" and isinstance(getattr(stream, "stream", None), Stream):
        return as_stream(stream.stream)
    if hasattr(stream, "__cuda_stream__"):
        return as_stream(stream)
    raise TypeError(f"Stream or GraphBuilder expected, got {type(stream).__name__}")


# Queues a full-array copy between `arr` and `other` (a Buffer or a host
# buffer-protocol object) on `stream`; into the array when `to_array`. The
# host buffer view is held for the call (a pageable copy completes within it).
cdef int _copy3d(OpaqueArray arr, object other, Stream stream, bint to_array) except -1:
    cdef CUDA_MEMCPY3D params
    cdef Py_buffer view
    cdef bint have_view = False
    cdef Buffer buf
    cdef CUresult r
    OpaqueArray_check_open(arr)
    # Held for the call: a close() from another thread while the GIL is
    # released cannot destroy the array or free the Buffer mid-copy.
    cdef OpaqueArrayHandle keep_array = arr._handle
    cdef DevicePtrHandle keep_memory
    cdef StreamHandle keep_stream = stream._h
    width_bytes, height, depth = arr._extent_bytes()
    cdef size_t required = <size_t>width_bytes * <size_t>height * <size_t>depth
    memset(&params, 0, sizeof(params))
    params.WidthInBytes = width_bytes
    params.Height = height
    params.Depth = depth
    if isinstance(other, Buffer):
        buf = <Buffer>other
        buf._check_open()
        keep_memory = buf._h
        if buf._size < required:
            raise ValueError(f"Buffer size ({buf._size} bytes) is smaller than the array extent ({required} bytes)")
    else:
        try:
            PyObject_GetBuffer(other, &view, PyBUF_SIMPLE | (0 if to_array else PyBUF_WRITABLE))
        except TypeError:
            raise TypeError(f"Source/destination must be a Buffer or a contiguous buffer-protocol object, "
                            f"got {type(other).__name__}") from None
        have_view = True
    try:
        if have_view and <size_t>view.len < required:
            raise ValueError(f"Host buffer has {view.len} bytes, smaller than the array extent ({required} bytes)")
        if to_array:
            params.dstMemoryType = CU_MEMORYTYPE_ARRAY
            params.dstArray = keep_array.get().array
            params.srcPitch = width_bytes
            params.srcHeight = height
            if have_view:
                params.srcMemoryType = CU_MEMORYTYPE_HOST
                params.srcHost = view.buf
            else:
                params.srcMemoryType = CU_MEMORYTYPE_DEVICE
                params.srcDevice = <CUdeviceptr>buf._ptr
        else:
            params.srcMemoryType = CU_MEMORYTYPE_ARRAY
            params.srcArray = keep_array.get().array
            params.dstPitch = width_bytes
            params.dstHeight = height
            if have_view:
                params.dstMemoryType = CU_MEMORYTYPE_HOST
                params.dstHost = view.buf
            else:
                params.dstMemoryType = CU_MEMORYTYPE_DEVICE
                params.dstDevice = <CUdeviceptr>buf._ptr
        r = array_copy_3d(params, keep_stream, keep_array.get().context)
        check(r)
    finally:
        if have_view:
            PyBuffer_Release(&view)
    return 0


cdef class OpaqueArray:
    """An opaque, hardware-laid-out GPU allocation for texture/surface access.

    Distinct from :class:`~cuda.core.Buffer`: a ``CUarray`` has no exposed
    device pointer and can only be accessed from kernels through a
    :class:`~cuda.core.texture.TextureObject` or
    :class:`~cuda.core.texture.SurfaceObject`. Its memory layout is chosen by
    the driver for 2D/3D spatial locality.

    **Copy-only interop.** Because the layout is opaque and there is no linear
    device pointer, an ``OpaqueArray`` cannot expose
    ``__cuda_array_interface__`` / DLPack and cannot be shared zero-copy with
    NumPy, CuPy, numba-cuda, or PyTorch. Moving data in or out is therefore
    always a copy: use :meth:`copy_from` / :meth:`copy_to` against a linear
    :class:`~cuda.core.Buffer` or a host buffer-protocol object. There is no
    allocation helper: allocate the linear Buffer yourself (e.g.
    ``mr.allocate(arr.size_bytes, stream=s)``) and copy.

    Construct via :meth:`cuda.core.Device.create_opaque_array`. Only plain
    1D/2D/3D allocations are supported; layered, cubemap and sparse arrays
    are not.

    .. versionadded:: 1.1.0
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("OpaqueArray cannot be instantiated directly. Use Device.create_opaque_array().")

    @classmethod
    def _from_handle(cls, handle, owning, *, device_id=None):
        """Wrap an externally-allocated ``CUarray``.

        Intended for graphics interop (``cuGraphicsSubResourceGetMappedArray``)
        where the array is owned by the graphics API. With ``owning=False`` the
        underlying ``CUarray`` is never destroyed by this object. Shape, format,
        and channel count are queried from the driver (before ownership is
        taken, so a handle the driver does not know is never destroyed).
        """
        cdef CUarray raw = <CUarray><size_t>address_arg(handle, "handle")
        cdef int dev = _device_or_current(device_id)
        cdef ContextHandle ctx = primary_context(dev)
        cdef OpaqueArrayHandle probe = borrow_array_handle(raw, ctx, False)
        cdef CUDA_ARRAY3D_DESCRIPTOR desc
        if not probe:
            raise_last_error()
        check(array_descriptor(probe, &desc))
        if not owning:
            return _array_from_handle(probe, dev)
        cdef OpaqueArrayHandle h = borrow_array_handle(raw, ctx, True)
        if not h:
            raise_last_error()
        return _array_from_handle(h, dev)

    @property
    def handle(self):
        """The underlying ``CUarray`` as an integer (0 once closed)."""
        if not self._handle:
            return 0
        return <size_t>self._handle.get().array

    @property
    def is_closed(self) -> bool:
        """Whether this array has been closed."""
        return not self._handle

    @property
    def shape(self):
        """Allocation shape, in elements."""
        return self._shape

    @property
    def format(self):
        """The element :class:`~cuda.core.typing.ArrayFormatType`."""
        return _CU_TO_ARRAYFORMAT[self._format]

    @property
    def num_channels(self):
        """Channels per element (1, 2, or 4)."""
        return self._num_channels

    @property
    def element_bytes(self):
        """Bytes per element (format size * channels)."""
        return _FORMAT_ELEM_SIZE[self._format] * self._num_channels

    @property
    def device(self):
        """The :class:`~cuda.core.Device` this array was allocated on."""
        from cuda.core._device import Device
        return Device(self._device_id)

    @property
    def is_surface_load_store(self):
        """True if this array was created with ``CUDA_ARRAY3D_SURFACE_LDST``
        and can be bound as a :class:`~cuda.core.texture.SurfaceObject`."""
        return self._surface_load_store

    def _extent_bytes(self):
        """Return (width_bytes, height, depth) for cuMemcpy3D, with height/depth
        normalized to >=1 for lower-rank arrays."""
        rank = len(self._shape)
        width_bytes = self._shape[0] * _FORMAT_ELEM_SIZE[self._format] * self._num_channels
        return width_bytes, (self._shape[1] if rank >= 2 else 1), (self._shape[2] if rank >= 3 else 1)

    def copy_from(self, src, *, stream) -> None:
        """Copy a full-array's worth of data into this array.

        Parameters
        ----------
        src : Buffer or buffer-protocol object
            Source data. Must contain at least ``self.size_bytes`` bytes
            of contiguous data, row-major (rows of ``shape[0]`` elements).
        stream : Stream or GraphBuilder
            Stream to issue the copy on. A :class:`~cuda.core.graph.GraphBuilder`
            is accepted so the copy can be captured into a graph.

        Raises
        ------
        RuntimeError
            If this array (or the Buffer) has been closed.
        ValueError
            If `src` is smaller than the array.
        TypeError
            If `src` is neither a Buffer nor a contiguous buffer, or `stream`
            is not a stream.
        """
        _copy3d(self, src, _copy_stream(stream), True)

    def copy_to(self, dst, *, stream):
        """Copy a full-array's worth of data out of this array.

        Parameters
        ----------
        dst : Buffer or writable buffer-protocol object
            Destination. Must have at least ``self.size_bytes`` bytes of
            writable, contiguous space.
        stream : Stream or GraphBuilder
            Stream to issue the copy on. A :class:`~cuda.core.graph.GraphBuilder`
            is accepted so the copy can be captured into a graph.

        Returns
        -------
        The ``dst`` object, for parity with :meth:`Buffer.copy_to`.
        """
        _copy3d(self, dst, _copy_stream(stream), False)
        return dst

    @property
    def size_bytes(self):
        """Total bytes of array storage (``prod(shape) * element_bytes``)."""
        n = 1
        for s in self._shape:
            n *= s
        return n * _FORMAT_ELEM_SIZE[self._format] * self._num_channels

    cpdef close(self):
        """Release this object's reference to the underlying ``CUarray``.

        Destruction (``cuArrayDestroy``) happens via the handle's deleter when
        the last reference is dropped (a texture or surface object built on the
        array holds one); for a non-owning handle (graphics interop or a
        mipmap-level view) nothing is destroyed. Idempotent: a second call
        (or destruction after ``close()``) is a no-op.
        """
        self._handle.reset()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __repr__(self):
        return (f"OpaqueArray(shape={self._shape}, format={_CU_TO_ARRAYFORMAT[self._format].name}, "
                f"num_channels={self._num_channels})")


cdef OpaqueArray _array_from_handle(OpaqueArrayHandle h, int device_id):
    if not h:
        raise_last_error()
    cdef CUDA_ARRAY3D_DESCRIPTOR desc
    check(array_descriptor(h, &desc))
    cdef OpaqueArray self = OpaqueArray.__new__(OpaqueArray)
    self._handle = h
    self._device_id = device_id
    if desc.Depth > 0:
        self._shape = (int(desc.Width), int(desc.Height), int(desc.Depth))
    elif desc.Height > 0:
        self._shape = (int(desc.Width), int(desc.Height))
    else:
        self._shape = (int(desc.Width),)
    if <int>desc.Format not in _CU_TO_ARRAYFORMAT:
        raise ValueError(f"the array's format (CUarray_format {<int>desc.Format}) has no ArrayFormatType equivalent")
    self._format = <int>desc.Format
    self._num_channels = desc.NumChannels
    self._surface_load_store = bool(desc.Flags & CUDA_ARRAY3D_SURFACE_LDST)
    return self


def _create_opaque_array(options, *, device_id=None):
    """Allocate a new :class:`OpaqueArray`.

    Backs :meth:`cuda.core.Device.create_opaque_array`. ``options`` is an
    :class:`OpaqueArrayOptions` (or a mapping accepted by it); it is validated
    at construction, so ``shape`` is already a normalized tuple and ``format``
    an :class:`~cuda.core.typing.ArrayFormatType`. The array is created in the
    primary context of ``device_id`` (None: the current device).
    """
    opts = _coerce_options(OpaqueArrayOptions, options, "Opaque array options")
    cdef int dev = _device_or_current(device_id)
    cdef CUDA_ARRAY3D_DESCRIPTOR desc = _array_desc(opts.shape, opts.format, opts.num_channels,
                                                    bool(opts.is_surface_load_store))
    cdef ContextHandle ctx = primary_context(dev)
    cdef OpaqueArrayHandle h = create_array_handle(ctx, desc)
    if not h:
        raise_last_error()
    cdef OpaqueArray self = OpaqueArray.__new__(OpaqueArray)
    self._handle = h
    self._shape = opts.shape
    self._format = <int>desc.Format
    self._num_channels = desc.NumChannels
    self._surface_load_store = bool(opts.is_surface_load_store)
    self._device_id = dev
    return self
