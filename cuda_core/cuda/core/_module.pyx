# cython: language_level=3
# distutils: language = c++
"""ObjectCode (loaded code) and Kernel (cuda.core._module).

An ObjectCode holds the code (bytes or a file path) and loads it lazily, on the
first ``get_kernel`` or ``handle``, with ``cuLibraryLoadData`` (context
independent). Its library handle (cpp/module.hpp) unloads on release; every
Kernel owns the library it came from, so a kernel stays usable after its
ObjectCode is gone.
"""
import os
import warnings
import weakref
from collections import namedtuple

from libc.stdint cimport uintptr_t
from libcpp.string cimport string

from cuda.core._launch_config cimport LaunchConfig
from cuda.core._resource_handles cimport (
    bindings_handle,
    CUDA_SUCCESS, CUdevice, CUfunction_attribute, CUkernel, CUoccupancyB2DSize, CUresult, KernelHandle,
    LaunchDims, LibraryHandle, StreamHandle,
    borrow_kernel_handle, check, create_kernel_handle, create_library_handle, cu_device,
    current_device_ordinal, kernel_attribute, kernel_available_shared_mem, kernel_library, CUlibrary, kernel_cluster_occupancy,
    kernel_max_active_blocks, kernel_max_potential_block_size, kernel_param_count, kernel_param_info,
    not_instantiable, raise_driver_error, raise_last_error, require_driver, take_last_error,
)
from cuda.core._stream cimport Stream, Stream_accept

from cuda.core._utils.cuda_utils import CUDAError, driver

__all__ = ["Kernel", "ObjectCode"]

# CUkernel (int) -> a live Kernel that ObjectCode.get_kernel made for it: Kernel.from_handle
# without `mod` takes that kernel's library (and code) from it, so the library stays loaded.
_loaded_kernels = weakref.WeakValueDictionary()

ParamInfo = namedtuple("ParamInfo", ("offset", "size"))
MaxPotentialBlockSizeOccupancyResult = namedtuple("MaxPotentialBlockSizeOccupancyResult",
                                                  ("min_grid_size", "max_block_size"))

_LOADABLE = ("cubin", "ptx", "fatbin")
_CODE_TYPES = ("cubin", "ptx", "ltoir", "fatbin", "object", "library")

cdef enum:
    CUDA_ERROR_NOT_FOUND_ = 500


cdef int _ordinal_of(device) except -1:
    """A Device, an int ordinal, or None (the current device, else 0)."""
    cdef int ordinal
    if device is None:
        ordinal = current_device_ordinal()
        return ordinal if ordinal >= 0 else 0
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    dev_id = getattr(device, "device_id", None)
    if isinstance(dev_id, int):
        return dev_id
    raise TypeError(f"device must be a Device or an int ordinal, not {type(device).__name__}")


cdef class KernelAttributes:
    """Read-only per-device attributes of a :class:`Kernel` (``cuKernelGetAttribute``).

    ``kernel.attributes`` reads them for the current device; ``kernel.attributes[device]``
    for a given :class:`~cuda.core.Device` or ordinal.
    """
    cdef Kernel _kernel
    cdef object _device

    def __init__(self, *args, **kwargs):
        raise RuntimeError("KernelAttributes cannot be instantiated directly. Please use Kernel APIs.")

    @staticmethod
    cdef KernelAttributes _bind(Kernel kernel, object device):
        cdef KernelAttributes a = KernelAttributes.__new__(KernelAttributes)
        a._kernel = kernel
        a._device = device
        return a

    def __getitem__(self, device):
        _ordinal_of(device)   # validates
        return KernelAttributes._bind(self._kernel, device)

    cdef int _get(self, int attribute) except? -1:
        cdef int value = 0
        cdef CUdevice dev = cu_device(_ordinal_of(self._device))
        check(kernel_attribute(self._kernel._h, <CUfunction_attribute>attribute, dev, &value))
        return value

    @property
    def max_threads_per_block(self):
        """int: The most threads per block this kernel can be launched with."""
        return self._get(0)

    @property
    def shared_size_bytes(self):
        """int: Statically allocated shared memory per block, in bytes."""
        return self._get(1)

    @property
    def const_size_bytes(self):
        """int: User-allocated constant memory, in bytes."""
        return self._get(2)

    @property
    def local_size_bytes(self):
        """int: Local memory per thread, in bytes."""
        return self._get(3)

    @property
    def num_regs(self):
        """int: Registers per thread."""
        return self._get(4)

    @property
    def ptx_version(self):
        """int: The PTX virtual architecture the kernel was compiled for (e.g. 90)."""
        return self._get(5)

    @property
    def binary_version(self):
        """int: The binary architecture the kernel was compiled for (e.g. 90)."""
        return self._get(6)

    @property
    def cache_mode_ca(self):
        """bool: Compiled with ``-Xptxas --dlcm=ca``."""
        return bool(self._get(7))

    @property
    def max_dynamic_shared_size_bytes(self):
        """int: The most dynamic shared memory a launch may request, in bytes."""
        return self._get(8)

    @property
    def preferred_shared_memory_carveout(self):
        """int: The preferred shared memory carveout, in percent."""
        return self._get(9)

    @property
    def cluster_size_must_be_set(self):
        """bool: The kernel must be launched with a cluster size."""
        return bool(self._get(10))

    @property
    def required_cluster_width(self):
        """int: The required cluster width in blocks (0: none)."""
        return self._get(11)

    @property
    def required_cluster_height(self):
        """int: The required cluster height in blocks (0: none)."""
        return self._get(12)

    @property
    def required_cluster_depth(self):
        """int: The required cluster depth in blocks (0: none)."""
        return self._get(13)

    @property
    def non_portable_cluster_size_allowed(self):
        """bool: Whether a non-portable cluster size may be used."""
        return bool(self._get(14))

    @property
    def cluster_scheduling_policy_preference(self):
        """int: The block scheduling policy preference."""
        return self._get(15)


