# cython: language_level=3
# distutils: language = c++
"""Strided views of arrays from other libraries (upstream module path ``cuda.core._memoryview``)."""
# StridedMemoryView: the metadata (pointer, layout, dtype, device) of an array
# exported through DLPack, the CUDA Array Interface or NumPy's array interface,
# or laid over a Buffer. A view of a DLPack capsule owns the consumed capsule and
# calls its producer's deleter when collected; a view exports itself through
# DLPack with the capsule makers of cuda.core._dlpack.
from cpython.exc cimport PyErr_SetObject
from cpython.pycapsule cimport (
    PyCapsule_CheckExact,
    PyCapsule_GetPointer,
    PyCapsule_IsValid,
    PyCapsule_New,
    PyCapsule_SetName,
)
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, intptr_t, uint8_t, uint32_t, uintptr_t
from libc.stdlib cimport free, malloc

from cuda.core._dlpack cimport (
    CudaCoreDLDataType,
    CudaCoreDLManagedTensor,
    CudaCoreDLManagedTensorVersioned,
    CudaCoreDLPackVersion,
    CudaCoreDLTensor,
    DLPACK_FLAG_BITMASK_READ_ONLY,
    DLPACK_MAJOR_VERSION,
    DLPACK_MINOR_VERSION,
    kDLBfloat,
    kDLBool,
    kDLComplex,
    kDLCPU,
    kDLCUDA,
    kDLCUDAHost,
    kDLCUDAManaged,
    kDLFloat,
    kDLInt,
    kDLUInt,
    make_strided_dlpack_capsule,
    make_strided_managed_tensor,
    versioned_capsule,
)
from cuda.core._resource_handles cimport (
    CUDA_SUCCESS,
    CUdevice,
    CUdeviceptr,
    CUpointer_attribute,
    CUresult,
    driver,
    raise_driver_error,
    require_driver,
)

import functools
import sys
import warnings

import importlib

from cuda.core._dlpack import classify_dl_device
from cuda.core._layout import _StridedLayout
from cuda.core._memory._buffer import Buffer
from cuda.core._stream import Stream

try:
    from ml_dtypes import bfloat16
except ImportError:
    bfloat16 = None


__all__ = ["StridedMemoryView", "args_viewable_as_strided_memory"]

cdef object _numpy_module = None


# NumPy, imported on first use: `import cuda.core` does not need it (views of
# arrays do: dtypes are NumPy dtypes, as upstream's).
cdef object _numpy():
    global _numpy_module
    if _numpy_module is None:
        _numpy_module = importlib.import_module("numpy")
    return _numpy_module


# CUpointer_attribute CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL (cuda.h).
cdef int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9

# The DLPack C exchange API (DLPack 1.3's DLPackExchangeAPI): function pointers a
# consumer written in C calls to exchange tensors without Python calls.
cdef extern from *:
    """
    typedef struct CudaCoreDLPackExchangeAPIHeader {
        CudaCoreDLPackVersion version;
        struct CudaCoreDLPackExchangeAPIHeader* prev_api;
    } CudaCoreDLPackExchangeAPIHeader;
    typedef struct {
        CudaCoreDLPackExchangeAPIHeader header;
        int (*managed_tensor_allocator)(CudaCoreDLTensor*, CudaCoreDLManagedTensorVersioned**, void*,
                                        void (*)(void*, const char*, const char*));
        int (*managed_tensor_from_py_object_no_sync)(void*, CudaCoreDLManagedTensorVersioned**);
        int (*managed_tensor_to_py_object_no_sync)(CudaCoreDLManagedTensorVersioned*, void**);
        int (*dltensor_from_py_object_no_sync)(void*, CudaCoreDLTensor*);
        int (*current_work_stream)(int32_t, int32_t, void**);
    } CudaCoreDLPackExchangeAPI;
    """
    ctypedef struct CudaCoreDLPackExchangeAPIHeader:
        CudaCoreDLPackVersion version
        CudaCoreDLPackExchangeAPIHeader* prev_api
    ctypedef struct CudaCoreDLPackExchangeAPI:
        CudaCoreDLPackExchangeAPIHeader header
        int (*managed_tensor_allocator)(CudaCoreDLTensor*, CudaCoreDLManagedTensorVersioned**, void*,
                                        void (*)(void*, const char*, const char*) noexcept) noexcept
        int (*managed_tensor_from_py_object_no_sync)(void*, CudaCoreDLManagedTensorVersioned**) noexcept
        int (*managed_tensor_to_py_object_no_sync)(CudaCoreDLManagedTensorVersioned*, void**) noexcept
        int (*dltensor_from_py_object_no_sync)(void*, CudaCoreDLTensor*) noexcept
        int (*current_work_stream)(int32_t, int32_t, void**) noexcept

# The version of the exchange API struct (DLPack 1.3).
cdef enum:
    EXCHANGE_API_MAJOR_VERSION = 1
    EXCHANGE_API_MINOR_VERSION = 3

cdef CudaCoreDLPackExchangeAPI _SMV_DLPACK_EXCHANGE_API
_SMV_DLPACK_EXCHANGE_API_CAPSULE = PyCapsule_New(<void*>&_SMV_DLPACK_EXCHANGE_API, b"dlpack_exchange_api", NULL)


