# cython: language_level=3
# distutils: language = c++
"""copy_batch: many Buffer-to-Buffer copies in one ``cuMemcpyBatchAsync``
(upstream module path ``cuda.core._memory._copy_ops``).

The batch entry point is CUDA 13's (``cuMemcpyBatchAsync_v2``, in the
package's optional driver table); with an older driver the copies fall back to
one ``cuMemcpyAsync`` each, as upstream's do.
"""
from collections.abc import Sequence

from libc.string cimport memset
from libcpp.vector cimport vector

from cuda.core._memory._buffer cimport Buffer
from cuda.core._resource_handles cimport (
    CUDA_SUCCESS, CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST_NUMA,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, CUdeviceptr, CUmemcpyAttributes, CUmemcpySrcAccessOrder,
    CUmemLocation, CUmemLocationType, CUstreamCaptureStatus, check, driver, require_driver,
)
from cuda.core._stream cimport Stream

from cuda.core._memory._copy_enums import CopyOptions, _attr_run_starts, _reject_unsupported_during_api_call
from cuda.core._memory._managed_location import _coerce_location
from cuda.core._utils.version import driver_version

__all__ = ["copy_batch"]

_SINGLE_COPY_HINT = "Buffer.copy_to / Buffer.copy_from"

_KIND_TO_LOCATION_TYPE = {
    "device": int(CU_MEM_LOCATION_TYPE_DEVICE),
    "host": int(CU_MEM_LOCATION_TYPE_HOST),
    "host_numa": int(CU_MEM_LOCATION_TYPE_HOST_NUMA),
    "host_numa_current": int(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT),
}


def _normalize_copy_options(options, n):
    """Expand ``options`` to exactly one :class:`CopyOptions` per copy.

    ``None`` and a scalar broadcast; a sequence pairs by index and must
    already have length ``n``.
    """
    if options is None:
        return (CopyOptions(),) * n
    if isinstance(options, CopyOptions):
        return (options,) * n
    if not isinstance(options, Sequence) or isinstance(options, (str, bytes)):
        raise TypeError(f"options must be CopyOptions, a sequence of CopyOptions, or None; "
                        f"got {type(options).__name__}")
    if len(options) != n:
        raise ValueError(f"options length ({len(options)}) does not match the number of copies ({n})")
    for opt in options:
        if not isinstance(opt, CopyOptions):
            raise TypeError(f"each options element must be CopyOptions, got {type(opt).__name__}")
    return tuple(options)


# `seq` (srcs or dsts) as a list of open Buffers.
cdef list buffer_list(object seq, str name):
    if isinstance(seq, Buffer):
        raise TypeError(f"copy_batch: {name} takes a sequence of Buffers, not a single Buffer; for a single "
                        f"copy, use {_SINGLE_COPY_HINT}")
    if not isinstance(seq, Sequence) or isinstance(seq, (str, bytes)):
        raise TypeError(f"copy_batch: {name} must be a sequence of Buffer, got {type(seq).__name__}")
    if len(seq) == 0:
        raise ValueError(f"copy_batch: empty buffers sequence ({name})")
    result = list(seq)
    for buf in result:
        if not isinstance(buf, Buffer):
            raise TypeError(f"copy_batch: expected Buffer, got {type(buf).__name__}")
        (<Buffer>buf)._check_open()
    return result


# A location hint as a CUmemLocation; no hint is the zeroed (invalid) location.
cdef CUmemLocation hint_location(object hint) except *:
    cdef CUmemLocation loc
    memset(&loc, 0, sizeof(loc))
    spec = _coerce_location(hint, allow_none=True)
    if spec is not None:
        loc.type = <CUmemLocationType>_KIND_TO_LOCATION_TYPE[spec.kind]
        loc.id = spec.id if spec.kind in ("device", "host_numa") else 0
    return loc


# TypeError for a stream cuMemcpyBatchAsync cannot take: the legacy default
# stream, or one that is capturing a graph (the copy has no graph node form).
cdef int check_batch_stream(Stream s) except -1:
    cdef int status = 0
    if s._raw() == <void*>1:
        raise TypeError("copy_batch does not accept LEGACY_DEFAULT_STREAM, which cuMemcpyBatchAsync rejects; "
                        "use PER_THREAD_DEFAULT_STREAM or a created stream")
    require_driver()
    if driver().cuStreamIsCapturing_(s._raw(), <CUstreamCaptureStatus*>&status) == CUDA_SUCCESS and status != 0:
        raise TypeError("copy_batch does not accept a stream in graph capture mode (cuMemcpyBatchAsync "
                        "has no graph node); use Buffer.copy_to per buffer on a capturing stream")
    return 0


