# cython: language_level=3
# distutils: language = c++
"""Kernel arguments -> the driver's ``kernelParams`` (cuda.core._kernel_arg_handler).

The rules (upstream cuda.core 1.2.2's): a :class:`~cuda.core.Buffer` passes its
device address; a Python ``int`` is a 64-bit value (a pointer or a 64-bit
integer); ``float`` a C ``double``; ``complex`` two doubles; ``bool`` a C++
``bool``; a NumPy scalar (bool, int, uint, float16/32/64, complex64/128) and a
ctypes scalar (``c_int32``, ``c_void_p``, ...) pass their own bytes; a
:class:`~cuda.core.graph.GraphCondition` passes its 64-bit
``CUgraphConditionalHandle`` (so device code can set the condition); subclasses of
these types are accepted as their base type. Anything
else is a TypeError naming the argument.
"""
import ctypes
import struct
import sys

from libc.stdint cimport uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy

from cuda.core._memory._buffer cimport Buffer
from cuda.core._module cimport Kernel
from cuda.core._resource_handles cimport check, kernel_param_info

from cuda.core._tensor_map import TensorMapDescriptor

__all__ = ["ParamHolder"]

cdef object _SimpleCData = ctypes._SimpleCData


# True for a NumPy scalar or array, subclasses included (False while NumPy is not imported:
# then no argument can be a NumPy value, and the check costs one dict lookup).
cdef bint _is_numpy_value(object arg):
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return False
    return isinstance(arg, (numpy.generic, numpy.ndarray))


# True for a GraphCondition (False while cuda.core.graph is not imported: then none exists).
cdef bint _is_graph_condition(object arg):
    graph_definition = sys.modules.get("cuda.core.graph._graph_definition")
    return graph_definition is not None and isinstance(arg, graph_definition.GraphCondition)


# The bytes that kernel argument `i` passes (its slot's contents); TypeError for an unsupported type.
cdef bytes _arg_bytes(object arg, Py_ssize_t i):
    if isinstance(arg, Buffer):
        (<Buffer>arg)._check_open()
        return struct.pack("<Q", (<Buffer>arg)._ptr)
    if isinstance(arg, TensorMapDescriptor):
        return arg._as_bytes()      # the 128-byte CUtensorMap, by value
    if isinstance(arg, bool):
        return b"\x01" if arg else b"\x00"
    if isinstance(arg, int):
        if -(1 << 63) <= arg < 0:
            return struct.pack("<q", arg)
        if 0 <= arg < (1 << 64):
            return struct.pack("<Q", arg)
        raise OverflowError(f"kernel argument {i}: int {arg} does not fit in 64 bits")
    if isinstance(arg, float):
        return struct.pack("<d", arg)
    if isinstance(arg, complex):
        return struct.pack("<dd", arg.real, arg.imag)
    if isinstance(arg, _SimpleCData):
        return bytes(arg)
    if _is_graph_condition(arg):
        return struct.pack("<Q", arg.handle)
    if _is_numpy_value(arg):
        if getattr(arg, "ndim", 1) == 0 and arg.dtype.kind in "biufc":
            return arg.tobytes()
        raise TypeError(f"kernel argument {i}: unsupported NumPy value of dtype {arg.dtype} and ndim "
                        f"{getattr(arg, 'ndim', '?')} (pass a NumPy scalar, a Buffer or a pointer int)")
    raise TypeError(f"kernel argument {i}: unsupported type {type(arg).__name__} (supported: Buffer, "
                    f"TensorMapDescriptor, GraphCondition, int, float, complex, bool, NumPy scalars, "
                    f"ctypes scalars)")


cdef class ParamHolder:
    """The packed arguments of one launch; ``ptr`` is the ``void**`` the driver reads."""

    def __init__(self, kernel_args):
        self._pack(tuple(kernel_args), None)

    cdef int _pack(self, tuple args, list sizes) except -1:
        """`sizes` (the kernel's parameter sizes, or None): a slot is never smaller
        than its parameter, so the driver never reads past the block."""
        cdef Py_ssize_t n = len(args), i
        cdef size_t total = 0, slot
        cdef list datas = []
        cdef list offsets = []
        cdef bytes b
        for i in range(n):
            b = _arg_bytes(args[i], i)
            slot = len(b)
            if sizes is not None and i < len(sizes) and sizes[i] > slot:
                slot = sizes[i]
            slot = (slot + 15) // 16 * 16 if slot else 16
            datas.append(b)
            offsets.append(total)
            total += slot
        self._keep = list(args)
        if n == 0:
            self.ptr = 0
            return 0
        self._block = <char*>calloc(total, 1)
        self._ptrs = <void**>calloc(n, sizeof(void*))
        if self._block == NULL or self._ptrs == NULL:
            raise MemoryError()
        for i in range(n):
            b = datas[i]
            memcpy(self._block + <size_t>offsets[i], <const char*>b, len(b))
            self._ptrs[i] = self._block + <size_t>offsets[i]
        self.ptr = <uintptr_t>self._ptrs
        return 0

    def __dealloc__(self):
        free(self._ptrs)
        free(self._block)


cdef ParamHolder pack_kernel_args(Kernel kernel, tuple args):
    """`args` packed for a launch of `kernel`: checked against the kernel's
    parameter count and sizes when the driver reports them (TypeError for a
    wrong count or an unsupported argument)."""
    cdef long nparams = kernel._arg_count()
    cdef list sizes = None
    cdef size_t offset = 0, size = 0
    cdef long i
    if nparams >= 0:
        if nparams != len(args):
            raise TypeError(f"kernel {kernel._name!r} takes {nparams} argument{'s' if nparams != 1 else ''}, "
                            f"{len(args)} given")
        sizes = []
        for i in range(nparams):
            check(kernel_param_info(kernel._h, <size_t>i, &offset, &size))
            sizes.append(size)
    cdef ParamHolder holder = ParamHolder.__new__(ParamHolder)
    holder._pack(args, sizes)
    return holder