cdef class StridedMemoryView:
    """The metadata of a strided array or tensor: its pointer, layout, dtype and device.

    A view is made by the :obj:`args_viewable_as_strided_memory` decorator
    (recommended), by :meth:`from_dlpack`, :meth:`from_cuda_array_interface`,
    :meth:`from_array_interface` or :meth:`from_any_interface` from another
    library's array, or by :meth:`from_buffer` over a :obj:`~_memory.Buffer`.
    ``StridedMemoryView(obj, stream_ptr)`` still works (DLPack first, then the
    CUDA Array Interface) but is deprecated.

    ``stream_ptr`` is the **consumer** stream (its address as an int). For DLPack it
    is passed to ``obj.__dlpack__(stream=...)``; for the CUDA Array Interface the
    consumer stream is made to wait for the producer's ``"stream"`` (as
    ``cuStreamWaitEvent`` would). ``stream_ptr=-1`` opts out of any stream
    ordering (unlike DLPack's ``stream=None``, which means the legacy default
    stream, and which ``cuda.core`` does not encourage); ``-1`` is what reaches
    ``__dlpack__`` for device arrays.

    Parameters
    ----------
    obj : Any
        An object supporting DLPack (up to v1.0) or the CUDA Array Interface (v3).
    stream_ptr : int
        The consumer stream's address, or ``-1`` for no stream ordering.

    Attributes
    ----------
    ptr : int
        The address of the element at index ``(0,) * ndim``.
    device_id : int
        The device the data lives on; -1 for memory only the host can reach.
    is_device_accessible : bool
        Whether GPU kernels can access the data.
    readonly : bool
        Whether the data must not be modified in place.
    exporting_obj : Any
        The object the view was made from (for :meth:`from_buffer`, the Buffer).
    """
    cdef readonly:
        intptr_t ptr
        int device_id
        bint is_device_accessible
        bint readonly
        object exporting_obj

    cdef:
        # The consumed DLPack capsule (renamed "used_..."), the CAI dict or the
        # array-interface dict the layout and dtype are read from; None otherwise.
        object metadata
        # Inside the consumed capsule; NULL unless the view came from DLPack.
        CudaCoreDLTensor* dl_tensor
        # The consumed capsule's managed tensor, whose deleter __dealloc__ calls (kept as C
        # pointers: the garbage collector may clear `metadata` before __dealloc__ runs).
        CudaCoreDLManagedTensorVersioned* _owned_versioned
        CudaCoreDLManagedTensor* _owned_unversioned
        # The layout and dtype, read lazily from dl_tensor/metadata or given by from_buffer/view.
        object _layout_value
        object _dtype
        # The Buffer the data lies in (from_buffer's, or one made for view()).
        object _buffer
        # The DLPack device of the data, once known (0: not yet).
        int _dl_device_type
        int _dl_device_id
        # Shape then strides (2 * ndim values) lent to dltensor_from_py_object_no_sync; freed with the view.
        int64_t* _lent_shape_strides

    # The DLPack C exchange API (and its older name), for C consumers such as PyTorch.
    __dlpack_c_exchange_api__ = _SMV_DLPACK_EXCHANGE_API_CAPSULE
    __c_dlpack_exchange_api__ = _SMV_DLPACK_EXCHANGE_API_CAPSULE

    def __init__(self, obj=None, stream_ptr=None):
        cdef str clsname = type(self).__name__
        _reset_view(self)
        if obj is None:
            warnings.warn(
                f"Constructing an empty {clsname} is deprecated; use one of the classmethods `from_dlpack`, "
                "`from_cuda_array_interface` or `from_any_interface` to construct a StridedMemoryView from an object",
                DeprecationWarning, stacklevel=2)
            return
        stream_ptr = _stream_ptr_int(stream_ptr)
        if _has_dlpack(obj):
            warnings.warn(
                f"Constructing a {clsname} directly from a DLPack-supporting object is deprecated; "
                "Use `StridedMemoryView.from_dlpack` or `StridedMemoryView.from_any_interface` instead.",
                DeprecationWarning, stacklevel=2)
            _view_as_dlpack(obj, stream_ptr, self)
        else:
            warnings.warn(
                f"Constructing a {clsname} directly from a CUDA-array-interface-supporting object is deprecated; "
                "Use `StridedMemoryView.from_cuda_array_interface` or `StridedMemoryView.from_any_interface` "
                "instead.",
                DeprecationWarning, stacklevel=2)
            _view_as_cai(obj, stream_ptr, self)

    @classmethod
    def from_dlpack(cls, obj, stream_ptr=None):
        """A view of ``obj`` through the DLPack protocol (``__dlpack__`` and
        ``__dlpack_device__``).

        Parameters
        ----------
        obj : object
            The exporting array or tensor.
        stream_ptr : int, optional
            The consumer stream's address, or ``-1`` for no stream ordering.
            Required (not None) for host and device arrays; pinned and managed
            memory accept None.
        """
        stream_ptr = _stream_ptr_int(stream_ptr)
        cdef StridedMemoryView view = StridedMemoryView.__new__(cls)
        _view_as_dlpack(obj, stream_ptr, view)
        return view

    @classmethod
    def from_cuda_array_interface(cls, obj, stream_ptr=None):
        """A view of ``obj`` through its ``__cuda_array_interface__`` (version 3 or
        later, without a mask). Unless ``stream_ptr`` is ``-1``, the consumer stream
        waits for the interface's producer ``"stream"``. A ``torch.Tensor`` (whose
        interface is version 2) is read through DLPack instead, as upstream reads it
        past its interface; the consumer then waits for torch's current stream.

        Parameters
        ----------
        obj : object
            The exporting device array.
        stream_ptr : int
            The consumer stream's address, or ``-1`` for no stream ordering
            (None is refused as ambiguous).
        """
        stream_ptr = _stream_ptr_int(stream_ptr)
        cdef StridedMemoryView view = StridedMemoryView.__new__(cls)
        if _is_torch_tensor(obj):
            _view_as_dlpack(obj, stream_ptr, view)   # upstream reads torch tensors past their CAI v2 too
        else:
            _view_as_cai(obj, stream_ptr, view)
        return view

    @classmethod
    def from_array_interface(cls, obj):
        """A view of host memory through NumPy's ``__array_interface__`` (version 3
        or later, without a mask); ``device_id`` is the current context's device.

        Parameters
        ----------
        obj : object
            The exporting host array (a NumPy array, for instance).
        """
        cdef StridedMemoryView view = StridedMemoryView.__new__(cls)
        _view_as_array_interface(obj, view)
        return view

    @classmethod
    def from_any_interface(cls, obj, stream_ptr=None):
        """A view of ``obj`` through DLPack when it supports it, else through the
        CUDA Array Interface (BufferError when it supports neither). PyTorch
        tensors go through DLPack.

        Parameters
        ----------
        obj : object
            The exporting array or tensor.
        stream_ptr : int, optional
            The consumer stream's address, or ``-1`` for no stream ordering.
        """
        if _has_dlpack(obj):
            return cls.from_dlpack(obj, stream_ptr)
        return cls.from_cuda_array_interface(obj, stream_ptr)

    @classmethod
    def from_buffer(cls, buffer, shape, strides=None, *, itemsize=None, dtype=None, is_readonly=False):
        """A view of ``buffer`` with the given shape and strides (in elements).

        No synchronization happens: the caller orders the use of the view after
        the work that writes ``buffer``. The buffer may come from a
        :obj:`MemoryResource` or wrap external memory
        (``Buffer.from_handle(ptr, size, owner=...)``); a buffer of a memory
        resource must be large enough for the layout (ValueError otherwise).

        Parameters
        ----------
        buffer : :obj:`~_memory.Buffer`
            The memory the view lies over.
        shape : tuple
            The extents.
        strides : tuple, optional
            The strides in elements; None for C-contiguous.
        itemsize : int, optional
            The size in bytes of one element (required without ``dtype``).
        dtype : :obj:`numpy.dtype`, optional
            The element type; its itemsize must equal ``itemsize`` when both are given.
        is_readonly : bool, optional
            Mark the view read-only.
        """
        cdef StridedMemoryView view = StridedMemoryView.__new__(cls)
        if itemsize is None and dtype is None:
            raise ValueError("Either itemsize or dtype must be specified")
        if dtype is not None:
            dtype = _numpy().dtype(dtype)
            if itemsize is not None and itemsize != dtype.itemsize:
                raise ValueError(f"itemsize ({itemsize}) does not match dtype.itemsize ({dtype.itemsize})")
            itemsize = dtype.itemsize
        _view_buffer_strided(view, buffer, _StridedLayout(shape, strides, itemsize), dtype, is_readonly, None)
        return view

    def __dealloc__(self):
        free(self._lent_shape_strides)
        self._lent_shape_strides = NULL
        self.dl_tensor = NULL
        if self._owned_versioned != NULL and self._owned_versioned.deleter != NULL:
            self._owned_versioned.deleter(self._owned_versioned)
        if self._owned_unversioned != NULL and self._owned_unversioned.deleter != NULL:
            self._owned_unversioned.deleter(self._owned_unversioned)
        self._owned_versioned = NULL
        self._owned_unversioned = NULL

    def view(self, layout=None, dtype=None):
        """A view of the same memory with another layout and/or dtype (what
        :meth:`from_buffer` gives for this view's buffer); this view itself when
        both are None. A layout's slice offset moves :attr:`ptr`.

        Parameters
        ----------
        layout : _StridedLayout, optional
            The new layout (default: this view's).
        dtype : numpy.dtype, optional
            The new dtype (default: this view's); its itemsize must match the layout's.
        """
        if layout is not None and not isinstance(layout, _StridedLayout):
            raise TypeError("Argument 'layout' has incorrect type (expected cuda.core._layout._StridedLayout, "
                            f"got {type(layout).__name__})")
        if layout is None and dtype is None:
            return self
        cdef StridedMemoryView view = StridedMemoryView.__new__(type(self))
        if layout is None:
            layout = self._get_layout()
        if dtype is None:
            dtype = self._get_dtype()
        _view_buffer_strided(view, self._get_buffer(), layout, dtype, self.readonly, self)
        return view

    def as_tensor_map(self, box_dim=None, *, options=None, element_strides=None, data_type=None,
                      interleave=None, swizzle=None, l2_promotion=None, oob_fill=None):
        """Create a tiled :obj:`~cuda.core.TensorMapDescriptor` from this view.

        This is the public entry point for creating tiled tensor map
        descriptors. Pass either ``box_dim`` and the individual keyword
        arguments directly, or bundled options via ``options=``
        (:class:`~cuda.core.TensorMapDescriptorOptions` or a dict). The view's
        memory must be device-accessible and 16-byte aligned.
        """
        from cuda.core._tensor_map import TensorMapDescriptor

        if not self.is_device_accessible:
            raise ValueError("The tensor must be device-accessible")
        extra = {name: value for name, value in (("interleave", interleave), ("swizzle", swizzle),
                                                 ("l2_promotion", l2_promotion), ("oob_fill", oob_fill))
                 if value is not None}
        return TensorMapDescriptor._from_tiled(self, box_dim, options=options, element_strides=element_strides,
                                               data_type=data_type, **extra)

    def copy_from(self, other, stream, allocator=None, blocking=None):
        """Copy ``other``'s data into this view (not supported in cuda.core 1.2.2:
        raises NotImplementedError, as upstream).

        Parameters
        ----------
        other : StridedMemoryView
            The view to copy from.
        stream : Stream
            The stream to order the copy on.
        allocator : MemoryResource, optional
            Where temporary buffers would be allocated.
        blocking : bool, optional
            Whether the call would wait for the copy.
        """
        raise NotImplementedError("Sorry, not supported: copy_from")

    def copy_to(self, other, stream=None, allocator=None, blocking=None):
        """Copy this view's data into ``other`` (not supported in cuda.core 1.2.2:
        raises NotImplementedError, as upstream); see :meth:`copy_from`."""
        raise NotImplementedError("Sorry, not supported: copy_to")

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export this view as a DLPack capsule (no copy, no synchronization: the
        consumer orders its use). The view needs a dtype; ``dl_device`` other than
        None and ``copy=True`` are refused; ``max_version >= (1, 0)`` gives a
        versioned capsule, which carries :attr:`readonly`."""
        cdef bint versioned
        if dl_device is not None:
            raise BufferError("Sorry, not supported: dl_device other than None")
        if copy is True:
            raise BufferError("Sorry, not supported: copy=True")
        if max_version is None:
            versioned = False
        else:
            if not isinstance(max_version, tuple):
                raise TypeError("Argument 'max_version' has incorrect type (expected tuple, "
                                f"got {type(max_version).__name__})")
            if len(max_version) != 2:
                raise BufferError(f"Expected max_version tuple[int, int], got {max_version}")
            versioned = max_version >= (1, 0)
        return _export_dlpack(self, versioned)

    def __dlpack_device__(self):
        """The DLPack ``(device_type, device_id)`` of the view's memory."""
        self._resolve_dl_device()
        return (self._dl_device_type, self._dl_device_id)

    @property
    def _layout(self):
        """The layout (a ``_StridedLayout``): read from the exporter's metadata for
        DLPack and array-interface views, given for :meth:`from_buffer` ones."""
        return self._get_layout()

    @property
    def size(self):
        """The number of elements."""
        return self._get_layout().volume

    @property
    def shape(self):
        """The extents of the tensor."""
        return self._get_layout().shape

    @property
    def strides(self):
        """The strides in elements (not bytes), or None when the exporter reports
        none (C-contiguous)."""
        return self._get_layout().strides

    @property
    def dtype(self):
        """The element type as a :obj:`numpy.dtype`, or None for a view made from a
        Buffer without one. ``bfloat16`` needs the ``ml_dtypes`` package
        (NotImplementedError without it)."""
        return self._get_dtype()

    def __repr__(self):
        return (f"StridedMemoryView(ptr={self.ptr},\n"
                + f"                  shape={self.shape},\n"
                + f"                  strides={self.strides},\n"
                + f"                  itemsize={self._layout.itemsize},\n"
                + f"                  dtype={_simple_repr(self.dtype)},\n"
                + f"                  device_id={self.device_id},\n"
                + f"                  is_device_accessible={self.is_device_accessible},\n"
                + f"                  readonly={self.readonly},\n"
                + f"                  exporting_obj={_simple_repr(self.exporting_obj)})")

    # The layout, read from the DLPack tensor or the interface dict on first use.
    cdef object _get_layout(self):
        if self._layout_value is None:
            if self.dl_tensor != NULL:
                self._layout_value = _layout_from_dltensor(self.dl_tensor)
            elif self.metadata is not None:
                self._layout_value = _layout_from_interface(self.metadata)
            else:
                raise ValueError("Cannot infer layout from the exporting object")
        return self._layout_value

    # The dtype, read from the DLPack tensor or the interface dict on first use (None if unknown).
    cdef object _get_dtype(self):
        if self._dtype is None:
            if self.dl_tensor != NULL:
                self._dtype = _dtype_from_dlpack(self.dl_tensor.dtype)
            elif self.metadata is not None:
                self._dtype = _typestr2dtype(self.metadata["typestr"])
        return self._dtype

    # The Buffer under the view: from_buffer's, else one over `ptr` that keeps the memory alive: the
    # exporter, or this view itself when it owns a consumed DLPack capsule (whose deleter may free the memory).
    cdef object _get_buffer(self):
        if self._buffer is None:
            if isinstance(self.exporting_obj, Buffer):
                self._buffer = self.exporting_obj
            else:
                owner = self if self.dl_tensor != NULL else self.exporting_obj
                self._buffer = Buffer.from_handle(self.ptr, 0, owner=owner)
        return self._buffer

    # Sets _dl_device_type/_dl_device_id: the DLPack tensor's device, a Buffer's kind of memory, or the host.
    cdef int _resolve_dl_device(self) except -1:
        cdef int device_type
        if self._dl_device_type != 0:
            return 0
        if self.dl_tensor != NULL:
            device_type = self.dl_tensor.device.device_type
            self._dl_device_id = self.dl_tensor.device.device_id if device_type == kDLCUDA else 0
        elif self.is_device_accessible and self._buffer is not None and self._buffer is self.exporting_obj:
            device_type, self._dl_device_id = classify_dl_device(self._buffer)
            if device_type == kDLCUDA and self._dl_device_id < 0:
                # Buffer.from_handle memory the driver knows no device of: plain host memory.
                device_type = kDLCPU
                self._dl_device_id = 0
        elif self.is_device_accessible:
            device_type = kDLCUDA
            self._dl_device_id = self.device_id
        else:
            device_type = kDLCPU
            self._dl_device_id = 0
        self._dl_device_type = device_type
        return 0


