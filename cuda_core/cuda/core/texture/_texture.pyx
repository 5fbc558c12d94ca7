# cython: language_level=3
# distutils: language = c++
"""ResourceDescriptor, TextureObjectOptions, TextureObject (upstream module path ``cuda.core.texture._texture``).

A texture object (``CUtexObject``) is a 64-bit kernel argument for sampled
reads of an array, a mipmapped array, or linear / row-pitched device memory.
Its C++ handle (cpp/texture.hpp) owns what backs it, so closing the array or
the Buffer first never leaves the texture reading freed memory.
"""
from dataclasses import dataclass


from libc.string cimport memset

from cuda.core._memory._buffer cimport Buffer
from cuda.core._resource_handles cimport (
    CU_RESOURCE_TYPE_ARRAY, CU_RESOURCE_TYPE_LINEAR, CU_RESOURCE_TYPE_MIPMAPPED_ARRAY, CU_RESOURCE_TYPE_PITCH2D,
    CUaddress_mode, CUarray_format, CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CUdeviceptr, CUfilter_mode,
    ContextHandle, TexObjectHandle, TextureBacking, create_tex_object_handle, primary_context, raise_last_error,
)
from cuda.core.texture._array cimport OpaqueArray, OpaqueArray_check_open, _device_or_current
from cuda.core.texture._mipmapped_array cimport MipmappedArray, MipmappedArray_check_open

from cuda.core.texture._array import _ARRAYFORMAT_TO_CU, _CU_TO_ARRAYFORMAT, _FORMAT_ELEM_SIZE, \
    _coerce_options, _validate_format_channels
from cuda.core.texture._mipmapped_array import MipmappedArray as _PyMipmappedArray
from cuda.core.typing import AddressModeType, FilterModeType, ReadModeType

__all__ = ["ResourceDescriptor", "TextureObject", "TextureObjectOptions"]


# The driver's texture-descriptor flag bits (CU_TRSF_*).
_TRSF_READ_AS_INTEGER = 0x01
_TRSF_NORMALIZED_COORDINATES = 0x02
_TRSF_SRGB = 0x10
_TRSF_DISABLE_TRILINEAR_OPTIMIZATION = 0x20
_TRSF_SEAMLESS_CUBEMAP = 0x40

# AddressModeType / FilterModeType -> CUaddress_mode / CUfilter_mode.
_ADDRESSMODE_TO_CU = {AddressModeType.WRAP: 0, AddressModeType.CLAMP: 1, AddressModeType.MIRROR: 2,
                      AddressModeType.BORDER: 3}
_FILTERMODE_TO_CU = {FilterModeType.POINT: 0, FilterModeType.LINEAR: 1}