cdef class KernelOccupancy:
    """Occupancy queries of a :class:`Kernel` (``cuOccupancy*``) that help choose its block
    size, grid size and shared memory; made by :attr:`Kernel.occupancy`. The queries without
    a stream are answered for the current context's device."""
    cdef KernelHandle _h

    def __init__(self, *args, **kwargs):
        raise RuntimeError("KernelOccupancy cannot be instantiated directly. Please use Kernel APIs.")

    @staticmethod
    cdef KernelOccupancy _bind(KernelHandle h):
        cdef KernelOccupancy o = KernelOccupancy.__new__(KernelOccupancy)
        o._h = h
        return o

    def max_active_blocks_per_multiprocessor(self, block_size, dynamic_shared_memory_size):
        """int: The most blocks of ``block_size`` threads, each with
        ``dynamic_shared_memory_size`` bytes of dynamic shared memory, active on one
        multiprocessor at once (``cuOccupancyMaxActiveBlocksPerMultiprocessor``)."""
        cdef int blocks = 0
        cdef int c_block_size = block_size
        cdef size_t c_shared = dynamic_shared_memory_size
        cdef CUresult r
        with nogil:
            r = kernel_max_active_blocks(self._h, c_block_size, c_shared, &blocks)
        check(r)
        return blocks

    def max_potential_block_size(self, dynamic_shared_memory_needed, block_size_limit):
        """MaxPotentialBlockSizeOccupancyResult: ``(min_grid_size, max_block_size)``, the
        block size of the highest occupancy and the fewest blocks that reach it
        (``cuOccupancyMaxPotentialBlockSize``).

        ``dynamic_shared_memory_needed`` is the bytes each block needs (an int), or a
        ``cuda.bindings.driver.CUoccupancyB2DSize`` C callable from block size to bytes;
        ``block_size_limit`` caps the block size (0: the device's and kernel's limit).
        The callable runs on this thread with the GIL held: one that takes the GIL itself
        (a ctypes callback) works, one that waits on another thread may deadlock.
        """
        cdef int min_grid_size = 0, max_block_size = 0
        cdef int c_limit = block_size_limit
        cdef size_t c_shared
        cdef CUoccupancyB2DSize callback
        cdef CUresult r
        if isinstance(dynamic_shared_memory_needed, int):
            c_shared = dynamic_shared_memory_needed
            with nogil:
                r = kernel_max_potential_block_size(self._h, NULL, c_shared, c_limit, &min_grid_size,
                                                    &max_block_size)
        elif driver and isinstance(dynamic_shared_memory_needed, driver.CUoccupancyB2DSize):
            callback = <CUoccupancyB2DSize><size_t>int(dynamic_shared_memory_needed.getPtr())
            r = kernel_max_potential_block_size(self._h, callback, 0, c_limit, &min_grid_size, &max_block_size)
        else:
            raise TypeError("dynamic_shared_memory_needed expected to have type int, or CUoccupancyB2DSize, "
                            f"got {type(dynamic_shared_memory_needed)}")
        check(r)
        return MaxPotentialBlockSizeOccupancyResult(min_grid_size=min_grid_size, max_block_size=max_block_size)

    def available_dynamic_shared_memory_per_block(self, num_blocks_per_multiprocessor, block_size):
        """int: The dynamic shared memory, in bytes, each block may use when
        ``num_blocks_per_multiprocessor`` blocks of ``block_size`` threads share one
        multiprocessor (``cuOccupancyAvailableDynamicSMemPerBlock``)."""
        cdef size_t nbytes = 0
        cdef int c_blocks = num_blocks_per_multiprocessor
        cdef int c_block_size = block_size
        cdef CUresult r
        with nogil:
            r = kernel_available_shared_mem(self._h, c_blocks, c_block_size, &nbytes)
        check(r)
        return nbytes

    def max_potential_cluster_size(self, LaunchConfig config not None, *, stream):
        """int: The largest cluster this kernel can be launched with on ``stream`` (keyword
        only; ``device.default_stream`` for the default stream) with ``config``, whose own
        cluster dimensions are ignored (``cuOccupancyMaxPotentialClusterSize``)."""
        return _cluster_occupancy(self._h, config, stream, False)

    def max_active_clusters(self, LaunchConfig config not None, *, stream):
        """int: The most clusters of ``config`` that can run at once on the device of
        ``stream`` (keyword only; ``device.default_stream`` for the default stream)
        (``cuOccupancyMaxActiveClusters``)."""
        return _cluster_occupancy(self._h, config, stream, True)