# Returns `view` to its empty state (for __init__ called again on a populated view): runs the
# deleter of a capsule it owns and drops every cached value.
cdef int _reset_view(StridedMemoryView view) except -1:
    cdef CudaCoreDLManagedTensorVersioned* versioned = view._owned_versioned
    cdef CudaCoreDLManagedTensor* unversioned = view._owned_unversioned
    view._owned_versioned = NULL
    view._owned_unversioned = NULL
    view.dl_tensor = NULL
    free(view._lent_shape_strides)
    view._lent_shape_strides = NULL
    view.metadata = None
    view.exporting_obj = None
    view._layout_value = None
    view._dtype = None
    view._buffer = None
    view._dl_device_type = 0
    view._dl_device_id = 0
    view.ptr = 0
    view.device_id = 0
    view.is_device_accessible = False
    view.readonly = False
    if versioned != NULL and versioned.deleter != NULL:
        versioned.deleter(versioned)
    if unversioned != NULL and unversioned.deleter != NULL:
        unversioned.deleter(unversioned)
    return 0


# The short name of an object's class for __repr__ ("module.Name", or "Name" for builtins).
cdef str _simple_repr(obj):
    cls = obj if isinstance(obj, type) else type(obj)
    if cls.__module__ in (None, "builtins"):
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


