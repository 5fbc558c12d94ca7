# cython: language_level=3
# distutils: language = c++
"""IPC: buffer descriptors, allocation handles (fds), the per-process registry of
memory resources by uuid, buffer import/export, and pickling through
multiprocessing (fds travel by SCM_RIGHTS). Upstream module path
``cuda.core._memory._ipc``. Buffer imports call the C++ core's
deviceptr_import_ipc (here, and only here), which releases the GIL through a
scoped guard declared before it takes the IPC cache lock."""
import multiprocessing.reduction
import os
import threading
import uuid as uuid_module
import weakref

from libc.stdint cimport uint64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector
from libcpp.memory cimport shared_ptr
from cpython.ref cimport Py_REFCNT


cdef extern from "<memory>" namespace "std" nogil:
    # (Cython's libcpp.memory does not declare weak_ptr)
    cdef cppclass weak_ptr[T]:
        weak_ptr()
        weak_ptr[T]& operator=(const shared_ptr[T]&)
        shared_ptr[T] lock()
        bint expired()

from cuda.core._memory._buffer cimport Buffer
from cuda.core._memory._memory_pool cimport _MemPool, MP_grant_every_device_access
from cuda.core._resource_handles cimport (
    CUresult, DevicePtrHandle, IpcDescriptorCheck, IpcDescriptorPayload, IpcExportBytes, MemoryPoolBox, MemoryPoolHandle,
    StreamHandle, check, deviceptr_export_ipc, deviceptr_import_ipc, deviceptr_import_ipc_batch, deviceptr_size,
    ipc_descriptor_check, ipc_descriptor_payload, ipc_export_checksum, ipc_size_checksum, memory_pool_export_fd,
    memory_pool_import_ipc, not_instantiable, primary_context, raise_driver_error, raise_last_error, size_arg,
    take_last_error,
)
from cuda.core._stream cimport Stream, as_stream

from cuda.core._utils.cuda_utils import IPCImportError, check_multiprocessing_start_method

__all__ = ["IPCAllocationHandle", "IPCBufferDescriptor"]


def _descriptor_checksums(payload, size):
    """(export checksum, size checksum) of the first 64 bytes of `payload` and
    `size`, as an exporter writes them into the payload's trailer (version 1;
    for tests and probes)."""
    cdef IpcExportBytes data
    payload, n = _payload_arg(payload), size_arg(size)
    if len(payload) < 64:
        raise ValueError(f"IPC buffer descriptor payload is {len(payload)} bytes; expected at least 64")
    memcpy(data.data(), <char*>payload, 64)
    c = ipc_export_checksum(data)
    return c, ipc_size_checksum(c, n)


def _descriptor_payload(export_bytes, size):
    """The payload an exporter writes for (64 export bytes, size): the bytes and
    the version-1 checksum trailer (for tests and probes that build descriptors)."""
    cdef IpcExportBytes data
    cdef IpcDescriptorPayload p
    export_bytes, n = _payload_arg(export_bytes), size_arg(size)
    if len(export_bytes) != 64:
        raise ValueError(f"export data is {len(export_bytes)} bytes; expected 64")
    memcpy(data.data(), <char*>export_bytes, 64)
    ipc_descriptor_payload(data, n, &p)
    return (<const char*>p.data())[:p.size()]


cdef bytes _payload_arg(object payload):
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError(f"IPC buffer descriptor payload must be bytes, not {type(payload).__name__}")
    return bytes(payload)