class ResourceDescriptor:
    """Describes the memory backing a :class:`TextureObject`.

    Construct via the ``from_*`` classmethods:

    - :meth:`from_opaque_array` wraps an :class:`~cuda.core.texture.OpaqueArray`
      (works for both :class:`TextureObject` and
      :class:`~cuda.core.texture.SurfaceObject`).
    - :meth:`from_mipmapped_array` wraps a :class:`~cuda.core.texture.MipmappedArray`
      for mipmapped sampling (texture only, not surface).
    - :meth:`from_linear` wraps a :class:`~cuda.core.Buffer` as a typed 1D fetch.
      Texture objects built from a linear resource do not support filtering,
      normalized coordinates, or addressing modes.
    - :meth:`from_pitch2d` wraps a :class:`~cuda.core.Buffer` as a row-pitched
      2D image. Supports filtering and 2D addressing, but only 2D access.

    Linear and pitch2D resources cannot back a SurfaceObject: those require an
    OpaqueArray allocated with ``is_surface_load_store=True``.

    .. versionadded:: 1.1.0
    """

    __slots__ = ("_kind", "_source", "_format", "_num_channels", "_size_bytes", "_width", "_height",
                 "_pitch_bytes")

    def __init__(self):
        raise RuntimeError("ResourceDescriptor cannot be instantiated directly. "
                           "Use ResourceDescriptor.from_* factories.")

    @classmethod
    def _make(cls, kind, source, format=None, num_channels=None, size_bytes=None, width=None, height=None,
              pitch_bytes=None):
        self = cls.__new__(cls)
        self._kind = kind
        self._source = source
        self._format = format
        self._num_channels = num_channels
        self._size_bytes = size_bytes
        self._width = width
        self._height = height
        self._pitch_bytes = pitch_bytes
        return self

    @classmethod
    def from_opaque_array(cls, array):
        """Build a resource descriptor backed by an :class:`~cuda.core.texture.OpaqueArray`.

        Raises
        ------
        TypeError
            If `array` is not an OpaqueArray.
        RuntimeError
            If `array` has been closed.
        """
        if not isinstance(array, OpaqueArray):
            raise TypeError(f"array must be a OpaqueArray, got {type(array).__name__}")
        OpaqueArray_check_open(<OpaqueArray>array)
        return cls._make("array", array)

    @classmethod
    def from_mipmapped_array(cls, mipmapped_array):
        """Build a resource descriptor backed by a :class:`~cuda.core.texture.MipmappedArray`.

        Suitable for binding to a :class:`TextureObject` for mipmapped
        sampling. Not valid as a SurfaceObject backing: surfaces require a
        single OpaqueArray level (obtain via :meth:`MipmappedArray.get_level`).

        Raises
        ------
        TypeError
            If `mipmapped_array` is not a MipmappedArray.
        RuntimeError
            If it has been closed.
        """
        if not isinstance(mipmapped_array, _PyMipmappedArray):
            raise TypeError(f"mipmapped_array must be a MipmappedArray, got {type(mipmapped_array).__name__}")
        MipmappedArray_check_open(<MipmappedArray>mipmapped_array)
        return cls._make("mipmapped_array", mipmapped_array)

    @classmethod
    def from_linear(cls, buffer, *, format, num_channels, size_bytes=None):
        """Build a resource descriptor for a linear (typed 1D) texture fetch.

        Parameters
        ----------
        buffer : Buffer
            Device-memory backing. A texture object built from this descriptor
            keeps the Buffer's allocation alive (for a Buffer that owns one).
        format : ArrayFormatType, str, or numpy.dtype
            Element format. Accepts an :class:`~cuda.core.typing.ArrayFormatType`,
            a plain string (e.g. ``"float32"``), or a NumPy dtype object.
        num_channels : int
            Channels per element. Must be 1, 2, or 4.
        size_bytes : int, optional
            Bytes of ``buffer`` to bind. Defaults to ``buffer.size``. Must not
            exceed it.

        Notes
        -----
        Texture objects built from a linear resource ignore the
        :class:`TextureObjectOptions` addressing/filtering fields: kernels read
        through a typed 1D fetch with bounds checking only.
        """
        if not isinstance(buffer, Buffer):
            raise TypeError(f"buffer must be a Buffer, got {type(buffer).__name__}")
        fmt = _validate_format_channels(format, num_channels)
        (<Buffer>buffer)._check_open()
        buf_size = int(buffer.size)
        elem = _FORMAT_ELEM_SIZE[_ARRAYFORMAT_TO_CU[fmt]] * int(num_channels)
        if size_bytes is None:
            size = buf_size
        else:
            size = _int_arg(size_bytes, "size_bytes")
            if size > buf_size:
                raise ValueError(f"size_bytes ({size}) exceeds buffer.size ({buf_size})")
        if size < elem:
            raise ValueError(f"size_bytes ({size}) must be at least one element ({elem} bytes)")
        if size % elem != 0:
            raise ValueError(f"size_bytes ({size}) must be a multiple of element size "
                             f"({elem} bytes for {fmt.name} x {num_channels})")
        return cls._make("linear", buffer, fmt, int(num_channels), size_bytes=size)

    @classmethod
    def from_pitch2d(cls, buffer, *, format, num_channels, width, height, pitch_bytes):
        """Build a resource descriptor for a row-pitched 2D image.

        Parameters
        ----------
        buffer : Buffer
            Device-memory backing. A texture object built from this descriptor
            keeps the Buffer's allocation alive (for a Buffer that owns one).
        format : ArrayFormatType, str, or numpy.dtype
            Element format. Accepts an :class:`~cuda.core.typing.ArrayFormatType`,
            a plain string (e.g. ``"float32"``), or a NumPy dtype object.
        num_channels : int
            Channels per element. Must be 1, 2, or 4.
        width : int
            Image width, in elements.
        height : int
            Image height, in rows.
        pitch_bytes : int
            Distance between consecutive rows, in bytes. Must be at least
            ``width * format_size * num_channels`` and meet the driver's
            ``CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT`` (the driver checks
            that when the texture object is created).
        """
        if not isinstance(buffer, Buffer):
            raise TypeError(f"buffer must be a Buffer, got {type(buffer).__name__}")
        fmt = _validate_format_channels(format, num_channels)
        (<Buffer>buffer)._check_open()
        w = _int_arg(width, "width")
        h = _int_arg(height, "height")
        p = _int_arg(pitch_bytes, "pitch_bytes")
        if w < 1:
            raise ValueError(f"width must be >= 1, got {w}")
        if h < 1:
            raise ValueError(f"height must be >= 1, got {h}")
        elem = _FORMAT_ELEM_SIZE[_ARRAYFORMAT_TO_CU[fmt]] * int(num_channels)
        min_pitch = w * elem
        if p < min_pitch:
            raise ValueError(f"pitch_bytes ({p}) must be >= width * element_bytes ({min_pitch})")
        if p * h > int(buffer.size):
            raise ValueError(f"pitch_bytes * height ({p * h}) exceeds buffer.size ({int(buffer.size)})")
        return cls._make("pitch2d", buffer, fmt, int(num_channels), width=w, height=h, pitch_bytes=p)

    @property
    def kind(self):
        """``"array"``, ``"mipmapped_array"``, ``"linear"`` or ``"pitch2d"``."""
        return self._kind

    @property
    def source(self):
        """The OpaqueArray, MipmappedArray or Buffer this descriptor wraps."""
        return self._source

    @property
    def format(self):
        """The element :class:`~cuda.core.typing.ArrayFormatType` (``None`` for array-backed)."""
        return self._format

    @property
    def num_channels(self):
        """Channels per element (``None`` for array-backed)."""
        return self._num_channels

    @property
    def size_bytes(self):
        """Bytes bound for a linear resource (``None`` for other kinds)."""
        return self._size_bytes

    @property
    def width(self):
        """Pitch2D image width, in elements (``None`` for other kinds)."""
        return self._width

    @property
    def height(self):
        """Pitch2D image height, in rows (``None`` for other kinds)."""
        return self._height

    @property
    def pitch_bytes(self):
        """Pitch2D row pitch, in bytes (``None`` for other kinds)."""
        return self._pitch_bytes

    def __repr__(self):
        if self._kind == "linear":
            return (f"ResourceDescriptor(kind='linear', format={self._format.name}, "
                    f"num_channels={self._num_channels}, size_bytes={self._size_bytes})")
        if self._kind == "pitch2d":
            return (f"ResourceDescriptor(kind='pitch2d', format={self._format.name}, "
                    f"num_channels={self._num_channels}, width={self._width}, height={self._height}, "
                    f"pitch_bytes={self._pitch_bytes})")
        return f"ResourceDescriptor(kind={self._kind!r})"