# `stream_ptr` as a Python int (None stays None), so a Stream.handle (cuda-bindings' CUstream)
# is read as its address; anything that is not a number is refused (upstream's typed `int` parameter).
cdef object _stream_ptr_int(object stream_ptr):
    if stream_ptr is None:
        return None
    cls = type(stream_ptr)
    if not (hasattr(cls, "__index__") or hasattr(cls, "__int__")):
        raise TypeError(f"Argument 'stream_ptr' has incorrect type (expected int, got {cls.__name__})")
    return int(stream_ptr)


# True for a torch.Tensor (subclasses included); False while torch is not imported.
cdef bint _is_torch_tensor(object obj):
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    tensor_type = getattr(torch, "Tensor", None)
    return isinstance(tensor_type, type) and isinstance(obj, tensor_type)


# True for a DLPack exporter, False for a CUDA Array Interface one; BufferError for neither.
cdef bint _has_dlpack(obj) except -1:
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return True
    if hasattr(obj, "__cuda_array_interface__"):
        return False
    raise BufferError("the input object does not support any data exchange protocol")


cdef class _StridedMemoryViewProxy:
    """What :obj:`args_viewable_as_strided_memory` passes for a chosen argument:
    the original object (``obj``) and which protocol it speaks (``has_dlpack``);
    ``view(stream_ptr)`` makes the :obj:`StridedMemoryView`."""
    cdef readonly:
        object obj
        bint has_dlpack

    def __init__(self, obj):
        self.obj = obj
        self.has_dlpack = _has_dlpack(obj)

    cpdef StridedMemoryView view(self, stream_ptr=None):
        """The StridedMemoryView of the wrapped object for the consumer stream
        ``stream_ptr`` (``-1``: no stream ordering)."""
        if self.has_dlpack:
            return StridedMemoryView.from_dlpack(self.obj, stream_ptr)
        return StridedMemoryView.from_cuda_array_interface(self.obj, stream_ptr)


