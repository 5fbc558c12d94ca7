# cython: language_level=3
# distutils: language = c++
"""TensorMapDescriptor and TensorMapDescriptorOptions: TMA (Tensor Memory
Accelerator) descriptors for Hopper+ GPUs (upstream module path
``cuda.core._tensor_map``).

A descriptor is the driver's opaque 128-byte ``CUtensorMap``, encoded by
``cuTensorMapEncodeTiled`` / ``cuTensorMapEncodeIm2col`` /
``cuTensorMapEncodeIm2colWide`` (optional entry points: a driver without them
answers CUDA_ERROR_NOT_SUPPORTED) and passed to a kernel by value. It holds no
driver resource: nothing is ever destroyed, so the class only keeps the bytes
and the tensor they point into alive.

The tensor: a StridedMemoryView (anything with ``ptr``, ``shape``,
``strides``, ``dtype``, ``device_id`` and ``is_device_accessible``), a
:class:`~cuda.core.Buffer` (1-D, in elements of ``data_type``), or an object
with ``__cuda_array_interface__``. NumPy is needed only to read NumPy dtypes,
and imported only when one is read.
"""
import enum
from dataclasses import dataclass

from libc.stdint cimport uintptr_t
from libc.string cimport memcpy

from cuda.core._memory._buffer cimport Buffer
from cuda.core._resource_handles cimport (
    CUDA_SUCCESS, CUdeviceptr, CUpointer_attribute, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill,
    CUtensorMapIm2ColWideMode, CUtensorMapInterleave, CUtensorMapL2promotion, CUtensorMapSwizzle, check,
    current_device_ordinal, cuuint32_t, cuuint64_t, driver, require_driver,
)


__all__ = ["TensorMapDescriptor", "TensorMapDescriptorOptions"]

_DL_CUDA = 2        # DLDeviceType.kDLCUDA: device memory, local to one device
_DL_CUDA_HOST = 3   # DLDeviceType.kDLCUDAHost: pinned host memory, reached from every device


class TensorMapDataType(enum.IntEnum):
    """Data types for tensor map descriptors.

    These correspond to the ``CUtensorMapDataType`` driver enum values.
    """
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    INT32 = 3
    UINT64 = 4
    INT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    BFLOAT16 = 9
    FLOAT32_FTZ = 10
    TFLOAT32 = 11
    TFLOAT32_FTZ = 12


class TensorMapInterleave(enum.IntEnum):
    """Interleave layout for tensor map descriptors.

    These correspond to the ``CUtensorMapInterleave`` driver enum values.
    """
    NONE = 0
    INTERLEAVE_16B = 1
    INTERLEAVE_32B = 2


class TensorMapSwizzle(enum.IntEnum):
    """Swizzle mode for tensor map descriptors.

    These correspond to the ``CUtensorMapSwizzle`` driver enum values.
    """
    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3


class TensorMapL2Promotion(enum.IntEnum):
    """L2 promotion mode for tensor map descriptors.

    These correspond to the ``CUtensorMapL2promotion`` driver enum values.
    """
    NONE = 0
    L2_64B = 1
    L2_128B = 2
    L2_256B = 3


class TensorMapOOBFill(enum.IntEnum):
    """Out-of-bounds fill mode for tensor map descriptors.

    These correspond to the ``CUtensorMapFloatOOBfill`` driver enum values.
    """
    NONE = 0
    NAN_REQUEST_ZERO_FMA = 1


class TensorMapIm2ColWideMode(enum.IntEnum):
    """Im2col wide mode for tensor map descriptors (``CUtensorMapIm2ColWideMode``).

    Used by :meth:`TensorMapDescriptor._from_im2col_wide` (a CUDA 13 driver).
    """
    W = 0
    W128 = 1


