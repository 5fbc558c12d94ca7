# cython: language_level=3
# distutils: language = c++
"""MipmappedArray, MipmappedArrayOptions (upstream module path ``cuda.core.texture._mipmapped_array``).

A ``CUmipmappedArray`` holds every level of a mip pyramid; the driver frees
the levels with it. A level is handed out as a non-owning OpaqueArray whose
C++ handle owns the mipmapped array, so a level stays valid after the
MipmappedArray is closed or collected.
"""
from dataclasses import dataclass

from cuda.core._resource_handles cimport (
    CUDA_ARRAY3D_DESCRIPTOR, ContextHandle, MipmappedArrayHandle, OpaqueArrayHandle, create_mipmapped_array_handle,
    mipmapped_array_level, primary_context, raise_last_error,
)
from cuda.core.texture._array cimport _array_desc, _array_from_handle, _device_or_current

from cuda.core.texture._array import (
    _ARRAYFORMAT_TO_CU, _CU_TO_ARRAYFORMAT, _coerce_options, _validate_array_shape, _validate_format_channels,
)

__all__ = ["MipmappedArray", "MipmappedArrayOptions"]


@dataclass
class MipmappedArrayOptions:
    """Options for :meth:`cuda.core.Device.create_mipmapped_array`.

    Attributes
    ----------
    shape : tuple of int
        ``(width,)``, ``(width, height)``, or ``(width, height, depth)`` in
        elements, for the base (level 0) mip.
    format : ArrayFormatType, str, or numpy.dtype
        Element format. Accepts an :class:`~cuda.core.typing.ArrayFormatType`,
        a plain string (e.g. ``"float32"``), or a NumPy dtype object.
    num_channels : int
        Channels per element. Must be 1, 2, or 4.
    num_levels : int
        Number of mip levels to allocate; must be >= 1. The driver caps this at
        the log2 of the largest dimension; passing a larger value yields a
        driver error.
    is_surface_load_store : bool
        If True, allocate with ``CUDA_ARRAY3D_SURFACE_LDST`` so individual
        levels (obtained via :meth:`MipmappedArray.get_level`) can be bound as
        a :class:`~cuda.core.texture.SurfaceObject` for kernel-side writes.
        Default False.

    .. versionadded:: 1.1.0
    """

    shape: tuple[int, ...]
    format: object
    num_channels: int
    num_levels: int
    is_surface_load_store: bool = False

    def __post_init__(self):
        self.format = _validate_format_channels(self.format, self.num_channels)
        self.shape = _validate_array_shape(self.shape)
        self.num_levels = int(self.num_levels)
        if self.num_levels < 1:
            raise ValueError(f"num_levels must be >= 1, got {self.num_levels}")