# Fills `view` from obj.__dlpack__(): consumes (renames) the capsule, which the view then owns.
cdef int _view_as_dlpack(object obj, object stream_ptr, StridedMemoryView view) except -1:
    cdef int device_type, device_id
    cdef bint is_device_accessible = False
    device_type, device_id = obj.__dlpack_device__()
    if device_type == kDLCPU:
        if device_id != 0:
            raise BufferError(f"a CPU DLPack device must have device_id 0, got {device_id}")
        device_id = -1
        if stream_ptr is None:
            raise BufferError("stream=None is ambiguous with view()")
        elif stream_ptr == -1:
            stream_ptr = None
    elif device_type == kDLCUDA:
        if device_id < 0:
            raise BufferError(f"a CUDA DLPack device must have a non-negative device_id, got {device_id}")
        is_device_accessible = True
        if stream_ptr is None:
            raise BufferError("stream=None is ambiguous with view()")
    elif device_type in (kDLCUDAHost, kDLCUDAManaged):
        is_device_accessible = True
    else:
        raise BufferError("device not supported")

    stream_arg = int(stream_ptr) if stream_ptr else None
    try:
        capsule = obj.__dlpack__(stream=stream_arg, max_version=(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION))
    except TypeError:
        capsule = obj.__dlpack__(stream=stream_arg)

    _consume_capsule(view, capsule, obj)
    view.device_id = device_id
    view.is_device_accessible = is_device_accessible
    return 0