cdef class IPCBufferDescriptor:
    """What another process needs to map a buffer: the payload (the driver's 64
    export bytes, then a trailer with the exporter's checksums of those bytes and
    of the size: cpp/ipc_descriptor.hpp, version 1) and the buffer's size.
    Pickles as ``(payload, size)``, as upstream's does. An import refuses a
    payload whose bytes do not match the trailer (corrupted export bytes crash
    the driver), or that has none; a size the trailer does not vouch for is
    checked against the mapping."""
    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("IPCBufferDescriptor", "Buffer.ipc_descriptor"))

    @staticmethod
    def _init(reserved, size):
        """A descriptor of `reserved` (the payload bytes) and `size`; the payload
        is checked when it is imported."""
        cdef IPCBufferDescriptor d = IPCBufferDescriptor.__new__(IPCBufferDescriptor)
        d._payload = _payload_arg(reserved)
        d._size = size_arg(size)
        return d

    @staticmethod
    cdef IPCBufferDescriptor _export(const IpcExportBytes& data, size_t size):
        cdef IPCBufferDescriptor d = IPCBufferDescriptor.__new__(IPCBufferDescriptor)
        cdef IpcDescriptorPayload p
        ipc_descriptor_payload(data, size, &p)
        d._payload = (<const char*>p.data())[:p.size()]
        d._size = size
        return d

    cdef bint _check(self, IpcExportBytes* out) except -1:
        """Copy the export bytes to `out`; raise ValueError unless the payload's
        trailer vouches for them; return whether it vouches for the size too."""
        cdef const unsigned char* p = <const unsigned char*><const char*>self._payload
        cdef size_t n = len(self._payload)
        cdef IpcDescriptorCheck r = ipc_descriptor_check(p, n, self._size, out)
        if r == IpcDescriptorCheck.kSizeVerified:
            return True
        if r == IpcDescriptorCheck.kSizeUnverified:
            return False
        if r == IpcDescriptorCheck.kTooShort:
            raise ValueError(f"IPC buffer descriptor payload is {n} bytes; expected at least 64")
        if r == IpcDescriptorCheck.kNoTrailer:
            raise ValueError("IPC buffer descriptor has no checksum: only descriptors from "
                             "Buffer.ipc_descriptor (or their pickles) can be imported")
        if r == IpcDescriptorCheck.kBadVersion:
            raise ValueError(f"IPC buffer descriptor has checksum trailer version {p[67]}; this build reads "
                             f"version 1 (export and import with the same cuda-core-ipcsafe version)")
        if r == IpcDescriptorCheck.kBadTrailer:
            raise ValueError(f"IPC buffer descriptor is corrupted: its {n}-byte payload has no valid "
                             f"checksum trailer after the 64 export bytes")
        raise ValueError("IPC buffer descriptor is corrupted: its payload does not match "
                         "the exporter's checksum")

    @property
    def size(self):
        """The buffer's size in bytes, as the exporter wrote it."""
        return self._size

    @property
    def payload(self):
        """The payload bytes: 64 export bytes and the checksum trailer."""
        return self._payload

    def __reduce__(self):
        return IPCBufferDescriptor._init, (self._payload, self._size)

    def __eq__(self, other):
        if not isinstance(other, IPCBufferDescriptor):
            return NotImplemented
        return (<IPCBufferDescriptor>other)._payload == self._payload and (<IPCBufferDescriptor>other)._size == self._size

    def __hash__(self):
        return hash((self._payload, self._size))

    def __repr__(self):
        return f"<IPCBufferDescriptor size={self._size}>"