# An integer argument named `what`, converted as upstream converts it (int():
# a float is truncated); a str or bytes is a TypeError, not a parse.
def _int_arg(value, what):
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    n = int(value)
    if n >= (1 << 64):
        raise ValueError(f"{what} does not fit in 64 bits: {n}")
    return n


def _normalize_enum(name, value, enum_type):
    """Coerce ``value`` to ``enum_type`` (a StrEnum), accepting a plain str."""
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str):
        try:
            return enum_type(value)
        except ValueError:
            pass
    valid = ", ".join(repr(m.value) for m in enum_type)
    raise ValueError(f"{name} must be a {enum_type.__name__} or one of {{{valid}}}, got {value!r}")


def _normalize_address_modes(address_mode):
    """Return a 3-tuple of :class:`~cuda.core.typing.AddressModeType` values from a scalar or
    1-3 tuple (shorter tuples repeat their last entry). Individual entries may be plain strings."""
    if isinstance(address_mode, str):
        mode = _normalize_enum("address_mode", address_mode, AddressModeType)
        return (mode, mode, mode)
    try:
        modes = tuple(address_mode)
    except TypeError:
        raise TypeError("address_mode must be an AddressModeType or a tuple of AddressModeType") from None
    if not 1 <= len(modes) <= 3:
        raise ValueError(f"address_mode tuple must have 1-3 entries, got {len(modes)}")
    modes = tuple(_normalize_enum(f"address_mode[{i}]", m, AddressModeType) for i, m in enumerate(modes))
    return modes + (modes[-1],) * (3 - len(modes))