# Takes ownership of an unused DLPack capsule (renames it "used_..."; the view's __dealloc__ then
# calls its deleter) and sets the view's pointer, read-only flag and device from the tensor.
cdef int _consume_capsule(StridedMemoryView view, object capsule, object exporting_obj) except -1:
    cdef CudaCoreDLManagedTensorVersioned* versioned
    cdef CudaCoreDLManagedTensor* unversioned
    cdef CudaCoreDLTensor* tensor
    cdef bint is_readonly = False
    if not PyCapsule_CheckExact(capsule):
        raise BufferError(f"__dlpack__ must return a DLPack capsule, got {type(capsule).__name__}")
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        versioned = <CudaCoreDLManagedTensorVersioned*>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        if versioned.version.major > DLPACK_MAJOR_VERSION:
            raise BufferError(f"unsupported DLPack version {versioned.version.major}.{versioned.version.minor} "
                              f"(this package reads up to {DLPACK_MAJOR_VERSION}.x)")
        tensor = &versioned.dl_tensor
        is_readonly = (versioned.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0
        PyCapsule_SetName(capsule, b"used_dltensor_versioned")
    elif PyCapsule_IsValid(capsule, b"dltensor"):
        unversioned = <CudaCoreDLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
        tensor = &unversioned.dl_tensor
        PyCapsule_SetName(capsule, b"used_dltensor")
    else:
        raise BufferError("Invalid DLPack capsule (expected an unused 'dltensor' or 'dltensor_versioned')")

    # From here the view owns the consumed capsule: __dealloc__ calls its deleter.
    if PyCapsule_IsValid(capsule, b"used_dltensor_versioned"):
        view._owned_versioned = versioned
    else:
        view._owned_unversioned = unversioned
    view.dl_tensor = tensor
    view.metadata = capsule
    view.exporting_obj = exporting_obj
    if tensor.ndim < 0 or (tensor.ndim > 0 and tensor.shape == NULL):
        raise BufferError(f"malformed DLPack tensor (ndim={tensor.ndim}, "
                          f"shape={'NULL' if tensor.shape == NULL else 'set'})")
    view.ptr = <intptr_t>tensor.data + <intptr_t>tensor.byte_offset
    view.readonly = is_readonly
    if tensor.device.device_type == kDLCPU:
        view.device_id = -1
        view.is_device_accessible = False
    elif tensor.device.device_type in (kDLCUDA, kDLCUDAHost, kDLCUDAManaged):
        view.device_id = tensor.device.device_id
        view.is_device_accessible = True
    else:
        raise BufferError("device not supported")
    return 0


# Fills `view` from obj.__cuda_array_interface__ and orders the consumer stream after the producer's.
cdef int _view_as_cai(object obj, object stream_ptr, StridedMemoryView view) except -1:
    cdef CUdevice device = 0
    cdef CUresult status
    cdef CUdeviceptr address
    cdef intptr_t producer, consumer
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise TypeError(f"Expected dict, got {type(cai).__name__}")
    if cai["version"] < 3:
        raise BufferError("only CUDA Array Interface v3 or above is supported")
    if cai.get("mask") is not None:
        raise BufferError("mask is not supported")
    if stream_ptr is None:
        raise BufferError("stream=None is ambiguous with view()")
    ptr, readonly = cai["data"]
    view.exporting_obj = obj
    view.metadata = cai
    view._layout_value = _layout_from_interface(cai)   # bad strides are refused here, as upstream
    view.dl_tensor = NULL
    view.ptr = ptr
    view.readonly = readonly
    view.is_device_accessible = True
    require_driver()
    if view.ptr != 0:
        address = <CUdeviceptr><uintptr_t>view.ptr
        with nogil:
            status = driver().cuPointerGetAttribute_(&device, <CUpointer_attribute>CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                     address)
    else:
        with nogil:
            status = driver().cuCtxGetDevice_(&device)
    if status != CUDA_SUCCESS:
        raise_driver_error(status)
    view.device_id = device

    stream_ptr = int(stream_ptr)
    if stream_ptr != -1:
        producer_stream = cai.get("stream")
        if producer_stream is not None:
            producer_stream = int(producer_stream)
            if producer_stream <= 0:
                raise BufferError(f"the CUDA Array Interface 'stream' must be a positive stream address, "
                                  f"got {producer_stream}")
            producer = <intptr_t>producer_stream
            consumer = <intptr_t>stream_ptr
            if producer != consumer:
                _order_after(producer, consumer)
    return 0


# Makes `consumer` wait, on the device, for the work queued so far on `producer`
# (Stream.wait records a timing-disabled event on `producer` and destroys it after the wait).
cdef int _order_after(intptr_t producer, intptr_t consumer) except -1:
    Stream.from_handle(consumer).wait(Stream.from_handle(producer))
    return 0


# Fills `view` from obj.__array_interface__ (host memory; device_id is the current context's device).
cdef int _view_as_array_interface(object obj, StridedMemoryView view) except -1:
    cdef CUdevice device = 0
    cdef CUresult status
    data = obj.__array_interface__
    if not isinstance(data, dict):
        raise TypeError(f"Expected dict, got {type(data).__name__}")
    if data["version"] < 3:
        raise BufferError("only NumPy Array Interface v3 or above is supported")
    if data.get("mask") is not None:
        raise BufferError("mask is not supported")
    ptr, readonly = data["data"]
    view.exporting_obj = obj
    view.metadata = data
    view._layout_value = _layout_from_interface(data)   # bad strides are refused here, as upstream
    view.dl_tensor = NULL
    view.ptr = ptr
    view.readonly = readonly
    view.is_device_accessible = False
    require_driver()
    with nogil:
        status = driver().cuCtxGetDevice_(&device)
    if status != CUDA_SUCCESS:
        raise_driver_error(status)
    view.device_id = device
    return 0


# Sets `view` over `buffer` with `layout` and `dtype`; `parent` (a view being re-viewed) lends its device.
cdef int _view_buffer_strided(StridedMemoryView view, object buffer, object layout, object dtype,
                              bint is_readonly, StridedMemoryView parent) except -1:
    if dtype is not None:
        dtype = _numpy().dtype(dtype)
        if dtype.itemsize != layout.itemsize:
            raise ValueError(f"The dtype's itemsize ({dtype.itemsize}) does not match the layout's "
                             f"itemsize ({layout.itemsize}).")
    # A buffer from a memory resource has a known size: the layout's offsets must fit in it
    # (required_size_in_bytes refuses negative offsets). External memory's extent is unknown.
    if buffer.memory_resource is not None and buffer.size < layout.required_size_in_bytes():
        raise ValueError(f"Buffer size is too small for the layout. Expected at least "
                         f"{layout.required_size_in_bytes()} bytes, got {buffer.size} bytes.")
    view.ptr = <intptr_t>(int(buffer.handle) + layout.slice_offset_in_bytes)
    if parent is not None and buffer is not parent.exporting_obj:
        # The same memory as the parent view's (a wrapper Buffer over its pointer): same device.
        parent._resolve_dl_device()
        view.device_id = parent.device_id
        view.is_device_accessible = parent.is_device_accessible
        view._dl_device_type = parent._dl_device_type
        view._dl_device_id = parent._dl_device_id
    else:
        view.device_id = buffer.device_id
        view.is_device_accessible = buffer.is_device_accessible
    view.readonly = is_readonly
    view.exporting_obj = buffer
    view._buffer = buffer
    view.dl_tensor = NULL
    view.metadata = None
    view._layout_value = layout
    view._dtype = dtype
    return 0


# The _StridedLayout of a DLPack tensor (itemsize from bits * lanes; strides None when absent).
cdef object _layout_from_dltensor(CudaCoreDLTensor* tensor):
    cdef int nbits = tensor.dtype.bits * tensor.dtype.lanes
    cdef int itemsize = nbits >> 3
    cdef int i
    if (itemsize << 3) != nbits:
        raise ValueError("dl_tensor.dtype.bits must be a multiple of 8")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    strides = None
    if tensor.strides != NULL:
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
    return _StridedLayout(shape, strides, itemsize)


# The _StridedLayout of a CUDA Array Interface or array interface dict (byte strides divided by the itemsize).
cdef object _layout_from_interface(dict metadata):
    return _StridedLayout(metadata["shape"], metadata.get("strides"), _typestr2itemsize(metadata["typestr"]), True)


@functools.lru_cache
def _typestr2dtype(str typestr):
    """The numpy dtype of an array-interface ``typestr`` (cached)."""
    return _numpy().dtype(typestr)


@functools.lru_cache
def _typestr2itemsize(str typestr):
    """The itemsize of an array-interface ``typestr`` (cached)."""
    return _typestr2dtype(typestr).itemsize


# The numpy dtype of a DLPack dtype (TypeError/NotImplementedError for types numpy cannot hold).
cdef object _dtype_from_dlpack(CudaCoreDLDataType dtype):
    cdef int bits = dtype.bits
    if dtype.lanes != 1:
        raise NotImplementedError(f"vector dtypes (lanes={dtype.lanes}) is not supported")
    if dtype.code == kDLUInt:
        table = {8: _numpy().uint8, 16: _numpy().uint16, 32: _numpy().uint32, 64: _numpy().uint64}
        if bits not in table:
            raise TypeError(f"uint{bits} is not supported.")
    elif dtype.code == kDLInt:
        table = {8: _numpy().int8, 16: _numpy().int16, 32: _numpy().int32, 64: _numpy().int64}
        if bits not in table:
            raise TypeError(f"int{bits} is not supported.")
    elif dtype.code == kDLFloat:
        table = {16: _numpy().float16, 32: _numpy().float32, 64: _numpy().float64}
        if bits not in table:
            raise TypeError(f"float{bits} is not supported.")
    elif dtype.code == kDLComplex:
        table = {64: _numpy().complex64, 128: _numpy().complex128}
        if bits not in table:
            raise TypeError(f"complex{bits} is not supported.")
    elif dtype.code == kDLBool:
        table = {8: _numpy().bool_}
        if bits not in table:
            raise TypeError(f"{bits}-bit bool is not supported")
    elif dtype.code == kDLBfloat:
        if bfloat16 is None:
            raise NotImplementedError("Support for bfloat16 within cuda-core requires `ml_dtypes`to be installed.")
        if bits != 16:
            raise TypeError(f"bfloat{bits} is not supported.")
        return _numpy().dtype(bfloat16)
    else:
        raise TypeError(f"Unsupported dtype. dtype code: {dtype.code}")
    return _numpy().dtype(table[bits])


# The DLPack dtype of a numpy dtype (BufferError for what DLPack export does not carry).
cdef CudaCoreDLDataType _dtype_to_dlpack(object dtype) except *:
    cdef CudaCoreDLDataType out
    np_dtype = _numpy().dtype(dtype)
    if np_dtype.fields is not None:
        raise BufferError("Structured dtypes are not supported for DLPack export")
    if not np_dtype.isnative and np_dtype.byteorder not in ("=", "|"):
        raise BufferError("Non-native-endian dtypes are not supported for DLPack export")
    kind = np_dtype.kind
    bits = np_dtype.itemsize * 8
    if bfloat16 is not None and np_dtype == _numpy().dtype(bfloat16):
        out.code = kDLBfloat
    elif kind == "b":
        if bits != 8:
            raise BufferError(f"Unsupported bool dtype itemsize: {np_dtype.itemsize}")
        out.code = kDLBool
    elif kind == "i":
        if bits not in (8, 16, 32, 64):
            raise BufferError(f"Unsupported signed integer dtype: {np_dtype}")
        out.code = kDLInt
    elif kind == "u":
        if bits not in (8, 16, 32, 64):
            raise BufferError(f"Unsupported unsigned integer dtype: {np_dtype}")
        out.code = kDLUInt
    elif kind == "f":
        if bits not in (16, 32, 64):
            raise BufferError(f"Unsupported floating dtype: {np_dtype}")
        out.code = kDLFloat
    elif kind == "c":
        if bits not in (64, 128):
            raise BufferError(f"Unsupported complex dtype: {np_dtype}")
        out.code = kDLComplex
    else:
        raise BufferError(f"Unsupported dtype for DLPack export: {np_dtype}")
    out.bits = <uint8_t>bits
    out.lanes = 1
    return out


# The DLPack description of `view`: dtype, device, data pointer (NULL when empty), shape and explicit strides.
cdef int _describe_for_dlpack(StridedMemoryView view, CudaCoreDLDataType* dtype_out, uintptr_t* data_out,
                              int64_t* shape_out, int64_t* strides_out) except -1:
    cdef int i
    layout = view._get_layout()
    dtype = view._get_dtype()
    if dtype is None:
        raise BufferError("Cannot export StridedMemoryView via DLPack without dtype information; "
                          "create the view with dtype specified.")
    dtype_out[0] = _dtype_to_dlpack(dtype)
    view._resolve_dl_device()
    shape = layout.shape
    strides = layout._explicit_strides()
    for i in range(layout.ndim):
        shape_out[i] = shape[i]
        strides_out[i] = strides[i]
    data_out[0] = 0 if layout.volume == 0 else <uintptr_t>view.ptr
    return layout.ndim


# A DLPack capsule of `view` (owning a reference to it): shape and explicit strides in elements.
cdef object _export_dlpack(StridedMemoryView view, bint versioned):
    cdef CudaCoreDLDataType dl_dtype
    cdef int64_t[64] shape_values
    cdef int64_t[64] stride_values
    cdef uintptr_t data
    cdef int ndim = _describe_for_dlpack(view, &dl_dtype, &data, shape_values, stride_values)
    return make_strided_dlpack_capsule(view, data, ndim, shape_values, stride_values, dl_dtype,
                                       view._dl_device_type, view._dl_device_id, view.readonly, versioned)


# A versioned managed tensor of `view` (owning a reference to it), for managed_tensor_from_py_object_no_sync.
cdef CudaCoreDLManagedTensorVersioned* _export_managed_tensor(StridedMemoryView view) except NULL:
    cdef CudaCoreDLDataType dl_dtype
    cdef int64_t[64] shape_values
    cdef int64_t[64] stride_values
    cdef uintptr_t data
    cdef int ndim = _describe_for_dlpack(view, &dl_dtype, &data, shape_values, stride_values)
    return make_strided_managed_tensor(view, data, ndim, shape_values, stride_values, dl_dtype,
                                       view._dl_device_type, view._dl_device_id, view.readonly)


# Fills `out` with `view`'s tensor; shape and strides point into storage the view owns (lent, not copied).
cdef int _lend_dltensor(StridedMemoryView view, CudaCoreDLTensor* out) except -1:
    cdef CudaCoreDLDataType dl_dtype
    cdef int64_t[64] shape_values
    cdef int64_t[64] stride_values
    cdef uintptr_t data
    cdef int i
    cdef int ndim = _describe_for_dlpack(view, &dl_dtype, &data, shape_values, stride_values)
    if ndim > 0 and view._lent_shape_strides == NULL:
        view._lent_shape_strides = <int64_t*>malloc(sizeof(int64_t) * 2 * ndim)
        if view._lent_shape_strides == NULL:
            raise MemoryError()
        for i in range(ndim):
            view._lent_shape_strides[i] = shape_values[i]
            view._lent_shape_strides[ndim + i] = stride_values[i]
    out.data = <void*>data
    out.device.device_type = view._dl_device_type
    out.device.device_id = view._dl_device_id
    out.ndim = ndim
    out.dtype = dl_dtype
    out.byte_offset = 0
    out.shape = view._lent_shape_strides if ndim > 0 else NULL
    out.strides = view._lent_shape_strides + ndim if ndim > 0 else NULL
    return 0


# Sets the pending Python error from `error` (exchange API functions report failure as -1 plus an error).
cdef int _set_error(BaseException error) noexcept:
    PyErr_SetObject(type(error), error)
    return -1


# managed_tensor_allocator: not provided (a StridedMemoryView allocates nothing).
cdef int _smv_managed_tensor_allocator(
        CudaCoreDLTensor* prototype, CudaCoreDLManagedTensorVersioned** out, void* error_ctx,
        void (*set_error)(void*, const char*, const char*) noexcept) noexcept with gil:
    if out != NULL:
        out[0] = NULL
    if set_error != NULL:
        set_error(error_ctx, b"NotImplementedError",
                  b"managed_tensor_allocator is not supported by StridedMemoryView")
    return _set_error(NotImplementedError("managed_tensor_allocator is not supported by StridedMemoryView"))


# managed_tensor_from_py_object_no_sync: a versioned managed tensor of a StridedMemoryView (no synchronization).
cdef int _smv_managed_tensor_from_py_object_no_sync(
        void* py_object, CudaCoreDLManagedTensorVersioned** out) noexcept with gil:
    if out == NULL:
        return _set_error(RuntimeError("out cannot be NULL"))
    out[0] = NULL
    obj = <object>py_object
    if not isinstance(obj, StridedMemoryView):
        return _set_error(TypeError("py_object must be a StridedMemoryView"))
    try:
        out[0] = _export_managed_tensor(<StridedMemoryView>obj)
    except BaseException as error:
        return _set_error(error)
    return 0


# managed_tensor_to_py_object_no_sync: a new StridedMemoryView owning `tensor` (a new reference in out_py_object).
cdef int _smv_managed_tensor_to_py_object_no_sync(
        CudaCoreDLManagedTensorVersioned* tensor, void** out_py_object) noexcept with gil:
    cdef StridedMemoryView view
    if out_py_object == NULL:
        return _set_error(RuntimeError("out_py_object cannot be NULL"))
    out_py_object[0] = NULL
    if tensor == NULL:
        return _set_error(RuntimeError("tensor cannot be NULL"))
    try:
        capsule = versioned_capsule(tensor)
        view = StridedMemoryView.__new__(StridedMemoryView)
        _consume_capsule(view, capsule, capsule)
    except BaseException as error:
        return _set_error(error)
    Py_INCREF(view)
    out_py_object[0] = <void*>view
    return 0


# dltensor_from_py_object_no_sync: a non-owning DLTensor of a StridedMemoryView, valid while the view lives.
cdef int _smv_dltensor_from_py_object_no_sync(void* py_object, CudaCoreDLTensor* out) noexcept with gil:
    if out == NULL:
        return _set_error(RuntimeError("out cannot be NULL"))
    obj = <object>py_object
    if not isinstance(obj, StridedMemoryView):
        return _set_error(TypeError("py_object must be a StridedMemoryView"))
    try:
        _lend_dltensor(<StridedMemoryView>obj, out)
    except BaseException as error:
        return _set_error(error)
    return 0


# current_work_stream: cuda.core keeps no current stream, so NULL (the default stream) for every device.
cdef int _smv_current_work_stream(int32_t device_type, int32_t device_id, void** out_current_stream) noexcept with gil:
    if out_current_stream == NULL:
        return _set_error(RuntimeError("out_current_stream cannot be NULL"))
    out_current_stream[0] = NULL
    return 0


_SMV_DLPACK_EXCHANGE_API.header.version.major = EXCHANGE_API_MAJOR_VERSION
_SMV_DLPACK_EXCHANGE_API.header.version.minor = EXCHANGE_API_MINOR_VERSION
_SMV_DLPACK_EXCHANGE_API.header.prev_api = NULL
_SMV_DLPACK_EXCHANGE_API.managed_tensor_allocator = _smv_managed_tensor_allocator
_SMV_DLPACK_EXCHANGE_API.managed_tensor_from_py_object_no_sync = _smv_managed_tensor_from_py_object_no_sync
_SMV_DLPACK_EXCHANGE_API.managed_tensor_to_py_object_no_sync = _smv_managed_tensor_to_py_object_no_sync
_SMV_DLPACK_EXCHANGE_API.dltensor_from_py_object_no_sync = _smv_dltensor_from_py_object_no_sync
_SMV_DLPACK_EXCHANGE_API.current_work_stream = _smv_current_work_stream


cpdef StridedMemoryView view_as_cai(obj, stream_ptr, view=None):
    """A StridedMemoryView of ``obj`` through its ``__cuda_array_interface__``
    (filling ``view`` when given); see :meth:`StridedMemoryView.from_cuda_array_interface`."""
    cdef StridedMemoryView out = StridedMemoryView.__new__(StridedMemoryView) if view is None else view
    _view_as_cai(obj, stream_ptr, out)
    return out


cpdef StridedMemoryView view_as_array_interface(obj, view=None):
    """A StridedMemoryView of ``obj`` through its ``__array_interface__`` (filling
    ``view`` when given); see :meth:`StridedMemoryView.from_array_interface`."""
    cdef StridedMemoryView out = StridedMemoryView.__new__(StridedMemoryView) if view is None else view
    _view_as_array_interface(obj, out)
    return out


def args_viewable_as_strided_memory(tuple arg_indices):
    """A decorator that wraps the positional arguments at ``arg_indices`` in proxy
    objects, so that the function body stays independent of the array library.

    Inside the function each chosen argument is a (private) proxy whose
    ``view(stream_ptr)`` returns the :obj:`StridedMemoryView` of the original
    object for that consumer stream (``-1``: no stream ordering); its ``obj``
    attribute is the original object. For example::

        @args_viewable_as_strided_memory((1,))
        def my_func(arg0, arg1, arg2, stream: Stream):
            view = arg1.view(stream.handle)   # arg1: any DLPack or CAI object
            assert isinstance(view, StridedMemoryView)

    Parameters
    ----------
    arg_indices : tuple
        The positions of the arguments to wrap.
    """
    def wrapped_func_with_indices(func):
        @functools.wraps(func)
        def wrapped_func(*args, **kwargs):
            args = list(args)
            cdef int idx
            for idx in arg_indices:
                args[idx] = _StridedMemoryViewProxy(args[idx])
            return func(*args, **kwargs)
        return wrapped_func
    return wrapped_func_with_indices