cdef class IPCAllocationHandle:
    """An exported memory pool: owns a POSIX file descriptor (closed by close()
    or when collected) and the exporting resource's uuid."""
    def __cinit__(self):
        self._fd = -1

    def __init__(self, *args, **kwargs):
        raise RuntimeError(not_instantiable("IPCAllocationHandle", "MemoryResource.allocation_handle"))

    @classmethod
    def _init(cls, int handle, uuid):
        """Take ownership of the fd `handle`."""
        return IPCAllocationHandle._from_fd(handle, uuid)

    @staticmethod
    cdef IPCAllocationHandle _from_fd(int fd, object uuid):
        """Take ownership of `fd`."""
        cdef IPCAllocationHandle h = IPCAllocationHandle.__new__(IPCAllocationHandle)
        if fd < 0:
            raise ValueError(f"Invalid allocation handle (fd) {fd}: must be non-negative")
        h._fd = fd
        h._uuid = uuid
        return h

    @property
    def handle(self):
        """The POSIX file descriptor, an int; still owned by this object.

        Raises :class:`RuntimeError` if the handle has been closed.
        """
        if self._fd < 0:
            raise RuntimeError("IPCAllocationHandle has been closed")
        return self._fd

    @property
    def uuid(self):
        """The :class:`uuid.UUID` of the exporting memory resource, under which the
        receiving process registers the imported one; None for a handle made
        from a bare fd.
        """
        return self._uuid

    @property
    def is_closed(self):
        """True once the descriptor has been closed or detached."""
        return self._fd < 0

    def detach(self):
        """Give up ownership of the file descriptor and return it; the caller must
        close it. The handle is closed afterwards.

        Raises :class:`RuntimeError` if the handle is already closed.
        """
        fd = self.handle
        self._fd = -1
        return fd

    def close(self):
        """Close the file descriptor (the exported pool stays valid in processes
        that already mapped it). Idempotent; also done when the handle is
        collected.
        """
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __int__(self):
        if self._fd < 0:
            raise ValueError(f"Cannot convert IPCAllocationHandle to int: the handle is closed.")
        return self._fd

    def __dealloc__(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __reduce__(self):
        raise TypeError("IPCAllocationHandle carries a file descriptor: send it through multiprocessing "
                        "(a Queue, Pipe or Process argument), which passes the fd itself")

    def __repr__(self):
        return f"<IPCAllocationHandle fd={self._fd} uuid={self._uuid}>"


cdef tuple fd_and_uuid(object alloc_handle):
    """(fd, uuid) of an IPCAllocationHandle or an int fd; validates without taking ownership."""
    if isinstance(alloc_handle, IPCAllocationHandle):
        return alloc_handle.handle, alloc_handle.uuid
    if isinstance(alloc_handle, bool) or not isinstance(alloc_handle, int):
        raise TypeError(f"alloc_handle must be an IPCAllocationHandle or an int fd, not {type(alloc_handle).__name__}")
    if alloc_handle < 0:
        raise ValueError(f"Invalid allocation handle (fd) {alloc_handle}: must be non-negative")
    if alloc_handle > 0x7FFFFFFF:
        raise ValueError(f"Invalid allocation handle (fd) {alloc_handle}: not an open file descriptor")
    try:
        os.fstat(alloc_handle)
    except OSError as exc:
        raise ValueError(f"Invalid allocation handle (fd) {alloc_handle}: {exc.strerror}") from None
    return alloc_handle, None


# ---------------------------------------------------------------- registry
# uuid -> resource. Resources imported from another process (mapped) are also
# held strongly until closed, so Buffers unpickled later in this process find
# them even when the caller dropped the object from_allocation_handle returned.

cdef object _registry = weakref.WeakValueDictionary()
cdef dict _mapped_keepalive = {}
cdef object _registry_lock = threading.Lock()


cdef class _RetiredPool:
    """A weak reference to the C++ pool of a closed mapped resource (its Buffers
    may still hold it)."""
    cdef weak_ptr[const MemoryPoolBox] pool


# uuid -> _RetiredPool: mapped pools whose resource was closed while Buffers
# still held them. Re-importing the uuid reuses the pool instead of importing
# the fd again: the IPC import cache is keyed by the importing pool, and a
# second importing pool of one exported pool would map an allocation the
# first still maps; the driver returns the same address without a reference
# count (nvbug 5570902) and the first free unmaps both (found by
# tests/test_property_ipc.py; regression test there).
cdef dict _retired_pools = {}


cdef object _as_uuid(object uuid):
    if isinstance(uuid, uuid_module.UUID):
        return uuid
    if isinstance(uuid, str):
        try:
            return uuid_module.UUID(uuid)
        except ValueError:
            raise ValueError(f"invalid uuid {uuid!r}") from None
    raise TypeError(f"uuid must be a uuid.UUID or str, not {type(uuid).__name__}")


cdef object MP_register(_MemPool mr, object uuid):
    """Atomic get-or-create: the first (still open) resource registered under
    `uuid` wins and is returned, to every caller (DESIGN.md, "The registry").
    A resource closed meanwhile by another thread is refused under the lock
    (close() marks the resource closed before it leaves the registry)."""
    uuid = _as_uuid(uuid)
    with _registry_lock:
        if mr.is_closed:
            raise RuntimeError(f"{type(mr).__name__} has been closed")
        existing = _registry.get(uuid)
        if existing is not None and not (<_MemPool>existing).is_closed:
            return existing
        _registry[uuid] = mr
        if mr._mapped:
            _mapped_keepalive[uuid] = mr
        if mr._uuid is None:
            mr._uuid = uuid
        return mr


cdef object _registry_get_open(type cls, object uuid):
    """The open resource of type `cls` registered under `uuid`, or None; TypeError
    when an open resource of another class holds the uuid (a device pool's handle
    given to PinnedMemoryResource, say), as upstream 1.2.2."""
    if uuid is None:
        return None
    with _registry_lock:
        mr = _registry.get(uuid)
    if mr is None or (<_MemPool>mr).is_closed:
        return None
    if not isinstance(mr, cls):
        raise TypeError(f"Registry contains a {type(mr).__name__} for uuid {uuid}, but {cls.__name__} was requested")
    return mr


cdef int MP_forget(_MemPool mr, const MemoryPoolHandle& pool) except -1:
    cdef _RetiredPool retired
    with _registry_lock:
        for key in [k for k, v in _registry.items() if v is mr]:
            del _registry[key]
        for key in [k for k, v in _mapped_keepalive.items() if v is mr]:
            del _mapped_keepalive[key]
        for key in [k for k, v in _retired_pools.items() if (<_RetiredPool>v).pool.expired()]:
            del _retired_pools[key]
        if mr._mapped and mr._uuid is not None and pool.use_count() > 1:   # Buffers still hold it
            retired = _RetiredPool.__new__(_RetiredPool)
            retired.pool = pool
            _retired_pools[mr._uuid] = retired
    return 0


# A reference to a mapped resource held by _mapped_keepalive, plus the caller's local variable:
# nobody else (no caller, no Buffer, which holds its resource) refers to it.
cdef Py_ssize_t _UNHELD_MAPPED_REFS = 2


# Releases the mapped resource of another class than `cls` registered under `uuid` when nothing but
# _mapped_keepalive holds it, and returns its pool (an empty handle when there is none, or it is held).
# Upstream's registry is weak: there a resource its caller dropped is gone, so the other class maps the
# handle anew (upstream's TestIPCSharedAllocationHandleAndBufferObjects: a child maps a pinned pool with
# DeviceMemoryResource.from_allocation_handle, drops it, and unpickles Buffers that re-open the pool as
# PinnedMemoryResource); a held one is upstream's TypeError. The pool is reused by the new resource (one
# importing pool per exported pool, see _retired_pools). Takes _registry_lock.
cdef MemoryPoolHandle _release_unheld_import(type cls, object uuid):
    cdef MemoryPoolHandle pool
    if uuid is None:
        return pool
    with _registry_lock:
        mr = _registry.get(uuid)
        if mr is None or isinstance(mr, cls) or not (<_MemPool>mr)._mapped or (<_MemPool>mr).is_closed:
            return pool
        if _mapped_keepalive.get(uuid) is not mr or Py_REFCNT(mr) > _UNHELD_MAPPED_REFS:
            return pool
        pool = (<_MemPool>mr)._pool
        del _registry[uuid]
        del _mapped_keepalive[uuid]
        (<_MemPool>mr)._uuid = None
    return pool


cdef MemoryPoolHandle _retired_pool(object uuid):
    """The still-held pool of a closed mapped resource of `uuid`, or an empty handle."""
    cdef MemoryPoolHandle pool
    with _registry_lock:
        retired = _retired_pools.get(uuid)
        if retired is not None:
            pool = (<_RetiredPool>retired).pool.lock()
    return pool


cdef object MP_from_registry(type cls, object uuid):
    uuid = _as_uuid(uuid)
    mr = _registry_get_open(cls, uuid)   # TypeError for another class's resource
    if mr is None:
        raise RuntimeError(f"Memory resource {uuid} was not found")
    return mr


# ---------------------------------------------------------------- pools

cdef IPCAllocationHandle MP_export_mempool(_MemPool mr):
    """The resource's IPCAllocationHandle (owning a POSIX fd), exported once."""
    cdef int fd = -1
    mr._check_open()
    if not mr._ipc:
        raise RuntimeError("Memory resource is not IPC-enabled")
    if mr._alloc_handle is None or mr._alloc_handle.is_closed:
        check(memory_pool_export_fd(mr._pool, &fd))
        mr._alloc_handle = IPCAllocationHandle._from_fd(fd, mr.uuid)
    return mr._alloc_handle


cdef object MP_from_allocation_handle(type cls, int ordinal, object alloc_handle, bint grant_every_device):
    """Map a pool exported by another process (an IPCAllocationHandle or an int fd,
    which stays the caller's) into a new resource of type `cls` on device
    `ordinal`'s primary context, registered under the handle's uuid. One resource
    per uuid: an open one already here is returned instead."""
    cdef _MemPool mr
    cdef MemoryPoolHandle unheld
    fd, uuid = fd_and_uuid(alloc_handle)
    unheld = _release_unheld_import(cls, uuid)   # another class's import nobody holds: its pool, for this one
    hit = _registry_get_open(cls, uuid)
    if hit is not None:
        return hit
    mr = cls.__new__(cls)
    mr._dev_id = ordinal if not grant_every_device else -1
    if unheld:
        mr._pool = unheld
        if grant_every_device:
            MP_grant_every_device_access(mr._pool)
    elif uuid is not None:
        mr._pool = _retired_pool(uuid)   # Buffers of a closed import of this pool still map through it
    if not mr._pool:
        mr._pool = memory_pool_import_ipc(primary_context(ordinal), fd)
        if not mr._pool:
            raise_last_error()
        if grant_every_device:
            MP_grant_every_device_access(mr._pool)   # access is per process: grant it here too
    mr._owned = True
    mr._ipc = True
    mr._mapped = True
    mr._uuid = uuid
    # A mapped pool cannot be exported again (the driver refuses it): the resource
    # keeps its own duplicate of the fd it was mapped from, so that sending it or
    # its Buffers on to a third process works (upstream's re-export), while the
    # caller's handle stays the caller's. close() closes the duplicate.
    mr._alloc_handle = IPCAllocationHandle._from_fd(os.dup(fd), uuid)
    if uuid is None:
        return mr
    winner = MP_register(mr, uuid)
    if winner is not mr:   # another thread registered the same uuid first
        mr._uuid = None
        mr.close()
    return winner


# ---------------------------------------------------------------- buffers

cdef IPCBufferDescriptor Buffer_get_ipc_descriptor(Buffer b):
    cdef IpcExportBytes data
    if not isinstance(b._mr, _MemPool) or not (<_MemPool>b._mr)._ipc:
        raise RuntimeError("Memory resource is not IPC-enabled")
    check(deviceptr_export_ipc(b._h, &data))
    return IPCBufferDescriptor._export(data, b._size)


cdef tuple Buffer_reduce_args(Buffer b):
    # A pool's buffer whose pool is not IPC-enabled (any non-IPC pool, every
    # managed pool) fails in b.ipc_descriptor, as upstream 1.2.2's
    # Buffer.__reduce__ does (get_ipc_descriptor: RuntimeError "Memory resource
    # is not IPC-enabled").
    mr = b._mr
    if not isinstance(mr, _MemPool):
        raise TypeError("only buffers of an IPC-enabled DeviceMemoryResource or PinnedMemoryResource can be pickled")
    # A closed buffer whose descriptor is known (imported, or exported before the close) still pickles as it: the
    # descriptor names the exporter's allocation, which closing this process's mapping does not end. A queue's
    # feeder thread pickles after put() returns, often after the sender's close (upstream's TestIpcReexport).
    if b._closed and b._ipc_desc is not None:
        return (mr, b._ipc_desc)
    return (mr, b.ipc_descriptor)


cdef _MemPool _import_target(object mr):
    """`mr` as the open, IPC-enabled pool that imports go through."""
    if not isinstance(mr, _MemPool) or not (<_MemPool>mr)._ipc_capable:
        raise TypeError(f"IPC buffers must be imported with a DeviceMemoryResource or PinnedMemoryResource, "
                        f"not {type(mr).__name__}")
    cdef _MemPool pool_mr = <_MemPool>mr
    pool_mr._check_open()
    if not pool_mr._ipc:
        raise RuntimeError("Memory resource is not IPC-enabled")
    return pool_mr


cdef Buffer Buffer_from_ipc_descriptor(object mr, object ipc_descriptor, object stream):
    """Map an allocation another process exported (its descriptor) through `mr`,
    that process's pool imported here."""
    cdef _MemPool pool_mr
    cdef IPCBufferDescriptor desc
    cdef IpcExportBytes data
    cdef DevicePtrHandle h
    cdef Stream s
    cdef size_t mapped
    cdef MemoryPoolHandle pool
    cdef StreamHandle sh
    if not isinstance(mr, _MemPool) or not (<_MemPool>mr)._ipc_capable:
        raise TypeError(f"IPC buffers must be imported with a DeviceMemoryResource or PinnedMemoryResource, "
                        f"not {type(mr).__name__}")
    if not isinstance(ipc_descriptor, IPCBufferDescriptor):
        raise TypeError(f"Argument 'ipc_descriptor' has incorrect type (expected IPCBufferDescriptor, "
                        f"got {type(ipc_descriptor).__name__})")
    s = as_stream(stream)
    pool_mr = <_MemPool>mr
    pool_mr._check_open()
    if not pool_mr._ipc:
        raise RuntimeError("Memory resource is not IPC-enabled")
    desc = <IPCBufferDescriptor>ipc_descriptor
    size_is_exporters = desc._check(&data)
    # Local copies: another thread may close the resource or the stream while
    # this one waits in the import without the GIL.
    pool = pool_mr._pool
    sh = s._h
    # Entered holding the GIL: a live hit is returned without releasing it; any
    # other import releases it inside, before the cache lock (the GIL stays the
    # outermost lock: DESIGN.md, lock order).
    h = deviceptr_import_ipc(pool, data, sh)
    if not h:
        raise _import_error(pool_mr, take_last_error())
    # A size the exporter did not write is checked against the mapping (a driver query).
    mapped = 0 if size_is_exporters else deviceptr_size(h)
    if mapped and desc._size > mapped:
        raise ValueError(f"IPC buffer descriptor size {desc._size} exceeds mapped allocation extent {mapped}")
    cdef Buffer b = Buffer._wrap(h, desc._size, mr)
    b._ipc_desc = desc   # an imported buffer can be handed on (the driver cannot re-export it)
    return b


cdef object _driver_error(CUresult code):
    """The CUDAError raise_driver_error (the one conversion) raises for `code`."""
    try:
        raise_driver_error(code)
    except Exception as exc:
        return exc
    return RuntimeError("cuda.core internal error: a failed import without an error code")


cdef object _import_error(_MemPool mr, CUresult code):
    """The CUDAError for a failed import through `mr`: raise_driver_error's, which also says why when `mr` was made in
    this process. The driver maps another process's allocation only through that process's pool imported here, and
    refuses a pool made here, the exporter's own included, with CUDA_ERROR_INVALID_VALUE (upstream 1.2.2 raises that
    CUDAError with the bare text)."""
    exc = _driver_error(code)
    if mr._mapped or getattr(exc, "code", None) != 1:   # 1: CUDA_ERROR_INVALID_VALUE
        return exc
    kind = type(mr).__name__
    try:
        raise_driver_error(code, f"{exc}: this {kind} was created in this process, not imported from the exporting "
                                 f"one: a buffer's IPC descriptor is imported in another process, through the "
                                 f"exporter's {kind} sent there (pickled, or {kind}.from_allocation_handle). The "
                                 f"process that exported a buffer uses the Buffer itself")
    except Exception as hinted:
        return hinted
    return exc


cdef list Buffer_from_ipc_descriptors(object mr, object ipc_descriptors, object stream, bint return_exceptions):
    """Map many allocations another process exported, through `mr`, in one call
    of deviceptr_import_ipc_batch (one GIL release, one cache pass)."""
    cdef _MemPool pool_mr
    cdef IPCBufferDescriptor desc
    cdef Stream s
    cdef MemoryPoolHandle pool
    cdef StreamHandle sh
    cdef vector[IpcExportBytes] keys
    cdef vector[DevicePtrHandle] handles
    cdef vector[CUresult] errors
    cdef vector[char] size_is_exporters
    cdef size_t i, n, mapped
    cdef Buffer b
    if isinstance(ipc_descriptors, IPCBufferDescriptor):
        raise TypeError("ipc_descriptors must be an iterable of IPCBufferDescriptor; "
                        "import a single descriptor with Buffer.from_ipc_descriptor")
    pool_mr = _import_target(mr)
    try:
        descs = list(ipc_descriptors)
    except TypeError:
        raise TypeError(f"ipc_descriptors must be an iterable of IPCBufferDescriptor, "
                        f"not {type(ipc_descriptors).__name__}") from None
    s = as_stream(stream)
    n = len(descs)
    keys.resize(n)
    size_is_exporters.resize(n)
    # Every descriptor is checked before anything is imported.
    for i in range(n):
        d = descs[i]
        if not isinstance(d, IPCBufferDescriptor):
            raise TypeError(f"ipc_descriptors[{i}] has incorrect type (expected IPCBufferDescriptor, "
                            f"got {type(d).__name__})")
        desc = <IPCBufferDescriptor>d
        try:
            size_is_exporters[i] = desc._check(&keys[i])
        except ValueError as exc:
            raise ValueError(f"ipc_descriptors[{i}]: {exc}") from None
    if n == 0:
        return []
    handles.resize(n)
    errors.resize(n)
    # Local copies: another thread may close the resource or the stream while
    # this one imports without the GIL.
    pool = pool_mr._pool
    sh = s._h
    deviceptr_import_ipc_batch(pool, keys.data(), n, sh, handles.data(), errors.data())
    results = [None] * n
    failed = []
    for i in range(n):
        if not handles[i]:
            exc = _import_error(pool_mr, errors[i])
        else:
            desc = <IPCBufferDescriptor>descs[i]
            # A size the exporter did not write is checked against the mapping.
            mapped = 0 if size_is_exporters[i] else deviceptr_size(handles[i])
            if not (mapped and desc._size > mapped):
                continue
            handles[i].reset()
            exc = ValueError(f"IPC buffer descriptor size {desc._size} exceeds mapped allocation extent {mapped}")
        exc.index = i
        results[i] = exc
        failed.append(exc)
    if failed and not return_exceptions:
        handles.clear()   # every import of this call released (a key others hold stays theirs)
        raise IPCImportError(f"{len(failed)} of {n} IPC imports failed", failed)
    for i in range(n):
        if handles[i]:
            desc = <IPCBufferDescriptor>descs[i]
            b = Buffer._wrap(handles[i], desc._size, mr)
            b._ipc_desc = desc
            results[i] = b
    return results


# ---------------------------------------------------------------- multiprocessing

def _reduce_allocation_handle(alloc_handle):
    """multiprocessing sends the fd itself (SCM_RIGHTS), duplicated (warning once where the
    start method is 'fork')."""
    check_multiprocessing_start_method()
    df = multiprocessing.reduction.DupFd((<IPCAllocationHandle?>alloc_handle).handle)
    return _reconstruct_allocation_handle, (type(alloc_handle), df, alloc_handle.uuid)


def _reconstruct_allocation_handle(cls, df, uuid):
    return cls._init(df.detach(), uuid)


multiprocessing.reduction.register(IPCAllocationHandle, _reduce_allocation_handle)