_TMA_DATA_TYPE_SIZE = {
    TensorMapDataType.UINT8: 1, TensorMapDataType.UINT16: 2, TensorMapDataType.UINT32: 4,
    TensorMapDataType.INT32: 4, TensorMapDataType.UINT64: 8, TensorMapDataType.INT64: 8,
    TensorMapDataType.FLOAT16: 2, TensorMapDataType.FLOAT32: 4, TensorMapDataType.FLOAT64: 8,
    TensorMapDataType.BFLOAT16: 2, TensorMapDataType.FLOAT32_FTZ: 4, TensorMapDataType.TFLOAT32: 4,
    TensorMapDataType.TFLOAT32_FTZ: 4,
}

# __cuda_array_interface__ / NumPy type strings (byte order stripped) -> TMA type.
_TYPESTR_TO_TMA = {
    "u1": TensorMapDataType.UINT8, "u2": TensorMapDataType.UINT16, "u4": TensorMapDataType.UINT32,
    "i4": TensorMapDataType.INT32, "u8": TensorMapDataType.UINT64, "i8": TensorMapDataType.INT64,
    "f2": TensorMapDataType.FLOAT16, "f4": TensorMapDataType.FLOAT32, "f8": TensorMapDataType.FLOAT64,
}

# NumPy is imported on first need (it is optional, and costs more to import than
# the rest of cuda.core): _np() is the module or None.
_numpy_state = []


def _np():
    """The numpy module, or None when it is not installed (imported once)."""
    if not _numpy_state:
        try:
            import numpy
        except ImportError:
            numpy = None
        _numpy_state.append(numpy)
    return _numpy_state[0]


_dtype_map_state = []


def _numpy_dtype_to_tma():
    """numpy.dtype -> TensorMapDataType (empty without NumPy; bfloat16 with ml_dtypes)."""
    if not _dtype_map_state:
        numpy = _np()
        mapping = {}
        if numpy is not None:
            mapping = {numpy.dtype(code): tma for code, tma in _TYPESTR_TO_TMA.items()}
            try:
                from ml_dtypes import bfloat16
                mapping[numpy.dtype(bfloat16)] = TensorMapDataType.BFLOAT16
            except ImportError:
                pass
        _dtype_map_state.append(mapping)
    return _dtype_map_state[0]


def __getattr__(name):
    # _NUMPY_DTYPE_TO_TMA (upstream's module attribute) is built on first access.
    if name == "_NUMPY_DTYPE_TO_TMA":
        return _numpy_dtype_to_tma()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_MAX_RANK = 5
_NOT_DIRECTLY = "TensorMapDescriptor cannot be instantiated directly. Use StridedMemoryView.as_tensor_map() instead."


def _normalize_tensor_map_data_type(data_type):
    """None, a TensorMapDataType, or a NumPy / ml_dtypes dtype (as a numpy.dtype);
    TypeError for anything else."""
    if data_type is None or isinstance(data_type, TensorMapDataType):
        return data_type
    numpy = _np()
    if numpy is not None and not isinstance(data_type, (bool, int, float)):
        try:
            return numpy.dtype(data_type)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"data_type must be a TensorMapDataType or a numpy/ml_dtypes dtype, got {type(data_type)}")