cdef int _cluster_occupancy(KernelHandle h, LaunchConfig config, stream, bint active) except? -1:
    """One cluster occupancy query of `h` for `config` on `stream` (a Stream or a stream protocol object)."""
    cdef Stream s = Stream_accept(stream, True)
    cdef StreamHandle hs = s._h
    cdef LaunchDims dims
    config._fill_dims(&dims)
    cdef int value = 0
    cdef CUresult r
    with nogil:
        r = kernel_cluster_occupancy(h, hs, dims, active, &value)
    check(r)
    return value


cdef class Kernel:
    """A kernel of a loaded :class:`ObjectCode`, launched with :func:`~cuda.core.launch`.

    Made by :meth:`ObjectCode.get_kernel` (or :meth:`from_handle`); it keeps its
    code loaded for as long as it lives.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("Kernel", "ObjectCode"))

    @staticmethod
    cdef Kernel _wrap(KernelHandle h, ObjectCode module, str name):
        cdef Kernel k = Kernel.__new__(Kernel)
        k._h = h
        k._module = module
        k._name = name
        k._param_count = -2
        return k

    cdef long _arg_count(self) except -2:
        """The kernel's parameter count, or -1 when the driver cannot tell (cached)."""
        cdef CUresult status = CUDA_SUCCESS
        cdef long n
        if self._param_count == -2:
            with nogil:
                n = kernel_param_count(self._h, &status)
            if n < 0 and status != 801:   # CUDA_ERROR_NOT_SUPPORTED: unknown, not an error
                raise_driver_error(status)
            self._param_count = n
        return self._param_count

    @property
    def attributes(self):
        """:class:`KernelAttributes` for the current device (index it for another device)."""
        return KernelAttributes._bind(self, None)

    @property
    def num_arguments(self):
        """int: The number of parameters of this kernel (``cuKernelGetParamInfo``)."""
        cdef long n = self._arg_count()
        if n < 0:
            raise_driver_error(<CUresult>801)   # CUDA_ERROR_NOT_SUPPORTED: the driver cannot report them
        return n

    @property
    def arguments_info(self):
        """list[ParamInfo]: ``(offset, size)`` of each parameter, in bytes."""
        cdef size_t offset = 0, size = 0
        cdef long i, n = self.num_arguments
        out = []
        for i in range(n):
            check(kernel_param_info(self._h, <size_t>i, &offset, &size))
            out.append(ParamInfo(offset, size))
        return out

    @property
    def occupancy(self):
        """:class:`KernelOccupancy` queries of this kernel."""
        return KernelOccupancy._bind(self._h)

    @property
    def handle(self):
        """The ``CUkernel``: a ``cuda.bindings.driver.CUkernel`` when cuda-bindings
        is installed (as upstream's), else its address as an int; ``int(kernel.handle)``
        is the address either way."""
        return bindings_handle("driver.CUkernel", <uintptr_t>self._h.get().kernel)

    @property
    def _handle(self):
        return self.handle

    @staticmethod
    def from_handle(handle, mod=None):
        """A Kernel for a ``CUkernel`` address; ``mod`` (an ObjectCode) is kept alive with it.
        Without ``mod``, a kernel that :meth:`ObjectCode.get_kernel` made (and is still alive)
        keeps its library loaded, as upstream's reverse lookup does.

        Warns (UserWarning) when ``mod`` is loaded and its library is not the kernel's (on a
        driver that reports a kernel's library, CUDA 12.5 and later)."""
        if hasattr(handle, "getPtr"):       # a cuda.bindings CUkernel
            handle = int(handle)
        if isinstance(handle, bool) or not isinstance(handle, int):
            raise TypeError(f"handle must be an integer, got {type(handle).__name__}")
        if handle <= 0 or handle >= (1 << 64):
            raise ValueError(f"handle must be a non-zero 64-bit CUkernel address, got {handle}")
        if mod is not None and not isinstance(mod, ObjectCode):
            raise TypeError(f"mod must be an ObjectCode or None, not {type(mod).__name__}")
        cdef LibraryHandle lib
        if mod is not None and (<ObjectCode>mod)._h:
            lib = (<ObjectCode>mod)._h
        cdef Kernel loaded = _loaded_kernels.get(handle) if mod is None else None
        if loaded is not None:                  # made by this package: keep its library loaded
            lib = loaded._h.get().library
            mod = loaded._module
        cdef KernelHandle h = borrow_kernel_handle(<CUkernel><uintptr_t>handle, lib)
        if not h:
            raise_last_error()
        cdef CUlibrary own = NULL
        if lib and kernel_library(h, &own) == CUDA_SUCCESS and own != lib.get().library:
            warnings.warn("The library from the provided ObjectCode does not match the library associated "
                          "with this kernel.", UserWarning, stacklevel=2)
        return Kernel._wrap(h, mod, "")

    def __eq__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return self._h.get().kernel == (<Kernel>other)._h.get().kernel

    def __hash__(self):
        return hash(("Kernel", <uintptr_t>self._h.get().kernel))

    def __repr__(self):
        return f"<Kernel handle={<uintptr_t>self._h.get().kernel:#x}>"