@dataclass
class TextureObjectOptions:
    """Sampling state for a :class:`TextureObject` (mirrors ``CUDA_TEXTURE_DESC``).

    Attributes
    ----------
    address_mode : AddressModeType or tuple of AddressModeType
        Boundary behavior per axis. May be a single
        :class:`~cuda.core.typing.AddressModeType` (applied to all axes) or a
        tuple of 1-3 entries (one per dimension). Plain strings are accepted.
        Checked when the texture object is created.
    filter_mode : FilterModeType
        Texel sampling mode. Default ``POINT``. Plain strings are accepted.
    read_mode : ReadModeType
        How sampled integer values are returned. Default ``ELEMENT_TYPE``.
        Plain strings are accepted.
    normalized_coords : bool
        If True, coordinates are in ``[0, 1]`` instead of pixel indices.
    srgb : bool
        If True, perform sRGB to linear conversion on read (8-bit formats only).
    disable_trilinear_optimization : bool
        If True, request exact trilinear filtering.
    seamless_cubemap : bool
        If True, enable seamless cubemap edge filtering.
    max_anisotropy : int
        Maximum anisotropy; 0 disables anisotropic filtering.
    mipmap_filter_mode : FilterModeType
        Filtering between mipmap levels. Default ``POINT``. Plain strings are
        accepted.
    mipmap_level_bias : float
        Offset added to the mip level the hardware selects.
    min_mipmap_level_clamp : float
        Lowest mip level sampled.
    max_mipmap_level_clamp : float
        Highest mip level sampled.
    border_color : tuple of float or None
        4-tuple used when ``address_mode`` includes ``BORDER``; ``None`` means
        zero.

    .. versionadded:: 1.1.0
    """

    address_mode: AddressModeType | str | tuple[AddressModeType | str, ...] = AddressModeType.CLAMP
    filter_mode: FilterModeType | str = FilterModeType.POINT
    read_mode: ReadModeType | str = ReadModeType.ELEMENT_TYPE
    normalized_coords: bool = False
    srgb: bool = False
    disable_trilinear_optimization: bool = False
    seamless_cubemap: bool = False
    max_anisotropy: int = 0
    mipmap_filter_mode: FilterModeType | str = FilterModeType.POINT
    mipmap_level_bias: float = 0.0
    min_mipmap_level_clamp: float = 0.0
    max_mipmap_level_clamp: float = 0.0
    border_color: tuple[float, ...] | None = None

    def __post_init__(self):
        self.filter_mode = _normalize_enum("filter_mode", self.filter_mode, FilterModeType)
        self.read_mode = _normalize_enum("read_mode", self.read_mode, ReadModeType)
        self.mipmap_filter_mode = _normalize_enum("mipmap_filter_mode", self.mipmap_filter_mode, FilterModeType)


# The driver's half and float formats (CU_AD_FORMAT_HALF, CU_AD_FORMAT_FLOAT).
_FLOAT_FORMATS = (0x10, 0x20)