def _normalize_tensor_map_sequence(name, values):
    """`values` (a tuple or list of ints) as a tuple; TypeError naming `name` otherwise."""
    if isinstance(values, (str, bytes)):
        if len(values) and not isinstance(values[0], int):
            raise TypeError(f"{name}[0] must be an int, got {type(values[0])}")
    elif not isinstance(values, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of ints, got {type(values)}")
    for i, v in enumerate(values):
        if not isinstance(v, int):
            raise TypeError(f"{name}[{i}] must be an int, got {type(v)}")
    return tuple(values)


def _require_tensor_map_enum(name, value, enum_type):
    """`value` if it is a member of `enum_type`; TypeError otherwise."""
    if not isinstance(value, enum_type):
        raise TypeError(f"{name} must be a {enum_type.__name__}, got {type(value)}")
    return value


@dataclass
class TensorMapDescriptorOptions:
    """Options for :meth:`cuda.core.StridedMemoryView.as_tensor_map`.

    Attributes
    ----------
    box_dim : tuple[int, ...]
        Tile size for each tensor dimension, expressed in elements.
    element_strides : tuple[int, ...], optional
        Per-dimension element traversal strides.
    data_type : object, optional
        Explicit dtype override. Prefer NumPy or ``ml_dtypes`` dtype objects;
        :class:`TensorMapDataType` remains accepted for compatibility.
    interleave : TensorMapInterleave, optional
        Interleave layout. Default ``NONE``.
    swizzle : TensorMapSwizzle, optional
        Swizzle mode. Default ``NONE``.
    l2_promotion : TensorMapL2Promotion, optional
        L2 promotion mode. Default ``NONE``.
    oob_fill : TensorMapOOBFill, optional
        Out-of-bounds fill mode. Default ``NONE``.
    """
    box_dim: tuple
    element_strides: object = None
    data_type: object = None
    interleave: TensorMapInterleave = TensorMapInterleave.NONE
    swizzle: TensorMapSwizzle = TensorMapSwizzle.NONE
    l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.NONE
    oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE

    def __post_init__(self):
        self.box_dim = _normalize_tensor_map_sequence("box_dim", self.box_dim)
        if self.element_strides is not None:
            self.element_strides = _normalize_tensor_map_sequence("element_strides", self.element_strides)
        self.data_type = _normalize_tensor_map_data_type(self.data_type)
        _require_tensor_map_enum("interleave", self.interleave, TensorMapInterleave)
        _require_tensor_map_enum("swizzle", self.swizzle, TensorMapSwizzle)
        _require_tensor_map_enum("l2_promotion", self.l2_promotion, TensorMapL2Promotion)
        _require_tensor_map_enum("oob_fill", self.oob_fill, TensorMapOOBFill)


def _coerce_tensor_map_descriptor_options(box_dim, options, *, element_strides, data_type, interleave, swizzle,
                                          l2_promotion, oob_fill):
    """One TensorMapDescriptorOptions from either `options` (an instance or a
    dict) or the individual arguments, never both."""
    individual = (box_dim is not None or element_strides is not None or data_type is not None
                  or interleave is not TensorMapInterleave.NONE or swizzle is not TensorMapSwizzle.NONE
                  or l2_promotion is not TensorMapL2Promotion.NONE or oob_fill is not TensorMapOOBFill.NONE)
    if options is not None:
        if individual:
            raise TypeError("Specify either options or the individual tensor map arguments, not both")
        if isinstance(options, TensorMapDescriptorOptions):
            return options
        if isinstance(options, dict):
            return TensorMapDescriptorOptions(**options)
        raise TypeError("The Tensor map descriptor options must be provided as an object of type "
                        "TensorMapDescriptorOptions or as a dict with valid Tensor map descriptor options. "
                        f"The provided object is '{options}'.")
    if box_dim is None:
        raise TypeError("box_dim is required unless options is provided")
    return TensorMapDescriptorOptions(box_dim=box_dim, element_strides=element_strides, data_type=data_type,
                                      interleave=interleave, swizzle=swizzle, l2_promotion=l2_promotion,
                                      oob_fill=oob_fill)


class _TensorView:
    """What a descriptor needs of a tensor: address, shape, strides (in
    elements, None for C order), dtype (a TMA type, a numpy.dtype or None),
    device, whether the device can reach it, and the object to keep alive."""
    __slots__ = ("ptr", "shape", "strides", "dtype", "device_id", "is_device_accessible", "owner")

    def __init__(self, ptr, shape, strides, dtype, device_id, is_device_accessible, owner):
        self.ptr, self.shape, self.strides, self.dtype = ptr, tuple(shape), strides, dtype
        self.device_id, self.is_device_accessible, self.owner = device_id, is_device_accessible, owner

    def __dlpack_device__(self):
        """DLPack's ``(device_type, device_id)``: memory of no one device (device_id None or
        negative) reports as pinned host memory, which every device reaches."""
        if self.device_id is None or self.device_id < 0:
            return (_DL_CUDA_HOST, 0)
        return (_DL_CUDA, self.device_id)


# The device ordinal the driver reports for an address (-1 if it knows none).
cdef int _pointer_device(uintptr_t ptr):
    cdef int ordinal = -1
    require_driver()
    if driver().cuPointerGetAttribute_(&ordinal, <CUpointer_attribute>9, <CUdeviceptr>ptr) != CUDA_SUCCESS:
        return -1   # 9 = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    return ordinal


def _typestr_dtype(typestr):
    """A __cuda_array_interface__ typestr as a numpy.dtype (or a TMA type without NumPy)."""
    numpy = _np()
    if numpy is not None:
        return numpy.dtype(typestr)
    code = typestr.lstrip("<>|=")
    if code not in _TYPESTR_TO_TMA:
        raise ValueError(f"Unsupported dtype {typestr!r} for TMA")
    return _TYPESTR_TO_TMA[code]


def _get_validated_view(tensor):
    """Obtain a device-accessible view of `tensor` with a 16-byte-aligned pointer."""
    if isinstance(tensor, Buffer):
        if tensor.is_closed:
            raise RuntimeError("Buffer has been closed")
        view = _TensorView(tensor.handle, (tensor.size,), None, None, tensor.device_id,
                           tensor.is_device_accessible, tensor)
    elif all(hasattr(tensor, a) for a in ("ptr", "shape", "strides", "dtype", "device_id", "is_device_accessible")):
        view = tensor    # a StridedMemoryView
    elif hasattr(tensor, "__cuda_array_interface__"):
        cai = tensor.__cuda_array_interface__
        ptr = int(cai["data"][0])
        dtype = _typestr_dtype(cai["typestr"])
        strides = cai.get("strides")
        if strides is not None:
            size = _TMA_DATA_TYPE_SIZE[dtype] if isinstance(dtype, TensorMapDataType) else dtype.itemsize
            if any(s % size for s in strides):
                raise ValueError("Tensor strides must be multiples of the element size")
            strides = tuple(s // size for s in strides)
        view = _TensorView(ptr, cai["shape"], strides, dtype, _pointer_device(ptr), True, tensor)
    elif hasattr(tensor, "__array_interface__") or hasattr(tensor, "__dlpack__"):
        raise ValueError("The tensor must be device-accessible (device or managed memory); host memory cannot "
                         "be described by a tensor map")
    else:
        raise TypeError(f"Cannot make a tensor map of {type(tensor).__name__}: pass a StridedMemoryView, a Buffer "
                        "or an object with __cuda_array_interface__")
    if not view.is_device_accessible:
        raise ValueError("The tensor must be device-accessible (device or managed memory)")
    if view.ptr % 16:
        raise ValueError(f"Global memory address must be 16-byte aligned, got {view.ptr:#x}")
    return view


def _require_view_device(view, expected_device_id, operation):
    """Ensure a device-local tensor (DLPack ``kDLCUDA``) is on device ``expected_device_id``.

    Pinned host and managed memory (``kDLCUDAHost``, ``kDLCUDAManaged``) report device 0
    whatever the current device and pass; so does any view when the expected device is
    unknown (None or negative)."""
    if expected_device_id is None or expected_device_id < 0:
        return
    device_type, device_id = view.__dlpack_device__()
    if device_type == _DL_CUDA and device_id != expected_device_id:
        raise ValueError(f"{operation} expects tensor on device {expected_device_id}, got {device_id}")


def _resolve_data_type(view, data_type):
    """Resolve the TMA data type from an explicit value or the view's dtype."""
    dt = data_type if data_type is not None else view.dtype
    if dt is None:
        return TensorMapDataType.UINT8      # a Buffer without data_type: bytes
    if isinstance(dt, TensorMapDataType):
        return dt
    numpy = _np()
    if numpy is not None:
        found = _numpy_dtype_to_tma().get(numpy.dtype(dt))
        if found is not None:
            return found
    raise ValueError(f"Unsupported dtype {dt} for TMA")


def _compute_byte_strides(shape, strides, elem_size):
    """Compute byte strides from element strides or C-contiguous fallback.

    Returns a tuple of byte strides in row-major order.
    """
    if strides is not None:
        return tuple(s * elem_size for s in strides)
    out = []
    step = elem_size
    for extent in reversed(shape):
        out.append(step)
        step *= extent
    return tuple(reversed(out))


def _validate_element_strides(element_strides, rank):
    """Validate or default element_strides to all-ones."""
    if element_strides is None:
        return (1,) * rank
    element_strides = _normalize_tensor_map_sequence("element_strides", element_strides)
    if len(element_strides) != rank:
        raise ValueError(f"element_strides must have {rank} elements, got {len(element_strides)}")
    return element_strides


# The view's shape in elements of `tma`: a Buffer's bytes become size // element size.
cdef tuple _shape_in_elements(object view, object tma):
    if isinstance(view, _TensorView) and isinstance(view.owner, Buffer):
        size = _TMA_DATA_TYPE_SIZE[tma]
        return (view.shape[0] // size,)
    return tuple(view.shape)


cdef class TensorMapDescriptor:
    """Describes a TMA (Tensor Memory Accelerator) tensor map for Hopper+ GPUs.

    A ``TensorMapDescriptor`` wraps the opaque 128-byte ``CUtensorMap`` struct
    used by the hardware TMA unit for efficient bulk data movement between
    global and shared memory.

    Public tiled descriptors are created via
    :meth:`cuda.core.StridedMemoryView.as_tensor_map`; the ``_from_*``
    helpers are upstream's private factories. A descriptor can be passed
    directly to :func:`~cuda.core.launch` as a kernel argument.
    """
    cdef unsigned char _bytes[128]
    cdef object _source        # keeps the tensor alive while the descriptor points into it
    cdef int _device_id
    cdef str _kind
    cdef int _rank
    cdef object _data_type
    cdef object _swizzle

    def __init__(self):
        raise RuntimeError(_NOT_DIRECTLY)

    @property
    def device(self):
        """Return the :obj:`~cuda.core.Device` associated with this descriptor."""
        from cuda.core._device import Device
        return Device(self._device_id) if self._device_id >= 0 else None

    @classmethod
    def _from_tiled(cls, view, box_dim=None, *, options=None, element_strides=None, data_type=None,
                    interleave=TensorMapInterleave.NONE, swizzle=TensorMapSwizzle.NONE,
                    l2_promotion=TensorMapL2Promotion.NONE, oob_fill=TensorMapOOBFill.NONE):
        """Create a tiled TMA descriptor from a validated view.

        Parameters
        ----------
        view : StridedMemoryView
            A device-accessible view with a 16-byte-aligned pointer (a Buffer
            or an object with ``__cuda_array_interface__`` is accepted too).
        box_dim : tuple of int, optional
            The size of each tile dimension (in elements), each in [1, 256],
            in the tensor's (row-major) order. Required unless ``options``.
        options : TensorMapDescriptorOptions or mapping, optional
            Bundled options; not together with the individual arguments.
        element_strides, data_type, interleave, swizzle, l2_promotion, oob_fill
            As :class:`TensorMapDescriptorOptions`.

        Raises
        ------
        ValueError
            If the tensor rank is outside [1, 5], the pointer is not
            16-byte aligned, or dimension/stride constraints are violated.
        TypeError
            For options of the wrong type.
        """
        opts = _coerce_tensor_map_descriptor_options(
            box_dim, options, element_strides=element_strides, data_type=data_type, interleave=interleave,
            swizzle=swizzle, l2_promotion=l2_promotion, oob_fill=oob_fill)
        v, tma, shape, rank, strides, byte_strides = _encoding_inputs(view, opts.data_type, opts.element_strides,
                                                                      "as_tensor_map", 1, "Tensor")
        box = opts.box_dim
        if len(box) != rank:
            raise ValueError(f"box_dim must have {rank} elements, got {len(box)}")
        for i, b in enumerate(box):
            if not 1 <= b <= 256:
                raise ValueError(f"box_dim[{i}] must be in [1, 256], got {b}")
        cdef TensorMapDescriptor d = TensorMapDescriptor.__new__(TensorMapDescriptor)
        cdef CUtensorMap m
        cdef cuuint64_t dims[5]
        cdef cuuint64_t gstrides[4]
        cdef cuuint32_t boxes[5]
        cdef cuuint32_t estrides[5]
        _fill_dims(shape, byte_strides, dims, gstrides)
        _fill_element_strides(strides, estrides)
        for i in range(rank):
            boxes[i] = box[rank - 1 - i]
        require_driver()
        check(driver().cuTensorMapEncodeTiled_(
            &m, <CUtensorMapDataType>int(tma), <cuuint32_t>rank, <void*><uintptr_t>v.ptr, dims, gstrides, boxes,
            estrides, <CUtensorMapInterleave>int(opts.interleave), <CUtensorMapSwizzle>int(opts.swizzle),
            <CUtensorMapL2promotion>int(opts.l2_promotion), <CUtensorMapFloatOOBfill>int(opts.oob_fill)))
        d._init_from(&m, "tiled", rank, tma, opts.swizzle, v)
        return d

    @classmethod
    def _from_im2col(cls, view, pixel_box_lower_corner, pixel_box_upper_corner, channels_per_pixel,
                     pixels_per_column, *, element_strides=None, data_type=None,
                     interleave=TensorMapInterleave.NONE, swizzle=TensorMapSwizzle.NONE,
                     l2_promotion=TensorMapL2Promotion.NONE, oob_fill=TensorMapOOBFill.NONE):
        """Create an im2col TMA descriptor from a validated view.

        Im2col layout is used for convolution-style data access patterns.

        Parameters
        ----------
        view : StridedMemoryView
            A device-accessible view with a 16-byte-aligned pointer.
        pixel_box_lower_corner, pixel_box_upper_corner : tuple of int
            Corners of the pixel bounding box, one per spatial dimension
            (rank - 2), in the tensor's (row-major) order.
        channels_per_pixel : int
            Number of channels per pixel.
        pixels_per_column : int
            Number of pixels per column.
        element_strides, data_type, interleave, swizzle, l2_promotion, oob_fill
            As for :meth:`_from_tiled`.

        Raises
        ------
        ValueError
            If the tensor rank is outside [3, 5], the pointer is not
            16-byte aligned, or other constraints are violated.
        """
        lower = _normalize_tensor_map_sequence("pixel_box_lower_corner", pixel_box_lower_corner)
        upper = _normalize_tensor_map_sequence("pixel_box_upper_corner", pixel_box_upper_corner)
        data_type = _normalize_tensor_map_data_type(data_type)
        _require_tensor_map_enums((("interleave", interleave, TensorMapInterleave),
                                   ("swizzle", swizzle, TensorMapSwizzle),
                                   ("l2_promotion", l2_promotion, TensorMapL2Promotion),
                                   ("oob_fill", oob_fill, TensorMapOOBFill)))
        v, tma, shape, rank, strides, byte_strides = _encoding_inputs(view, data_type, element_strides,
                                                                      "im2col tensor map", 3, "Im2col tensor")
        if len(lower) != rank - 2:
            raise ValueError(f"pixel_box_lower_corner must have {rank - 2} elements, got {len(lower)}")
        if len(upper) != rank - 2:
            raise ValueError(f"pixel_box_upper_corner must have {rank - 2} elements, got {len(upper)}")
        cdef TensorMapDescriptor d = TensorMapDescriptor.__new__(TensorMapDescriptor)
        cdef CUtensorMap m
        cdef cuuint64_t dims[5]
        cdef cuuint64_t gstrides[4]
        cdef cuuint32_t estrides[5]
        cdef int lo[3]
        cdef int hi[3]
        _fill_dims(shape, byte_strides, dims, gstrides)
        _fill_element_strides(strides, estrides)
        for i in range(rank - 2):
            lo[i] = lower[rank - 3 - i]
            hi[i] = upper[rank - 3 - i]
        require_driver()
        check(driver().cuTensorMapEncodeIm2col_(
            &m, <CUtensorMapDataType>int(tma), <cuuint32_t>rank, <void*><uintptr_t>v.ptr, dims, gstrides, lo, hi,
            <cuuint32_t>_uint32("channels_per_pixel", channels_per_pixel),
            <cuuint32_t>_uint32("pixels_per_column", pixels_per_column), estrides,
            <CUtensorMapInterleave>int(interleave), <CUtensorMapSwizzle>int(swizzle),
            <CUtensorMapL2promotion>int(l2_promotion), <CUtensorMapFloatOOBfill>int(oob_fill)))
        d._init_from(&m, "im2col", rank, tma, swizzle, v)
        return d

    @classmethod
    def _from_im2col_wide(cls, view, pixel_box_lower_corner_width, pixel_box_upper_corner_width,
                          channels_per_pixel, pixels_per_column, *, element_strides=None, data_type=None,
                          interleave=TensorMapInterleave.NONE, mode=TensorMapIm2ColWideMode.W,
                          swizzle=TensorMapSwizzle.SWIZZLE_128B, l2_promotion=TensorMapL2Promotion.NONE,
                          oob_fill=TensorMapOOBFill.NONE):
        """Create an im2col-wide TMA descriptor from a validated view.

        Im2col-wide layout loads elements exclusively along the W (width)
        dimension (compute capability 10.0+, a CUDA 13 driver).

        Parameters
        ----------
        view : StridedMemoryView
            A device-accessible view with a 16-byte-aligned pointer.
        pixel_box_lower_corner_width, pixel_box_upper_corner_width : int
            Corners of the pixel bounding box along W.
        channels_per_pixel : int
            Number of channels per pixel.
        pixels_per_column : int
            Number of pixels per column.
        mode : TensorMapIm2ColWideMode
            Im2col wide mode. Default ``W``.
        element_strides, data_type, interleave, swizzle, l2_promotion, oob_fill
            As for :meth:`_from_tiled` (``swizzle`` defaults to ``SWIZZLE_128B``).

        Raises
        ------
        ValueError
            If the tensor rank is outside [3, 5], the pointer is not
            16-byte aligned, or other constraints are violated.
        """
        data_type = _normalize_tensor_map_data_type(data_type)
        _require_tensor_map_enums((("interleave", interleave, TensorMapInterleave),
                                   ("mode", mode, TensorMapIm2ColWideMode),
                                   ("swizzle", swizzle, TensorMapSwizzle),
                                   ("l2_promotion", l2_promotion, TensorMapL2Promotion),
                                   ("oob_fill", oob_fill, TensorMapOOBFill)))
        for name, value in (("pixel_box_lower_corner_width", pixel_box_lower_corner_width),
                            ("pixel_box_upper_corner_width", pixel_box_upper_corner_width)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value)}")
        v, tma, shape, rank, strides, byte_strides = _encoding_inputs(view, data_type, element_strides,
                                                                      "im2col-wide tensor map", 3,
                                                                      "Im2col-wide tensor")
        cdef TensorMapDescriptor d = TensorMapDescriptor.__new__(TensorMapDescriptor)
        cdef CUtensorMap m
        cdef cuuint64_t dims[5]
        cdef cuuint64_t gstrides[4]
        cdef cuuint32_t estrides[5]
        _fill_dims(shape, byte_strides, dims, gstrides)
        _fill_element_strides(strides, estrides)
        require_driver()
        check(driver().cuTensorMapEncodeIm2colWide_(
            &m, <CUtensorMapDataType>int(tma), <cuuint32_t>rank, <void*><uintptr_t>v.ptr, dims, gstrides,
            <int>pixel_box_lower_corner_width, <int>pixel_box_upper_corner_width,
            <cuuint32_t>_uint32("channels_per_pixel", channels_per_pixel),
            <cuuint32_t>_uint32("pixels_per_column", pixels_per_column), estrides,
            <CUtensorMapInterleave>int(interleave), <CUtensorMapIm2ColWideMode>int(mode),
            <CUtensorMapSwizzle>int(swizzle), <CUtensorMapL2promotion>int(l2_promotion),
            <CUtensorMapFloatOOBfill>int(oob_fill)))
        d._init_from(&m, "im2col_wide", rank, tma, swizzle, v)
        return d

    cdef int _init_from(self, CUtensorMap* m, str kind, int rank, object tma, object swizzle, object view) except -1:
        memcpy(self._bytes, m, 128)
        self._kind = kind
        self._rank = rank
        self._data_type = tma
        self._swizzle = swizzle
        self._source = view
        self._device_id = view.device_id if view.device_id is not None else -1
        return 0

    def replace_address(self, tensor):
        """Replace the global memory address in this tensor map descriptor.

        This is useful when the tensor data has been reallocated but the
        shape, strides, and other parameters remain the same.

        Parameters
        ----------
        tensor : object
            Any object supporting ``__cuda_array_interface__``, a Buffer, or
            a :obj:`~cuda.core.StridedMemoryView`. Must refer to
            device-accessible memory with a 16-byte-aligned pointer.
        """
        cdef CUtensorMap m
        v = _get_validated_view(tensor)
        _require_view_device(v, self._device_id, "replace_address")
        memcpy(&m, self._bytes, 128)
        require_driver()
        check(driver().cuTensorMapReplaceAddress_(&m, <void*><uintptr_t>v.ptr))
        memcpy(self._bytes, &m, 128)
        self._source = v

    def _as_bytes(self):
        """The 128 ``CUtensorMap`` bytes, as a kernel receives them."""
        return bytes(self._bytes[:128])

    def __repr__(self):
        return (f"TensorMapDescriptor({self._kind}, rank={self._rank}, dtype={self._data_type.name}, "
                f"swizzle={TensorMapSwizzle(self._swizzle).name})")


# What every encoding needs from its tensor: the validated view (on the current
# device), its data type, its shape in elements, its rank (in [min_rank, 5];
# `what` names the layout in the message), its element strides and its byte strides.
cdef tuple _encoding_inputs(object view, object data_type, object element_strides, str operation, int min_rank,
                            str what):
    v = _get_validated_view(view)
    _require_view_device(v, current_device_ordinal(), operation)
    tma = _resolve_data_type(v, data_type)
    shape = _shape_in_elements(v, tma)
    rank = len(shape)
    if not min_rank <= rank <= _MAX_RANK:
        raise ValueError(f"{what} rank must be between {min_rank} and 5, got {rank}")
    return v, tma, shape, rank, _validate_element_strides(element_strides, rank), _checked_byte_strides(v, shape, tma)


# Checks each (name, value, enum type) of `checks`.
cdef int _require_tensor_map_enums(tuple checks) except -1:
    for name, value, kind in checks:
        _require_tensor_map_enum(name, value, kind)
    return 0


# The driver's (column-major) element strides of row-major `strides`.
cdef int _fill_element_strides(tuple strides, cuuint32_t* estrides) except -1:
    rank = len(strides)
    for i in range(rank):
        estrides[i] = strides[rank - 1 - i]
    return 0


# Byte strides of the view in `tma` elements; every stride but the innermost
# must be a multiple of 16 bytes (the driver's rule, checked with a clear message).
cdef tuple _checked_byte_strides(object view, tuple shape, object tma):
    size = _TMA_DATA_TYPE_SIZE[tma]
    strides = None if isinstance(view, _TensorView) and isinstance(view.owner, Buffer) else view.strides
    byte_strides = _compute_byte_strides(shape, strides, size)
    for i, s in enumerate(byte_strides[:-1]):
        if s % 16:
            raise ValueError(f"Global stride of dimension {i} must be a multiple of 16 bytes, got {s}")
    return byte_strides


# The driver's (column-major) global dims and strides of a row-major shape.
cdef int _fill_dims(tuple shape, tuple byte_strides, cuuint64_t* dims, cuuint64_t* gstrides) except -1:
    rank = len(shape)
    for i in range(rank):
        if shape[rank - 1 - i] <= 0:
            raise ValueError(f"Tensor dimension {rank - 1 - i} must be positive, got {shape[rank - 1 - i]}")
        dims[i] = shape[rank - 1 - i]
    for i in range(rank - 1):
        gstrides[i] = byte_strides[rank - 2 - i]
    return 0


cdef unsigned int _uint32(str name, object value) except? 0:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value)}")
    if not 0 < value < (1 << 32):
        raise ValueError(f"{name} must be positive, got {value}")
    return value