def copy_batch(Stream stream not None, srcs, dsts, *, options=None):
    """Copy a batch of buffers asynchronously.

    Source buffer and destination buffer sizes must match. For a single
    buffer, use :meth:`Buffer.copy_to` or :meth:`Buffer.copy_from`.

    Parameters
    ----------
    stream : :class:`~_stream.Stream`
        Stream for the asynchronous copy. First positional and required
        (mirrors :func:`launch`). Not a capturing stream (the driver has no
        graph node for a batched copy) and not ``LEGACY_DEFAULT_STREAM``,
        which ``cuMemcpyBatchAsync`` rejects; ``PER_THREAD_DEFAULT_STREAM``
        is accepted.
    srcs : Sequence[:class:`Buffer`]
        Source buffers. Must be a sequence, not a single Buffer.
    dsts : Sequence[:class:`Buffer`]
        Destination buffers. Must match ``len(srcs)``.
    options : :class:`CopyOptions` | Sequence[:class:`CopyOptions`] | None
        Per-copy options. A single value applies to every copy; a
        sequence pairs by index and must match ``len(srcs)``. ``None``
        uses stream-ordered defaults.

    Raises
    ------
    ValueError
        If lengths or sizes mismatch, or a sequence is empty.
    TypeError
        If a single Buffer is passed instead of a sequence, if
        ``LEGACY_DEFAULT_STREAM`` is passed, or if the stream is currently
        in graph capture mode.
    RuntimeError
        If a buffer is closed, or a copy asks for
        ``src_access_order=DURING_API_CALL`` where the batch falls back to
        per-copy ``cuMemcpyAsync`` (a driver older than CUDA 13).

    Notes
    -----
    The driver may run the copies of a batch concurrently and in any order,
    so no copy's source may overlap another's destination.
    """
    cdef vector[CUdeviceptr] src_ptrs
    cdef vector[CUdeviceptr] dst_ptrs
    cdef vector[size_t] sizes
    cdef vector[CUmemcpyAttributes] attrs
    cdef vector[size_t] attr_starts
    cdef CUmemcpyAttributes attr
    cdef Buffer s_buf
    cdef Buffer d_buf
    src_list = buffer_list(srcs, "srcs")
    dst_list = buffer_list(dsts, "dsts")
    if len(src_list) != len(dst_list):
        raise ValueError(f"copy_batch: srcs length ({len(src_list)}) does not match dsts length ({len(dst_list)})")
    n = len(src_list)
    opts = _normalize_copy_options(options, n)
    for i in range(n):
        s_buf = <Buffer>src_list[i]
        d_buf = <Buffer>dst_list[i]
        if s_buf._size != d_buf._size:
            raise ValueError(f"copy_batch: size mismatch at index {i} (src={s_buf._size}, dst={d_buf._size})")
        src_ptrs.push_back(<CUdeviceptr>s_buf._ptr)
        dst_ptrs.push_back(<CUdeviceptr>d_buf._ptr)
        sizes.push_back(s_buf._size)
    check_batch_stream(stream)
    if driver_version() < (13, 0, 0):
        for i, opt in enumerate(opts):
            _reject_unsupported_during_api_call(opt.src_access_order, "a CUDA 13+ driver (cuMemcpyBatchAsync)",
                                                index=i)
        for i in range(n):
            check(driver().cuMemcpyAsync_(dst_ptrs[i], src_ptrs[i], sizes[i], stream._raw()))
        return
    for start in _attr_run_starts(opts):
        opt = opts[start]
        memset(&attr, 0, sizeof(attr))
        attr.srcAccessOrder = <CUmemcpySrcAccessOrder>opt._to_driver_enum()
        attr.srcLocHint = hint_location(opt.src_location_hint)
        attr.dstLocHint = hint_location(opt.dst_location_hint)
        attr.flags = opt._to_driver_flags()
        attrs.push_back(attr)
        attr_starts.push_back(<size_t>start)
    check(driver().cuMemcpyBatchAsync_(dst_ptrs.data(), src_ptrs.data(), sizes.data(), <size_t>n, attrs.data(),
                                       attr_starts.data(), attrs.size(), stream._raw()))