# Fills the driver's CUDA_TEXTURE_DESC from validated options, for a resource
# of driver format `cu_format`.
cdef int _texture_desc(object opts, int cu_format, CUDA_TEXTURE_DESC* desc) except -1:
    modes = _normalize_address_modes(opts.address_mode)
    anisotropy = _int_arg(opts.max_anisotropy, "max_anisotropy")
    if anisotropy < 0:
        raise ValueError("max_anisotropy must be >= 0")
    if anisotropy >= (1 << 32):
        raise OverflowError(f"max_anisotropy does not fit in 32 bits: {anisotropy}")
    if opts.border_color is None:
        border = (0.0, 0.0, 0.0, 0.0)
    else:
        border = []
        try:
            for c in opts.border_color:
                if isinstance(c, (str, bytes)):   # a number, not text that float() would parse
                    raise TypeError
                border.append(float(c))
        except (TypeError, ValueError):
            raise TypeError(f"border_color must be a tuple of 4 floats or None, got {opts.border_color!r}") from None
        if len(border) != 4:
            raise ValueError(f"border_color must have 4 elements, got {len(border)}")
    levels = []
    for name in ("mipmap_level_bias", "min_mipmap_level_clamp", "max_mipmap_level_clamp"):
        try:
            levels.append(float(getattr(opts, name)))
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a float, got {type(getattr(opts, name)).__name__}") from None
    flags = 0
    # ELEMENT_TYPE keeps integer texels integers; float texels are floats
    # either way, so the flag is set for integer formats only (as the CUDA
    # runtime does for cudaReadModeElementType).
    read_mode = _normalize_enum("read_mode", opts.read_mode, ReadModeType)
    if read_mode == ReadModeType.ELEMENT_TYPE and cu_format not in _FLOAT_FORMATS:
        flags |= _TRSF_READ_AS_INTEGER
    if opts.normalized_coords:
        flags |= _TRSF_NORMALIZED_COORDINATES
    if opts.srgb:
        flags |= _TRSF_SRGB
    if opts.disable_trilinear_optimization:
        flags |= _TRSF_DISABLE_TRILINEAR_OPTIMIZATION
    if opts.seamless_cubemap:
        flags |= _TRSF_SEAMLESS_CUBEMAP
    memset(desc, 0, sizeof(CUDA_TEXTURE_DESC))
    for i in range(3):
        desc.addressMode[i] = <CUaddress_mode>_ADDRESSMODE_TO_CU[modes[i]]
    desc.filterMode = <CUfilter_mode>_FILTERMODE_TO_CU[_normalize_enum("filter_mode", opts.filter_mode,
                                                                       FilterModeType)]
    desc.mipmapFilterMode = <CUfilter_mode>_FILTERMODE_TO_CU[_normalize_enum(
        "mipmap_filter_mode", opts.mipmap_filter_mode, FilterModeType)]
    desc.flags = flags
    desc.maxAnisotropy = <unsigned int>anisotropy
    desc.mipmapLevelBias = levels[0]
    desc.minMipmapLevelClamp = levels[1]
    desc.maxMipmapLevelClamp = levels[2]
    for i in range(4):
        desc.borderColor[i] = border[i]
    return 0