cdef class ObjectCode:
    """Compiled code to load onto the device: made by :meth:`Program.compile` or
    the ``from_*`` constructors (there is no public constructor).

    Loadable code types are ``"cubin"``, ``"ptx"`` (JIT-compiled by the driver at
    load) and ``"fatbin"``; ``"ltoir"``, ``"object"`` and ``"library"`` can be
    held and linked (:class:`~cuda.core.Linker`) into a cubin, which loads.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("ObjectCode", "ObjectCode APIs (from_cubin, from_ptx) or Program APIs (compile)"))

    @classmethod
    def _init(cls, module, code_type, *, name="", symbol_mapping=None):
        if code_type not in _CODE_TYPES:
            raise ValueError(f"code_type must be one of {_CODE_TYPES}, got {code_type!r}")
        if isinstance(module, bytearray):
            module = bytes(module)
        elif isinstance(module, os.PathLike):
            module = os.fspath(module)
        if not isinstance(module, (bytes, str)):
            raise TypeError(f"module must be bytes, a str path or an os.PathLike, not {type(module).__name__}")
        if name is None:
            name = ""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        if symbol_mapping is None:
            symbol_mapping = {}
        if not isinstance(symbol_mapping, dict):
            raise TypeError(f"symbol_mapping must be a dict, not {type(symbol_mapping).__name__}")
        cdef ObjectCode self = ObjectCode.__new__(ObjectCode)
        self._module = module
        self._code_type = code_type
        self._name = name
        self._sym_map = dict(symbol_mapping)
        return self

    @staticmethod
    def _reduce_helper(module, code_type, name, symbol_mapping):
        return ObjectCode._init(module, code_type, name=name, symbol_mapping=symbol_mapping)

    def __reduce__(self):
        return ObjectCode._reduce_helper, (self._module, self._code_type, self._name, self._sym_map)

    @staticmethod
    def from_cubin(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a cubin: its bytes, or a file path (str or os.PathLike)."""
        return ObjectCode._init(module, "cubin", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_ptx(module, *, name="", symbol_mapping=None):
        """An ObjectCode for PTX: its bytes, or a file path (str or os.PathLike)."""
        return ObjectCode._init(module, "ptx", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_ltoir(module, *, name="", symbol_mapping=None):
        """An ObjectCode for LTO-IR (link it with :class:`~cuda.core.Linker` to load it)."""
        return ObjectCode._init(module, "ltoir", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_fatbin(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a fatbin: its bytes, or a file path."""
        return ObjectCode._init(module, "fatbin", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_object(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a relocatable object (link it with :class:`~cuda.core.Linker` to load it)."""
        return ObjectCode._init(module, "object", name=name, symbol_mapping=symbol_mapping)

    @staticmethod
    def from_library(module, *, name="", symbol_mapping=None):
        """An ObjectCode for a static library (link it with :class:`~cuda.core.Linker` to load it)."""
        return ObjectCode._init(module, "library", name=name, symbol_mapping=symbol_mapping)

    cdef int _load(self) except -1:
        """Loads the code once (cuLibraryLoadData); later calls return at once."""
        if self._h:
            return 0
        if self._code_type not in _LOADABLE:
            raise NotImplementedError(f'Unsupported code type "{self._code_type}" (supported_code_types={_LOADABLE!r}): '
                                      f"it needs a linker: link it with cuda.core.Linker into a cubin and load that")
        data = self._module
        if isinstance(data, str):
            with open(data, "rb") as f:
                data = f.read()
        if not data:
            raise ValueError(f"cannot load empty {self._code_type} code")
        if self._code_type == "ptx" and not data.endswith(b"\0"):
            data += b"\0"                 # the driver reads PTX up to its NUL
        cdef const char* image = data
        cdef LibraryHandle h
        require_driver()
        with nogil:
            h = create_library_handle(<const void*>image)
        if not h:
            raise_last_error()
        if not self._h:                   # a racing thread may have loaded it: keep the first
            self._h = h
        return 0

    def get_kernel(self, name):
        """The :class:`Kernel` called ``name`` (a name expression given to
        :meth:`Program.compile` is mapped to its mangled name first).

        Raises
        ------
        CUDAError
            ``CUDA_ERROR_NOT_FOUND`` naming the kernel when the code has no such kernel.
        """
        if isinstance(name, bytes):
            name = name.decode()
        if not isinstance(name, str):
            raise TypeError(f"name must be a str or bytes, not {type(name).__name__}")
        self._load()
        symbol = self._sym_map.get(name, name)   # a mangled name: bytes from Program.compile, or a str
        cdef bytes sym = symbol if isinstance(symbol, bytes) else symbol.encode()
        cdef const char* csym = sym
        cdef KernelHandle h
        with nogil:
            h = create_kernel_handle(self._h, csym)
        if not h:
            code = take_last_error()
            try:
                raise_driver_error(code)
            except CUDAError as exc:
                if <int>code == CUDA_ERROR_NOT_FOUND_:
                    exc.args = (f"{exc.args[0]}: no kernel named {name!r} in {self!r}",) + exc.args[1:]
                raise
        kernel = Kernel._wrap(h, self, name)
        _loaded_kernels[<uintptr_t>h.get().kernel] = kernel
        return kernel

    def get_module(self):
        """Not provided: this package loads context-independent libraries (see :attr:`handle`)."""
        raise NotImplementedError("ObjectCode.get_module (a CUmodule) is not provided by this package; "
                                  "use ObjectCode.handle (a CUlibrary)")

    @property
    def code(self):
        """The code: bytes, or the file path it was made from."""
        return self._module

    @property
    def name(self):
        """A human-readable name of this code."""
        return self._name

    @property
    def code_type(self):
        """``"cubin"``, ``"ptx"``, ``"ltoir"``, ``"fatbin"``, ``"object"`` or ``"library"``."""
        return self._code_type

    @property
    def symbol_mapping(self):
        """A copy of the name-expression -> mangled-name mapping (the mangled names
        :meth:`Program.compile` gives are bytes, as upstream's)."""
        return dict(self._sym_map)

    @property
    def handle(self):
        """The ``CUlibrary`` (loads the code on first use): a
        ``cuda.bindings.driver.CUlibrary`` when cuda-bindings is installed (as
        upstream's), else its address as an int; ``int(code.handle)`` is the
        address either way."""
        self._load()
        return bindings_handle("driver.CUlibrary", <uintptr_t>self._h.get().library)

    def __eq__(self, other):
        if not isinstance(other, ObjectCode):
            return NotImplemented
        return self is other

    def __hash__(self):
        return id(self)

    def __repr__(self):
        # upstream's form; the handle loads the code, 0x0 if it cannot be loaded
        try:
            address = int(self.handle)
        except Exception:
            address = 0
        return f"<ObjectCode handle={address:#x} code_type={self._code_type!r}>"