cdef class MipmappedArray:
    """A mipmapped CUDA array for texture/surface access across levels.

    Wraps ``CUmipmappedArray``. Each mip level is a distinct, hardware-laid-out
    allocation accessible only via a :class:`~cuda.core.texture.TextureObject`
    (or by retrieving the level's :class:`~cuda.core.texture.OpaqueArray` and
    binding it as a :class:`~cuda.core.texture.SurfaceObject`). Destroying the
    MipmappedArray destroys all level arrays implicitly, so the OpaqueArray
    instances returned by :meth:`get_level` are non-owning and hold a strong
    reference back to their parent's storage.

    Construct via :meth:`cuda.core.Device.create_mipmapped_array`.

    .. versionadded:: 1.1.0
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("MipmappedArray cannot be instantiated directly. Use Device.create_mipmapped_array().")

    def get_level(self, level):
        """Return a non-owning :class:`~cuda.core.texture.OpaqueArray` view of the given mip level.

        Parameters
        ----------
        level : int
            Mip level index in ``[0, num_levels)``.

        Returns
        -------
        OpaqueArray
            A non-owning OpaqueArray wrapping the level's ``CUarray``. The
            mipmapped array's storage is kept alive for the lifetime of the
            returned OpaqueArray; it is released only when both are released.

        Raises
        ------
        RuntimeError
            If this mipmapped array has been closed.
        TypeError
            If `level` is not a number.
        ValueError
            If `level` is outside ``[0, num_levels)``.
        """
        MipmappedArray_check_open(self)
        if isinstance(level, (str, bytes, bytearray)):
            raise TypeError(f"level must be an int, not {type(level).__name__}")
        index = int(level)   # as upstream: a float is truncated
        if index < 0:
            raise ValueError(f"level must be >= 0, got {index}")
        if index >= self._num_levels:
            raise ValueError(f"level ({index}) must be < num_levels ({self._num_levels})")
        cdef OpaqueArrayHandle h = mipmapped_array_level(self._handle, <unsigned int>index)
        return _array_from_handle(h, self._device_id)

    @property
    def handle(self):
        """The underlying ``CUmipmappedArray`` as an integer (0 once closed)."""
        if not self._handle:
            return 0
        return <size_t>self._handle.get().mipmap

    @property
    def is_closed(self) -> bool:
        """Whether this mipmapped array has been closed."""
        return not self._handle

    @property
    def shape(self):
        """Base-level (level 0) allocation shape, in elements."""
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
    def num_levels(self):
        """Number of mip levels."""
        return self._num_levels

    @property
    def is_surface_load_store(self):
        """True if this mipmap (and each of its levels) was created with
        ``CUDA_ARRAY3D_SURFACE_LDST`` and can back a :class:`~cuda.core.texture.SurfaceObject`."""
        return self._surface_load_store

    @property
    def device(self):
        """The :class:`~cuda.core.Device` this mipmap was allocated on."""
        from cuda.core._device import Device
        return Device(self._device_id)

    cpdef close(self):
        """Release this object's reference to the underlying ``CUmipmappedArray``.

        Destruction (``cuMipmappedArrayDestroy``) happens via the handle's
        deleter when the last reference is dropped. A level OpaqueArray from
        :meth:`get_level`, and a texture object built on this mipmap, hold
        their own reference to this mipmap's storage, so they stay valid until
        both they and this object are released. Idempotent.
        """
        self._handle.reset()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __repr__(self):
        return (f"MipmappedArray(shape={self._shape}, format={_CU_TO_ARRAYFORMAT[self._format].name}, "
                f"num_channels={self._num_channels}, num_levels={self._num_levels})")


def _create_mipmapped_array(options, *, device_id=None):
    """Allocate a new :class:`MipmappedArray`.

    Backs :meth:`cuda.core.Device.create_mipmapped_array`. ``options`` is a
    :class:`MipmappedArrayOptions` (or a mapping accepted by it); its fields are
    validated at construction. The mipmap is created in the primary context
    of ``device_id`` (None: the current device).
    """
    opts = _coerce_options(MipmappedArrayOptions, options, "Mipmapped array options")
    cdef int dev = _device_or_current(device_id)
    cdef CUDA_ARRAY3D_DESCRIPTOR desc = _array_desc(opts.shape, opts.format, opts.num_channels,
                                                    bool(opts.is_surface_load_store))
    if opts.num_levels >= (1 << 32):
        raise OverflowError(f"num_levels does not fit in 32 bits: {opts.num_levels}")
    cdef ContextHandle ctx = primary_context(dev)
    cdef MipmappedArrayHandle h = create_mipmapped_array_handle(ctx, desc, <unsigned int>opts.num_levels)
    if not h:
        raise_last_error()
    cdef MipmappedArray self = MipmappedArray.__new__(MipmappedArray)
    self._handle = h
    self._shape = opts.shape
    self._format = <int>desc.Format
    self._num_channels = desc.NumChannels
    self._num_levels = opts.num_levels
    self._surface_load_store = bool(opts.is_surface_load_store)
    self._device_id = dev
    return self