cdef class TextureObject:
    """A bindless texture handle for kernel-side sampled reads.

    Wraps ``cuTexObjectCreate``. The underlying memory resource (the
    OpaqueArray, MipmappedArray or Buffer referenced by the descriptor) is
    kept alive for the lifetime of this object to prevent dangling handles.

    Construct via :meth:`cuda.core.Device.create_texture_object`. Passes to
    kernels as a 64-bit handle (via the ``handle`` property).

    .. versionadded:: 1.1.0
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("TextureObject cannot be instantiated directly. Use Device.create_texture_object().")

    @property
    def handle(self):
        """The underlying ``CUtexObject`` as an integer (64-bit kernel arg; 0 once closed)."""
        if not self._handle:
            return 0
        return self._handle.get().texture

    @property
    def is_closed(self) -> bool:
        """Whether this texture object has been closed."""
        return not self._handle

    @property
    def resource(self):
        """The :class:`ResourceDescriptor` this texture was built from (None once closed)."""
        return self._source_ref

    @property
    def options(self):
        """The :class:`TextureObjectOptions` this texture was built from."""
        return self._options

    @property
    def device(self):
        """The :class:`~cuda.core.Device` this texture object was created on."""
        from cuda.core._device import Device
        return Device(self._device_id)

    cpdef close(self):
        """Release this object's reference to the underlying ``CUtexObject``.

        Destruction (``cuTexObjectDestroy``) and release of the backing resource
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
        return f"TextureObject(handle={self.handle:#x})"


def _create_texture_object(resource, options, *, device_id=None):
    """Create a :class:`TextureObject`.

    Backs :meth:`cuda.core.Device.create_texture_object`. ``resource`` is a
    :class:`ResourceDescriptor`; ``options`` is a :class:`TextureObjectOptions`
    (or a mapping accepted by it; None: the defaults). The object is created
    in the primary context of ``device_id`` (None: the current device).
    """
    if not isinstance(resource, ResourceDescriptor):
        raise TypeError(f"resource must be a ResourceDescriptor, got {type(resource).__name__}")
    opts = TextureObjectOptions() if options is None else \
        _coerce_options(TextureObjectOptions, options, "Texture object options")
    cdef CUDA_RESOURCE_DESC res
    cdef CUDA_TEXTURE_DESC tex
    cdef TextureBacking backing
    cdef Buffer buf
    memset(&res, 0, sizeof(res))
    cdef int cu_format
    kind = resource.kind
    source = resource.source
    if kind == "array":
        OpaqueArray_check_open(<OpaqueArray?>source)
        res.resType = CU_RESOURCE_TYPE_ARRAY
        backing.array = (<OpaqueArray>source)._handle
        cu_format = (<OpaqueArray>source)._format
    elif kind == "mipmapped_array":
        MipmappedArray_check_open(<MipmappedArray?>source)
        res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
        backing.mipmap = (<MipmappedArray>source)._handle
        cu_format = (<MipmappedArray>source)._format
    elif kind == "linear" or kind == "pitch2d":
        buf = <Buffer?>source
        buf._check_open()
        backing.memory = buf._h
        cu_format = _ARRAYFORMAT_TO_CU[resource.format]
        if kind == "linear":
            res.resType = CU_RESOURCE_TYPE_LINEAR
            res.res.linear.devPtr = <CUdeviceptr>buf._ptr
            res.res.linear.format = <CUarray_format>_ARRAYFORMAT_TO_CU[resource.format]
            res.res.linear.numChannels = <unsigned int>resource.num_channels
            res.res.linear.sizeInBytes = <size_t>resource.size_bytes
        else:
            res.resType = CU_RESOURCE_TYPE_PITCH2D
            res.res.pitch2D.devPtr = <CUdeviceptr>buf._ptr
            res.res.pitch2D.format = <CUarray_format>_ARRAYFORMAT_TO_CU[resource.format]
            res.res.pitch2D.numChannels = <unsigned int>resource.num_channels
            res.res.pitch2D.width = <size_t>resource.width
            res.res.pitch2D.height = <size_t>resource.height
            res.res.pitch2D.pitchInBytes = <size_t>resource.pitch_bytes
    else:
        raise NotImplementedError(f"ResourceDescriptor kind {kind!r} is not yet supported")
    _texture_desc(opts, cu_format, &tex)
    cdef int dev = _device_or_current(device_id)
    cdef ContextHandle ctx = primary_context(dev)
    cdef TexObjectHandle h = create_tex_object_handle(ctx, res, tex, backing)
    if not h:
        raise_last_error()
    cdef TextureObject self = TextureObject.__new__(TextureObject)
    self._handle = h
    self._source_ref = resource
    self._options = opts
    self._device_id = dev
    return self
